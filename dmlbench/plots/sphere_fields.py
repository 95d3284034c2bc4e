"""ephn Figures 2 and 5: similarity changes over the triplet scatter diagram and their vector fields."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dmlbench.plots.canvas import save  # noqa: E402

ARROW_EVERY = 5  # vector fields draw every 5th grid point


def _grid(part: pd.DataFrame, column: str):
    wide = part.pivot(index="s_an", columns="s_ap", values=column)
    return wide.columns.to_numpy(), wide.index.to_numpy(), wide.to_numpy()


def _change_map(ax, part, column, bad_when_positive: bool, title: str) -> None:
    """The change as colour (red where it works against the loss), with its zero line."""
    x, y, z = _grid(part, column)
    limit = float(np.nanmax(np.abs(z))) or 1.0
    cmap = "RdBu_r" if bad_when_positive else "RdBu"
    ax.imshow(z, origin="lower", extent=(x[0], x[-1], y[0], y[-1]), cmap=cmap, vmin=-limit, vmax=limit, aspect="equal")
    if np.nanmin(z) < 0 < np.nanmax(z):
        ax.contour(x, y, z, levels=[0.0], colors="k", linewidths=0.8)
    ax.set_title(title, fontsize=11)


def _vector_field(ax, part, p: float, title: str) -> None:
    x, y, u = _grid(part, f"total_dS_ap_p{p}")
    _, _, v = _grid(part, f"total_dS_an_p{p}")
    pick = (slice(None, None, ARROW_EVERY), slice(None, None, ARROW_EVERY))
    xx, yy = np.meshgrid(x, y)
    up = v[pick] > 0
    for mask, colour in ((up, "tab:red"), (~up, "tab:blue")):
        ax.quiver(
            xx[pick][mask],
            yy[pick][mask],
            u[pick][mask],
            v[pick][mask],
            color=colour,
            angles="xy",
            pivot="tail",
            width=0.006,
        )
    ax.set_xlim(x[0] - 0.05, x[-1] + 0.05)
    ax.set_ylim(y[0] - 0.05, y[-1] + 0.05)
    ax.set_aspect("equal")
    ax.set_title(title, fontsize=11)


def draw_fields(data: pd.DataFrame, setting: dict, titles: dict, title: str, path: Path) -> list[Path]:
    """One figure per γ (`path`, then `<stem>_gamma<γ>.png` beside it for the other γ), so that its
    text stays legible at page width: four rows, ΔS_ap and ΔS_an (eqs. 9-10), ΔS_total for each p
    (eqs. 11-12), vector fields of ΔS_total (red arrows: the negative is pulled closer); two
    columns per loss. Returns the files written."""
    loss_names, gammas, ps = setting["losses"], setting["gammas"], setting["ps"]
    written = []
    for g, gamma in enumerate(gammas):
        target = path if g == 0 else path.with_name(f"{path.stem}_gamma{gamma}{path.suffix}")
        _draw_gamma(data, loss_names, gamma, ps, titles, title, target)
        written.append(target)
    return written


def _draw_gamma(data: pd.DataFrame, loss_names, gamma: float, ps, titles: dict, title: str, path: Path) -> None:
    rows, cols = 2 + len(ps), 2 * len(loss_names)
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols, 2.6 * rows), squeeze=False)
    fig.suptitle(
        f"{title}, γ = {gamma}\nx: S_ap, y: S_an; red = positive pushed away (ΔS_ap < 0) or "
        "negative pulled closer (ΔS_an > 0)",
        fontsize=13,
    )
    for k, loss in enumerate(loss_names):
        part = data[(data["loss"] == loss) & (data["gamma"] == gamma)]
        name = titles[loss]
        _change_map(axes[0, 2 * k], part, "dS_ap", False, f"ΔS_ap, {name}")
        _change_map(axes[0, 2 * k + 1], part, "dS_an", True, f"ΔS_an, {name}")
        for i, p in enumerate(ps):
            _change_map(axes[1 + i, 2 * k], part, f"total_dS_ap_p{p}", False, f"ΔS_ap tot. p={p}, {name}")
            _change_map(axes[1 + i, 2 * k + 1], part, f"total_dS_an_p{p}", True, f"ΔS_an tot. p={p}, {name}")
        for i, p in enumerate(ps[:2]):
            _vector_field(axes[1 + len(ps), 2 * k + i], part, p, f"field p={p}, {name}")
    for ax in axes.ravel():
        ax.tick_params(labelsize=9)
        if not ax.has_data():
            ax.axis("off")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    save(fig, path)
