"""The report's HTML comes from Jinja2 templates (`dmlbench/report/templates/`); the modules that
make a section compute what it shows (numbers as text, cells of tables) and hand it to one.

Every value is escaped (autoescape), a missing one is an error (StrictUndefined), and a template
is written indented for reading: its loader drops each line break with the indentation after it,
so the page is as compact as the markup written in one line (a space that must survive a line
break is written before it). Tables that the sections build cell by cell pass `Cell`s."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

FOLDER = Path(__file__).resolve().parent / "templates"
_LINE_BREAK = re.compile(r"\n[ \t]*")


@dataclass(frozen=True)
class Cell:
    """One table cell: its text (escaped when shown), a `th` where `header`, its class, title
    (tooltip), spans and style; `n` (a count shown small after the text: "n=3"), `aside` (muted
    text after it: "(quoted)") and `emphasis` ("b" bold, "u" underlined)."""

    text: object = ""
    cls: str | None = None
    title: str | None = None
    header: bool = False
    colspan: int | None = None
    rowspan: int | None = None
    style: str | None = None
    n: int | None = None
    aside: str | None = None
    emphasis: str | None = None


@dataclass(frozen=True)
class Row:
    """A table row: its cells and its class."""

    cells: tuple
    cls: str | None = None


class _JoinedLines(jinja2.FileSystemLoader):
    def get_source(self, environment, template):
        source, filename, uptodate = super().get_source(environment, template)
        return _LINE_BREAK.sub("", source), filename, uptodate


def url(path) -> str:
    """A relative path as an attribute value: percent-quoted (file names come from folders that
    may have been copied in from elsewhere); the template escapes it."""
    return urllib.parse.quote(str(path))


def status_class(status) -> str:
    """The CSS classes of a status badge: letters, digits and dashes only."""
    return "status " + re.sub(r"[^a-z0-9]+", "-", str(status).lower()).strip("-")


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=_JoinedLines(FOLDER), autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )
    env.filters["url"] = url
    env.filters["status_class"] = status_class
    return env


def render(name: str, **context) -> Markup:
    """The template `name` filled in with `context`: markup, not escaped again where it is put."""
    return Markup(environment().get_template(name).render(**context))


__all__ = ["Cell", "Row", "Markup", "escape", "render", "url"]
