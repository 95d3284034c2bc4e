"""Optional pre-resized image cache: decode and shrink every image once instead of every epoch."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, UnidentifiedImageError

from dmlbench.data import image_files, manifest, parallel
from dmlbench.core.errors import DatasetError
from dmlbench.core.io import atomic_dir, removed_if_left_empty

UNREADABLE = (OSError, UnidentifiedImageError, SyntaxError, ValueError)  # what PIL raises on bad files


def build(
    source_manifest: Path, output: Path, shorter_side: int, workers: int = 1, max_pixels: int | None = None
) -> None:
    """Write every image of `source_manifest` resized so its shorter side is `shorter_side`
    (never enlarged) as JPEG (quality 95), and a manifest pointing at the copies; `workers`
    processes decode blocks of images side by side; an image of more than `max_pixels` pixels
    (`data.max_image_pixels`, None: PIL's limit) stops the build.

    Every image is decoded here, so this is where unreadable or truncated images are found: all of
    them are named, and nothing is written (not even the cache's folder)."""
    source_manifest, output = Path(source_manifest), Path(output)
    image_files.set_limit(max_pixels)
    with removed_if_left_empty(output.parent):
        _build(source_manifest, output, shorter_side, workers)


def _build(source_manifest: Path, output: Path, shorter_side: int, workers: int) -> None:
    table = manifest.read(source_manifest)
    base = source_manifest.parent
    images = output.parent / "images"
    copies: dict[str, Path] = {}  # an image listed in several splits (VehicleID) is cached once
    for rel in table["path"]:
        if rel not in copies:
            n = len(copies)
            copies[rel] = Path(f"{n // 1000:04d}") / f"{n:07d}.jpg"
    with atomic_dir(images) as tmp:
        pairs = [(str(base / rel), str(tmp / target)) for rel, target in copies.items()]
        tasks = [(start, part, shorter_side) for start, part in parallel.blocks(pairs)]
        bad = [
            problem for found in parallel.map_blocks(_copy_block, tasks, workers, "images cached") for problem in found
        ]
        if bad:
            raise DatasetError(
                f"{len(bad)} of {len(table)} images of {source_manifest} cannot be decoded, e.g. "
                + "; ".join(bad[:5])
                + ". Replace those files with intact copies (or re-extract "
                "the dataset), then rerun."
            )
    cached = table.copy()
    cached["path"] = [str(Path("images") / copies[rel]) for rel in table["path"]]
    manifest.write(cached, output)


def _copy_block(start: int, pairs: list[tuple[str, str]], shorter_side: int) -> list[str]:
    """Resized copies of a block of (source, target) images; the problems of those that fail."""
    bad = []
    for source, target in pairs:
        try:
            _resize_copy(Path(source), Path(target), shorter_side)
        except UNREADABLE as error:
            bad.append(f"{source} ({error})")
    return bad


def _resize_copy(source: Path, target: Path, shorter_side: int) -> None:
    with image_files.open_image(source) as image:
        image = image.convert("RGB")
        scale = shorter_side / min(image.size)
        if scale < 1:
            size = (round(image.width * scale), round(image.height * scale))
            image = image.resize(size, Image.Resampling.BILINEAR)
        target.parent.mkdir(parents=True, exist_ok=True)
        image.save(target, quality=95)
