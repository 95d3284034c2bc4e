"""A paper's table as the paper prints it: its rows in its order with its names, its datasets side
by side with the paper's metrics (K values) for each, every number of the paper in a column of its
own beside the suite's, whatever the preset ran.

The catalogue declares, per table experiment, `layout.rows` (the paper's row order: method ids of
the experiment and names of the rows the paper quotes from the literature), optionally the paper's
own names for methods (`layout.labels`, over the methods' labels), datasets (`layout.datasets`) and
metrics (`layout.metrics`) where they differ from the catalogue's; `layout.joined` (a method's row
that also shows numbers the paper quotes under another name: dro Table 2's MS and LS rows, its own
CUB runs and Wang et al.'s Cars numbers); `layout.bands` (a header level above the columns: fastap
Table 2's ResNet-18 and ResNet-50); `layout.notes` (footnotes under the table); and, where the paper
turns the table around (fastap Table 2), `layout.datasets_as_rows`. The columns come from the
paper's numbers: for each dataset, the table's metrics the paper gives a number for. The paper's
numbers are printed with the digits the catalogue gives them (80.70 stays 80.70).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from dmlbench.config.loading import printed
from dmlbench.evaluation.names import dataset_label, metric_label
from dmlbench.report.html_templates import Cell, Markup, render as render_template
from dmlbench.report.html_templates import Row as TableRow
from dmlbench.report.table_cells import Cells, reference_labels
from dmlbench.report.verdict_marks import legend, row_verdict
from dmlbench.verdicts.numbers import SELECTED


SUITE = "this suite"  # the suite's own columns (a paper's "ours" is its authors')


@dataclass(frozen=True)
class Row:
    key: str  # method id, quoted row name, or (datasets as rows) dataset id
    label: str
    quoted: bool  # numbers the paper quotes from the literature: never run
    reference: bool = False  # no training (dmlbench.evaluation.reference): the suite's number only
    joined: str | None = None  # a quoted row whose numbers fill this method's row where it has none


@dataclass(frozen=True)
class Group:
    key: str  # dataset id, or (datasets as rows) method id
    label: str
    metrics: tuple[str, ...]  # empty when the rows set the metric (datasets as rows)
    reference: bool = False  # (datasets as rows) a no-training column: the suite's number only


@dataclass(frozen=True)
class Band:
    label: str
    groups: tuple[str, ...]  # keys of the consecutive groups under it


@dataclass(frozen=True)
class Layout:
    rows: tuple[Row, ...]
    groups: tuple[Group, ...]
    datasets_as_rows: bool
    selected: tuple[str, ...]  # metrics the paper reports at the test-selected epoch
    bands: tuple[Band, ...] = ()
    metric_names: tuple[tuple[str, str], ...] = ()  # the paper's names of metrics (S1 for small_recall@1)
    notes: tuple[str, ...] = ()

    def metric_name(self, metric: str) -> str:
        return dict(self.metric_names).get(metric) or metric_label(metric)


def paper_number(exp: dict, row: str, dataset: str, metric: str) -> str | None:
    """The paper's number of a cell as it prints it: its own result (`reported`) or one it quotes
    (`quoted`)."""
    for source in ("reported", "quoted"):
        value = ((exp.get(source) or {}).get(row) or {}).get(dataset, {}).get(metric)
        if value is not None:
            return printed(value)
    return None


def _paper_metrics(exp: dict, dataset: str) -> tuple[str, ...]:
    """The table's metrics the paper gives a number for on `dataset` (all of them if none, or in
    the suite's own experiments, whose quoted rows stand beside every metric it measures)."""
    metrics = (exp.get("table") or {}).get("metrics") or []
    if exp.get("paper") is None:
        return tuple(metrics)
    given = {
        m for source in ("reported", "quoted") for per in (exp.get(source) or {}).values() for m in per.get(dataset, {})
    }
    return tuple(m for m in metrics if m in given) or tuple(metrics)


