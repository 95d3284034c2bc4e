"""The critical-difference diagram (Demšar, JMLR 2006): the methods' average ranks over the
datasets on one axis (rank 1, the best, on the left), each method's name joined to its rank, a
thick bar under each group of methods whose ranks lie within the Nemenyi critical difference (not
told apart), and the critical difference itself drawn to scale above the axis."""

from __future__ import annotations

from pathlib import Path

from dmlbench.plots.canvas import plt, save


def diagram(
    average_ranks: dict[str, float],
    critical_difference: float,
    groups: list[list[str]],
    labels: dict[str, str],
    title: str,
    path: Path,
    spec: dict | None = None,
) -> None:
    """`groups`: runs of methods not told apart, in rank order; `title` may hold several lines."""
    order = sorted(average_ranks, key=average_ranks.get)
    k = len(order)
    half = (k + 1) // 2
    bars = 0.25 * len(groups)  # the room the bars take under the axis
    bottom = -(0.5 * half + 0.6 + bars)
    fig, ax = plt.subplots(figsize=(8, 0.45 * (1.6 - bottom)))
    ax.set_xlim(0.5, k + 0.5)
    ax.set_ylim(bottom, 1.6)
    ax.axis("off")
    ax.hlines(0, 1, k, color="black", lw=1)
    for r in range(1, k + 1):
        ax.vlines(r, 0, 0.15, color="black", lw=1)
        ax.text(r, 0.25, str(r), ha="center", va="bottom", fontsize=8)
    cd = critical_difference
    ax.hlines(1.1, 1, 1 + cd, color="black", lw=1.5)
    ax.vlines([1, 1 + cd], 1.0, 1.2, color="black", lw=1.5)
    ax.text(1 + cd / 2, 1.25, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=8)
    for i, method in enumerate(order):
        rank = average_ranks[method]
        left = i < half
        y = -(i + 1 if left else k - i) * 0.5 - 0.2 - bars
        x_end = 0.6 if left else k + 0.4
        ax.plot([rank, rank, x_end], [0, y, y], color="#333", lw=0.8)
        ax.text(
            x_end + (0.05 if not left else -0.05),
            y,
            f"{labels.get(method, method)} ({rank:.2f})",
            ha="left" if not left else "right",
            va="center",
            fontsize=8,
        )
    for j, members in enumerate(groups):
        low, high = average_ranks[members[0]], average_ranks[members[-1]]
        y = -0.2 - 0.25 * j
        ax.hlines(y, low - 0.03, high + 0.03, color="#c0392b", lw=3)
    ax.set_title(title, fontsize=9)
    save(fig, path, spec)
