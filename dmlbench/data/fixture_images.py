"""The images of fixtures and the archive helpers their writers share: class-coloured stripes
(hue, angle and frequency follow the class, so a network can learn an embedding that also
separates unseen classes), JPEG bytes, tar members and split statistics."""

from __future__ import annotations

import io
import tarfile
from colorsys import hsv_to_rgb

import numpy as np
from PIL import Image

from dmlbench.data.manifest import SplitStats


GOLDEN = 0.6180339887


def class_image(class_index: int, rng: np.random.Generator, size: tuple[int, int]) -> Image.Image:
    """An image of class `class_index`: coloured stripes whose hue, angle and frequency identify it."""
    height, width = size
    hue = (class_index * GOLDEN) % 1.0
    angle = np.pi * ((class_index * 0.382 + 0.1) % 1.0) + rng.normal(0, 0.15)
    frequency = 2.0 + (class_index * 7 % 5) + rng.normal(0, 0.3)
    y, x = np.mgrid[0:height, 0:width] / max(height, width)
    phase = rng.uniform(0, 2 * np.pi)
    wave = 0.5 + 0.5 * np.sin(2 * np.pi * frequency * (x * np.cos(angle) + y * np.sin(angle)) + phase)
    colour = np.array(hsv_to_rgb((hue + rng.normal(0, 0.04)) % 1.0, rng.uniform(0.5, 0.9), rng.uniform(0.6, 1.0)))
    background = rng.uniform(0.0, 0.4, size=3)
    pixels = wave[..., None] * colour + (1 - wave[..., None]) * background
    pixels = pixels + rng.normal(0, 0.15, size=pixels.shape)
    return Image.fromarray((np.clip(pixels, 0, 1) * 255).astype(np.uint8))


def jpeg(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def image_size_of(rng: np.random.Generator, base: int) -> tuple[int, int]:
    """A fixture image's (height, width): `base` plus up to half of it, each side drawn apart."""
    return int(base + rng.integers(0, base // 2)), int(base + rng.integers(0, base // 2))


def add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    archive.addfile(info, io.BytesIO(data))


def split_stats(labels: list[int], splits: list[str]) -> SplitStats:
    images: dict[str, int] = {}
    classes: dict[str, set] = {}
    for label, split in zip(labels, splits):
        images[split] = images.get(split, 0) + 1
        classes.setdefault(split, set()).add(label)
    return SplitStats(images, {k: len(v) for k, v in classes.items()})