def table_layout(exp: dict, labels: dict[str, str]) -> Layout:
    """The layout of an experiment's table; `labels` names its methods (and sweep variants,
    `method@variant`, which are rows of their own)."""
    declared = exp.get("layout") or {}
    quoted = set(exp.get("quoted") or {})
    joined = declared.get("joined") or {}
    labels = {**labels, **(declared.get("labels") or {})}
    names = {**{d: dataset_label(d) for d in exp["datasets"]}, **(declared.get("datasets") or {})}
    runs = [f"{m}@{v}" for m in exp["methods"] for v in exp["sweep"]] if exp.get("sweep") else list(exp["methods"])
    keys = declared.get("rows") or [q for q in exp.get("quoted") or {} if q not in joined.values()] + runs
    rows = tuple(Row(k, k if k in quoted else labels.get(k, k), k in quoted, joined=joined.get(k)) for k in keys)
    extra = {
        "selected": tuple((exp.get("table") or {}).get("test_selected") or []),
        "bands": tuple(Band(label, tuple(members)) for label, members in (declared.get("bands") or {}).items()),
        "metric_names": tuple((declared.get("metrics") or {}).items()),
        "notes": tuple(declared.get("notes") or ()) + _joined_notes(exp, rows, names),
    }
    if declared.get("datasets_as_rows"):
        return Layout(
            tuple(Row(d, names.get(d, d), False) for d in exp["datasets"]),
            tuple(Group(r.key, r.label, ()) for r in rows),
            True,
            **extra,
        )
    groups = tuple(Group(d, names.get(d, d), _paper_metrics(exp, d)) for d in exp["datasets"])
    return Layout(rows, groups, False, **extra)


def _joined_notes(exp: dict, rows: tuple[Row, ...], names: dict[str, str]) -> tuple[str, ...]:
    """Where a row shows numbers the paper quotes under another name: which, on which datasets."""
    notes = []
    for row in rows:
        if row.joined:
            where = [names.get(d, d) for d in exp["datasets"] if d in (exp.get("quoted") or {})[row.joined]]
            notes.append(
                f"{row.label}: the paper's numbers on {', '.join(where)} are those it quotes "
                f"from the literature ({row.joined}); the others are its own runs."
            )
    return tuple(notes)


def columns(layout: Layout) -> list[tuple[str, str]]:
    """(group label, metric label) of every value column, as the header shows them."""
    if layout.datasets_as_rows:
        return [(g.label, "") for g in layout.groups]
    return [(g.label, layout.metric_name(m)) for g in layout.groups for m in g.metrics]


def row_metric(exp: dict, dataset: str) -> str:
    """Datasets as rows: the one metric the paper reports for `dataset`."""
    return _paper_metrics(exp, dataset)[0]


def with_references(layout: Layout, summary: pd.DataFrame | None) -> Layout:
    """The layout with the reference rows first (groups last where datasets are the rows)."""
    labels = reference_labels(summary)
    if not labels:
        return layout
    if layout.datasets_as_rows:
        return replace(layout, groups=layout.groups + tuple(Group(k, k, (), True) for k in labels))
    return replace(layout, rows=tuple(Row(k, k, False, True) for k in labels) + layout.rows)


def _paper_cell(text: str | None, quoted_as: str | None = None) -> Cell:
    if text is None:
        return Cell("–", cls="paper")
    return Cell(text, cls="paper", title=f"quoted by the paper: {quoted_as}" if quoted_as else None)


def _bands_row(layout: Layout, widths: dict[str, int], first: list[Cell]) -> TableRow:
    """The header level above the groups (empty where a group is under no band)."""
    cells, under = [], {key: band for band in layout.bands for key in band.groups}
    for group in layout.groups:
        band = under.get(group.key)
        if band is None:
            cells.append(Cell(header=True, colspan=widths[group.key], cls="band"))
        elif group.key == band.groups[0]:
            span = sum(widths[key] for key in band.groups)
            cells.append(Cell(band.label, header=True, colspan=span, cls="band"))
    return TableRow(
        (*first, Cell("dataset" if layout.datasets_as_rows else "method", header=True, rowspan=3, cls="row"), *cells)
    )


def _verdict_head(judged: bool, rows: int) -> list[Cell]:
    return [Cell("verdict", header=True, rowspan=rows, cls="row-verdict")] if judged else []


