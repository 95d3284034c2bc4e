"""The fair experiment's outputs: `fair_table.csv` (one row per dataset × method × mode × metric,
with the best of each column and the methods whose interval overlaps it marked), `fair_table.md`,
`paper_vs_fair.csv` (the paper's own Recall@1 beside the fair P@1), `fair_map_r.png` (MAP@R with
its 95 % interval per method, sorted, one panel per dataset), and the statistics between the methods
(`dmlbench.fair.comparisons`): `fair_pairwise.csv` (every pair of methods tested over the
repetitions, Holm within a dataset × mode × metric), `fair_ranking.json` and `fair_cd.png` (the
Friedman test and the Nemenyi critical-difference diagram over the datasets, on separated MAP@R)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from dmlbench.config.loading import printed
from dmlbench.fair import comparisons
from dmlbench.fair.intervals import overlaps
from dmlbench.core.io import atomic_path, read_json, write_json
from dmlbench.plots import canvas
from dmlbench.report import fair_ranking
from dmlbench.report.aggregate import toy_note
from dmlbench.report.fair_ranking import RANKED
from dmlbench.report.markdown import row as markdown_row

MODES = ("separated", "concatenated")
METRICS = {"p@1": "P@1", "r_precision": "RP", "map@r": "MAP@R"}
OWN = "own method"  # the paper column of a method no paper proposes (a user's methods file)


def _files(spec: dict, dataset: str, method: str) -> tuple[dict, dict, tuple[int, int]]:
    folder = Path(spec["folder"].replace("DATASET", dataset).replace("METHOD", method))
    return (
        read_json(folder / "final" / "summary.json"),
        read_json(folder / "search" / "best.json"),
        _search_stops(folder / "search" / "trials.csv"),
    )


def _search_stops(trials_csv: Path) -> tuple[int, int]:
    """(capped, finished) fold trainings of the search: trials.csv's fold<k>_stopped_by, written
    beside best.json by the same step."""
    ends = pd.read_csv(trials_csv).filter(regex=r"^fold\d+_stopped_by$").stack()
    return int((ends == "cap").sum()), int(ends.isin(["cap", "patience"]).sum())


def table(spec: dict) -> pd.DataFrame:
    rows = []
    for dataset in spec["datasets"]:
        for method, about in spec["methods"].items():
            summary, best, (capped_search, search_folds) = _files(spec, dataset, method)
            for mode in MODES:
                for metric, value in summary[mode].items():
                    rows.append(
                        {
                            "dataset": dataset,
                            "method": method,
                            "label": about["label"],
                            "paper": about["paper"] or OWN,
                            "mode": mode,
                            "metric": metric,
                            "mean": 100 * value["mean"],
                            "ci95": 100 * value["ci95"],
                            "repetitions": summary["repetitions"],
                            "tuned": json.dumps(best["params"], sort_keys=True),
                            "paper_setting": json.dumps(best["paper"], sort_keys=True),
                            "trials": best["trials"],
                            "diverged_trials": best["diverged"],
                            "capped_folds": summary["capped_folds"],
                            "final_folds": summary["fold_trainings"],
                            "capped_search_folds": capped_search,
                            "search_folds": search_folds,
                            "validation_map@r": 100 * best["objective"],
                        }
                    )
    frame = pd.DataFrame(rows)
    return _mark_best(frame)


def per_repetition(spec: dict) -> pd.DataFrame:
    """One row per dataset × method × mode × metric × repetition, in %, from each `summary.json`."""
    rows = []
    for dataset in spec["datasets"]:
        for method in spec["methods"]:
            summary = _files(spec, dataset, method)[0]
            for r, numbers in enumerate(summary["per_repetition"]):
                rows += [
                    {
                        "dataset": dataset,
                        "method": method,
                        "mode": mode,
                        "metric": metric,
                        "repetition": r,
                        "value": 100 * value,
                    }
                    for mode in MODES
                    for metric, value in numbers[mode].items()
                ]
    return pd.DataFrame(rows)


def _mark_best(frame: pd.DataFrame) -> pd.DataFrame:
    """`best`: the highest mean of its dataset × mode × metric; `overlaps_best`: its interval
    shares a point with the best one's."""
    frame = frame.copy()
    frame["best"] = False
    frame["overlaps_best"] = False
    for _, group in frame.groupby(["dataset", "mode", "metric"]):
        top = group["mean"].idxmax()
        frame.loc[top, "best"] = True
        best = (frame.at[top, "mean"], frame.at[top, "ci95"])
        for index in group.index:
            frame.loc[index, "overlaps_best"] = index != top and overlaps(
                (frame.at[index, "mean"], frame.at[index, "ci95"]), best
            )
    return frame


