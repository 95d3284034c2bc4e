"""Does the methods' ranking survive a change of trunk? From an experiment swept over trunks
(`suite.modern`): Recall@1 of every method on each trunk (mean ± 95 % interval over seeds), the
papers' own numbers on their trunks (BN-Inception, GoogLeNet or ResNet-50, from `paper_numbers`),
the trunk's features without training, and Kendall's τ between the rankings of each pair of
trunks (scipy's τ-b with its two-sided p-value)."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

from dmlbench.core.io import atomic_path  # noqa: E402
from dmlbench.plots.canvas import save  # noqa: E402

PAPERS = "the papers' trunks (their printed numbers)"
METRIC = "recall@1"


def recall_at_1(summary: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """One row per dataset × method × trunk: Recall@1 (%), its 95 % half-width, n; the papers'
    printed numbers, for the methods run on that dataset, as the trunk `PAPERS` (no interval)."""
    runs = summary[~summary["reference"].astype(bool) & (summary["metric"] == METRIC)]
    rows = []
    for r in runs.itertuples():
        method, _, variant = r.method.partition("@")
        trunk = spec["trunks"].get(variant, {}).get("label", variant)
        rows.append(
            {"dataset": r.dataset, "method": method, "trunk": trunk, "recall@1": r.mean, "half": r.half, "n": r.n}
        )
    ran = {(r["dataset"], r["method"]) for r in rows}
    for method, per_dataset in (spec.get("paper_recall") or {}).items():
        for dataset, (printed, source) in per_dataset.items():
            if (dataset, method) in ran:
                rows.append(
                    {
                        "dataset": dataset,
                        "method": method,
                        "trunk": PAPERS,
                        "recall@1": float(printed),
                        "half": np.nan,
                        "n": np.nan,
                        "source": source,
                    }
                )
    return pd.DataFrame(rows, columns=["dataset", "method", "trunk", "recall@1", "half", "n", "source"])


def untrained(summary: pd.DataFrame, spec: dict) -> dict[tuple[str, str], float]:
    """(dataset, trunk label) → Recall@1 of the trunk's own features, no training step (the
    table's "pooled features" reference row); none where the table has no reference rows."""
    if "name" not in summary or "kind" not in summary:
        return {}
    refs = summary[summary["reference"].astype(bool) & (summary["metric"] == METRIC) & (summary["kind"] == "trunk")]
    out = {}
    for trunk in spec["trunks"].values():
        for r in refs[refs["name"].str.contains(f"-{trunk['backbone']}-", regex=False)].itertuples():
            out[(r.dataset, trunk["label"])] = r.mean
    return out


def kendall(values: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and pair of trunks: Kendall's τ-b between the methods' Recall@1 on the two, over
    the methods both have, with its p-value (none where fewer than two methods are shared)."""
    rows = []
    for dataset, block in values.groupby("dataset", sort=False):
        table = block.pivot_table(index="method", columns="trunk", values="recall@1")
        for a, b in combinations(list(dict.fromkeys(block["trunk"])), 2):  # trunks in the order drawn
            both = table[[a, b]].dropna()
            tau, p = stats.kendalltau(both[a], both[b]) if len(both) >= 2 else (np.nan, np.nan)
            rows.append(
                {"dataset": dataset, "trunk_a": a, "trunk_b": b, "methods": len(both), "tau": tau, "p_value": p}
            )
    return pd.DataFrame(rows, columns=["dataset", "trunk_a", "trunk_b", "methods", "tau", "p_value"])


def trunk_ranking(run_dirs: list[Path], spec: dict, output_dir: Path) -> None:
    """`trunk_ranking.png`, `ranking.csv` (every point drawn) and `kendall.csv` + `kendall.md`,
    from the experiment's `table.csv` (written before the figures)."""
    summary = pd.read_csv(output_dir / "table.csv")
    values = recall_at_1(summary, spec)
    taus = kendall(values)
    plain = untrained(summary, spec)
    for name, frame in (("ranking.csv", values), ("kendall.csv", taus)):
        with atomic_path(output_dir / name) as tmp:
            frame.to_csv(tmp, index=False)
    with atomic_path(output_dir / "kendall.md") as tmp:
        tmp.write_text(_kendall_markdown(taus))
    _draw(values, plain, spec, output_dir / "trunk_ranking.png")


def _kendall_markdown(taus: pd.DataFrame) -> str:
    lines = [
        "# Does the ranking survive the change of trunk?",
        "",
        "Kendall's τ-b between the methods' Recall@1 on two trunks (1: the same order; 0: unrelated; "
        "−1: reversed), two-sided p-value (scipy.stats.kendalltau), over the methods both have.",
        "",
        "| dataset | trunk | trunk | methods | τ | p |",
        "|---|---|---|---|---|---|",
    ]
    for r in taus.itertuples():
        tau = "" if pd.isna(r.tau) else f"{r.tau:+.2f}"
        p = "" if pd.isna(r.p_value) else f"{r.p_value:.3f}"
        lines.append(f"| {r.dataset} | {r.trunk_a} | {r.trunk_b} | {r.methods} | {tau} | {p} |")
    return "\n".join(lines) + "\n"


def _draw(values: pd.DataFrame, plain: dict, spec: dict, path: Path) -> None:
    datasets = list(dict.fromkeys(values["dataset"]))
    trunks = list(dict.fromkeys([PAPERS, *values["trunk"]]))
    trunks = [t for t in trunks if t in set(values["trunk"])]
    colours = {t: plt.cm.tab10(i) for i, t in enumerate(trunks)}
    fig, axes = plt.subplots(len(datasets), 1, figsize=(9, 3.2 * max(1, len(datasets))), squeeze=False)
    for ax, dataset in zip(axes[:, 0], datasets):
        block = values[values["dataset"] == dataset]
        methods = list(dict.fromkeys(block["method"]))
        width = 0.8 / max(1, len(trunks))
        for i, trunk in enumerate(trunks):
            points = block[block["trunk"] == trunk].set_index("method")
            x = [m for m in methods if m in points.index]
            positions = [methods.index(m) + (i - (len(trunks) - 1) / 2) * width for m in x]
            half = points.loc[x, "half"].fillna(0).to_numpy() if x else []
            ax.errorbar(
                positions,
                points.loc[x, "recall@1"] if x else [],
                yerr=half,
                fmt="o",
                color=colours[trunk],
                label=trunk,
                capsize=3,
            )
            if (dataset, trunk) in plain:
                ax.axhline(plain[(dataset, trunk)], color=colours[trunk], linestyle="--", linewidth=0.8)
        ax.set_xticks(range(len(methods)))
        ax.set_xlim(-0.5, len(methods) - 0.5)  # each method its own slot, however few
        ax.set_xticklabels(methods, rotation=20, fontsize=8)
        ax.set_ylabel("Recall@1 (%)")
        ax.set_title(f"{dataset}: Recall@1 by method and trunk (dashes: the trunk's features, no training)", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=8, loc="best")
    fig.tight_layout()
    save(fig, path, spec)
