"""suite.knobs in the HTML report: the landing lines and significant knobs, then per paper ×
dataset its waterfall and its attribution table, as `knob_tables` wrote them (`attribution.md`)."""

from __future__ import annotations

import html
from pathlib import Path

from dmlbench.report import markdown


def render(folder: Path, url) -> str:
    """`url(name)`: the link to a file of the experiment's report folder."""
    lines = (folder / "attribution.md").read_text().splitlines()[1:]
    parts, table, items = [], [], []
    figures = {path.stem: path for path in sorted((folder / "waterfalls").glob("*.png"))}

    def flush():
        if items:
            parts.append("<ul>" + "".join(items) + "</ul>")
            items.clear()
        if table:
            head, *rows = [markdown.cells(line) for line in table if not line.startswith("|---")]
            header = "".join(f"<th>{html.escape(c)}</th>" for c in head)
            body = "".join(f"<tr><th>{html.escape(row[0])}</th>" + "".join(f"<td>{html.escape(c)}</td>" for c in row[1:])
                           + "</tr>" for row in rows)
            parts.append(f"<div class='scroll'><table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table></div>")
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
            key = _figure_key(title, figures)
            if key:
                parts.append(f"<figure><img src='{url('waterfalls/' + figures[key].name)}' "
                             f"alt='waterfall: {html.escape(title)}'></figure>")
        elif line.strip():
            parts.append(f"<p class='note'>{html.escape(line)}</p>")
    flush()
    return "".join(parts)


def _figure_key(title: str, figures: dict) -> str | None:
    """The waterfall of a section "paper: method on Dataset…" (files `<paper>_<dataset>.png`)."""
    paper = title.split(":")[0]
    labels = {"CUB": "cub", "Cars196": "cars", "SOP": "sop", "In-Shop": "inshop", "digits": "digits"}
    after = title.split(" on ", 1)[-1]
    dataset = next((key for label, key in labels.items() if after.startswith(label)), None)
    name = f"{paper}_{dataset}"
    return name if name in figures else None
