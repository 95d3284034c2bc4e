"""Figures of an experiment: Recall@K per dataset (paper values overlaid) and learning curves."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from dmlbench.core.errors import DmlbenchError  # noqa: E402
from dmlbench.core.io import RUN_RECORD_FIX, read_record  # noqa: E402
from dmlbench.plots.canvas import save  # noqa: E402

MIN_SPAN = 10.0  # percentage points: a y-axis of recalls spans at least this much


def honest_ylim(ax, low: float, high: float) -> None:
    """A recall axis of at least MIN_SPAN points around the data, within [0, 100]: a one-seed
    difference of a point does not fill the panel."""
    middle, half = (low + high) / 2, max((high - low) / 2 * 1.15, MIN_SPAN / 2)
    bottom = max(0.0, middle - half)
    ax.set_ylim(bottom, min(100.0, bottom + 2 * half))


def _axes(n: int, title: str):
    fig, axes = plt.subplots(1, max(n, 1), figsize=(4.2 * max(n, 1), 3.4), squeeze=False)
    fig.suptitle(title, fontsize=10)
    return fig, axes[0]


RECALL = r"^(?:(?P<list>small|medium|large)_)?recall@(?P<k>\d+)$"


def recall_curves(summary: pd.DataFrame, spec: dict, path: Path) -> None:
    """Recall@K against K (log scale) per dataset (VehicleID: per test list); ours (last epoch) as
    lines with ±std bands, paper as crosses. A panel with a single K is a bar chart (a line
    through one point would read as a curve); datasets without recall are left out."""
    parts = summary["metric"].str.extract(RECALL)
    recall = summary[parts["k"].notna()].copy()
    recall["k"] = parts.loc[recall.index, "k"].astype(int)
    recall["panel"] = recall["dataset"] + parts.loc[recall.index, "list"].map(
        lambda v: f" ({v})" if isinstance(v, str) else ""
    )
    panels = list(dict.fromkeys(recall["panel"]))
    fig, axes = _axes(len(panels), f"{spec['experiment']}: Recall@K")
    for ax, panel in zip(axes, panels):
        rows_of = recall[recall["panel"] == panel]
        ks = sorted(rows_of["k"].unique())
        values = pd.concat([rows_of["mean"] + rows_of["std"].fillna(0), rows_of["paper"].dropna()])
        if len(ks) == 1:
            _recall_bars(ax, rows_of, spec)
            ax.set_ylim(0, min(100.0, 1.1 * float(values.max())))  # bars start at zero
        else:
            _recall_lines(ax, rows_of, spec, ks)
            honest_ylim(ax, float(values.min()), float(values.max()))
        ax.set_title(panel)
        ax.set_ylabel("Recall@K (%)" if len(ks) > 1 else f"Recall@{ks[0]} (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save(fig, path, spec)


REFERENCE_LEGEND = {
    "initial": "no training: network",
    "trunk": "no training: trunk features",
    "pixels": "no training: raw pixels",
}


def _is_reference(rows: pd.DataFrame) -> pd.Series:
    return rows["reference"].fillna(False).astype(bool) if "reference" in rows else pd.Series(False, rows.index)


def _recall_lines(ax, rows_of: pd.DataFrame, spec: dict, ks: list[int]) -> None:
    for method, rows in rows_of[_is_reference(rows_of)].groupby("method", sort=False):
        rows = rows.sort_values("k")  # no training: grey dashed, beneath the runs, named by kind
        ax.plot(
            rows["k"],
            rows["mean"],
            linestyle="--",
            marker=".",
            color="grey",
            alpha=0.8,
            linewidth=1,
            label=REFERENCE_LEGEND.get(rows["kind"].iloc[0], method),
        )
    for method, rows in rows_of[~_is_reference(rows_of)].groupby("method"):
        rows = rows.sort_values("k")
        label = spec["method_labels"].get(method, method)
        (line,) = ax.plot(rows["k"], rows["mean"], marker="o", label=label)
        ax.fill_between(
            rows["k"],
            rows["mean"] - rows["std"].fillna(0),
            rows["mean"] + rows["std"].fillna(0),
            color=line.get_color(),
            alpha=0.2,
        )
        paper = rows.dropna(subset=["paper"])
        if len(paper):
            ax.plot(paper["k"], paper["paper"], "x", color=line.get_color(), markersize=8, label=f"{label} (paper)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("K")


def _recall_bars(ax, rows_of: pd.DataFrame, spec: dict) -> None:
    rows_of = rows_of.reset_index(drop=True)
    labels = [
        REFERENCE_LEGEND.get(kind, m) if reference else spec["method_labels"].get(m, m)
        for m, kind, reference in zip(
            rows_of["method"], rows_of.get("kind", [None] * len(rows_of)), _is_reference(rows_of)
        )
    ]
    reference = _is_reference(rows_of)
    for chosen, color, name in ((~reference, "tab:blue", "ours"), (reference, "lightgrey", "ours, no training")):
        if chosen.any():
            ax.bar(
                rows_of.index[chosen],
                rows_of.loc[chosen, "mean"],
                yerr=rows_of.loc[chosen, "std"].fillna(0),
                capsize=3,
                color=color,
                label=name,
            )
    paper = rows_of["paper"].notna()
    if paper.any():
        ax.plot(rows_of.index[paper], rows_of.loc[paper, "paper"], "x", color="k", markersize=9, label="paper")
    ax.set_xticks(range(len(rows_of)), labels, rotation=30, ha="right", fontsize=7)
    ax.set_xlabel("method")


PER_EPOCH = ("recall@1", "large_recall@1")  # what a run evaluates every epoch (VehicleID: its large list)


def _epochs(path: Path) -> list[dict]:
    """A run's per-epoch record, or a one-line error naming it and what to do."""
    remedy = (
        "the learning curves need it; its run's numbers are unchanged. Restore it, or delete the run's "
        "metrics.json and rerun to train the run again"
    )
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise DmlbenchError(f"{path} is missing: {remedy}") from None
    epochs = []
    for number, line in enumerate(lines, 1):
        try:
            epochs.append(json.loads(line))
        except json.JSONDecodeError:
            raise DmlbenchError(
                f"{path}: line {number} is not a JSON record (damaged or cut short): {remedy}"
            ) from None
    return epochs


