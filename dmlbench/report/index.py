"""The HTML report of a preset (`reports/<preset>/index.html`) and the landing page `reports/index.html`."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from dmlbench.io import atomic_path

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
.note { color: #555; font-size: 0.9em; }
"""


def _page(title: str, body: str) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{body}</body></html>\n")


def _table_html(folder: Path) -> str:
    """The summary as the paper prints it: one table per dataset, rows = methods, cols = metrics."""
    summary = pd.read_csv(folder / "table.csv")
    parts = []
    for dataset, block in summary.groupby("dataset", sort=False):
        def cell(rows):
            r = rows.iloc[0]
            spread = "" if pd.isna(r["std"]) else f" ± {r['std']:.2f}"
            text = f"{r['mean']:.2f}{spread} (n={int(r['n'])})"
            if not pd.isna(r["paper"]):
                text += f" | paper {r['paper']:.2f} | Δ {r['difference']:+.2f}"
            return text

        wide = block.groupby(["method", "metric"], sort=False).apply(cell).unstack("metric")
        wide = wide[list(dict.fromkeys(block["metric"]))]
        parts.append(f"<h3>{html.escape(dataset)}</h3>" + wide.to_html(escape=True))
    return "".join(parts)


def write(preset: str, experiment_dirs: list[Path], output: Path) -> None:
    """Write the preset's report from the aggregated experiment folders, then the landing page."""
    body = [f"<p class='note'>Preset <b>{html.escape(preset)}</b>. Numbers in %, mean ± std over "
            f"n seeds, last-epoch models; paper numbers beside ours where the paper gives them.</p>"]
    for folder in sorted(experiment_dirs):
        rel = folder.relative_to(output.parent) if folder.is_relative_to(output.parent) else folder
        title = (folder / "table.md").read_text().splitlines()[0].lstrip("# ")
        body.append(f"<h2 id='{html.escape(folder.name)}'>{html.escape(title)}</h2>")
        body.append(_table_html(folder))
        for image in sorted(folder.glob("*.png")):
            body.append(f"<img src='{rel / image.name}' alt='{html.escape(image.stem)}'>")
        body.append(f"<p class='note'>Data: <a href='{rel}/table.csv'>table.csv</a>, "
                    f"<a href='{rel}/runs.csv'>runs.csv</a>, <a href='{rel}/table.md'>table.md</a></p>")
    with atomic_path(output) as tmp:
        tmp.write_text(_page(f"dmlbench report: {preset}", "".join(body)))
    write_landing(output.parent.parent)


def write_landing(reports_dir: Path) -> None:
    """`reports/index.html`: links to every preset's report present."""
    presets = sorted(p.parent.name for p in reports_dir.glob("*/index.html"))
    items = "".join(f"<li><a href='{p}/index.html'>{html.escape(p)}</a></li>" for p in presets)
    with atomic_path(reports_dir / "index.html") as tmp:
        tmp.write_text(_page("dmlbench reports", f"<ul>{items}</ul>"))
