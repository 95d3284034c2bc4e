"""Tiny synthetic datasets written in each real dataset's exact distribution format.

The archives have the publishers' file names, folder layout and list formats (`.mat` included),
so the real acquisition and parsing code runs on them. Image content depends on the class through
three continuous factors (hue, stripe angle, stripe frequency), so a network learns an embedding
that also separates the unseen test classes. `fixture.json` records the split statistics the
fixture was built with; the manifest check compares against it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dmlbench.data import datasets
from dmlbench.data.manifest import SplitStats

SIZE = {"n_classes": 16, "per_class": 8, "image_size": 48}  # a preset's `data.fixture` changes these


def folder_name(size: dict | None) -> str:
    """The folder of the fixtures of `size` (a preset's `data.fixture`) under `<data root>/fixture/`:
    presets whose fixtures differ keep theirs apart, presets with the same fixtures share them."""
    size = {**SIZE, **(size or {})}
    name = f"{size['n_classes']}x{size['per_class']}-{size['image_size']}px"
    return f"{name}-{size['layout']}" if size.get("layout") else name


def write(
    dataset: str,
    folder: Path,
    n_classes: int = SIZE["n_classes"],
    per_class: int = SIZE["per_class"],
    seed: int = 0,
    image_size: int = SIZE["image_size"],
    layout: str | None = None,
) -> SplitStats:
    """Write the fixture archives of `dataset` into `folder` and return their split statistics.
    `layout` chooses among a dataset's distribution layouts (Cars196: original, devkit, folders)."""
    folder.mkdir(parents=True, exist_ok=True)
    if n_classes < 4 or n_classes % 2 or per_class < 2:
        raise ValueError("fixtures need an even number of classes ≥ 4 and ≥ 2 images per class")
    extra = {"layout": layout} if layout else {}
    writer = datasets.get(dataset).write_fixture
    if writer is None:
        raise ValueError(f"{dataset} has no fixture writer: its data ship with a package")
    stats = writer(folder, n_classes, per_class, np.random.default_rng(seed), image_size, **extra)
    (folder / "fixture.json").write_text(json.dumps(stats.to_dict(), indent=2) + "\n")
    return stats


def read_stats(folder: Path) -> SplitStats:
    data = json.loads((folder / "fixture.json").read_text())
    return SplitStats(data["images"], data["classes"])