def render(exp: dict, layout: Layout, summary: pd.DataFrame | None, caption: str) -> Markup:
    """The table as HTML: a header row of groups, a header row of metrics with the suite's value
    (mean ± 95 % interval, n), the paper's and the difference with its verdict (Δ) in sub-columns;
    one row per paper row. Without `summary` (not run by this
    preset) only the paper's sub-columns are shown; without a paper (the suite's own
    experiments) only ours."""
    cells = Cells(summary) if summary is not None else None
    layout = with_references(layout, summary)
    # paper sub-columns for a paper's numbers; a suite experiment's quoted rows fill its own columns
    with_paper = cells is None or bool(exp.get("reported") or (exp.get("quoted") and exp.get("paper") is not None))
    per_value = (3 if with_paper else 1) if cells is not None else 1  # ours, paper, Δ
    judged = cells is not None and with_paper and bool(exp.get("reported"))  # a verdict column, first and pinned
    row_name = "dataset" if layout.datasets_as_rows else "method"
    head1 = [] if layout.bands else [*_verdict_head(judged, 2), Cell(row_name, header=True, rowspan=2, cls="row")]
    head2 = []
    widths = {}
    for group in layout.groups:
        metrics = group.metrics or ("",)
        extra = sum(1 for m in metrics if m in layout.selected) if cells is not None else 0
        widths[group.key] = (1 if group.reference else per_value) * len(metrics) + extra
        head1.append(
            Cell(
                group.label,
                header=True,
                colspan=widths[group.key],
                cls="group reference" if group.reference else "group",
            )
        )
        for metric in metrics:
            name = layout.metric_name(metric) if metric else SUITE
            if cells is None:
                head2.append(Cell(name, header=True) if metric else Cell("paper", header=True, cls="paper"))
                continue
            paper = (
                [Cell("paper", header=True, cls="paper"), Cell("Δ", header=True, cls="delta")]
                if with_paper and not group.reference
                else []
            )
            if metric in layout.selected:
                head2 += [Cell(f"{name} last", header=True, cls="ours"), Cell(f"{name} sel.", header=True, cls="ours")]
            else:
                head2.append(Cell(name, header=True, cls="ours"))
            head2 += paper
    body = []
    for row in layout.rows:
        verdicts = []
        kind = "row" + (" quoted" if row.quoted else "") + (" reference" if row.reference else "")
        parts = [Cell(row.label, header=True, cls=kind, aside="(quoted)" if row.quoted else None)]
        for group in layout.groups:
            if layout.datasets_as_rows:
                method, dataset, metrics = group.key, row.key, (row_metric(exp, row.key),)
            else:
                method, dataset, metrics = row.key, group.key, group.metrics
            for metric in metrics:
                paper = paper_number(exp, method, dataset, metric)
                quoted_as = None
                if paper is None and row.joined:
                    paper, quoted_as = paper_number(exp, row.joined, dataset, metric), row.joined
                if cells is not None:
                    if row.quoted and not with_paper:  # the suite's own table: the quoted number in our column
                        parts.append(_paper_cell(paper, row.key if paper is not None else None))
                    elif row.quoted:
                        parts += [Cell("quoted", cls="muted")] * (2 if metric in layout.selected else 1)
                    elif metric in layout.selected and row.reference:
                        parts += [cells.ours(dataset, method, metric)] * 2
                    elif metric in layout.selected:
                        parts += [cells.ours(dataset, method, metric), cells.ours(dataset, method, metric + SELECTED)]
                    else:
                        parts.append(cells.ours(dataset, method, metric))
                if with_paper and not group.reference:
                    parts.append(_paper_cell(paper, quoted_as if paper is not None else None))
                    if cells is not None:
                        judged_on = metric + SELECTED if metric in layout.selected else metric
                        parts.append(
                            Cell(cls="delta")
                            if paper is None or row.quoted
                            else cells.delta(dataset, method, judged_on)
                        )
                        verdicts += [] if paper is None or row.quoted else [cells.verdict(dataset, method, judged_on)]
        parts = ([row_verdict(verdicts)] if judged else []) + parts
        body.append(TableRow(tuple(parts), cls="reference" if row.reference else None))
    head = ([_bands_row(layout, widths, _verdict_head(judged, 3))] if layout.bands else []) + [
        TableRow(tuple(head1)),
        TableRow(tuple(head2)),
    ]
    return render_template(
        "paper_table.html",
        head=head,
        body=body,
        notes=layout.notes,
        legend=legend() if cells is not None and with_paper and exp.get("reported") else "",
        caption=caption,
    )
