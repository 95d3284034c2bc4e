"""Figures drawn from what runs record about their triplets (`dmlbench.training.recording`):
ephn Figure 6 (triplet scatter diagrams per epoch) and Figure 3 (where triplets move)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dmlbench.core.io import RUN_RECORD_FIX, atomic_path, read_record  # noqa: E402
from dmlbench.plots.canvas import save  # noqa: E402

QUADRANTS = ("top-right", "top-left", "bottom-left", "bottom-right")


def _recorded(run_dirs: list[Path], folder: str) -> list[tuple[dict, int, pd.DataFrame]]:
    """(run keys, epoch, table) of every `<run>/<folder>/after_epoch<E>.csv`, in run order."""
    found = []
    for run_dir in run_dirs:
        run = read_record(run_dir / "config.json", RUN_RECORD_FIX)["run"]
        for path in sorted(
            (run_dir / folder).glob("after_epoch*.csv"), key=lambda p: int(p.stem.removeprefix("after_epoch"))
        ):
            found.append((run, int(path.stem.removeprefix("after_epoch")), pd.read_csv(path)))
    if not found:
        raise FileNotFoundError(
            f"no run recorded {folder}/after_epoch*.csv; set record."
            f"{'scatter_epochs' if folder == 'scatter' else 'probe.epochs'} "
            f"for this experiment"
        )
    return found


def _label(spec: dict, run: dict) -> str:
    return f"{run['dataset']}: {spec['method_labels'].get(run['method'], run['method'])}, seed {run['seed']}"


def triplet_scatter(run_dirs: list[Path], spec: dict, output_dir: Path) -> None:
    """One row per run, one column per recorded epoch: every training image as the point
    (closest-positive S_ap, closest-negative S_an); blue below the diagonal (correct), red above."""
    found = _recorded(run_dirs, "scatter")
    runs = list(dict.fromkeys(_label(spec, run) for run, _, _ in found))
    epochs = sorted({epoch for _, epoch, _ in found})
    fig, axes = plt.subplots(len(runs), len(epochs), figsize=(2.4 * len(epochs), 2.4 * len(runs)), squeeze=False)
    fig.suptitle(
        f"{spec['experiment']}: triplet scatter diagrams (x: S_ap of the closest positive, "
        f"y: S_an of the closest negative)",
        fontsize=9,
    )
    rows = []
    for run, epoch, table in found:
        ax = axes[runs.index(_label(spec, run)), epochs.index(epoch)]
        table = table.dropna(subset=["s_ap", "s_an"])
        correct = table["s_ap"] > table["s_an"]
        ax.scatter(table["s_ap"][correct], table["s_an"][correct], s=2, c="tab:blue", alpha=0.5)
        ax.scatter(table["s_ap"][~correct], table["s_an"][~correct], s=2, c="tab:red", alpha=0.5)
        ax.plot([-1, 1], [-1, 1], color="k", linewidth=0.6)
        low = min(0.0, float(np.floor(10 * min(table["s_ap"].min(), table["s_an"].min())) / 10))
        ax.set_xlim(low, 1.02)
        ax.set_ylim(low, 1.02)
        ax.set_title(f"{_label(spec, run)}\nafter epoch {epoch}: {100 * correct.mean():.0f} % correct", fontsize=7)
        ax.set_xlabel("S_ap (closest positive)", fontsize=7)
        ax.set_ylabel("S_an (closest negative)", fontsize=7)
        ax.tick_params(labelsize=6)
        rows.append(
            {
                **run,
                "after_epoch": epoch,
                "images": len(table),
                "correct_share": float(correct.mean()),
                "mean_s_ap": float(table["s_ap"].mean()),
                "mean_s_an": float(table["s_an"].mean()),
            }
        )
    for ax in axes.ravel():
        if not ax.has_data():
            ax.axis("off")
    fig.tight_layout(rect=(0, 0.03, 1, 0.97))
    save(fig, output_dir / "triplet_scatter.png", spec)
    with atomic_path(output_dir / "scatter.csv") as tmp:
        pd.DataFrame(rows).to_csv(tmp, index=False)


def quadrant(d_ap: pd.Series, d_an: pd.Series) -> pd.Series:
    """Direction of a triplet's move on the scatter diagram (x: S_ap, y: S_an); "none" if it did not move."""
    names = np.select(
        [(d_ap > 0) & (d_an > 0), (d_ap < 0) & (d_an > 0), (d_ap < 0) & (d_an < 0), (d_ap > 0) & (d_an < 0)],
        list(QUADRANTS),
        default="none",
    )
    return pd.Series(names, index=d_ap.index)


def triplet_moves(run_dirs: list[Path], spec: dict, output_dir: Path) -> None:
    """ephn Figure 3: per run and direction, the triplets (at their starting point) that moved that
    way during the probes; blue = initial phase (first probe), red = later phases. The share of
    each direction per phase goes to `moves.csv` and the panel titles."""
    found = _recorded(run_dirs, "moves")
    runs = list(dict.fromkeys(_label(spec, run) for run, _, _ in found))
    first = min(epoch for _, epoch, _ in found)
    fig, axes = plt.subplots(len(runs), len(QUADRANTS), figsize=(2.6 * len(QUADRANTS), 2.6 * len(runs)), squeeze=False)
    fig.suptitle(
        f"{spec['experiment']}: direction of triplet moves (blue: probe after epoch {first}, red: later probes)",
        fontsize=9,
    )
    rows = []
    titles: dict = {}
    for run, epoch, table in found:
        moved = quadrant(table["s_ap_after"] - table["s_ap"], table["s_an_after"] - table["s_an"])
        row = runs.index(_label(spec, run))
        colour = "tab:blue" if epoch == first else "tab:red"
        for column, name in enumerate(QUADRANTS):
            part = table[moved == name]
            axes[row, column].scatter(part["s_ap"], part["s_an"], s=3, c=colour, alpha=0.5)
            share = float((moved == name).mean()) if len(table) else float("nan")
            titles.setdefault((row, column), []).append(f"e{epoch}: {100 * share:.0f} %")
            rows.append({**run, "after_epoch": epoch, "direction": name, "triplets": int(len(part)), "share": share})
    for (row, column), parts in titles.items():
        axes[row, column].set_title(f"{runs[row]}\n{QUADRANTS[column]}: " + ", ".join(parts), fontsize=7)
    for ax in axes.ravel():
        ax.plot([-1, 1], [-1, 1], color="k", linewidth=0.5)
        ax.set_xlim(-0.2, 1.02)
        ax.set_ylim(-0.2, 1.02)
        ax.set_xlabel("S_ap (before the step)", fontsize=7)
        ax.set_ylabel("S_an (before the step)", fontsize=7)
        ax.tick_params(labelsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 0.97))
    save(fig, output_dir / "triplet_moves.png", spec)
    with atomic_path(output_dir / "moves.csv") as tmp:
        pd.DataFrame(rows).to_csv(tmp, index=False)
