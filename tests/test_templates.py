"""The report's HTML lives in Jinja2 templates (dmlbench/report/templates/): no Python string
writes a tag, every template is used, values are escaped and a missing one is an error."""

import io
import re
import tokenize

import jinja2
import pytest

from conftest import REPO
from dmlbench.report import html_templates
from dmlbench.report.html_templates import Cell, Row

TAG = re.compile(
    r"<(/?)(td|th|tr|table|thead|tbody|p|div|span|a|h[1-6]|ul|li|figure|img|details|summary|code|b|u|br)[ >/]"
)


def _strings(path):
    for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            yield token.start[0], token.string


def test_no_python_string_writes_an_html_tag():
    found = [
        f"{path.relative_to(REPO)}:{line}"
        for path in sorted((REPO / "dmlbench").rglob("*.py"))
        for line, text in _strings(path)
        if TAG.search(text)
    ]
    assert found == [], f"HTML belongs in dmlbench/report/templates/: {found}"


def test_every_template_is_used():
    folder = html_templates.FOLDER
    sources = "".join(p.read_text() for p in (REPO / "dmlbench").rglob("*.py"))
    sources += "".join(p.read_text() for p in folder.iterdir())
    unused = [p.name for p in folder.iterdir() if f'"{p.name}"' not in sources]
    assert unused == []


def test_values_are_escaped_and_a_missing_one_is_an_error():
    shown = html_templates.render("summary.html", paragraphs=["a <b> & 'c'"], bullets=[])
    assert shown == "<p>a &lt;b&gt; &amp; &#39;c&#39;</p>"
    with pytest.raises(jinja2.UndefinedError):
        html_templates.render("summary.html", paragraphs=[])


def test_a_cell_shows_its_count_aside_and_emphasis_and_rows_are_compact():
    macros = html_templates.environment().get_template("macros.html").module
    row = Row((Cell("MS", header=True, cls="row", aside="(quoted)"), Cell("71.20", cls="ours", n=3, emphasis="b")))
    assert str(macros.rows([row])) == (
        "<tr><th class='row'>MS <span class='muted'>(quoted)</span></th>"
        "<td class='ours'><b>71.20</b> <span class='n'>n=3</span></td></tr>"
    )
