"""Every table of the catalogue on the report page as its paper prints it: the rows in the paper's
order with its names, its datasets side by side with its metrics, every number it prints. The
tables are read from the catalogue (`paper_tables`): a paper added there is checked too
(tests/test_add_paper.py adds one in a copy and sees a table that departs from its layout fail)."""

import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from test_report import fake_run

from dmlbench.config.plan import Plan
from dmlbench.report import aggregate, index, layout

from conftest import CONFIG_DIR, full_plan
from dmlbench.config.jobs import of as jobs_of


def paper_tables(plan: Plan) -> list[str]:
    """Every table of a paper in the plan's catalogue: an experiment `<paper>.t<N>` with a `paper:`."""
    return [
        key
        for key, exp in plan.experiments.items()
        if exp.get("paper") and not plan.is_analysis(key) and re.fullmatch(r"[^.]+\.t\d+", key)
    ]


FULL = full_plan()
TABLES = paper_tables(FULL)


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
        elif table["in_head"] and self.attrs.get("rowspan") is None:  # Δ (this suite − paper) follows the paper's
            table["head"].append((text, bool({"paper", "delta"} & set(classes.split()))))
        elif not table["in_head"] and tag == "th" and "reference" in classes.split():
            pass  # a "no training" row of a run table: the suite's, not the paper's
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
    return {
        m.group(1): page[m.start() : marks[i + 1].start() if i + 1 < len(marks) else len(page)]
        for i, m in enumerate(marks)
    }


def check_tables(page: str, preset: str, plan: Plan) -> None:
    """Each paper table of `plan`'s catalogue on the page: its layout's rows and columns, every
    number the catalogue holds for it once, with its digits."""
    sections = page_sections(page, preset)
    for key in paper_tables(plan):
        exp = plan.experiments[key]
        expected = layout.table_layout(exp, index._labels(plan, exp))
        parser = Tables()
        parser.feed(sections[key])
        assert len(parser.tables) == 1, key
        table = parser.tables[0]
        assert table["rows"] == [row.label for row in expected.rows], key
        assert Tables.columns(table) == layout.columns(expected), key
        # every number the paper prints, once, with its digits as the catalogue writes them
        written = Counter(
            value.text
            for source in ("reported", "quoted")
            for per in (exp.get(source) or {}).values()
            for values in per.values()
            for value in values.values()
        )
        assert Counter(t for t in table["paper"] if t != "–") == written, key


def test_tables_not_run_are_the_papers_tables(tmp_path):
    """A preset that runs none of the paper tables: each shows the paper's rows, columns and numbers."""
    plan = Plan.load(CONFIG_DIR, {"preset": "demo", "experiments": ["suite.baselines"], "datasets": ["digits"]})
    index.write(plan, tmp_path / "reports" / "demo" / "index.html")
    check_tables((tmp_path / "reports/demo/index.html").read_text(), "demo", plan)


@pytest.mark.parametrize("key", TABLES)
def test_tables_that_ran_keep_the_papers_layout_with_ours_beside(tmp_path, key):
    """Every paper table, run by the demo (its part of ms.t1, fastap.t2, profs.t1, dro.t1, ephn.t1,
    the whole of the others): the same rows and columns, our values beside the paper's, 'not run'
    where the preset does not train a row on a dataset."""
    plan = Plan.load(CONFIG_DIR, {"preset": "demo", "experiments": [key]})
    files = [
        fake_run(
            tmp_path,
            run,
            {f"recall@{k}": 0.5 for k in (1, 2, 4, 8, 10, 100)} | {"nmi": 0.4, "f1": 0.3, "large_recall@1": 0.2},
        )
        for run in plan.runs(key)
    ]
    aggregate.aggregate(jobs_of(plan).aggregate_spec(key), files, tmp_path / "reports" / "demo" / key)
    index.write(plan, tmp_path / "reports" / "demo" / "index.html")
    page = (tmp_path / "reports/demo/index.html").read_text()
    check_tables(page, "demo", plan)
    section = page_sections(page, "demo")[key]
    assert "<td class='ours'" in section
    planned = {(r.dataset, r.method) for r in plan.runs(key)}
    everything = {(d, m) for d in plan.experiments[key]["datasets"] for m in plan.experiments[key]["methods"]}
    assert ("not run</td>" in section) == bool(everything - planned)


