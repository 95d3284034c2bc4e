"""How a verdict looks on the page: its cell's CSS class and the legend of symbols and colours
(never colour alone)."""

from __future__ import annotations

import html
import re

from dmlbench.verdicts import numbers


def verdict_class(verdict: str) -> str:
    """The CSS class of a verdict's cell: `v-` and the verdict's words joined by dashes."""
    return "v-" + re.sub(r"[^a-z]+", "-", verdict)


def legend() -> str:
    """What the difference column's symbols and colours say (never colour alone)."""
    items = "".join(
        f"<span class='delta {verdict_class(v)}'>{numbers.SYMBOLS[v]} {html.escape(v)}</span> "
        f"{html.escape(numbers.MEANINGS[v])}; "
        for v in numbers.VERDICTS
    )
    return (
        f"<p class='legend'>Δ: this suite − paper, in points; the verdict's symbol beside it: {items}"
        "interval: 95 % Student t over the n seeds; δ: the experiment's margin (workflow/config/margins.yaml) "
        "plus half the "
        f"paper's last printed digit (docs/verdicts.md).</p>"
    )


def row_verdict(verdicts: list) -> str:
    """A table row's verdict cell, the first column: its paper numbers counted by verdict
    (symbol and count), coloured by the worst of them."""
    counted = [v for v in numbers.VERDICTS if v in verdicts]
    if not counted:
        return "<td class='row-verdict muted'>–</td>"
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
    return f"<td class='row-verdict {verdict_class(worst)}' title='{html.escape(title)}'>{text}</td>"
