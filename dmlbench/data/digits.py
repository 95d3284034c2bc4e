"""scikit-learn's handwritten digits (1,797 8×8 images shipped inside scikit-learn) as PNG files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits


def write(folder: Path) -> None:
    """Write every digit as `images/<digit>/<n>.png` (grey levels 0-16 scaled to 0-255) and `labels.csv`."""
    digits = load_digits()
    rows = ["path,label"]
    for n, (pixels, label) in enumerate(zip(digits.images, digits.target)):
        rel = f"images/{label}/{n:04d}.png"
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        grey = (pixels / 16.0 * 255).astype(np.uint8)
        Image.fromarray(grey).convert("RGB").save(folder / rel)
        rows.append(f"{rel},{label}")
    (folder / "labels.csv").write_text("\n".join(rows) + "\n")
