"""Datasets distributed as one folder per class (`<top>/<class>/<image>`, as Stanford Dogs or an
ImageFolder copy): the parser and the fixture writer a dataset module needs, shared.

Classes are sorted by folder name and split in halves, the field's zero-shot protocol: the first
half trains, the rest is the test set (the labels are the classes' 1-based ranks)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pandas as pd

from dmlbench.data.datasets.spec import find_file
from dmlbench.data.fixture_images import add_bytes, class_image, image_size_of, jpeg, split_stats
from dmlbench.data.manifest import SplitStats, half_split
from dmlbench.core.errors import DatasetError

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")


def parse(root: Path, top: str) -> pd.DataFrame:
    """The manifest table of `<top>/<class>/<image>` under `root` (the folder found anywhere below
    it): one row per image file, classes sorted by name, split in halves."""
    base = find_file(root, top)
    classes = sorted(p for p in base.iterdir() if p.is_dir())
    if len(classes) < 2:
        raise DatasetError(f"{base} holds {len(classes)} class folder(s): one folder per class is expected")
    rows = []
    for label, folder in enumerate(classes, start=1):
        images = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not images:
            raise DatasetError(f"{folder} holds no image ({', '.join(IMAGE_SUFFIXES)}): an empty class")
        rows += [(str(p.relative_to(root)), label) for p in images]
    return half_split(pd.DataFrame({"path": [r[0] for r in rows], "label": [r[1] for r in rows], "super": ""}))


def write_fixture(
    folder: Path, n_classes: int, per_class: int, rng, image_size: int, *, archive: str, top: str
) -> SplitStats:
    """`archive` (a tar, gzip-compressed if its name says so) holding `<top>/class_<c>/<c>_<k>.jpg`
    with synthetic images, as the publisher's archive holds its class folders."""
    mode = "w:gz" if archive.endswith((".tgz", ".tar.gz")) else "w"
    with tarfile.open(folder / archive, mode) as tar:
        for c in range(1, n_classes + 1):
            for k in range(per_class):
                image = class_image(c, rng, image_size_of(rng, image_size))
                add_bytes(tar, f"{top}/class_{c:04d}/{c:04d}_{k:04d}.jpg", jpeg(image))
    classes = [c for c in range(1, n_classes + 1) for _ in range(per_class)]
    return split_stats(classes, ["train" if c <= n_classes // 2 else "test" for c in classes])
