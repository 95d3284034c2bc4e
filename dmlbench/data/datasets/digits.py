"""scikit-learn's handwritten digits (1,797 8×8 images shipped inside scikit-learn), written as
PNG files: digits 0-4 train, 5-9 test. The one real dataset of the demo; no download."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from dmlbench.data.datasets import register
from dmlbench.data.datasets.spec import DatasetSpec, find_file
from dmlbench.data.manifest import SplitStats, half_split


def write_shipped(folder: Path) -> None:
    """Write every digit as `images/<digit>/<n>.png` (grey levels 0-16 scaled to 0-255) and `labels.csv`."""
    from sklearn.datasets import load_digits  # 1-2 s to import: only when the files are written

    digits = load_digits()
    rows = ["path,label"]
    for n, (pixels, label) in enumerate(zip(digits.images, digits.target)):
        rel = f"images/{label}/{n:04d}.png"
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        grey = (pixels / 16.0 * 255).astype(np.uint8)
        Image.fromarray(grey).convert("RGB").save(folder / rel)
        rows.append(f"{rel},{label}")
    (folder / "labels.csv").write_text("\n".join(rows) + "\n")


def parse_digits(root: Path) -> pd.DataFrame:
    """scikit-learn digits written as PNGs by `write_shipped`: digits 0-4 train, 5-9 test."""
    table = pd.read_csv(find_file(root, "labels.csv"))
    return half_split(pd.DataFrame({"path": table["path"], "label": table["label"], "super": ""}))


SPEC = register(
    DatasetSpec(
        "digits",
        "scikit-learn handwritten digits (shipped with scikit-learn)",
        (),
        SplitStats({"train": 901, "test": 896}, {"train": 5, "test": 5}),
        parse_digits,
        pixel_side=8,
        label="digits",
        write_shipped=write_shipped,
        about="scikit-learn's handwritten digits (1,797 real 8×8 images shipped with scikit-learn; digits "
        "0-4 train, 5-9 test), the one real dataset a fresh machine has without a download.",
    )
)
