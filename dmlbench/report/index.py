"""The HTML report of a preset (`reports/<preset>/index.html`) and the landing page `reports/index.html`."""

from __future__ import annotations

import html
import os
import re
import urllib.parse
from pathlib import Path

import pandas as pd

from dmlbench.io import atomic_path, read_json, write_json
from dmlbench.report import contents
from dmlbench.report.aggregate import TOY_NOTE

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
.note { color: #555; font-size: 0.9em; }
.warning { background: #fff4d6; border-left: 4px solid #e0a800; padding: 0.5em 0.8em; }
.status { font-size: 0.75em; padding: 0.1em 0.5em; border-radius: 0.6em; background: #e8f5e9; }
.status.partial { background: #fff4d6; }
.status.quoted-only { background: #eceff1; }
nav ul { line-height: 1.5; }
figure { margin: 0; }
"""


def _url(path) -> str:
    """A relative path as an attribute value: percent-quoted, then HTML-escaped (file names come
    from folders that may have been copied in from elsewhere)."""
    return html.escape(urllib.parse.quote(str(path)), quote=True)


def _status_class(status: str) -> str:
    """The CSS class of a status: letters, digits and dashes only."""
    return "status " + re.sub(r"[^a-z0-9]+", "-", str(status).lower()).strip("-")


def _page(title: str, body: str) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{body}</body></html>\n")


def _table_html(folder: Path) -> str:
    """The summary as the paper prints it: one table per dataset, rows = methods, cols = metrics."""
    summary = pd.read_csv(folder / "table.csv")
    with_difference = "difference" in summary.columns
    parts = []
    for dataset, block in summary.groupby("dataset", sort=False):
        def cell(rows):
            r = rows.iloc[0]
            spread = "" if pd.isna(r["std"]) else f" ± {r['std']:.2f}"
            text = f"{r['mean']:.2f}{spread} (n={int(r['n'])})"
            if not pd.isna(r["paper"]):
                text += f" | paper {r['paper']:.2f}"
                if with_difference:
                    text += f" | Δ {r['difference']:+.2f}"
            return text

        wide = block.groupby(["method", "metric"], sort=False).apply(cell).unstack("metric")
        wide = wide[list(dict.fromkeys(block["metric"]))]
        quoted_file = folder / "quoted.csv"
        if quoted_file.exists():
            quoted = pd.read_csv(quoted_file)
            quoted = quoted[quoted["dataset"] == dataset]
            if len(quoted):
                extra = quoted.pivot_table(index="method", columns="metric", values="value",
                                           sort=False).map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
                extra.index = [f"{m} (quoted by the paper, not run)" for m in extra.index]
                wide = pd.concat([wide, extra.reindex(columns=wide.columns)]).fillna("")
        parts.append(f"<h4>{html.escape(dataset)}</h4>" + wide.to_html(escape=True))
    return "".join(parts)


def _paper_numbers_html(rows: list[dict]) -> str:
    """The paper's own numbers of an experiment this preset did not run."""
    if not rows:
        return "<p class='note'>The paper gives no numbers for this experiment in the catalogue.</p>"
    frame = pd.DataFrame(rows)
    wide = frame.pivot_table(index=["dataset", "method"], columns="metric", values="value", sort=False)
    return wide.map(lambda v: "" if pd.isna(v) else f"{v:.2f}").to_html(escape=True)


def _summary_html(lines: list[str]) -> str:
    """The few Markdown forms summaries use: paragraphs and "- " bullet lists."""
    items = [f"<li>{html.escape(line[2:])}</li>" for line in lines if line.startswith("- ")]
    text = [f"<p>{html.escape(line)}</p>" for line in lines if line.strip() and not line.startswith("- ")]
    return "".join(text) + (f"<ul>{''.join(items)}</ul>" if items else "")


def _anchor(preset: str, experiment: str) -> str:
    return html.escape(f"{preset}-{experiment}")


def _toc(info: dict) -> str:
    """Paper → experiment (with its status) → figure, each a link into the page."""
    preset = info["preset"]
    papers = []
    for paper in info["papers"]:
        items = []
        for exp in paper["experiments"]:
            anchor = _anchor(preset, exp["id"])
            figures = "".join(f"<li><a href='#{anchor}-{html.escape(name)}'>{html.escape(name)}</a></li>"
                              for name in exp["figures"])
            items.append(f"<li><a href='#{anchor}'>{html.escape(exp['id'])}</a> "
                         f"{html.escape(exp['title'])} <span class='{_status_class(exp['status'])}'>"
                         f"{html.escape(exp['status'])}</span> <span class='note'>"
                         f"({html.escape(exp['detail'])})</span>"
                         + (f"<ul>{figures}</ul>" if figures else "") + "</li>")
        papers.append(f"<li>{html.escape(paper['title'])}<ul>{''.join(items)}</ul></li>")
    return f"<nav><h2>Contents</h2><ul>{''.join(papers)}</ul></nav>"


def _preset_body(info: dict, preset_dir: Path, page_dir: Path) -> str:
    """Contents, then tables, figures and data links of one preset's experiments, paths relative
    to `page_dir`."""
    preset = info["preset"]
    note = (f"Preset <b>{html.escape(preset)}</b>. Numbers in %, mean ± std over n seeds, "
            f"last-epoch models; paper numbers beside ours where the paper gives them.")
    body = [f"<p class='note'>{note}</p>"]
    if info["toy_data"]:
        body.append(f"<p class='warning'>{html.escape(TOY_NOTE)}</p>")
    body.append(_toc(info))
    budget = preset_dir / "preflight" / "budget.md"
    if budget.exists():
        body.append(_budget_html(budget, preset, page_dir))
    for paper in info["papers"]:
        body.append(f"<h2>{html.escape(paper['title'])}</h2>")
        for exp in paper["experiments"]:
            body.append(_experiment_html(exp, preset, preset_dir / exp["id"], page_dir))
    return "".join(body)


def _budget_html(budget: Path, preset: str, page_dir: Path) -> str:
    """The preflight's compute budget (`python -m dmlbench preflight`), as it wrote it."""
    lines = budget.read_text().splitlines()[1:]
    text = [f"<p class='note'>{html.escape(line)}</p>" for line in lines
            if line.strip() and not line.startswith("|")]
    rows = [[html.escape(c.strip().strip("*")) for c in line.strip("|").split("|")]
            for line in lines if line.startswith("|") and not line.startswith("|---")]
    table = "<table>" + "".join("<tr>" + "".join(f"<{'th' if i == 0 else 'td'}>{c}</{'th' if i == 0 else 'td'}>"
                                                  for c in row) + "</tr>" for i, row in enumerate(rows)) + "</table>"
    link = os.path.relpath(budget.parent / "preflight.md", page_dir)
    return (f"<h2 id='{html.escape(preset)}-budget'>Compute budget (preflight)</h2>" + "".join(text)
            + table + f"<p><a href='{_url(link)}'>every group's probe</a></p>")


def _experiment_html(exp: dict, preset: str, folder: Path, page_dir: Path) -> str:
    anchor = _anchor(preset, exp["id"])
    parts = [f"<h3 id='{anchor}'>{html.escape(exp['id'])}: {html.escape(exp['title'])} "
             f"<span class='{_status_class(exp['status'])}'>{html.escape(exp['status'])}</span></h3>"]
    if exp["status"] == "quoted only":
        return "".join(parts) + (f"<p class='note'>{html.escape(exp['detail'])}.</p>"
                                 + _paper_numbers_html(exp["paper_numbers"]))
    rel = Path(os.path.relpath(folder.resolve(), page_dir.resolve()))
    if (folder / "table.csv").exists():
        if (folder / "table.md").exists():
            parts.append(_summary_html(_intro(folder / "table.md")))
        parts.append(_table_html(folder))
    elif (folder / "summary.md").exists():
        parts.append(_summary_html((folder / "summary.md").read_text().splitlines()[1:]))
    for name in exp["figures"]:
        parts.append(f"<figure id='{anchor}-{html.escape(name)}'><img src='{_url(rel / name)}' "
                     f"alt='{html.escape(exp['id'])}: {html.escape(name)}'></figure>")
    if folder.exists():
        data = sorted(p.name for p in folder.iterdir() if p.suffix in (".csv", ".md"))
        links = ", ".join(f"<a href='{_url(rel / name)}'>{html.escape(name)}</a>" for name in data)
        parts.append(f"<p class='note'>Data: {links}</p>")
    return "".join(parts)


def _intro(table_md: Path) -> list[str]:
    """The paragraph under a table's title (what the cells mean), without the tables."""
    lines = table_md.read_text().splitlines()[1:]
    return [line for line in lines[: next((i for i, l in enumerate(lines) if l.startswith("## ")),
                                           len(lines))] if line.strip()]


def write(plan, output: Path) -> None:
    """Write the preset's report (and `contents.json`) from its experiment folders, then the
    landing page."""
    preset_dir = output.parent
    info = contents.contents(plan, preset_dir)
    write_json(preset_dir / "contents.json", info)
    with atomic_path(output) as tmp:
        tmp.write_text(_page(f"dmlbench report: {plan.name}", _preset_body(info, preset_dir, preset_dir)))
    write_landing(preset_dir.parent)


def write_landing(reports_dir: Path) -> None:
    """`reports/index.html`: every preset's report present, one after the other."""
    presets = sorted(p.parent for p in reports_dir.glob("*/contents.json"))
    links = "".join(f"<li><a href='#{html.escape(p.name)}'>{html.escape(p.name)}</a> "
                    f"(<a href='{_url(p.name + '/index.html')}'>own page</a>)</li>" for p in presets)
    sections = []
    for folder in presets:
        info = read_json(folder / "contents.json")
        sections.append(f"<h1 id='{html.escape(folder.name)}'>Preset {html.escape(folder.name)}</h1>"
                        + _preset_body(info, folder, reports_dir))
    if (reports_dir / "benchmarks.md").exists():
        links += ("<li><a href='benchmarks.md'>benchmarks</a> (<code>python -m benchmarks</code>, "
                  "<a href='benchmarks.json'>JSON</a>)</li>")
    with atomic_path(reports_dir / "index.html") as tmp:
        tmp.write_text(_page("dmlbench reports", f"<ul>{links}</ul>" + "".join(sections)))
