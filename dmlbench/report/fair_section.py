"""The fair experiment in the HTML report: per dataset a table (rows the methods grouped by paper;
columns separated and concatenated × P@1, RP, MAP@R as mean ± 95 % interval; the best of each
column in bold, the methods whose interval overlaps it underlined; each method's tuned and paper
setting, its trials and capped folds), the notes (each method's own settings, the methods left out
and those without a paper number, with the reasons), the MAP@R figure, and "paper vs fair"."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import pandas as pd

from dmlbench.report.fair_tables import METRICS, MODES, capped, notes


def caption(dims: list[int], folds: int) -> str:
    """What the table shows; `dims`: the fold models' embedding sizes (from the run settings)."""
    size = "/".join(str(d) for d in dims)
    joined = "/".join(str(folds * d) for d in dims)
    return ("Mean ± 95 % interval over the final repetitions, in % (interval: x̄ ± t(0.975, n−1)·s/√n). "
            f"Separated: each fold's {size}-d model alone, averaged over the folds; concatenated: the "
            f"{folds} folds' embeddings joined ({joined}-d). <b>Bold</b>: the best of the column; "
            "<u>underlined</u>: its interval overlaps the best one's. Tuned: the setting chosen on validation "
            "MAP@R; paper: the paper's own (the search's first trial). Capped folds: fold trainings that "
            "reached the epoch cap with patience left (final; search).")


def _setting(text: str) -> str:
    values = json.loads(text)
    return ", ".join(f"{k.split('.')[-1]} {v:.3g}" if isinstance(v, float) else f"{k.split('.')[-1]} {v}"
                     for k, v in values.items())


def _cell(row) -> str:
    text = f"{row['mean']:.1f} ± {row['ci95']:.1f}"
    if row["best"]:
        return f"<td class='ours'><b>{text}</b></td>"
    if row["overlaps_best"]:
        return f"<td class='ours'><u>{text}</u></td>"
    return f"<td class='ours'>{text}</td>"


def dataset_table(frame: pd.DataFrame, dataset: str, papers: dict) -> str:
    rows = frame[frame["dataset"] == dataset]
    head = ("<thead><tr><th rowspan='2'>method</th>" + "".join(f"<th class='group' colspan='3'>{m}</th>" for m in MODES)
            + "<th rowspan='2'>tuned</th><th rowspan='2' class='paper'>paper setting</th>"
            + "<th rowspan='2'>trials (diverged)</th><th rowspan='2'>capped folds</th></tr><tr>"
            + "".join(f"<th>{name}</th>" for _ in MODES for name in METRICS.values()) + "</tr></thead>")
    body = []
    for paper, group in rows.groupby("paper", sort=False):
        body.append(f"<tr><th class='group' colspan='{4 + 2 * len(METRICS)}' style='text-align:left'>"
                    f"{html.escape(str(papers.get(paper, paper)))}</th></tr>")
        for method, mine in group.groupby("method", sort=False):
            mine = mine.set_index(["mode", "metric"])
            first = mine.iloc[0]
            cells = "".join(_cell(mine.loc[(mode, metric)]) for mode in MODES for metric in METRICS)
            body.append(f"<tr><th class='row'>{html.escape(first['label'])}</th>{cells}"
                        f"<td>{html.escape(_setting(first['tuned']))}</td>"
                        f"<td class='paper'>{html.escape(_setting(first['paper_setting']))}</td>"
                        f"<td>{int(first['trials'])} ({int(first['diverged_trials'])})</td>"
                        f"<td>{capped(first)}</td></tr>")
    return (f"<h4>{html.escape(dataset)}</h4><div class='scroll'><table class='paper-table'>{head}<tbody>{''.join(body)}</tbody>"
            f"</table></div>")


def paper_vs_fair_table(frame: pd.DataFrame, toy: bool) -> str:
    def number(value) -> str:
        return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.1f}"

    rows = "".join(
        f"<tr><th class='row'>{html.escape(r['label'])}</th><td>{html.escape(r['dataset'])}</td>"
        f"<td class='paper'>{html.escape(r['paper_recall@1']) if isinstance(r['paper_recall@1'], str) else '–'}</td>"
        f"<td class='note'>{html.escape(str(r['quoted_in'])) if isinstance(r['quoted_in'], str) else '–'}</td>"
        f"<td class='ours'>{number(r['fair_p@1'])} ± {number(r['fair_ci95'])}</td>"
        f"<td>{'–' if toy else number(r['difference'])}</td></tr>" for _, r in frame.iterrows())
    return ("<h4>Paper vs fair</h4><p class='note'>The paper's own Recall@1 (its backbone, embedding size, batch "
            "and model selection, as the catalogue quotes it) beside the fair P@1 (separated): how much of "
            "each claimed number survives one protocol." + (" Fixture data: no difference is shown." if toy else "")
            + "</p><div class='scroll'><table class='paper-table'><thead><tr><th>method</th><th>dataset</th><th class='paper'>paper R@1</th>"
            "<th>quoted in</th><th>fair P@1</th><th>fair − paper</th></tr></thead><tbody>" + rows
            + "</tbody></table></div>")


def read_paper_vs_fair(path: Path) -> pd.DataFrame:
    """`paper_vs_fair.csv`, the paper's numbers as text (the digits it prints: 80.70)."""
    return pd.read_csv(path, dtype={"paper_recall@1": str})


def render(folder: Path, plan, key: str, figure_url: str) -> str:
    frame = pd.read_csv(folder / "fair_table.csv")
    settings = plan.fair_settings(key)
    parts = [f"<p class='note'>Protocol: README \"The fair table\". {settings['folds']} class-disjoint folds of "
             f"the training half, {settings['trials']} trials per method × dataset (the paper's setting first), "
             f"{settings['repetitions']} final repetitions. "
             f"{caption(plan.fair_embedding_dims(key), settings['folds'])}</p>"]
    for dataset in dict.fromkeys(frame["dataset"]):
        parts.append(dataset_table(frame, dataset, plan.papers))
    spec = plan.fair_aggregate_spec(key)
    parts.append("<ul class='note'>" + "".join(f"<li>{html.escape(note)}</li>" for note in notes(spec)) + "</ul>")
    parts.append(f"<figure><img src='{figure_url}' alt='{html.escape(key)}: MAP@R per method'></figure>")
    parts.append(paper_vs_fair_table(read_paper_vs_fair(folder / "paper_vs_fair.csv"), plan.toy_data))
    return "".join(parts)
