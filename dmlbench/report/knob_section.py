"""suite.knobs in the HTML report: the landing lines and significant knobs, then per paper ×
dataset its waterfall and its attribution table, as `knob_tables` wrote them (`attribution.md`)."""

from __future__ import annotations

import html
from pathlib import Path

from dmlbench.report import markdown


def render(folder: Path, url) -> str:
    """`url(name)`: the link to a file of the experiment's report folder."""
    lines = (folder / "attribution.md").read_text().splitlines()[1:]
    parts, table, items, title = [], [], [], ""

    def flush():
        if items:
            parts.append("<ul>" + "".join(items) + "</ul>")
            items.clear()
        if table:
            head, *rows = [markdown.cells(line) for line in table if not line.startswith("|---")]
            header = "".join(f"<th>{html.escape(c)}</th>" for c in head)
            body = "".join(
                f"<tr><th>{html.escape(row[0])}</th>" + "".join(f"<td>{html.escape(c)}</td>" for c in row[1:]) + "</tr>"
                for row in rows
            )
            parts.append(
                f"<div class='scroll'><table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table></div>"
            )
            table.clear()

    for line in lines:
        if line.startswith("|"):
            table.append(line)
            continue
        if line.startswith("- "):
            items.append(f"<li>{html.escape(line[2:])}</li>")
            continue
        flush()
        if line.startswith("## "):
            title = line[3:]
            parts.append(f"<h4>{html.escape(title)}</h4>")
        elif line.startswith("![waterfall](") and line.endswith(")"):  # knob_tables' figure line
            name = line[len("![waterfall](") : -1]
            if (folder / name).exists():
                parts.append(f"<figure><img src='{url(name)}' alt='waterfall: {html.escape(title)}'></figure>")
        elif line.strip():
            parts.append(f"<p class='note'>{html.escape(line)}</p>")
    flush()
    return "".join(parts)
