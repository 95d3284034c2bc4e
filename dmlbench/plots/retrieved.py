"""The retrieved-images figure: one row per fixed query, its top-k gallery images under the
headline method and under the baseline side by side, each framed green (the query's class) or
red (another class) and marked ✓ / ✗ for readers who do not tell the colours apart; a banner
names fixture data where the images are synthetic."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image, ImageOps  # noqa: E402

from dmlbench.data.image_files import open_image  # noqa: E402
from dmlbench.plots.canvas import save  # noqa: E402

CORRECT, WRONG, QUERY = "#1a9850", "#d73027", "#2c7bb6"
SIDE = 112  # pixels of a thumbnail's square
GAP = 0.35  # width of the space between the query and each method's block, in image widths


def frame_colour(correct: bool) -> str:
    return CORRECT if correct else WRONG


def thumbnail(path: Path) -> np.ndarray:
    """The image at `path` as the evaluation's centre crop sees it: its centre square, scaled to
    SIDE × SIDE (small images enlarged pixel by pixel), so that the frame is the image's edge."""
    with open_image(path) as image:
        image = image.convert("RGB")
        small = max(image.size) < SIDE
        method = Image.Resampling.NEAREST if small else Image.Resampling.LANCZOS
        return np.asarray(ImageOps.fit(image, (SIDE, SIDE), method))


def _cell(ax, pixels: np.ndarray, colour: str, mark: str | None, below: str) -> None:
    ax.axis("on")
    ax.imshow(pixels)
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_edgecolor(colour)
        spine.set_linewidth(4)
    if mark:
        box = {"facecolor": "white", "edgecolor": "none", "pad": 1}
        ax.text(0.04, 0.96, mark, transform=ax.transAxes, ha="left", va="top", fontsize=11, color=colour, bbox=box)
    ax.set_xlabel(below, fontsize=7, labelpad=2)


def draw(record: dict, path: Path) -> None:
    """Draw `record` (what `dmlbench.report.retrieved.run` writes) to `path`."""
    methods, k = record["methods"], record["k"]
    queries = methods[0]["queries"]
    widths = ([1, GAP] + ([1] * k + [GAP]) * len(methods))[:-1]
    height = 1.3 * len(queries)
    fig, axes = plt.subplots(
        len(queries),
        len(widths),
        figsize=(sum(widths) * 1.05, height),
        gridspec_kw={"width_ratios": widths, "wspace": 0.08, "hspace": 0.3},
        squeeze=False,
    )
    fig.subplots_adjust(left=0, right=1, bottom=0, top=1)  # fractions of the grid: the texts placed in inches
    for ax in axes.flat:
        ax.axis("off")
    starts = [2 + m * (k + 1) for m in range(len(methods))]
    for row, query in enumerate(queries):
        ax = axes[row][0]
        _cell(ax, thumbnail(Path(methods[0]["images"]) / query["path"]), QUERY, None, f"class {query['label']}")
        ax.set_ylabel(f"query {row + 1}", fontsize=8)
        for method, start in zip(methods, starts):
            for j, found in enumerate(method["queries"][row]["neighbours"]):
                image = thumbnail(Path(method["images"]) / found["path"])
                below = f"class {found['label']}, {found['similarity']:.3f}"
                _cell(axes[row][start + j], image, frame_colour(found["correct"]), "✓✗"[not found["correct"]], below)
    axes[0][0].set_title("query", fontsize=8, pad=3)
    for method, start in zip(methods, starts):
        for j in range(k):  # ranks over the first row
            axes[0][start + j].set_title(str(j + 1), fontsize=8, pad=3)
        left, right = axes[0][start].get_position().x0, axes[0][start + k - 1].get_position().x1
        fig.text((left + right) / 2, 1 + 0.3 / height, _heading(method), ha="center", va="bottom", fontsize=9)
    lines = [(_title(record), {"fontsize": 10, "fontweight": "bold"})]
    if record.get("data_note"):
        note = record["data_note"]
        banner = {"facecolor": WRONG, "edgecolor": "none", "pad": 3}
        shown = note.upper() if "fixture" in note else note
        lines.append((shown, {"fontsize": 10, "color": "white", "fontweight": "bold", "bbox": banner}))
    for n, (text, style) in enumerate(reversed(lines)):  # above the headings, in inches
        fig.text(0.5, 1 + (0.8 + 0.32 * n) / height, text, ha="center", va="bottom", **style)
    fig.text(
        0.5,
        -0.32 / height,
        "blue: the query; green ✓: a gallery image of the query's class; red ✗: of another class; "
        "under each image its class and its cosine similarity to the query",
        ha="center",
        va="top",
        fontsize=8,
    )
    save(fig, path, {"toy_data": bool(record.get("data_note"))})


def _heading(method: dict) -> str:
    role = "the paper's headline method" if method["role"] == "headline" else "the baseline"
    counts = f"{method['correct']} of {method['of']} of the query's class"
    if method.get("recall@1") is not None:  # the few queries beside the run's every query
        counts += f" (the run's Recall@1: {100 * method['recall@1']:.1f} %)"
    return f"{method['label']}: {method['method']}, {role}, seed {method['seed']}\n{counts}"


def _title(record: dict) -> str:
    n = len(record["methods"][0]["queries"])
    return (
        f"{record['experiment']}, {record['dataset_label']}: the top-{record['k']} gallery images of {n} fixed "
        f"queries (drawn with seed {record['seed']}, the same for both methods)"
    )
