"""The scorecard: one row per paper of its numbers and claims counted by verdict, the first thing
the landing page and each preset's report show (from the papers' certificates)."""

from __future__ import annotations

import html

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
    ("underpowered", (claims.UNDERPOWERED,)),
    ("partly run", (claims.PARTIAL,)),
    ("not significant", (claims.NOT_SIGNIFICANT,)),
    ("reversed, differs", (claims.REVERSED, claims.DIFFERS)),
    ("untested", (claims.NOT_RUN, claims.SINGLE_RUN)),
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


def _cell(count: int, verdict: str) -> str:
    shown = verdict_class(verdict) if count else "muted"
    return f"<td class='delta {shown}'>{count}</td>"


def _head(name: str, symbol: str) -> str:
    return f"<th title='{html.escape(name)}'>{html.escape(symbol)}<br>{html.escape(name)}</th>"


def table(rows: list[dict]) -> str:
    """The scorecard as an HTML table (empty without certificates)."""
    if not rows:
        return ""
    head = (
        "<tr><th rowspan='2'>paper</th><th colspan='6' class='group'>paper numbers</th>"
        "<th colspan='8' class='group'>claims</th></tr><tr>"
        + "".join(_head(name, numbers.SYMBOLS[v[0]]) for name, v in NUMBER_COLUMNS)
        + "<th>of</th>"
        + "".join(_head(name, claims.SYMBOLS[v[0]]) for name, v in CLAIM_COLUMNS)
        + "<th>of</th></tr>"
    )
    body = ""
    for r in rows:
        cells = "".join(_cell(r["numbers"][name], verdicts[0]) for name, verdicts in NUMBER_COLUMNS)
        cells += f"<td>{r['numbers']['total']}</td>"
        cells += "".join(_cell(r["claims"][name], verdicts[0]) for name, verdicts in CLAIM_COLUMNS)
        body += f"<tr><th class='row'>{html.escape(r['paper'])}</th>{cells}<td>{r['claims']['total']}</td></tr>"
    return (
        f"<div class='scroll'><table class='scorecard'><thead>{head}</thead><tbody>{body}</tbody></table></div>"
        "<p class='legend'>Scorecard: each paper's printed numbers and its claims counted by verdict "
        "(docs/verdicts.md; each paper's certificate below says which).</p>"
    )
