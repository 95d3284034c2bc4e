"""Two computations of the same quantity, drawn against each other (dro.eq, fastap.grad)."""

from __future__ import annotations

from pathlib import Path

from dmlbench.plots.canvas import plt, save


def agreement(panels: list[tuple[str, object, object]], x_label: str, y_label: str, title: str, path: Path) -> None:
    """One scatter per panel (name, reference values, values computed the other way) around the
    diagonal: two computations of the same quantity (dro.eq, fastap.grad)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4), squeeze=False)
    for ax, (name, reference, other) in zip(axes[0], panels):
        ax.plot(reference.flatten(), other.flatten(), ".", markersize=3)
        lim = float(abs(reference).max()) * 1.05
        ax.plot([-lim, lim], [-lim, lim], "k--", lw=0.8)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel(x_label)
        ax.set_ylabel(y_label)
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    save(fig, path)