def learning_curves(run_dirs: list[Path], spec: dict, path: Path) -> None:
    """Training loss per epoch (top row) and test Recall@1 where recorded (bottom row; VehicleID's
    large list), per dataset; a dataset without per-epoch evaluation says so in its panel."""
    rows = []
    for run_dir in run_dirs:
        config = read_record(run_dir / "config.json", RUN_RECORD_FIX)["run"]
        rows += [{**config, **epoch} for epoch in _epochs(run_dir / "epochs.jsonl")]
    history = pd.DataFrame(rows)
    datasets = list(dict.fromkeys(history["dataset"]))
    recall_of = {
        d: next((m for m in PER_EPOCH if m in history and history.loc[history["dataset"] == d, m].notna().any()), None)
        for d in datasets
    }
    has_recall = any(recall_of.values())
    n_rows = 2 if has_recall else 1
    fig, axes = plt.subplots(
        n_rows, len(datasets), figsize=(4.2 * len(datasets), 3.2 * n_rows), squeeze=False, sharex="col"
    )
    fig.suptitle(f"{spec['experiment']}: learning curves", fontsize=10)
    for column, dataset in enumerate(datasets):
        metric = recall_of[dataset]
        for (method, seed), run in history[history["dataset"] == dataset].groupby(["method", "seed"]):
            label = f"{spec['method_labels'].get(method, method)} (seed {seed})"
            axes[0, column].plot(run["epoch"], run["loss"], marker=".", label=label)
            if metric:
                evaluated = run.dropna(subset=[metric])
                axes[1, column].plot(evaluated["epoch"], 100 * evaluated[metric], marker="o", label=label)
        axes[0, column].set_title(dataset)
        axes[0, column].set_ylabel("training loss")
        axes[0, column].legend(fontsize=7)
        if metric:
            evaluated = 100 * history.loc[history["dataset"] == dataset, metric].dropna()
            honest_ylim(axes[1, column], float(evaluated.min()), float(evaluated.max()))
            axes[1, column].set_ylabel(f"test {metric.replace('_recall', ' Recall').replace('recall', 'Recall')} (%)")
        elif has_recall:
            axes[1, column].axis("off")
            axes[1, column].text(
                0.5,
                0.5,
                "no per-epoch evaluation",
                ha="center",
                va="center",
                transform=axes[1, column].transAxes,
                color="#777",
            )
        axes[-1, column].set_xlabel("epoch")
        last = int(history.loc[history["dataset"] == dataset, "epoch"].max())
        for ax in axes[:, column]:
            ax.grid(alpha=0.3)
            ax.set_xlim(0.5, last + 0.5)  # whole epochs, also for a run of one epoch
            ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    save(fig, path, spec)


def sweep_plot(summary: pd.DataFrame, spec: dict, path: Path) -> None:
    """Metrics against the swept setting (e.g. the pair ratio of each batch size), one line per
    method and metric, ±std bars, per dataset (dro Figures 1, 2, 5; ephn Figure 4); the paper's
    numbers, where it prints any, as crosses.
    `plot.metric` names one metric, `plot.metrics` several (dro Figure 2: every recall@k of its
    table); `plot.log2_x` draws the x axis in powers of two."""
    plot = spec["plot"]
    metrics = plot.get("metrics") or [plot["metric"]]
    rows = summary[summary["metric"].isin(metrics)].copy()
    rows["base"] = rows["method"].str.split("@").str[0]
    rows["x"] = rows["method"].str.split("@").str[1].map(plot["x"])
    datasets = list(dict.fromkeys(rows["dataset"]))
    shown = ", ".join(metrics)
    fig, axes = _axes(len(datasets), f"{spec['experiment']}: {shown} against {plot['x_label']}")
    for ax, dataset in zip(axes, datasets):
        for (base, metric), part in rows[rows["dataset"] == dataset].groupby(["base", "metric"], sort=False):
            part = part.sort_values("x")
            label = spec["method_labels"].get(part["method"].iloc[0], base).split(" (")[0]
            name = label if len(metrics) == 1 else f"{label}, {metric}"
            bars = ax.errorbar(part["x"], part["mean"], yerr=part["std"].fillna(0), marker="o", capsize=3, label=name)
            paper = part.dropna(subset=["paper"])
            if len(paper):  # the points the paper prints as numbers
                ax.plot(
                    paper["x"],
                    paper["paper"],
                    "x",
                    color=bars.lines[0].get_color(),
                    markersize=9,
                    label=f"{name} (paper)",
                )
        if plot.get("log2_x"):
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(rows["x"].dropna().unique()), [f"{x:g}" for x in sorted(rows["x"].dropna().unique())])
        shown_here = rows[rows["dataset"] == dataset]
        values = pd.concat(
            [
                shown_here["mean"] - shown_here["std"].fillna(0),
                shown_here["mean"] + shown_here["std"].fillna(0),
                shown_here["paper"].dropna(),
            ]
        )
        honest_ylim(ax, float(values.min()), float(values.max()))
        ax.set_title(dataset)
        ax.set_xlabel(plot["x_label"])
        ax.set_ylabel(f"{shown} (%)" if len(metrics) == 1 else "recall (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save(fig, path, spec)
