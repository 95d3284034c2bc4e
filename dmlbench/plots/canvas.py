"""Matplotlib without a display, and one way to write a figure (atomically, stamped when it shows
fixture data)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from dmlbench.core.io import atomic_path  # noqa: E402

STAMP = "fixture data: tests the pipeline, not the paper's numbers"


def save(fig, path: Path, spec: dict | None = None) -> None:
    """Write `fig`; a figure of training runs on fixture data carries a stamp saying so, so that
    it is safe on its own (copied into a slide, say)."""
    if spec is not None and spec.get("toy_data"):
        below = fig.get_tightbbox(fig.canvas.get_renderer()).y0 - 0.08  # inches, under every label
        fig.text(
            0.5,
            below / fig.get_figheight(),
            STAMP,
            ha="center",
            va="top",
            fontsize=8,
            color="#b00000",
            bbox={"facecolor": "white", "edgecolor": "#b00000", "pad": 2},
        )
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
