"""A paper's certificate on the report (`reports/<preset>/<paper>/certificate.json`, written by
`python -m dmlbench verdict`): its headline, counts, claims with their tests, and its provenance."""

from __future__ import annotations

from pathlib import Path

from dmlbench.core.io import read_json
from dmlbench.report import html_templates
from dmlbench.report.html_templates import Cell, Markup, Row
from dmlbench.report.verdict_marks import verdict_class
from dmlbench.verdicts import certificate_text, claim_kinds, claims, numbers


def read(preset_dir: Path, paper: str) -> dict | None:
    path = preset_dir / paper / "certificate.json"
    return read_json(path) if path.exists() else None


def _claim_row(c: dict) -> Row:
    tested = "low" in c
    ours = f"{c['gain']:+.2f} [{c['low']:+.2f}, {c['high']:+.2f}]" if tested else "–"
    test = f"{claim_kinds.test_text(c)}, p = {c['p']:.3g} (Holm {c['p_holm']:.3g})" if tested else "–"
    if c.get("power") is not None:
        test += f"; power before the data {c['power']:.2f}"
    paper = "–" if c.get("gain_paper") is None else f"{c['gain_paper']:+.2f}"
    texts = [
        f"{c['experiment']}: {c['text']}",
        c["source"],
        c["rows"],
        c["where"] + (" (test-selected)" if c["test_selected"] else ""),
        paper,
        ours,
        test,
    ]
    verdict = Cell(claim_kinds.verdict_text(c), cls=f"delta {verdict_class(c['verdict'])}")
    return Row((*(Cell(text) for text in texts), verdict))


def render(cert: dict, link: str) -> Markup:
    """The certificate as HTML; `link`: the folder of its Markdown and JSON, relative to the page."""
    n = cert["numbers"]
    every = [c for e in cert["experiments"] for c in e["claims"]]
    return html_templates.render(
        "certificate.html",
        stamp=certificate_text.FIXTURE_STAMP if cert["fixture_data"] else None,
        headline=certificate_text.headline(cert),
        total=n["total"],
        counts=[(verdict_class(v), numbers.SYMBOLS[v], n[v], v) for v in numbers.VERDICTS],
        failing="; ".join(cert["not_holding"]) or "none",
        claims=[_claim_row(c) for c in every if c["verdict"] != claims.NOT_RUN],
        unrun=sum(c["verdict"] == claims.NOT_RUN for c in every),
        every=len(every),
        legend="; ".join(f"{claims.SYMBOLS[v]} {v}: {claims.MEANINGS[v]}" for v in claims.VERDICTS),
        error_rates=certificate_text.error_rates(n["total"]),
        commit=cert["commit"],
        fingerprint=cert["fingerprint"][:16],
        link=link,
        paper=cert["paper"],
        preset=cert["preset"],
    )
