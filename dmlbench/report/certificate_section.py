"""A paper's certificate on the report (`reports/<preset>/<paper>/certificate.json`, written by
`python -m dmlbench verdict`): its headline, counts, claims with their tests, and its provenance."""

from __future__ import annotations

import html
from pathlib import Path

from dmlbench.core.io import read_json
from dmlbench.report.verdict_marks import verdict_class
from dmlbench.verdicts import certificate, claim_kinds, claims, numbers


def read(preset_dir: Path, paper: str) -> dict | None:
    path = preset_dir / paper / "certificate.json"
    return read_json(path) if path.exists() else None


def _claim_row(c: dict) -> str:
    tested = "low" in c
    ours = f"{c['gain']:+.2f} [{c['low']:+.2f}, {c['high']:+.2f}]" if tested else "–"
    test = f"{claim_kinds.test_text(c)}, p = {c['p']:.3g} (Holm {c['p_holm']:.3g})" if tested else "–"
    paper = "–" if c.get("gain_paper") is None else f"{c['gain_paper']:+.2f}"
    cells = [
        f"{c['experiment']}: {c['text']}",
        c["source"],
        c["rows"],
        c["where"] + (" (test-selected)" if c["test_selected"] else ""),
        paper,
        ours,
        test,
    ]
    return (
        "<tr>"
        + "".join(f"<td>{html.escape(str(x))}</td>" for x in cells)
        + f"<td class='delta {verdict_class(c['verdict'])}'>{html.escape(claim_kinds.verdict_text(c))}</td></tr>"
    )


def render(cert: dict, link: str) -> str:
    """The certificate as HTML; `link`: the folder of its Markdown and JSON, relative to the page."""
    n = cert["numbers"]
    stamp = (
        f" <span class='fixture-stamp'>{html.escape(certificate.FIXTURE_STAMP)}</span>" if cert["fixture_data"] else ""
    )
    counts = ", ".join(
        f"<span class='delta {verdict_class(v)}'>{numbers.SYMBOLS[v]} {n[v]} {html.escape(v)}</span>"
        for v in numbers.VERDICTS
    )
    every = [c for e in cert["experiments"] for c in e["claims"]]
    rows = "".join(_claim_row(c) for c in every if c["verdict"] != claims.NOT_RUN)
    unrun = sum(c["verdict"] == claims.NOT_RUN for c in every)
    table = (
        (
            "<div class='scroll'><table class='claims'><thead><tr><th>claim</th><th>source</th><th>rows</th>"
            "<th>datasets; metrics</th><th>paper's gain</th><th>this suite's gain [95 % interval]</th><th>test</th>"
            f"<th>verdict</th></tr></thead><tbody>{rows}</tbody></table></div>"
        )
        if rows
        else ""
    )
    if unrun:
        table += (
            f"<p class='note'>{unrun} of the {len(every)} claims name a row or dataset this preset does "
            f"not train (each listed in certificate.md).</p>"
        )
    failing = "; ".join(cert["not_holding"]) or "none"
    legend = "; ".join(f"{claims.SYMBOLS[v]} {v}: {claims.MEANINGS[v]}" for v in claims.VERDICTS)
    return (
        f"<h3>Certificate{stamp}</h3><p><b>{html.escape(certificate.headline(cert))}</b>. "
        + (f"Numbers: {counts} (of {n['total']}). " if n["total"] else "")
        + f"Claims tested that do not hold: {html.escape(failing)}.</p>"
        f"{table}<p class='legend'>Claims: {html.escape(legend)}. Tests over seeds, Holm-corrected "
        f"within the paper, α = 0.05.</p><p class='note'>Commit <code>{html.escape(cert['commit'])}</code>; "
        f"settings fingerprint <code>{html.escape(cert['fingerprint'][:16])}</code>; "
        f"<a href='{link}/certificate.md'>certificate.md</a>, <a href='{link}/certificate.json'>JSON</a> "
        f"(with the data checksums); the same from the terminal: "
        f"<code>python -m dmlbench verdict {html.escape(cert['paper'])} "
        f"--preset {html.escape(cert['preset'])}</code>.</p>"
    )
