"""Images whose files have the same bytes under two classes or in both halves of a dataset (a copy
with duplicated files): a test image seen in training, or one image with two labels. Found cheaply:
only files of equal size are hashed."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

CHUNK = 1 << 20


def _digest(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def same_content(table: pd.DataFrame, folder: Path) -> list[list[tuple[str, int, str]]]:
    """Groups of (path, label, half) whose files are identical and that differ in label or half
    (`train` or the evaluation half); paths are relative to `folder`."""
    rows = table[["path", "label"]].assign(half=["train" if s == "train" else "test" for s in table["split"]])
    rows = rows.drop_duplicates()
    rows["size"] = [(Path(folder) / p).stat().st_size for p in rows["path"]]
    rows = rows[rows.duplicated("size", keep=False)]
    digests = {p: _digest(Path(folder) / p) for p in rows["path"].unique()}
    rows = rows.assign(digest=rows["path"].map(digests))
    groups = []
    for _, group in rows.groupby("digest", sort=False):
        if group["path"].nunique() > 1 and (group["label"].nunique() > 1 or group["half"].nunique() > 1):
            groups.append(list(group[["path", "label", "half"]].itertuples(index=False, name=None)))
    return groups


def warning(table: pd.DataFrame, folder: Path, title: str) -> str | None:
    """The warning to print where `same_content` finds anything, with the count and an example."""
    groups = same_content(table, folder)
    if not groups:
        return None
    images = sum(len(g) for g in groups)
    example = " = ".join(f"{p} ({half}, class {label})" for p, label, half in groups[0][:2])
    return (
        f"warning: {title}: {images} images in {len(groups)} groups have identical files under two "
        f"classes or in both train and test, e.g. {example}. A test image seen in training (or one "
        f"image with two labels) changes the results: check this copy of the dataset."
    )
