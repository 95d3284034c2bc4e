"""Waterfalls from a paper's recipe to the fair one (suite.knobs), two panels side by side: the
headline method's Recall@1 (the paper's printed number and ours under the paper's recipe, each
knob's signed share, the higher-order remainder, the fair recipe's number and suite.fair's tuned
number where it ran) and its gap over the baseline (the gap under the paper's recipe, the knobs'
shares of its change, the remainder, the gap under the fair recipe). The y-axis fits the bars;
the 95 % intervals are whiskers that may run past it, never what sets its range."""

from __future__ import annotations

import math
from pathlib import Path

from dmlbench.plots.canvas import plt, save

UP, DOWN, LEVEL, PRINTED, REST = "#2e7d32", "#c62828", "#1f4e79", "#9e9e9e", "#8d6e63"


def draw(recipe: dict, output: Path, spec: dict | None = None) -> None:
    """`recipe`: title; `level` and `gap`, each a panel: start (label, mean, ci95), steps
    [(label, share, low, high)], end (label, mean, ci95), and for `level` also `printed` (or None)
    and `tuned` ((mean, ci95) or None)."""
    width = max(len(recipe["level"]["steps"]), len(recipe["gap"]["steps"])) + 5
    fig, axes = plt.subplots(1, 2, figsize=(max(9.0, 1.1 * width), 4.4))
    _panel(axes[0], recipe["level"], "Recall@1 (%)")
    _panel(axes[1], recipe["gap"], f"gap over {recipe['baseline_label']} (points)")
    fig.suptitle(recipe["title"], fontsize=10)
    fig.tight_layout()
    save(fig, output, spec)


def _panel(ax, panel: dict, ylabel: str) -> None:
    labels, tops, x = [], [], 0
    if panel.get("printed") is not None:
        ax.bar(x, panel["printed"], color=PRINTED, width=0.6)
        labels.append("paper (printed)")
        tops.append(panel["printed"])
        x += 1
    label, level, half = panel["start"]
    _level_bar(ax, x, level, half)
    labels.append(label)
    tops.append(level)
    for label, share, low, high in panel["steps"]:
        x += 1
        colour = REST if label == "remainder" else (UP if share >= 0 else DOWN)
        ax.bar(x, share, bottom=level, color=colour, width=0.6)
        if not math.isnan(low):
            ax.errorbar(x, level + share, yerr=[[share - low], [high - share]], color="black", capsize=3)
        level += share
        tops.append(level)
        labels.append(label)
    x += 1
    label, end, half = panel["end"]
    _level_bar(ax, x, end, half)
    labels.append(label)
    tops.append(end)
    if panel.get("tuned") is not None:
        x += 1
        _level_bar(ax, x, *panel["tuned"], alpha=0.6)
        labels.append("tuned (suite.fair)")
        tops.append(panel["tuned"][0])
    low, high = _fitted(tops, zero=min(tops) <= 0 <= max(tops))
    ax.set_ylim(low, high)
    ax.axhline(0.0, color="black", lw=0.6)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel(ylabel + ("" if low <= 0 else ", axis from " + f"{low:.0f}"), fontsize=9)


def _level_bar(ax, x: int, mean: float, half: float, alpha: float = 1.0) -> None:
    ax.bar(x, mean, color=LEVEL, alpha=alpha, width=0.6)
    if half is not None and not math.isnan(half):
        ax.errorbar(x, mean, yerr=half, color="black", capsize=3)


def _fitted(tops: list[float], zero: bool) -> tuple[float, float]:
    """The y-range of the bars' ends with a margin (at least one point each side)."""
    low, high = min(tops), max(tops)
    margin = max(1.0, 0.15 * (high - low))
    return (min(low - margin, 0.0) if zero else low - margin), high + margin
