"""Every table of the catalogue on the report page as its paper prints it: the rows in the paper's
order with its names, its datasets side by side with its metrics, every number it prints."""

import re
from collections import Counter
from html.parser import HTMLParser

import pytest

from conftest import CONFIG_DIR
from dmlbench.config.plan import Plan
from dmlbench.report import aggregate, index, layout
from test_report import fake_run

FULL = Plan.load(CONFIG_DIR, {"preset": "full"})
TABLES = [k for k in FULL.experiments if not FULL.is_analysis(k) and re.fullmatch(r"[a-z]+\.t\d+", k)]


class Tables(HTMLParser):
    """Each <table class='paper-table'>: its row labels, (group, metric) of its value columns, the
    header bands above the groups (label, colspan) and the paper's numbers as printed."""

    def __init__(self):
        super().__init__()
        self.tables, self.cell, self.attrs = [], None, {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and "paper-table" in (attrs.get("class") or ""):
            self.tables.append({"groups": [], "bands": [], "head": [], "rows": [], "paper": [], "in_head": True})
        elif tag == "tbody" and self.tables:
            self.tables[-1]["in_head"] = False
        elif tag in ("th", "td") and self.tables:
            self.cell, self.attrs = [], attrs

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)

    def handle_endtag(self, tag):
        if tag not in ("th", "td") or self.cell is None or not self.tables:
            return
        table, text, classes = self.tables[-1], "".join(self.cell).strip(), self.attrs.get("class") or ""
        if table["in_head"] and "band" in classes.split():
            table["bands"].append((text, int(self.attrs.get("colspan", 1))))
        elif table["in_head"] and "group" in classes:
            table["groups"].append((text, int(self.attrs.get("colspan", 1))))
        elif table["in_head"] and self.attrs.get("rowspan") is None:
            table["head"].append((text, "paper" in classes))
        elif not table["in_head"] and tag == "th":
            table["rows"].append(text.removesuffix("(quoted)").strip())
        elif not table["in_head"] and "paper" in classes.split():
            table["paper"].append(text)
        self.cell = None

    @staticmethod
    def columns(table) -> list[tuple[str, str]]:
        cells, out = iter(table["head"]), []
        for group, span in table["groups"]:
            metrics = []
            for _ in range(span):
                text, paper = next(cells)
                if paper and span == 1:  # datasets as rows, not run: the paper's column alone
                    metrics.append("")
                elif not paper:  # the paper's sub-column follows each metric of ours
                    name = re.sub(r" (last|sel\.)$", "", text)
                    metrics.append("" if name == layout.SUITE else name)
            out += [(group, m) for m in dict.fromkeys(metrics)]
        return out


def page_sections(page: str, preset: str) -> dict[str, str]:
    """The HTML of each experiment's section, by experiment id."""
    marks = list(re.finditer(rf"<h3 id='{re.escape(preset)}-([^']+)'>", page))
    return {m.group(1): page[m.start(): marks[i + 1].start() if i + 1 < len(marks) else len(page)]
            for i, m in enumerate(marks)}


def check_tables(page: str, preset: str, plan: Plan) -> None:
    sections = page_sections(page, preset)
    for key in TABLES:
        exp = plan.experiments[key]
        expected = layout.table_layout(exp, index._labels(plan, exp))
        parser = Tables()
        parser.feed(sections[key])
        assert len(parser.tables) == 1, key
        table = parser.tables[0]
        assert table["rows"] == [row.label for row in expected.rows], key
        assert Tables.columns(table) == layout.columns(expected), key
        # every number the paper prints, once, with its digits as the catalogue writes them
        written = Counter(value.text for source in ("reported", "quoted") for per in (exp.get(source) or {}).values()
                          for values in per.values() for value in values.values())
        assert Counter(t for t in table["paper"] if t != "–") == written, key


def test_tables_not_run_are_the_papers_tables(tmp_path):
    """A preset that runs none of the paper tables: each shows the paper's rows, columns and numbers."""
    plan = Plan.load(CONFIG_DIR, {"preset": "demo", "experiments": ["suite.baselines"], "datasets": ["digits"]})
    index.write(plan, tmp_path / "reports" / "demo" / "index.html")
    check_tables((tmp_path / "reports/demo/index.html").read_text(), "demo", plan)


@pytest.mark.parametrize("key", ["ms.t1", "fastap.t2", "profs.t1", "dro.t1", "ephn.t1"])
def test_tables_that_ran_keep_the_papers_layout_with_ours_beside(tmp_path, key):
    """The demo runs part of these: the same rows and columns, our values beside the paper's,
    'not run' where the preset does not train a row on a dataset."""
    plan = Plan.load(CONFIG_DIR, {"preset": "demo"})
    files = [fake_run(tmp_path, run, {f"recall@{k}": 0.5 for k in (1, 2, 4, 8, 10, 100)}
                      | {"nmi": 0.4, "f1": 0.3, "large_recall@1": 0.2}) for run in plan.runs(key)]
    aggregate.aggregate(plan.aggregate_spec(key), files, tmp_path / "reports" / "demo" / key)
    index.write(plan, tmp_path / "reports" / "demo" / "index.html")
    page = (tmp_path / "reports/demo/index.html").read_text()
    check_tables(page, "demo", plan)
    section = page_sections(page, "demo")[key]
    assert "<td class='ours'" in section
    planned = {(r.dataset, r.method) for r in plan.runs(key)}
    everything = {(d, m) for d in plan.experiments[key]["datasets"] for m in plan.experiments[key]["methods"]}
    assert ("not run</td>" in section) == bool(everything - planned)
