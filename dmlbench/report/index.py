"""The HTML report of a preset (`reports/<preset>/index.html`) and the landing page `reports/index.html`."""

from __future__ import annotations

import html
import os
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
        quoted_file = folder / "quoted.csv"
        if quoted_file.exists():
            quoted = pd.read_csv(quoted_file)
            quoted = quoted[quoted["dataset"] == dataset]
            if len(quoted):
                extra = quoted.pivot_table(index="method", columns="metric", values="value",
                                           sort=False).map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
                extra.index = [f"{m} (quoted by the paper, not run)" for m in extra.index]
                wide = pd.concat([wide, extra.reindex(columns=wide.columns)]).fillna("")
        parts.append(f"<h3>{html.escape(dataset)}</h3>" + wide.to_html(escape=True))
    return "".join(parts)


def _summary_html(lines: list[str]) -> str:
    """The few Markdown forms summaries use: paragraphs and "- " bullet lists."""
    items = [f"<li>{html.escape(line[2:])}</li>" for line in lines if line.startswith("- ")]
    text = [f"<p>{html.escape(line)}</p>" for line in lines if line.strip() and not line.startswith("- ")]
    return "".join(text) + (f"<ul>{''.join(items)}</ul>" if items else "")


def _preset_body(preset: str, experiment_dirs: list[Path], page_dir: Path) -> str:
    """Tables, figures and data links of one preset's experiments, paths relative to `page_dir`."""
    body = [f"<p class='note'>Preset <b>{html.escape(preset)}</b>. Numbers in %, mean ± std over "
            f"n seeds, last-epoch models; paper numbers beside ours where the paper gives them.</p>"]
    for folder in sorted(experiment_dirs):
        rel = Path(os.path.relpath(folder.resolve(), page_dir.resolve()))
        text_file = folder / ("table.md" if (folder / "table.csv").exists() else "summary.md")
        lines = text_file.read_text().splitlines()
        title = lines[0].lstrip("# ")
        body.append(f"<h2 id='{html.escape(preset)}-{html.escape(folder.name)}'>{html.escape(title)}</h2>")
        if (folder / "table.csv").exists():
            body.append(_table_html(folder))
        else:
            body.append(_summary_html(lines[1:]))
        for image in sorted(folder.glob("*.png")):
            body.append(f"<img src='{rel / image.name}' alt='{html.escape(image.stem)}'>")
        data = sorted(p.name for p in folder.iterdir() if p.suffix in (".csv", ".md"))
        links = ", ".join(f"<a href='{rel / name}'>{html.escape(name)}</a>" for name in data)
        body.append(f"<p class='note'>Data: {links}</p>")
    return "".join(body)


def write(preset: str, experiment_dirs: list[Path], output: Path) -> None:
    """Write the preset's report from the aggregated experiment folders, then the landing page."""
    with atomic_path(output) as tmp:
        tmp.write_text(_page(f"dmlbench report: {preset}",
                             _preset_body(preset, experiment_dirs, output.parent)))
    write_landing(output.parent.parent)


def write_landing(reports_dir: Path) -> None:
    """`reports/index.html`: every preset's report present, one after the other."""
    presets = sorted(p.parent for p in reports_dir.glob("*/index.html"))
    links = "".join(f"<li><a href='#{p.name}'>{html.escape(p.name)}</a> "
                    f"(<a href='{p.name}/index.html'>own page</a>)</li>" for p in presets)
    sections = []
    for folder in presets:
        experiments = [d for d in folder.iterdir()
                       if (d / "table.csv").exists() or (d / "summary.md").exists()]
        sections.append(f"<h1 id='{html.escape(folder.name)}'>Preset {html.escape(folder.name)}</h1>"
                        + _preset_body(folder.name, experiments, reports_dir))
    if (reports_dir / "benchmarks.md").exists():
        links += ("<li><a href='benchmarks.md'>benchmarks</a> (<code>python -m benchmarks</code>, "
                  "<a href='benchmarks.json'>JSON</a>)</li>")
    with atomic_path(reports_dir / "index.html") as tmp:
        tmp.write_text(_page("dmlbench reports", f"<ul>{links}</ul>" + "".join(sections)))