def paper_vs_fair(frame: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """Per dataset × method: the paper's Recall@1 (from the catalogue's tables) and the fair P@1."""
    fair = frame[(frame["mode"] == "separated") & (frame["metric"] == "p@1")]
    rows = []
    for _, row in fair.iterrows():
        quoted = (spec["paper_recall"].get(row["method"]) or {}).get(row["dataset"])
        rows.append(
            {
                "dataset": row["dataset"],
                "method": row["method"],
                "label": row["label"],
                "paper_recall@1": printed(quoted[0]) if quoted else None,  # the paper's digits
                "quoted_in": quoted[1] if quoted else None,
                "fair_p@1": row["mean"],
                "fair_ci95": row["ci95"],
                "difference": row["mean"] - float(quoted[0]) if quoted and not spec["toy_data"] else None,
            }
        )
    return pd.DataFrame(rows)


def cell(row) -> str:
    mark = " (best)" if row["best"] else " (≈ best)" if row["overlaps_best"] else ""
    return f"{row['mean']:.2f} ± {row['ci95']:.2f}{mark}"


def capped(row) -> str:
    """Capped fold trainings: final of final, search of search."""
    return (
        f"{int(row['capped_folds'])}/{int(row['final_folds'])}; "
        f"{int(row['capped_search_folds'])}/{int(row['search_folds'])}"
    )


def notes(spec: dict) -> list[str]:
    """The table's notes: the epoch cap, each method's own settings and why, the methods left out
    and the methods whose papers print no number, each with its reason."""
    labels = {m: about["label"] for m, about in spec["methods"].items()}
    caps = "/".join(str(c) for c in spec["epoch_caps"])
    out = [
        f"Epoch cap {caps}: each fold stops once `early_stopping.patience` epochs pass without a better "
        f"validation MAP@R, or at the cap. Capped folds: the fold trainings that reached the cap with "
        f"patience left, final (repetitions × folds); search (finished trials × folds).",
        "First trial: the searched parameters at the paper's setting (for your own method, your "
        "methods file's setting), the search's first trial.",
    ]
    grouped: dict = {}
    for method, needs in spec["necessities"].items():
        grouped.setdefault(tuple(sorted(needs.items())), []).append(labels[method])
    for needs, methods in grouped.items():
        out.append(
            f"Own settings of {', '.join(methods)} (all else is the protocol's): "
            + "; ".join(f"{path}: {why}" for path, why in needs)
        )
    out += [f"Left out: {label}: {why}" for label, why in spec["omitted"].items()]
    out += [f"No paper number for {labels[m]}: {why}" for m, why in spec["no_paper_number"].items() if m in labels]
    return out


def statistics_markdown(frame: pd.DataFrame, pairs: pd.DataFrame, record: dict, spec: dict) -> list[str]:
    """Per dataset, the best method on separated MAP@R and those not told apart from it (paired t,
    Holm); the ranking over the datasets."""
    mode, metric = RANKED
    labels = {m: about["label"] for m, about in spec["methods"].items()}
    lines = [
        "## Statistics",
        "",
        f"Paired t-tests over the repetitions on {mode} {METRICS[metric]}, Holm-corrected over every pair "
        "of methods of a dataset (every pair of every metric: fair_pairwise.csv).",
        "",
    ]
    for dataset in spec["datasets"]:
        rows = frame[(frame["dataset"] == dataset) & (frame["mode"] == mode) & (frame["metric"] == metric)]
        against = comparisons.versus_best(pairs, rows.set_index("method")["mean"], dataset, mode, metric)
        best = next(m for m, test in against.items() if test is None)
        tied = [labels[m] for m, test in against.items() if test is not None and not test[1] < comparisons.ALPHA]
        lines.append(f"- {dataset}: best {labels[best]}; not told apart from it: {', '.join(tied) or 'none'}")
    lines.append("")
    if "none" in record:
        lines.append(f"No ranking over the datasets: {record['none']}.")
    else:
        ranks = fair_ranking.average_ranks_text(record, labels)
        lines.append(
            f"Friedman test over {len(record['datasets'])} datasets: "
            f"χ² = {record['friedman']['statistic']:.2f}, "
            f"p = {record['friedman']['p']:.3g}; "
            f"Nemenyi critical difference {record['critical_difference']:.2f} "
            f"(α = {record['alpha']}). Average ranks: {ranks}. Diagram: fair_cd.png."
        )
    return lines + [""]


def markdown(frame: pd.DataFrame, spec: dict, statistics: list[str]) -> str:
    lines = [
        f"# {spec['title']}",
        "",
        "Mean ± 95 % interval (t(0.975, n−1) · s / √n) over the final repetitions, in %. "
        "(best): the column's highest mean; (≈ best): its interval overlaps the best one's.",
        "",
        *([f"**{toy_note(spec.get('own_data', []))}**", ""] if spec["toy_data"] else []),
    ]
    for dataset in spec["datasets"]:
        rows = frame[frame["dataset"] == dataset]
        header = [f"{mode[:3]}. {name}" for mode in MODES for name in METRICS.values()]
        lines += [
            f"## {dataset}",
            "",
            markdown_row(
                [
                    "method",
                    "paper",
                    *header,
                    "tuned",
                    "first trial",
                    "trials (diverged)",
                    "capped folds (final; search)",
                ]
            ),
            "|---|---|" + "---|" * len(header) + "---|---|---|---|",
        ]
        for method, about in spec["methods"].items():
            mine = rows[rows["method"] == method].set_index(["mode", "metric"])
            cells = [cell(mine.loc[(mode, metric)]) for mode in MODES for metric in METRICS]
            first = mine.iloc[0]
            lines.append(
                markdown_row(
                    [
                        about["label"],
                        about["paper"] or OWN,
                        *cells,
                        first["tuned"],
                        first["paper_setting"],
                        f"{int(first['trials'])} ({int(first['diverged_trials'])})",
                        capped(first),
                    ]
                )
            )
        lines.append("")
    lines += statistics + ["Notes:", ""] + [f"- {note}" for note in notes(spec)]
    return "\n".join(lines)


def figure(frame: pd.DataFrame, spec: dict, path: Path) -> None:
    plt = canvas.plt
    datasets = spec["datasets"]
    methods = len(spec["methods"])
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 0.9 + 0.28 * methods), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        rows = frame[(frame["dataset"] == dataset) & (frame["mode"] == "separated") & (frame["metric"] == "map@r")]
        rows = rows.sort_values("mean")
        y = np.arange(len(rows))
        ax.barh(y, rows["mean"], xerr=rows["ci95"], color="#4c72b0", ecolor="#222", capsize=3)
        ax.set_yticks(y, rows["label"], fontsize=8)
        ax.set_xlabel("MAP@R (%), separated, mean ± 95 % CI")
        ax.set_title(dataset)
        ax.set_xlim(0, min(100, float((rows["mean"] + rows["ci95"]).max()) * 1.15 + 1))
    fig.suptitle(spec["title"], fontsize=10)
    fig.tight_layout()
    canvas.save(fig, path, spec)


def aggregate(spec: dict, output_dir: Path) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    frame = table(spec)
    figure(frame, spec, output_dir / "fair_map_r.png")
    pairs = comparisons.pairwise(per_repetition(spec))
    with atomic_path(output_dir / "fair_pairwise.csv") as tmp:
        pairs.to_csv(tmp, index=False)
    record = fair_ranking.ranking_record(fair_ranking.ranking(frame))
    fair_ranking.ranking_figure(record, spec, output_dir / "fair_cd.png")
    write_json(output_dir / "fair_ranking.json", record)
    with atomic_path(output_dir / "paper_vs_fair.csv") as tmp:
        paper_vs_fair(frame, spec).to_csv(tmp, index=False)
    with atomic_path(output_dir / "fair_table.md") as tmp:
        tmp.write_text(markdown(frame, spec, statistics_markdown(frame, pairs, record, spec)) + "\n")
    with atomic_path(output_dir / "fair_table.csv") as tmp:  # last: the report's marker
        frame.to_csv(tmp, index=False)
