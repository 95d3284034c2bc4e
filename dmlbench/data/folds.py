"""Class-disjoint folds of a dataset's training half, as the fair protocol (`suite.fair`) uses them.

The training half is the manifest's `train` split: for every dataset of the suite it is the first
half of the classes in the dataset's own class order (CUB 1-100, Cars 1-98, SOP 1-11318, In-Shop's
training items, digits 0-4). Its classes, sorted by class id, are cut into `folds` contiguous
groups of (nearly) equal class count: part `fold0` … `fold{n-1}`. Every other row (the test half,
in the dataset's own test protocol) is part `test`. The split file (`path`, `label`, `part`, one
row per manifest row, in the manifest's order) is what a fold's training reads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dmlbench.core.errors import DatasetError
from dmlbench.core.io import atomic_path

COLUMNS = ["path", "label", "part"]


def assign(table: pd.DataFrame, folds: int) -> pd.DataFrame:
    """The split table of a manifest: each training class in one of `folds` parts, the rest `test`."""
    classes = np.sort(table.loc[table["split"] == "train", "label"].unique())
    if len(classes) < 2 * folds:
        raise DatasetError(
            f"{len(classes)} training classes cannot make {folds} folds of at least two "
            f"classes each: lower the experiment's fair.folds"
        )
    fold_of = {c: k for k, group in enumerate(np.array_split(classes, folds)) for c in group}
    part = [
        f"fold{fold_of[label]}" if split == "train" else "test" for label, split in zip(table["label"], table["split"])
    ]
    return pd.DataFrame({"path": table["path"].to_numpy(), "label": table["label"].to_numpy(), "part": part})


def write(manifest_path: Path, output: Path, folds: int) -> pd.DataFrame:
    from dmlbench.data import manifest

    splits = assign(manifest.read(Path(manifest_path)), folds)
    with atomic_path(output) as tmp:
        splits.to_csv(tmp, index=False)
    return splits


def read(path: Path, table: pd.DataFrame) -> pd.DataFrame:
    """The split file at `path`, checked against the manifest `table` it was written from."""
    path = Path(path)
    try:
        splits = pd.read_csv(path)
    except FileNotFoundError:
        raise DatasetError(f"{path} does not exist: the fair_splits step writes it") from None
    except (ValueError, UnicodeDecodeError) as error:  # pandas' parser and empty-file errors are ValueErrors
        raise DatasetError(
            f"{path} cannot be read ({' '.join(str(error).split())[:200]}): delete it and "
            f"rerun; the fair_splits step writes it again"
        ) from None
    if (
        list(splits.columns) != COLUMNS
        or len(splits) != len(table)
        or not (splits["path"].to_numpy() == table["path"].to_numpy()).all()
        or not (splits["label"].to_numpy() == table["label"].to_numpy()).all()
    ):
        raise DatasetError(
            f"{path} does not belong to the manifest it is read with (other rows, "
            f"paths or labels): delete it and rerun; the fair_splits step writes it again"
        )
    return splits


def fold_view(table: pd.DataFrame, splits: pd.DataFrame, fold: int) -> pd.DataFrame:
    """The rows of the training half only: the held-out fold `fold` as split `test` (validation),
    the other folds as `train`. The test half is not in it. Row labels are the manifest's."""
    inside = splits["part"].str.startswith("fold").to_numpy()
    if f"fold{fold}" not in set(splits["part"]):
        raise DatasetError(
            f"the split file has no fold{fold} (folds: {sorted(p for p in set(splits['part']) if p != 'test')})"
        )
    view = table.loc[inside].copy()
    view["split"] = np.where(splits["part"].to_numpy()[inside] == f"fold{fold}", "test", "train")
    return view


def test_view(table: pd.DataFrame, splits: pd.DataFrame) -> pd.DataFrame:
    """The rows of the test half, with the manifest's own splits (test, or query and gallery)."""
    return table.loc[(splits["part"] == "test").to_numpy()].copy()


def view_of(table: pd.DataFrame, data_cfg: dict) -> pd.DataFrame:
    """What a run reads of its manifest: all of it, or with `data.fold` (split file and fold) the
    fold's view."""
    fold = data_cfg.get("fold")
    if not fold:
        return table
    return fold_view(table, read(Path(fold["splits"]), table), fold["index"])


def evaluation_view(table: pd.DataFrame, data_cfg: dict) -> pd.DataFrame:
    """What a run's final model is scored on: the manifest; with `data.fold`, its held-out fold
    (the fair protocol's fold trainings: nothing of the test half is read), or, where the fold
    says `scored_on: test_half` (suite.knobs' runs on folds), the test half."""
    fold = data_cfg.get("fold")
    if not fold:
        return table
    splits = read(Path(fold["splits"]), table)
    if fold.get("scored_on") == "test_half":
        return test_view(table, splits)
    return fold_view(table, splits, fold["index"])


def epochs_view(table: pd.DataFrame, data_cfg: dict) -> pd.DataFrame:
    """What a run's per-epoch evaluation scores: its own view (`view_of`: with `data.fold`, the
    held-out fold), or the test half where the fold says `epochs_scored_on: test_half`: a
    suite.knobs run on folds that keeps the paper's epoch selection, on the test set."""
    fold = data_cfg.get("fold")
    if fold and fold.get("epochs_scored_on") == "test_half":
        return test_view(table, read(Path(fold["splits"]), table))
    return view_of(table, data_cfg)
