"""The report's table cells as a reader sees them: no internal id among them (method, trunk, sweep
setting or metric ids with an underscore; ids stay in the JSON and CSV files)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from dmlbench.models import timm_trunks
from dmlbench.models.names import PAPER_TRUNKS


class _Cells(HTMLParser):
    def __init__(self):
        super().__init__()
        self.cells: list[str] = []
        self._text: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag in ("td", "th"):
            self._text = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._text is not None:
            self.cells.append("".join(self._text))
            self._text = None

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)


def internal_ids(plan) -> set[str]:
    """The ids a table cell must not show: those with an underscore, which no paper prints."""
    metrics = {m for exp in plan.experiments.values() for m in (exp.get("table") or {}).get("metrics") or []}
    settings = {v for exp in plan.experiments.values() for v in exp.get("sweep") or {}}
    names = set(plan.methods) | set(timm_trunks.TRUNKS) | set(PAPER_TRUNKS) | metrics | settings
    return {name for name in names if "_" in name}


def cells_showing_ids(page: Path, plan) -> list[tuple[str, str]]:
    """(id, cell text) for every table cell of the page that shows an internal id as a word."""
    parser = _Cells()
    parser.feed(page.read_text())
    ids = sorted(internal_ids(plan), key=len, reverse=True)
    # a word of its own: not a part of a longer name, nor of a file path (results/…/x.json)
    pattern = re.compile(r"(?<![\w./])(" + "|".join(map(re.escape, ids)) + r")(?![\w/]|\.\w)")
    return [(found.group(1), cell) for cell in parser.cells if (found := pattern.search(cell))]
