"""The scorecard: one row per paper of its numbers and claims counted by verdict, the first thing
the landing page and each preset's report show (from the papers' certificates)."""

from __future__ import annotations

from dmlbench.report.html_templates import Cell, Markup, Row, render
from dmlbench.report.verdict_marks import verdict_class
from dmlbench.verdicts import claims, numbers

NUMBER_COLUMNS = (
    ("reproduced", (numbers.REPRODUCED,)),
    ("inconclusive", (numbers.INCONCLUSIVE,)),
    ("not reproduced", (numbers.BELOW, numbers.ABOVE)),
    ("failed", (numbers.FAILED,)),
    ("not run", (numbers.NOT_RUN,)),
)
CLAIM_COLUMNS = (
    ("hold", (claims.HOLDS, claims.SMALLER, claims.LARGER)),
    ("equivalent", (claims.EQUIVALENT,)),
    ("gain reproduced", (claims.GAIN_REPRODUCED,)),
    ("underpowered", (claims.UNDERPOWERED,)),
    ("partly run", (claims.PARTIAL,)),
    ("not significant", (claims.NOT_SIGNIFICANT,)),
    ("reversed, differs", (claims.REVERSED, claims.DIFFERS, claims.GAIN_NOT_REPRODUCED)),
    ("untested", (claims.NOT_RUN, claims.FEW_SEEDS, claims.NO_SPREAD)),
)


def row(cert: dict) -> dict:
    """A paper's counts: {paper, numbers: {column: n}, claims: {column: n}} (JSON, for contents.json)."""
    return {
        "paper": cert["paper"],
        "numbers": {name: sum(cert["numbers"].get(v, 0) for v in verdicts) for name, verdicts in NUMBER_COLUMNS}
        | {"total": cert["numbers"]["total"]},
        "claims": {name: sum(cert["claims"].get(v, 0) for v in verdicts) for name, verdicts in CLAIM_COLUMNS}
        | {"total": cert["claims"]["total"]},
    }


def _cell(count: int, verdict: str) -> Cell:
    return Cell(count, cls=f"delta {verdict_class(verdict) if count else 'muted'}")


def table(rows: list[dict]) -> Markup:
    """The scorecard as an HTML table (empty without certificates)."""
    if not rows:
        return Markup()
    body = [
        Row(
            (
                Cell(r["paper"], header=True, cls="row"),
                *(_cell(r["numbers"][name], verdicts[0]) for name, verdicts in NUMBER_COLUMNS),
                Cell(r["numbers"]["total"]),
                *(_cell(r["claims"][name], verdicts[0]) for name, verdicts in CLAIM_COLUMNS),
                Cell(r["claims"]["total"]),
            )
        )
        for r in rows
    ]
    return render(
        "scorecard.html",
        number_heads=[(numbers.SYMBOLS[v[0]], name) for name, v in NUMBER_COLUMNS],
        claim_heads=[(claims.SYMBOLS[v[0]], name) for name, v in CLAIM_COLUMNS],
        body=body,
    )