PAPERS = Path(__file__).resolve().parents[2] / "shared" / "papers"  # the papers as text, beside the repository
# (experiment, paper file prefix, the first line of the table's header as the paper's text gives it)
PRINTED = [
    ("dro.t2", "000", "Recall@ K (%)\tCub-200-2011"),
    ("dro.t4", "000", "Recall@ K (%)\t1\t10"),
    ("ms.t1", "003", "\tCUB-200\tCars-196\tSOP\tIn-shop"),
    ("ms.t2", "003", "Recall@K\tCUB-200-2011"),
    ("ms.t3", "003", "Recall@K\tSOP"),
    ("fastap.t2", "002", "FastAP R@1\tResNet-18"),
    ("fastap.t3", "002", "R@k\tProducts"),
]


def paper_table(prefix: str, header: str) -> tuple[list[list[str]], list[list[str]]]:
    """A table of a paper's text file: its header lines and its body lines, as cells (bold removed)."""
    if not PAPERS.is_dir():
        pytest.skip(f"the papers' text is not at {PAPERS}")
    lines = next(PAPERS.glob(f"{prefix}_*.txt")).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    block = []
    for line in lines[start:]:
        if "\t" not in line:
            break
        block.append([re.sub(r"</?b>", "", cell).strip() for cell in line.split("\t")])
    first = next(i for i, cells in enumerate(block) if i and cells[0])  # header lines after the first start empty
    return block[:first], block[first:]


def not_run_page(tmp_path) -> str:
    plan = Plan.load(CONFIG_DIR, {"preset": "demo", "experiments": ["suite.baselines"], "datasets": ["digits"]})
    index.write(plan, tmp_path / "reports" / "demo" / "index.html")
    return (tmp_path / "reports/demo/index.html").read_text()


@pytest.mark.parametrize("key,prefix,header", PRINTED, ids=[p[0] for p in PRINTED])
def test_tables_print_the_papers_rows_headers_and_digits(tmp_path, key, prefix, header):
    """Against the paper's text: as many rows, each row's numbers with the paper's digits (80.70,
    99.20, 97.0) and its dashes, the row names (where the paper's are not LaTeX), the datasets, the
    header bands and the paper's names of the metrics."""
    head, body = paper_table(prefix, header)
    parser = Tables()
    parser.feed(page_sections(not_run_page(tmp_path), "demo")[key])
    table = parser.tables[0]
    assert len(table["rows"]) == len(body)
    cells = iter(table["paper"])
    for label, line in zip(table["rows"], body):
        assert [next(cells) for _ in line[1:]] == [c.replace("-", "–") for c in line[1:]], (label, line)
        if "$" not in line[0]:
            assert label.replace(" ", "") == line[0].replace(" ", ""), (label, line[0])
    assert next(cells, None) is None
    named = [cell for cell in head[0][1:] if cell]
    shown = [group for group, _ in table["groups"]]
    if table["bands"]:  # two header levels: the bands over the groups
        assert [band for band, _ in table["bands"]] == named and [g for g in head[1][1:] if g] == shown
        assert [span for _, span in table["bands"]] == [2, 2]
    elif len(head) == 2:  # datasets over metrics
        assert shown == named
        metrics = [m for _, m in Tables.columns(table)]
        assert [m.removeprefix("R@") for m in metrics] == [c for c in head[1][1:] if c]
    else:  # one header line: the datasets (ms Table 1) or the metrics (dro Table 4)
        assert shown == named or [m.removeprefix("R@") for _, m in Tables.columns(table)] == named


def test_a_joined_row_shows_the_quoted_numbers_and_says_so(tmp_path):
    """dro Table 2's MS row: the paper's own CUB run, Wang et al.'s Cars numbers, one row; a note
    under the table says which are quoted."""
    section = page_sections(not_run_page(tmp_path), "demo")["dro.t2"]
    assert "MS (Wang et al. 2019)" not in re.findall(r"<th class='row[^']*'>([^<]*)", section)
    assert "<td class='paper' title='quoted by the paper: MS (Wang et al. 2019)'>73.2</td>" in section
    note = re.search(r"</table></div><div class='footnotes'>(?:<p>[^<]*</p>)*<p>MS: ([^<]*)</p>", section)
    assert note and "Cars-196" in note.group(1) and "Cub-200-2011" not in note.group(1)


