"""How a verdict looks on the page: its cell's CSS class and the legend of symbols and colours
(never colour alone)."""

from __future__ import annotations

import re

from dmlbench.report.html_templates import Cell, Markup, render
from dmlbench.verdicts import numbers


def verdict_class(verdict: str) -> str:
    """The CSS class of a verdict's cell: `v-` and the verdict's words joined by dashes."""
    return "v-" + re.sub(r"[^a-z]+", "-", verdict)


def legend() -> Markup:
    """What the difference column's symbols and colours say (never colour alone)."""
    return render(
        "legend.html",
        verdicts=[(verdict_class(v), numbers.SYMBOLS[v], v, numbers.MEANINGS[v]) for v in numbers.VERDICTS],
    )


def row_verdict(verdicts: list) -> Cell:
    """A table row's verdict cell, the first column: its paper numbers counted by verdict
    (symbol and count), coloured by the worst of them."""
    counted = [v for v in numbers.VERDICTS if v in verdicts]
    if not counted:
        return Cell("–", cls="row-verdict muted")
    worst = next(
        v
        for v in (
            numbers.FAILED,
            numbers.BELOW,
            numbers.ABOVE,
            numbers.INCONCLUSIVE,
            numbers.REPRODUCED,
            numbers.NOT_RUN,
        )
        if v in counted
    )
    text = " ".join(f"{numbers.SYMBOLS[v]}{verdicts.count(v)}" for v in counted)
    title = ", ".join(f"{verdicts.count(v)} {v}" for v in counted)
    return Cell(text, cls=f"row-verdict {verdict_class(worst)}", title=title)
