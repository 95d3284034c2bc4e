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
    items = "".join(f"<span class='delta {verdict_class(v)}'>{numbers.SYMBOLS[v]} {html.escape(v)}</span> "
                    f"{html.escape(numbers.MEANINGS[v])}; " for v in numbers.VERDICTS)
    return (f"<p class='legend'>Δ: this suite − paper, in points; the verdict's symbol beside it: {items}"
            f"interval: 95 % Student t over the n seeds; δ: the experiment's margin (workflow/config/margins.yaml) plus half the "
            f"paper's last printed digit (docs/verdicts.md).</p>")
