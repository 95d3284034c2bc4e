"""Optional pre-resized image cache: decode and shrink every image once instead of every epoch."""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from dmlbench.data import manifest
from dmlbench.errors import DatasetError
from dmlbench.io import atomic_dir

UNREADABLE = (OSError, UnidentifiedImageError, SyntaxError, ValueError)  # what PIL raises on bad files


def build(source_manifest: Path, output: Path, shorter_side: int) -> None:
    """Write every image of `source_manifest` resized so its shorter side is `shorter_side`
    (never enlarged) as JPEG (quality 95), and a manifest pointing at the copies.

    Every image is decoded here, so this is where unreadable or truncated images are found: all of
    them are named, and nothing is written."""
    source_manifest, output = Path(source_manifest), Path(output)
    table = manifest.read(source_manifest)
    base = source_manifest.parent
    images = output.parent / "images"
    with atomic_dir(images) as tmp:
        copies, bad = {}, []  # an image listed in several splits (VehicleID) is cached once
        for rel in table["path"]:
            if rel in copies:
                continue
            n = len(copies)
            target = Path(f"{n // 1000:04d}") / f"{n:07d}.jpg"
            try:
                _resize_copy(base / rel, tmp / target, shorter_side)
            except UNREADABLE as error:
                bad.append(f"{base / rel} ({error})")
            copies[rel] = str(Path("images") / target)
            if (n + 1) % 5000 == 0:
                print(f"  cached {n + 1} images", file=sys.stderr)
        paths = [copies[rel] for rel in table["path"]]
        if bad:
            raise DatasetError(
                f"{len(bad)} of {len(table)} images of {source_manifest} cannot be decoded, e.g. "
                + "; ".join(bad[:5]) + ". Replace those files with intact copies (or re-extract "
                "the dataset), then rerun.")
    cached = table.copy()
    cached["path"] = paths
    manifest.write(cached, output)


def _resize_copy(source: Path, target: Path, shorter_side: int) -> None:
    with Image.open(source) as image:
        image = image.convert("RGB")
        scale = shorter_side / min(image.size)
        if scale < 1:
            size = (round(image.width * scale), round(image.height * scale))
            image = image.resize(size, Image.Resampling.BILINEAR)
        target.parent.mkdir(parents=True, exist_ok=True)
        image.save(target, quality=95)
