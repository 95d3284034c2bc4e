"""Decoded-image store: every image of a manifest decoded once and resized to side × side (what
training and evaluation do first), as uint8 in one memory-mapped array, so no epoch decodes a
JPEG again. Random crop, flip and scaling then run on whole batches, on the GPU when the run is on
one (`dmlbench.data.batches`).

Folder: `pixels.npy` (N × side × side × 3, uint8, row i = manifest row i) and `store.json` (count,
side, sha256 of the manifest it was built from). Built in a temporary folder and renamed when
complete, so a killed build leaves nothing that would be used; a store whose manifest, count or
side do not match is refused.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from dmlbench.data import image_files, manifest, parallel
from dmlbench.data.cache import UNREADABLE
from dmlbench.core.errors import DatasetError
from dmlbench.core.io import (
    DiskFullError,
    atomic_dir,
    read_json,
    remove_stale_temporaries,
    removed_if_left_empty,
    set_aside,
    write_json,
)

VERSION = 1


def size_bytes(count: int, side: int) -> int:
    return count * side * side * 3


def manifest_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def build(
    manifest_path: Path,
    output: Path,
    side: int,
    log=lambda m: print(m, file=sys.stderr),
    workers: int = 1,
    max_pixels: int | None = None,
) -> None:
    """Decode and resize every image of `manifest_path` into the store folder `output`, in
    `workers` processes side by side (each writes its blocks of rows into the memory map); an
    image of more than `max_pixels` pixels (None: PIL's limit) stops the build. A build that
    fails leaves no folder (not even the empty one Snakemake makes for the output)."""
    manifest_path, output = Path(manifest_path), Path(output)
    image_files.set_limit(max_pixels)
    with removed_if_left_empty(output):
        _build(manifest_path, output, side, log, workers)


def _build(manifest_path: Path, output: Path, side: int, log, workers: int) -> None:
    table = manifest.read(manifest_path)
    need = size_bytes(len(table), side)
    log(f"store {output}: {len(table)} images at {side}×{side} → {need / 2**30:.2f} GiB")
    output.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(output)  # a killed build's half-written store, before counting free space
    free = shutil.disk_usage(output.parent).free
    if free < need:
        raise DiskFullError(
            f"the store {output} needs {need / 2**30:.2f} GiB and {output.parent} has "
            f"{free / 2**30:.2f} GiB free: free space, or set data.store: false"
        )
    base = manifest_path.parent
    with atomic_dir(output) as tmp:
        pixels = np.lib.format.open_memmap(
            tmp / "pixels.npy", mode="w+", dtype=np.uint8, shape=(len(table), side, side, 3)
        )
        del pixels  # the header is written; the workers fill the rows
        sources = [str(base / rel) for rel in table["path"]]
        tasks = [(start, part, str(tmp / "pixels.npy"), side) for start, part in parallel.blocks(sources)]
        bad = [
            problem
            for found in parallel.map_blocks(_store_block, tasks, workers, "images stored", log)
            for problem in found
        ]
        if bad:
            raise DatasetError(
                f"{len(bad)} of {len(table)} images of {manifest_path} cannot be decoded, "
                f"e.g. " + "; ".join(bad[:5]) + ". " + _remedy(manifest_path)
            )
        write_json(
            tmp / "store.json",
            {
                "version": VERSION,
                "count": len(table),
                "side": side,
                "manifest": str(manifest_path),
                "manifest_sha256": manifest_sha256(manifest_path),
            },
        )


def _remedy(manifest_path: Path) -> str:
    """What to do about images that cannot be decoded: the suite's cached copies (a
    `cache<size>/manifest.csv`) are set aside so that the next run makes the cache again from the
    originals; the originals are the user's to replace."""
    if not re.fullmatch(r"cache\d+", manifest_path.parent.name):
        return "Replace them with intact copies, then rerun."
    moved = set_aside(manifest_path)
    manifest.checksum_path(manifest_path).unlink(missing_ok=True)
    return (
        f"They are the suite's cached copies: their manifest is set aside as {moved.name}, and rerunning "
        f"makes the cache again from the original images."
    )


def _store_block(start: int, sources: list[str], pixels_path: str, side: int) -> list[str]:
    """Decode a block of images into rows start, start + 1, … of the store; the problems of
    those that fail."""
    pixels = np.load(pixels_path, mmap_mode="r+")
    bad = []
    for offset, source in enumerate(sources):
        try:
            pixels[start + offset] = decode(Path(source), side)
        except UNREADABLE as error:
            bad.append(f"{source} ({error})")
    pixels.flush()
    return bad


def decode(path: Path, side: int) -> np.ndarray:
    """The image as training's first step leaves it: RGB, resized to side × side (bilinear, as
    `transforms.Resize((side, side))` on a PIL image)."""
    with image_files.open_image(path) as image:
        image = image.convert("RGB")
        if image.size != (side, side):
            image = image.resize((side, side), Image.Resampling.BILINEAR)
        return np.asarray(image, dtype=np.uint8)


def _corrupt(folder: Path, problem: str):
    """Set a damaged store aside (so the store step builds it again) and stop, saying so."""
    moved = set_aside(folder)
    raise DatasetError(
        f"{problem}: the decoded-image store is corrupt and was set aside as {moved}. "
        f"Rerun: the store step builds it again."
    )


def open_pixels(folder: Path, manifest_path: Path, side: int) -> np.ndarray:
    """The store's pixels (memory-mapped, read-only) after checking that they belong to this
    manifest at this side; a store that does not is refused with what to do."""
    folder = Path(folder)
    info_path = folder / "store.json"
    if not info_path.exists():
        raise DatasetError(
            f"{folder} is not a complete decoded-image store (no store.json): "
            f"rerun the store step (or set data.store: false)"
        )
    try:
        info = read_json(info_path)
        info = {key: info[key] for key in ("version", "count", "side", "manifest_sha256")}
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
        _corrupt(folder, f"{info_path} is not a complete store index ({type(error).__name__}: {error})")
    count = len(manifest.read(manifest_path))
    problems = []
    if info.get("version") != VERSION:
        problems.append(f"version {info.get('version')} (this code writes {VERSION})")
    if info["side"] != side:
        problems.append(f"side {info['side']}, not {side}")
    if info["count"] != count:
        problems.append(f"{info['count']} images, the manifest has {count}")
    if info["manifest_sha256"] != manifest_sha256(manifest_path):
        problems.append(f"built from another version of {manifest_path}")
    if problems:
        raise DatasetError(
            f"decoded-image store {folder} does not match: {'; '.join(problems)}. "
            f"Delete the folder and rerun the store step."
        )
    try:
        pixels = np.load(folder / "pixels.npy", mmap_mode="r")
    except (ValueError, OSError, EOFError) as error:
        _corrupt(folder, f"{folder / 'pixels.npy'} cannot be read ({error})")
    if pixels.shape != (count, side, side, 3):
        raise DatasetError(
            f"{folder / 'pixels.npy'} has shape {pixels.shape}, not "
            f"{(count, side, side, 3)}: delete the folder and rerun the store step"
        )
    return pixels
