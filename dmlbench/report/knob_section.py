"""suite.knobs in the HTML report: the landing lines and significant knobs, then per paper ×
dataset its waterfall and its attribution table, as `knob_tables` wrote them (`attribution.md`)."""

from __future__ import annotations

from pathlib import Path

from dmlbench.report import markdown
from dmlbench.report.html_templates import Markup, render as render_template

FIGURE = "![waterfall]("  # knob_tables' figure line: ![waterfall](<file>)


def blocks(folder: Path, url) -> list[dict]:
    """The blocks of `attribution.md`: headings, notes, lists, tables and the figures that exist."""
    out, table, items, title = [], [], [], ""

    def flush():
        if items:
            out.append({"kind": "list", "lines": list(items)})
            items.clear()
        if table:
            head, *rows = [markdown.cells(line) for line in table if not line.startswith("|---")]
            out.append({"kind": "table", "head": head, "rows": rows})
            table.clear()

    for line in (folder / "attribution.md").read_text().splitlines()[1:]:
        if line.startswith("|"):
            table.append(line)
            continue
        if line.startswith("- "):
            items.append(line[2:])
            continue
        flush()
        if line.startswith("## "):
            title = line[3:]
            out.append({"kind": "heading", "text": title})
        elif line.startswith(FIGURE) and line.endswith(")"):
            name = line[len(FIGURE) : -1]
            if (folder / name).exists():
                out.append({"kind": "figure", "src": url(name), "alt": f"waterfall: {title}"})
        elif line.strip():
            out.append({"kind": "note", "text": line})
    flush()
    return out


def render(folder: Path, url) -> Markup:
    """`url(name)`: the link to a file of the experiment's report folder."""
    return render_template("markdown_blocks.html", blocks=blocks(folder, url))
