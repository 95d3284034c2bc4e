"""The fair table's ranking of the methods over the datasets: the Friedman test and the Nemenyi
critical difference on separated MAP@R (`dmlbench.fair.comparisons`), its record
(`fair_ranking.json`) and its diagram (`fair_cd.png`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dmlbench.fair import comparisons
from dmlbench.plots import canvas
from dmlbench.plots.critical_difference import diagram

RANKED = ("separated", "map@r")  # the mode and metric of the figure, the ranking and "vs best"


def ranking(frame: pd.DataFrame):
    """`comparisons.ranking` of the methods' mean separated MAP@R, datasets × methods."""
    mode, metric = RANKED
    rows = frame[(frame["mode"] == mode) & (frame["metric"] == metric)]
    return comparisons.ranking(rows.pivot(index="dataset", columns="method", values="mean"))


def ranking_record(result) -> dict:
    mode, metric = RANKED
    about = {
        "mode": mode,
        "metric": metric,
        "method": "Friedman test over the datasets, Nemenyi critical difference (Demšar 2006)",
    }
    if isinstance(result, str):
        return {**about, "none": result}
    return {**about, **result.as_dict(), "groups": comparisons.cliques(result)}


def average_ranks_text(record: dict, labels: dict) -> str:
    """'EPHN L2nd 1.00, DRO-TopK_M 2.50, …': the methods by their average rank, best first."""
    return ", ".join(
        f"{labels.get(m, m)} {r:.2f}" for m, r in sorted(record["average_ranks"].items(), key=lambda item: item[1])
    )


def ranking_figure(record: dict, spec: dict, path: Path) -> None:
    """The critical-difference diagram, or a figure saying why there is none."""
    labels = {m: about["label"] for m, about in spec["methods"].items()}
    if "none" in record:
        fig, ax = canvas.plt.subplots(figsize=(8, 1.2))
        ax.axis("off")
        ax.text(
            0.5,
            0.5,
            f"No critical-difference diagram: {record['none']}.",
            ha="center",
            va="center",
            fontsize=9,
            wrap=True,
        )
        canvas.save(fig, path, spec)
        return
    title = (
        f"{spec['title']}: average rank of separated MAP@R over {len(record['datasets'])} datasets\n"
        f"Friedman χ² = {record['friedman']['statistic']:.2f}, p = {record['friedman']['p']:.3g}; "
        f"bars: not told apart (Nemenyi, α = {record['alpha']})"
    )
    diagram(record["average_ranks"], record["critical_difference"], record["groups"], labels, title, path, spec)
