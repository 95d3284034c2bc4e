"""A waterfall from a paper's recipe to the fair one (suite.knobs): the paper's printed number, our
number under the paper's recipe, each knob's change on the cumulative path (a floating bar with its
paired 95 % interval), the fair recipe's number, and suite.fair's tuned number where it ran; the
baseline's numbers at the same steps as a line."""

from __future__ import annotations

import math
from pathlib import Path

from dmlbench.plots.canvas import plt, save

UP, DOWN, TOTAL, PRINTED = "#2e7d32", "#c62828", "#1f4e79", "#9e9e9e"


def draw(recipe: dict, output: Path, spec: dict | None = None) -> None:
    """`recipe`: title, paper_number (or None), start (mean, ci95), steps [(label, change, low,
    high)], end (mean, ci95), tuned (mean, ci95) or None, baseline [values at start, each step]."""
    labels, fig = [], plt.figure(figsize=(max(6.0, 0.9 * (len(recipe["steps"]) + 4)), 4.2))
    ax = fig.add_subplot(111)
    x = 0
    if recipe["paper_number"] is not None:
        ax.bar(x, recipe["paper_number"], color=PRINTED, width=0.6)
        labels.append("paper (printed)")
        x += 1
    start_x = x
    mean, half = recipe["start"]
    ax.bar(x, mean, color=TOTAL, width=0.6, yerr=_err(half), capsize=3)
    labels.append("ours, paper's recipe")
    level = mean
    for label, change, low, high in recipe["steps"]:
        x += 1
        bottom = min(level, level + change)
        ax.bar(x, abs(change), bottom=bottom, color=UP if change >= 0 else DOWN, width=0.6)
        if not math.isnan(low):
            ax.errorbar(x, level + change, yerr=[[change - low], [high - change]], color="black", capsize=3)
        level += change
        labels.append(label)
    x += 1
    mean, half = recipe["end"]
    ax.bar(x, mean, color=TOTAL, width=0.6, yerr=_err(half), capsize=3)
    labels.append("fair recipe")
    if recipe["tuned"] is not None:
        x += 1
        ax.bar(x, recipe["tuned"][0], color=TOTAL, alpha=0.6, width=0.6, yerr=_err(recipe["tuned"][1]), capsize=3)
        labels.append("tuned (suite.fair)")
    baseline = recipe["baseline"]
    ax.plot(range(start_x, start_x + len(baseline)), baseline, "o--", color="black", lw=1, ms=4,
            label=recipe["baseline_label"])
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("Recall@1 (%)")
    ax.set_title(recipe["title"], fontsize=10)
    ax.legend(fontsize=8, loc="lower left")
    save(fig, output, spec)


def _err(half: float):
    return None if half is None or math.isnan(half) else half
