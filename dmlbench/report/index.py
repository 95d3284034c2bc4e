"""The HTML report of a preset (`reports/<preset>/index.html`) and the landing page `reports/index.html`."""

from __future__ import annotations

import html
import os
import re
import urllib.parse
from collections import Counter
from pathlib import Path

import pandas as pd

from dmlbench.core.io import atomic_path, json_text, read_json
from dmlbench.models import timm_trunks
from dmlbench.report import (
    certificate_section,
    contents,
    fair_section,
    knob_section,
    layout,
    ledger,
    markdown,
    provenance,
    references,
    scorecard,
)
from dmlbench.report.aggregate import TOY_NOTE
from dmlbench.verdicts import certificate

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; white-space: nowrap; }
th.row, th:first-child { text-align: left; }
th.group, th.band { text-align: center; background: #f3f3f3; }
td.paper, th.paper { background: #f6f6f6; color: #444; }
td.ours { font-weight: 500; }
.muted { color: #999; font-weight: normal; }
tr.reference th, tr.reference td, th.group.reference { font-style: italic; color: #555; background: #f7f7f7; }
th.group.reference { white-space: normal; max-width: 14em; }
.scroll { overflow-x: auto; max-width: 100%; }
table.scorecard th { white-space: normal; font-weight: 500; font-size: 0.9em; min-width: 4.5em; }
.paper-table .row-verdict { position: sticky; left: 0; z-index: 2; width: 6em; min-width: 6em; max-width: 6em;
  text-align: left; background-clip: padding-box; }
.paper-table th.row-verdict { background: #fff; }
.paper-table .row-verdict + th.row { position: sticky; left: 7em; z-index: 2; background: #fff; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
.note { color: #555; font-size: 0.9em; }
.warning { background: #fff4d6; border-left: 4px solid #e0a800; padding: 0.5em 0.8em; }
.status { font-size: 0.75em; padding: 0.1em 0.5em; border-radius: 0.6em; background: #e8f5e9; }
.status.partial { background: #fff4d6; }
.status.quoted-only, .status.figure-only, .status.not-run { background: #eceff1; }
.footnotes { font-size: 0.85em; color: #555; margin-top: -1.2em; }
td .n { font-size: 0.8em; color: #777; }
.delta { font-variant-numeric: tabular-nums; }
.v-reproduced { background: #dff3e2; }
.v-below { background: #fde0dd; }
.v-above { background: #ddeafc; }
.v-single-run, .v-not-run, .v-not-significant, .v-inconclusive { background: #f0f0f0; color: #666; }
.v-failed { background: #f9d0c4; font-weight: bold; }
.v-holds, .v-equivalent { background: #dff3e2; }
.v-underpowered, .v-partly-run { background: #fff4d6; }
.v-holds-smaller, .v-holds-larger { background: #eef6d8; }
.v-reversed, .v-differs { background: #fde0dd; }
.legend { font-size: 0.8em; color: #444; }
table.claims td { text-align: left; white-space: normal; min-width: 5em; }
table.claims td:first-child { min-width: 22em; }
.legend .delta { padding: 0 0.3em; border-radius: 0.3em; }
.fixture-stamp { font-size: 0.8em; background: #fff4d6; padding: 0.1em 0.4em; }
.footnotes p { margin: 0.2em 0; }
nav ul { line-height: 1.4; margin: 0.2em 0; }
nav li li { display: inline; margin-right: 0.8em; }
details > summary { cursor: pointer; font-size: 1.3em; font-weight: 600; margin: 1em 0 0.3em; }
.top { font-size: 0.8em; float: right; }
figure { margin: 0; }
"""


def _url(path) -> str:
    """A relative path as an attribute value: percent-quoted, then HTML-escaped (file names come
    from folders that may have been copied in from elsewhere)."""
    return html.escape(urllib.parse.quote(str(path)), quote=True)


def _status_class(status: str) -> str:
    """The CSS class of a status: letters, digits and dashes only."""
    return "status " + re.sub(r"[^a-z0-9]+", "-", str(status).lower()).strip("-")


def _badge(exp: dict) -> str:
    """An experiment's status as a badge; a figure the preset did not run says that the paper
    prints no numbers for it (nothing is shown)."""
    text = exp["status"] + (": the paper prints no numbers" if exp["status"] == contents.FIGURE_ONLY else "")
    return f"<span class='{_status_class(exp['status'])}'>{html.escape(text)}</span>"


def _page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body><h1 id='top'>{html.escape(title)}</h1>{body}</body></html>\n"
    )


def _labels(plan, exp: dict) -> dict[str, str]:
    """Names of an experiment's methods (and sweep variants) as the catalogue gives them."""
    labels = {m: plan.methods[m].get("label", m) for m in exp["methods"]}
    for method in exp["methods"]:
        for variant in exp.get("sweep") or {}:
            labels[f"{method}@{variant}"] = f"{labels[method]} ({variant})"
    return labels


def _caption(exp: dict, ran: bool, toy: bool) -> str:
    if not (exp.get("reported") or exp.get("quoted")):
        return (
            "Mean ± 95 % interval over the n seeds run (n in the cell), last epoch; 'not run': not trained by this "
            "preset; '·': not measured by this preset. The paper prints no numbers for this."
        )
    parts = [
        "This suite: mean ± 95 % interval (Student t) over the n seeds run, last epoch; paper: the paper's "
        "number as it prints it (– where it prints none; a row name's \"(ours)\" is the paper's "
        "authors')."
        if ran
        else "Not run in this preset: the paper's numbers alone."
    ]
    if ran:
        parts.append(
            "'not run': this preset does not train that row on that dataset; '·': not measured "
            "by this preset; (quoted): a row the paper quotes from the literature."
        )
    if ran and (exp.get("table") or {}).get("test_selected"):
        parts.append(
            "The paper reports each method at its best epoch on the test set: 'sel.' is this "
            "suite's test-selected epoch, which Δ and the verdict compare with the paper's number; "
            "'last' its last epoch, the honest number."
        )
    if ran and toy:
        parts.append(
            "Fixture data: this suite's numbers, differences and verdicts test the pipeline; they are "
            "not comparable with the paper's."
        )
    return " ".join(parts)


def _table_html(plan, key: str, folder: Path | None) -> str:
    """The experiment's table in the paper's layout, ours beside the paper's numbers."""
    exp = plan.experiments[key]
    grid = layout.table_layout(exp, _labels(plan, exp))
    summary = pd.read_csv(folder / "table.csv") if folder is not None and (folder / "table.csv").exists() else None
    caption = _caption(exp, summary is not None, plan.toy_data)
    if summary is not None:
        said = references.sentences(
            summary, [[d, m, n] for (d, m), n in plan.reference_map(key).items()], _labels(plan, exp)
        )
        if said:
            caption += (
                " Rows 'no training': the same evaluation of the embeddings before any training "
                "step (first seed's network at initialisation, its trunk's pooled features"
                + (", the raw pixels" if any("raw pixels" in s for s in said) else "")
                + "). "
                + " ".join(said)
            )
    ran = {run.variant for run in plan.runs(key)} if key in plan.experiment_ids else set()
    leakage = timm_trunks.overlap_note(
        ((entry.get("train") or {}).get("model") or {}).get("backbone")
        for variant, entry in (exp.get("sweep") or {}).items()
        if variant in ran
    )
    caption += f" {leakage}" if leakage else ""
    return layout.render(exp, grid, summary, caption)


def _summary_html(lines: list[str]) -> str:
    """The few Markdown forms summaries use: paragraphs and "- " bullet lists."""
    items = [f"<li>{html.escape(line[2:])}</li>" for line in lines if line.startswith("- ")]
    text = [f"<p>{html.escape(line)}</p>" for line in lines if line.strip() and not line.startswith("- ")]
    return "".join(text) + (f"<ul>{''.join(items)}</ul>" if items else "")


def _anchor(preset: str, experiment: str) -> str:
    return html.escape(f"{preset}-{experiment}")


def _toc(info: dict) -> str:
    """Paper → its experiments (id and status), one compact line each."""
    preset = info["preset"]
    papers = []
    for paper in info["papers"]:
        items = "".join(
            f"<li><a href='#{_anchor(preset, exp['id'])}' title='{html.escape(exp['title'])}'>"
            f"{html.escape(exp['id'])}</a> {_badge(exp)}</li>"
            for exp in paper["experiments"]
        )
        papers.append(
            f"<li><a href='#{_anchor(preset, paper['paper'])}'>{html.escape(paper['title'])}</a><ul>{items}</ul></li>"
        )
    return f"<nav><h2>Contents</h2><ul>{''.join(papers)}</ul></nav>"


def _preset_body(plan, info: dict, preset_dir: Path, spent: pd.DataFrame) -> str:
    """Provenance, contents, the preflight's budget and the cost ledger, then per paper (a
    collapsible section) its experiments' tables, figures and data links."""
    preset = info["preset"]
    body = [provenance.panel(plan, preset_dir)]
    if info["toy_data"]:
        body.append(f"<p class='warning'>{html.escape(TOY_NOTE)}</p>")
    body += [scorecard.table(info["scorecard"]), _toc(info)]
    budget = preset_dir / "preflight" / "budget.md"
    if budget.exists():
        body.append(_budget_html(budget, preset, preset_dir))
    body.append(ledger.html_section(spent, preset))
    for paper in info["papers"]:
        sections = "".join(
            _experiment_html(plan, exp, preset, preset_dir / exp["id"], preset_dir) for exp in paper["experiments"]
        )
        cert = certificate_section.read(preset_dir, paper["paper"])
        if cert is not None:
            sections = certificate_section.render(cert, _url(paper["paper"])) + sections
        body.append(
            f"<details open id='{_anchor(preset, paper['paper'])}'><summary>"
            f"{html.escape(paper['title'])}</summary>{sections}</details>"
        )
    return "".join(body)


def _budget_html(budget: Path, preset: str, page_dir: Path) -> str:
    """The preflight's compute budget (`python -m dmlbench preflight`), as it wrote it."""
    lines = budget.read_text().splitlines()[1:]
    text = [f"<p class='note'>{html.escape(line)}</p>" for line in lines if line.strip() and not line.startswith("|")]
    rows = [
        [html.escape(c.strip("*")) for c in markdown.cells(line)]
        for line in lines
        if line.startswith("|") and not line.startswith("|---")
    ]
    table = (
        "<div class='scroll'><table>"
        + "".join(
            "<tr>" + "".join(f"<{'th' if i == 0 else 'td'}>{c}</{'th' if i == 0 else 'td'}>" for c in row) + "</tr>"
            for i, row in enumerate(rows)
        )
        + "</table></div>"
    )
    link = os.path.relpath(budget.parent / "preflight.md", page_dir)
    return (
        f"<h2 id='{html.escape(preset)}-budget'>Compute budget (preflight)</h2>"
        + "".join(text)
        + table
        + f"<p><a href='{_url(link)}'>every group's probe</a></p>"
    )


def _experiment_html(plan, exp: dict, preset: str, folder: Path, page_dir: Path) -> str:
    anchor = _anchor(preset, exp["id"])
    parts = [
        f"<h3 id='{anchor}'>{html.escape(exp['id'])}: {html.escape(exp['title'])} "
        f"{_badge(exp)}"
        f" <a class='top' href='#top'>back to top</a></h3>"
    ]
    is_table = not plan.is_analysis(exp["id"])
    if exp["status"] == contents.FIGURE_ONLY:
        parts.append(
            "<p class='note'>Not run in this preset; the paper gives it as a figure only (no numbers to show).</p>"
        )
        return "".join(parts)
    if exp["status"] == contents.NOT_RUN:
        parts.append(
            f"<p class='note'>Not run in this preset: the suite's own experiment, with no paper "
            f"numbers to show (<code>--config experiments=[{html.escape(exp['id'])}]</code> runs it).</p>"
        )
        return "".join(parts)
    if exp["status"] == "quoted only":
        if plan.is_fair(exp["id"]):
            parts.append("<p class='note'>Not run in this preset (docs/fair-table.md).</p>")
        elif is_table:
            parts.append(_table_html(plan, exp["id"], None))
        else:
            parts.append(
                "<p class='note'>Not run in this preset (computed by the suite; the paper "
                "prints no numbers for it).</p>"
            )
        return "".join(parts)
    rel = Path(os.path.relpath(folder.resolve(), page_dir.resolve()))
    if plan.is_fair(exp["id"]):
        if (folder / "fair_table.csv").exists():
            parts.append(fair_section.render(folder, plan, exp["id"], lambda name: _url(rel / name)))
    elif plan.is_knobs(exp["id"]):
        if (folder / "attribution.md").exists():
            parts.append(knob_section.render(folder, lambda name: _url(rel / name)))
    elif is_table:
        parts.append(_table_html(plan, exp["id"], folder))
    elif (folder / "summary.md").exists():
        parts.append(_summary_html((folder / "summary.md").read_text().splitlines()[1:]))
    for name in [] if plan.is_fair(exp["id"]) or plan.is_knobs(exp["id"]) else exp["figures"]:
        parts.append(
            f"<figure id='{anchor}-{html.escape(name)}'><img src='{_url(rel / name)}' "
            f"alt='{html.escape(exp['id'])}: {html.escape(name)}'></figure>"
        )
    if folder.exists():
        data = sorted(p.name for p in folder.iterdir() if p.suffix in (".csv", ".md"))
        links = ", ".join(f"<a href='{_url(rel / name)}'>{html.escape(name)}</a>" for name in data)
        parts.append(f"<p class='note'>Data: {links}</p>")
    return "".join(parts)


def write(plan, output: Path) -> None:
    """Write the preset's report and `contents.json` from its experiment folders, then the
    landing page. Both files are written in full before either replaces its old self, the page
    first and the contents last: a failed write (a full disk) leaves the old pair, or neither."""
    preset_dir = output.parent
    info = contents.contents(plan, preset_dir)
    certificates = [certificate_section.read(preset_dir, paper["paper"]) for paper in info["papers"]]
    info["certificates"] = [certificate.headline(c) for c in certificates if c is not None]
    info["scorecard"] = [scorecard.row(c) for c in certificates if c is not None]
    spent = ledger.collect(
        plan, preset_dir.parent.parent / "results" / plan.name, preset_dir / "preflight" / "budget.csv"
    )
    info["cost"] = ledger.totals(spent) if not spent.empty else None
    info["knobs"] = [
        line
        for key in plan.experiment_ids
        if plan.is_knobs(key) and (preset_dir / key / "landing.json").exists()
        for line in read_json(preset_dir / key / "landing.json")["lines"]
    ]
    page = _page(f"dmlbench report: {plan.name}", _preset_body(plan, info, preset_dir, spent))
    with atomic_path(preset_dir / "contents.json") as contents_tmp, atomic_path(output) as page_tmp:
        contents_tmp.write_text(json_text(info))
        page_tmp.write_text(page)
    write_landing(preset_dir.parent)


def write_landing(reports_dir: Path) -> None:
    """`reports/index.html`: every preset's report present, with the count of each status."""
    items = []
    for folder in sorted(p.parent for p in reports_dir.glob("*/contents.json")):
        info = read_json(folder / "contents.json")
        statuses = Counter(e["status"] for p in info.get("papers", []) for e in p.get("experiments", []))
        counts = ", ".join(
            f"<span class='{_status_class(s)}'>{html.escape(str(n))} {html.escape(str(s))}</span>"
            for s, n in sorted(statuses.items())
        )
        note = " <span class='muted'>(fixture data)</span>" if info.get("toy_data") else ""
        papers = "".join(
            f"<li>{html.escape(line)}</li>" for line in info.get("certificates", []) + info.get("knobs", [])
        )
        if info.get("cost"):
            papers += f"<li>{html.escape(ledger.headline(info['cost']))}</li>"
        items.append(
            f"<li><a href='{_url(folder.name + '/index.html')}'>{html.escape(folder.name)}</a>"
            f"{note}: {counts}{scorecard.table(info.get('scorecard') or [])}"
            + (f"<ul>{papers}</ul>" if papers else "")
            + "</li>"
        )
    if (reports_dir / "benchmarks.md").exists():
        items.append(
            "<li><a href='benchmarks.md'>benchmarks</a> (<code>python -m benchmarks</code>, "
            "<a href='benchmarks.json'>JSON</a>)</li>"
        )
    body = (
        "<p class='note'>One report per preset; each lists, paper by paper, every table and figure "
        "of the catalogue with its status.</p>" + f"<ul>{''.join(items)}</ul>"
    )
    with atomic_path(reports_dir / "index.html") as tmp:
        tmp.write_text(_page("dmlbench reports", body))