def test_a_layout_label_wins_over_the_methods_label():
    plan = full_plan()
    assert plan.methods["ms"]["label"] != "MS"
    for key in ("dro.t2", "dro.t4"):
        grid = layout.table_layout(plan.experiments[key], index._labels(plan, plan.experiments[key]))
        assert [row.label for row in grid.rows][:2] == ["MS", "LS"]


@pytest.mark.parametrize("key", ["profs.t1", "fastap.t3"])
def test_googlenet_tables_say_under_the_table_that_it_has_batchnorm(tmp_path, key):
    section = page_sections(not_run_page(tmp_path), "demo")[key]
    note = re.search(r"</table></div><div class='footnotes'>(?:<p>[^<]*</p>)*<p>(GoogLeNet[^<]*)</p>", section)
    assert note and "torchvision" in note.group(1) and "BatchNorm" in note.group(1)


def test_ours_is_only_the_papers_and_the_suite_is_this_suite(tmp_path):
    """ms Table 1 ran: the paper's "(ours)" names its authors' row; the suite's columns and caption
    say "this suite"."""
    plan = Plan.load(CONFIG_DIR, {"preset": "demo"})
    files = [fake_run(tmp_path, run, {"recall@1": 0.5}) for run in plan.runs("ms.t1")]
    aggregate.aggregate(jobs_of(plan).aggregate_spec("ms.t1"), files, tmp_path / "reports" / "demo" / "ms.t1")
    index.write(plan, tmp_path / "reports" / "demo" / "index.html")
    section = page_sections((tmp_path / "reports/demo/index.html").read_text(), "demo")["ms.t1"]
    text = re.sub(r"<[^>]+>", " ", section)
    assert re.findall(r"\(?\bours\b\)?", text, flags=re.I) == ["(ours)", "(ours)"]  # row, and the caption on it
    assert "This suite:" in text
    markdown = (tmp_path / "reports/demo/ms.t1/table.md").read_text()
    assert "ours" not in markdown.replace("RAW+VTHM (ours)", "")


def test_the_markdown_table_names_both_header_levels_and_prints_the_papers_digits(tmp_path):
    plan = full_plan()
    runs = [r for r in plan.runs("fastap.t2") if r.dataset == "sop"]
    files = [fake_run(tmp_path, run, {"recall@1": 0.5}) for run in runs]
    aggregate.aggregate(jobs_of(plan).aggregate_spec("fastap.t2"), files, tmp_path / "t2")
    text = (tmp_path / "t2/table.md").read_text()
    assert {"| ResNet-18 Random |", "| ResNet-18 Hard |", "| ResNet-50 Random |", "| ResNet-50 Hard |"} <= {
        line[: line.index("|", 1) + 1] for line in text.splitlines() if line.startswith("| ResNet")
    }
    runs = [r for r in plan.runs("ms.t1") if r.dataset == "cars" and r.method == "raw_dw"]
    files = [fake_run(tmp_path, run, {"recall@1": 0.5}) for run in runs]
    aggregate.aggregate(jobs_of(plan).aggregate_spec("ms.t1"), files, tmp_path / "t1")
    assert " / 80.70 / " in (tmp_path / "t1/table.md").read_text()  # the paper prints 80.70


def test_settings_that_reach_training_are_plain_numbers_the_papers_keep_their_digits():
    """A catalogue number keeps its digits only where it is a paper's; a setting with one would
    reach checkpoints that load built-in types only."""
    from dmlbench.config.loading import PaperNumber

    def carriers(tree, where=()):
        if isinstance(tree, dict):
            return [w for key, value in tree.items() for w in carriers(value, where + (key,))]
        if isinstance(tree, list):
            return [w for i, value in enumerate(tree) for w in carriers(value, where + (i,))]
        return [where] if isinstance(tree, PaperNumber) else []

    plan = full_plan()
    runs = plan.runs("ms.t2") + plan.runs("profs.t1") + plan.runs("dro.t1")
    assert runs and not [w for run in runs for w in carriers(plan.resolve(run))]
    assert isinstance(plan.experiments["ms.t2"]["reported"]["ms"]["cub"]["recall@4"], PaperNumber)
