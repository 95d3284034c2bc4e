"""Markdown table rows: every cell escaped, so that a label holding `|` or a line break stays in its
own cell, and rows read back (the report renders the preflight's budget table)."""

from __future__ import annotations

import json
import re

_UNESCAPED_BAR = re.compile(r"(?<!\\)\|")


def cell(value) -> str:
    """`value` as the text of one table cell: `|` escaped, line breaks as spaces."""
    return re.sub(r"[\r\n]+", " ", str(value)).replace("|", "\\|")


def code(value) -> str:
    """`value` as inline code, written as JSON (a backtick inside becomes a quote)."""
    return "`" + json.dumps(value, ensure_ascii=False).replace("`", "'") + "`"


def row(values) -> str:
    """One table row of `values`, each escaped."""
    return "| " + " | ".join(cell(v) for v in values) + " |"


def cells(line: str) -> list[str]:
    """The cells of a table row as `row` writes it, unescaped."""
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [part.strip().replace("\\|", "|") for part in _UNESCAPED_BAR.split(inner)]
