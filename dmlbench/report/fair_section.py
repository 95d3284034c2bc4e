"""The fair experiment in the HTML report: per dataset a table (rows the methods grouped by paper;
columns separated and concatenated × P@1, RP, MAP@R as mean ± 95 % interval; the best of each
column in bold, the methods whose interval overlaps it underlined; each method's tuned and paper
setting, its trials and capped folds, and its paired test against the best method on separated
MAP@R), the notes (each method's own settings, the methods left out and those without a paper
number, with the reasons), the MAP@R figure, the ranking over the datasets (Friedman test and the
critical-difference diagram), and "paper vs fair"."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from dmlbench.fair.comparisons import ALPHA, versus_best
from dmlbench.core.io import read_json
from dmlbench.report.fair_ranking import RANKED, average_ranks_text
from dmlbench.report.fair_tables import METRICS, MODES, capped, notes
from dmlbench.config.jobs import of as jobs_of
from dmlbench.report.html_templates import Cell, Markup, Row, render as render_template


def caption(dims: list[int], folds: int) -> Markup:
    """What the table shows; `dims`: the fold models' embedding sizes (from the run settings)."""
    return render_template(
        "fair_caption.html",
        size="/".join(str(d) for d in dims),
        joined="/".join(str(folds * d) for d in dims),
        folds=folds,
    )


def _setting(text: str) -> str:
    values = json.loads(text)
    return ", ".join(
        f"{k.split('.')[-1]} {v:.3g}" if isinstance(v, float) else f"{k.split('.')[-1]} {v}" for k, v in values.items()
    )


def _cell(row) -> Cell:
    emphasis = "b" if row["best"] else "u" if row["overlaps_best"] else None
    return Cell(f"{row['mean']:.1f} ± {row['ci95']:.1f}", cls="ours", emphasis=emphasis)


def _versus(test) -> Cell:
    """The cell of the paired test against the dataset's best: Δ and Holm p, the best itself named."""
    if test is None:
        return Cell("best")
    gain, p = test
    if p != p:
        return Cell("–")
    mark = " ✗" if p < ALPHA else " ≈"
    return Cell(f"{gain:+.1f}, p {p:.2g}{mark}")


def dataset_table(frame: pd.DataFrame, dataset: str, papers: dict, pairs: pd.DataFrame) -> Markup:
    rows = frame[frame["dataset"] == dataset]
    mode, metric = RANKED
    ranked = rows[(rows["mode"] == mode) & (rows["metric"] == metric)].set_index("method")["mean"]
    against = versus_best(pairs, ranked, dataset, mode, metric)
    body = []
    for paper, group in rows.groupby("paper", sort=False):
        span = 5 + 2 * len(METRICS)
        body.append(
            Row((Cell(papers.get(paper, paper), header=True, cls="group", colspan=span, style="text-align:left"),))
        )
        for method, mine in group.groupby("method", sort=False):
            mine = mine.set_index(["mode", "metric"])
            first = mine.iloc[0]
            cells = [
                Cell(first["label"], header=True, cls="row"),
                *(_cell(mine.loc[(mode, metric)]) for mode in MODES for metric in METRICS),
                _versus(against.get(method)),
                Cell(_setting(first["tuned"])),
                Cell(_setting(first["paper_setting"]), cls="paper"),
                Cell(f"{int(first['trials'])} ({int(first['diverged_trials'])})"),
                Cell(capped(first)),
            ]
            body.append(Row(tuple(cells)))
    return render_template(
        "fair_dataset.html",
        dataset=dataset,
        modes=MODES,
        metrics=list(METRICS.values()),
        ranked=f"{mode[:3]}. {METRICS[metric]}",
        body=body,
    )


def paper_vs_fair_table(frame: pd.DataFrame, toy: bool) -> Markup:
    def number(value) -> str:
        return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.1f}"

    def text(value) -> str:
        return value if isinstance(value, str) else "–"

    body = [
        Row(
            (
                Cell(r["label"], header=True, cls="row"),
                Cell(r["dataset"]),
                Cell(text(r["paper_recall@1"]), cls="paper"),
                Cell(text(r["quoted_in"]), cls="note"),
                Cell(f"{number(r['fair_p@1'])} ± {number(r['fair_ci95'])}", cls="ours"),
                Cell("–" if toy else number(r["difference"])),
            )
        )
        for _, r in frame.iterrows()
    ]
    return render_template("paper_vs_fair.html", toy=toy, body=body)


def read_paper_vs_fair(path: Path) -> pd.DataFrame:
    """`paper_vs_fair.csv`, the paper's numbers as text (the digits it prints: 80.70)."""
    return pd.read_csv(path, dtype={"paper_recall@1": str})


def ranking_view(record: dict, labels: dict) -> dict:
    """What the section says of the ranking over the datasets: the Friedman test's line, its
    power, the critical difference and the average ranks (or why there is none)."""
    if "none" in record:
        return {"none": record["none"]}
    friedman, alpha = record["friedman"], record["alpha"]
    smallest = record.get("smallest_p")
    return {
        "none": None,
        "datasets": len(record["datasets"]),
        "mode": record["mode"],
        "metric": METRICS[record["metric"]],
        "statistic": f"{friedman['statistic']:.2f}",
        "p": f"{friedman['p']:.3g}",
        "verdict": "the methods' ranks differ" if friedman["p"] < alpha else "no difference between the methods' ranks",
        "alpha": alpha,
        "smallest_p": None if smallest is None else f"{smallest:.3g}",
        "cannot_reject": smallest is not None and smallest >= alpha,
        "critical_difference": f"{record['critical_difference']:.2f}",
        "ahead": len(record["methods"]) - 1,
        "ranks": average_ranks_text(record, labels),
    }


def render(folder: Path, plan, key: str, url) -> Markup:
    """`url(name)`: the address of one of the experiment's files from the page."""
    frame = pd.read_csv(folder / "fair_table.csv")
    pairs = pd.read_csv(folder / "fair_pairwise.csv")
    settings = plan.fair_settings(key)
    labels = {m: about.get("label", m) for m, about in plan.methods.items()}
    return render_template(
        "fair.html",
        key=key,
        folds=settings["folds"],
        trials=settings["trials"],
        repetitions=settings["repetitions"],
        caption=caption(plan.fair_embedding_dims(key), settings["folds"]),
        tables=[dataset_table(frame, d, plan.papers, pairs) for d in dict.fromkeys(frame["dataset"])],
        notes=notes(jobs_of(plan).fair_aggregate_spec(key)),
        map_r_figure=url("fair_map_r.png"),
        ranking=ranking_view(read_json(folder / "fair_ranking.json"), labels),
        cd_figure=url("fair_cd.png"),
        paper_vs_fair=paper_vs_fair_table(read_paper_vs_fair(folder / "paper_vs_fair.csv"), plan.toy_data),
    )
