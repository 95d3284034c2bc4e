"""The fair experiment in the HTML report: per dataset a table (rows the methods grouped by paper;
columns separated and concatenated × P@1, RP, MAP@R as mean ± 95 % interval; the best of each
column in bold, the methods whose interval overlaps it underlined; each method's tuned and paper
setting, its trials and capped folds, and its paired test against the best method on separated
MAP@R), the notes (each method's own settings, the methods left out and those without a paper
number, with the reasons), the MAP@R figure, the ranking over the datasets (Friedman test and the
critical-difference diagram), and "paper vs fair"."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import pandas as pd

from dmlbench.fair.comparisons import ALPHA, versus_best
from dmlbench.core.io import read_json
from dmlbench.report.fair_ranking import RANKED, average_ranks_text
from dmlbench.report.fair_tables import METRICS, MODES, capped, notes
from dmlbench.config.jobs import of as jobs_of


def caption(dims: list[int], folds: int) -> str:
    """What the table shows; `dims`: the fold models' embedding sizes (from the run settings)."""
    size = "/".join(str(d) for d in dims)
    joined = "/".join(str(folds * d) for d in dims)
    return (
        "Mean ± 95 % interval over the final repetitions, in % (interval: x̄ ± t(0.975, n−1)·s/√n). "
        f"Separated: each fold's {size}-d model alone, averaged over the folds; concatenated: the "
        f"{folds} folds' embeddings joined ({joined}-d). <b>Bold</b>: the best of the column; "
        "<u>underlined</u>: its interval overlaps the best one's. Tuned: the setting chosen on validation "
        "MAP@R; paper: the paper's own (the search's first trial). Vs best: this method against the "
        "dataset's best method on separated MAP@R, Δ in points, paired t-test over the repetitions (same seeds "
        "and folds), p Holm-corrected over every pair of methods of the dataset; ✗ below the best "
        "(p < 0.05), ≈ not told apart. Capped folds: fold trainings that "
        "reached the epoch cap with patience left (final; search)."
    )


def _setting(text: str) -> str:
    values = json.loads(text)
    return ", ".join(
        f"{k.split('.')[-1]} {v:.3g}" if isinstance(v, float) else f"{k.split('.')[-1]} {v}" for k, v in values.items()
    )


def _cell(row) -> str:
    text = f"{row['mean']:.1f} ± {row['ci95']:.1f}"
    if row["best"]:
        return f"<td class='ours'><b>{text}</b></td>"
    if row["overlaps_best"]:
        return f"<td class='ours'><u>{text}</u></td>"
    return f"<td class='ours'>{text}</td>"


def _versus(test) -> str:
    """The cell of the paired test against the dataset's best: Δ and Holm p, the best itself named."""
    if test is None:
        return "<td>best</td>"
    gain, p = test
    if p != p:
        return "<td>–</td>"
    mark = " ✗" if p < ALPHA else " ≈"
    return f"<td>{gain:+.1f}, p {p:.2g}{mark}</td>"


def dataset_table(frame: pd.DataFrame, dataset: str, papers: dict, pairs: pd.DataFrame) -> str:
    rows = frame[frame["dataset"] == dataset]
    mode, metric = RANKED
    ranked = rows[(rows["mode"] == mode) & (rows["metric"] == metric)].set_index("method")["mean"]
    against = versus_best(pairs, ranked, dataset, mode, metric)
    head = (
        "<thead><tr><th rowspan='2'>method</th>"
        + "".join(f"<th class='group' colspan='3'>{m}</th>" for m in MODES)
        + f"<th rowspan='2' title='paired t over the repetitions, Holm within the dataset'>vs best, "
        f"{mode[:3]}. {METRICS[metric]}: Δ, p (Holm)</th>"
        + "<th rowspan='2'>tuned</th><th rowspan='2' class='paper'>paper setting</th>"
        + "<th rowspan='2'>trials (diverged)</th><th rowspan='2'>capped folds</th></tr><tr>"
        + "".join(f"<th>{name}</th>" for _ in MODES for name in METRICS.values())
        + "</tr></thead>"
    )
    body = []
    for paper, group in rows.groupby("paper", sort=False):
        body.append(
            f"<tr><th class='group' colspan='{5 + 2 * len(METRICS)}' style='text-align:left'>"
            f"{html.escape(str(papers.get(paper, paper)))}</th></tr>"
        )
        for method, mine in group.groupby("method", sort=False):
            mine = mine.set_index(["mode", "metric"])
            first = mine.iloc[0]
            cells = "".join(_cell(mine.loc[(mode, metric)]) for mode in MODES for metric in METRICS)
            body.append(
                f"<tr><th class='row'>{html.escape(first['label'])}</th>{cells}{_versus(against.get(method))}"
                f"<td>{html.escape(_setting(first['tuned']))}</td>"
                f"<td class='paper'>{html.escape(_setting(first['paper_setting']))}</td>"
                f"<td>{int(first['trials'])} ({int(first['diverged_trials'])})</td>"
                f"<td>{capped(first)}</td></tr>"
            )
    return (
        f"<h4>{html.escape(dataset)}</h4><div class='scroll'><table class='paper-table'>{head}"
        f"<tbody>{''.join(body)}</tbody>"
        f"</table></div>"
    )


def paper_vs_fair_table(frame: pd.DataFrame, toy: bool) -> str:
    def number(value) -> str:
        return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.1f}"

    rows = "".join(
        f"<tr><th class='row'>{html.escape(r['label'])}</th><td>{html.escape(r['dataset'])}</td>"
        f"<td class='paper'>{html.escape(r['paper_recall@1']) if isinstance(r['paper_recall@1'], str) else '–'}</td>"
        f"<td class='note'>{html.escape(str(r['quoted_in'])) if isinstance(r['quoted_in'], str) else '–'}</td>"
        f"<td class='ours'>{number(r['fair_p@1'])} ± {number(r['fair_ci95'])}</td>"
        f"<td>{'–' if toy else number(r['difference'])}</td></tr>"
        for _, r in frame.iterrows()
    )
    return (
        "<h4>Paper vs fair</h4><p class='note'>The paper's own Recall@1 (its backbone, embedding size, batch "
        "and model selection, as the catalogue quotes it) beside the fair P@1 (separated): how much of "
        "each claimed number survives one protocol."
        + (" Fixture data: no difference is shown." if toy else "")
        + "</p><div class='scroll'><table class='paper-table'><thead><tr><th>method</th><th>dataset</th>"
        "<th class='paper'>paper R@1</th>"
        "<th>quoted in</th><th>fair P@1</th><th>fair − paper</th></tr></thead><tbody>" + rows + "</tbody></table></div>"
    )


def read_paper_vs_fair(path: Path) -> pd.DataFrame:
    """`paper_vs_fair.csv`, the paper's numbers as text (the digits it prints: 80.70)."""
    return pd.read_csv(path, dtype={"paper_recall@1": str})


def ranking_block(record: dict, figure_url: str, key: str, labels: dict) -> str:
    """The Friedman test's line, the average ranks and the critical-difference diagram."""
    mode, metric = record["mode"], record["metric"]
    if "none" in record:
        return f"<h4>Ranking over the datasets</h4><p class='note'>None: {html.escape(record['none'])}.</p>"
    ranks = html.escape(average_ranks_text(record, labels))
    friedman = record["friedman"]
    verdict = (
        "the methods' ranks differ" if friedman["p"] < record["alpha"] else "no difference between the methods' ranks"
    )
    k, n = len(record["methods"]), len(record["datasets"])
    smallest = record.get("smallest_p")
    power = (
        ""
        if smallest is None
        else f" Its power: with {n} datasets the smallest p it can give (every dataset ranking the methods "
        f"alike) is {smallest:.3g}"
        + (
            f", so it cannot reject at α = {record['alpha']} whatever the results"
            if smallest >= record["alpha"]
            else ""
        )
        + f"; the critical difference is {record['critical_difference']:.2f} of the {k - 1} ranks a "
        f"method can be ahead."
    )
    return (
        f"<h4>Ranking over the datasets</h4><p class='note'>Each method ranked within each of the "
        f"{len(record['datasets'])} datasets by its mean {mode} {METRICS[metric]} (1 the best); Friedman "
        f"χ² = {friedman['statistic']:.2f}, p = {friedman['p']:.3g}: {verdict} at α = {record['alpha']}.{power} "
        f"Nemenyi critical difference {record['critical_difference']:.2f}: methods joined by a bar are not told "
        f"apart. Average ranks: {ranks}. Every pair of methods per dataset: fair_pairwise.csv.</p>"
        f"<figure><img src='{figure_url}' alt='{html.escape(key)}: critical-difference diagram'></figure>"
    )


def render(folder: Path, plan, key: str, url) -> str:
    """`url(name)`: the address of one of the experiment's files from the page."""
    frame = pd.read_csv(folder / "fair_table.csv")
    pairs = pd.read_csv(folder / "fair_pairwise.csv")
    settings = plan.fair_settings(key)
    parts = [
        f"<p class='note'>Protocol: docs/fair-table.md. {settings['folds']} class-disjoint folds of "
        f"the training half, {settings['trials']} trials per method × dataset (the paper's setting first), "
        f"{settings['repetitions']} final repetitions. "
        f"{caption(plan.fair_embedding_dims(key), settings['folds'])}</p>"
    ]
    for dataset in dict.fromkeys(frame["dataset"]):
        parts.append(dataset_table(frame, dataset, plan.papers, pairs))
    spec = jobs_of(plan).fair_aggregate_spec(key)
    parts.append("<ul class='note'>" + "".join(f"<li>{html.escape(note)}</li>" for note in notes(spec)) + "</ul>")
    parts.append(f"<figure><img src='{url('fair_map_r.png')}' alt='{html.escape(key)}: MAP@R per method'></figure>")
    parts.append(
        ranking_block(
            read_json(folder / "fair_ranking.json"),
            url("fair_cd.png"),
            key,
            {m: about.get("label", m) for m, about in plan.methods.items()},
        )
    )
    parts.append(paper_vs_fair_table(read_paper_vs_fair(folder / "paper_vs_fair.csv"), plan.toy_data))
    return "".join(parts)
