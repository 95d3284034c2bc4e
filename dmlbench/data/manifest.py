"""The one table format of every dataset, and the checks of the standard zero-shot splits.

A manifest is a CSV with columns `path` (relative to the manifest's folder), `label` (the
dataset's own class id), `split` (train/test, train/query/gallery, or VehicleID's train and
test_small/test_medium/test_large, which share images) and `super` (super-category, empty where
the dataset has none).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pandas as pd

from dmlbench.core.errors import DatasetError
from dmlbench.core.io import atomic_path, set_aside

COLUMNS = ["path", "label", "split", "super"]
NESTED_TEST_LISTS = {"test_small", "test_medium", "test_large"}  # VehicleID's: they share images
SPLITS = {"train", "test", "query", "gallery"} | NESTED_TEST_LISTS


@dataclass(frozen=True)
class SplitStats:
    """Image and class counts per split that a dataset must have."""

    images: dict[str, int]
    classes: dict[str, int]

    @classmethod
    def of(cls, manifest: pd.DataFrame) -> "SplitStats":
        groups = manifest.groupby("split")
        return cls(
            images={k: int(v) for k, v in groups.size().items()},
            classes={k: int(v) for k, v in groups["label"].nunique().items()},
        )

    def to_dict(self) -> dict:
        return {"images": self.images, "classes": self.classes}


def check(manifest: pd.DataFrame, expected: SplitStats, name: str) -> None:
    """Stop with the differences named when the splits are not the expected ones or overlap."""
    problems = []
    missing = set(COLUMNS) - set(manifest.columns)
    if missing:
        raise DatasetError(f"{name}: manifest lacks columns {sorted(missing)}")
    bad = set(manifest["split"]) - SPLITS
    if bad:
        problems.append(f"unknown split names {sorted(bad)}")
    found = SplitStats.of(manifest)
    for what in ("images", "classes"):
        want, got = getattr(expected, what), getattr(found, what)
        for split in sorted(set(want) | set(got)):
            if want.get(split) != got.get(split):
                problems.append(f"{split} {what}: expected {want.get(split)}, found {got.get(split)}")
    train = set(manifest.loc[manifest["split"] == "train", "label"])
    evaluation = set(manifest.loc[manifest["split"] != "train", "label"])
    shared = train & evaluation
    if shared:
        problems.append(f"{len(shared)} classes are in both train and test, e.g. {sorted(shared)[:5]}")
    twice = listed_twice(manifest)
    if twice:
        problems.append(twice)
    if problems:
        raise DatasetError(
            f"{name}: the split does not match the standard protocol: "
            + "; ".join(problems)
            + ". Check that the dataset files are complete and unmodified."
        )


def listed_twice(manifest: pd.DataFrame) -> str | None:
    """The first image listed in two rows, with both rows (counted from 1); only VehicleID's test
    lists, nested in one another, share an image, under one label."""
    split = manifest["split"].where(~manifest["split"].isin(NESTED_TEST_LISTS), "test lists")
    frame = pd.DataFrame(
        {
            "path": manifest["path"].to_numpy(),
            "label": manifest["label"].to_numpy(),
            "kind": split.to_numpy(),
            "split": manifest["split"].to_numpy(),
        }
    )
    per_path = frame.groupby("path", sort=False)[["kind", "label"]].nunique()
    mixed = set(per_path.index[(per_path["kind"] > 1) | (per_path["label"] > 1)])
    bad = frame["path"].isin(mixed) | frame.duplicated(["path", "split"], keep=False)
    if not bad.any():
        return None
    path = frame.loc[bad, "path"].iloc[0]
    rows = frame.index[frame["path"] == path][:2]
    described = " and ".join(f"{n + 1} ({frame['split'][n]}, class {frame['label'][n]})" for n in rows)
    return (
        f"{int(bad.sum())} rows list an image another row lists too, e.g. {path} in rows {described} "
        f"of the dataset's lists"
    )


def check_paths_inside(table: pd.DataFrame, where: str, first_line: int = 1) -> None:
    """Stop when an image path climbs out of the dataset's folder (`..`) or is absolute; name the
    entry (line `first_line` is the table's first row)."""
    bad = [
        (n, p) for n, p in enumerate(table["path"]) if ".." in PurePosixPath(p).parts or PurePosixPath(p).is_absolute()
    ]
    if bad:
        line, path = bad[0]
        raise DatasetError(
            f"{where}: {len(bad)} image path(s) leave the dataset's folder, first at entry "
            f"{line + first_line}: {path!r}. Paths must be relative and stay inside the dataset; "
            f"fix or remove those lines (a manifest the suite wrote: delete it and rerun prepare)."
        )


def checksum_path(path: Path) -> Path:
    """The sha256 the suite writes beside each manifest it makes, after the manifest itself."""
    return Path(path).with_name(Path(path).name + ".sha256")


def write(manifest: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        manifest[COLUMNS].to_csv(tmp, index=False)
    with atomic_path(checksum_path(path)) as tmp:
        tmp.write_text(hashlib.sha256(Path(path).read_bytes()).hexdigest() + "\n")


def _verify(path: Path) -> None:
    """A manifest the suite wrote must still have its recorded sha256 (a hand-made one has none);
    a damaged one is set aside so that the step that writes it runs again."""
    recorded = checksum_path(path)
    if not recorded.exists():
        return
    if hashlib.sha256(path.read_bytes()).hexdigest() != recorded.read_text().strip():
        moved = set_aside(path)
        recorded.unlink()
        raise DatasetError(
            f"manifest {path} was changed or damaged after the suite wrote it (its sha256 "
            f"is not the one in {recorded.name}); set aside as {moved.name}. The prepare (or cache) "
            f"step writes it again before the next step that reads it; finished runs keep their numbers"
        )


def read(path: Path) -> pd.DataFrame:
    path = Path(path)
    if not path.exists():
        raise DatasetError(f"manifest {path} does not exist: run `python -m dmlbench prepare` first")
    _verify(path)
    try:
        frame = pd.read_csv(path, dtype={"path": str, "split": str, "super": str}, keep_default_na=False)
        missing = set(COLUMNS) - set(frame.columns)
        if missing:
            raise ValueError(f"it lacks columns {sorted(missing)}")
        frame["label"] = pd.to_numeric(frame["label"], errors="raise")
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise DatasetError(
            f"manifest {path} cannot be read ({' '.join(str(error).split())[:200]}). The "
            f"prepare (or cache) step writes it: delete it and rerun."
        ) from None
    check_paths_inside(frame, f"manifest {path} (lines count from 1, the header)", first_line=2)
    check_protocol(frame, f"manifest {path}")
    return frame


def check_protocol(frame: pd.DataFrame, where: str) -> None:
    """The zero-shot protocol a manifest must keep: no image listed twice in one split, and no
    class (nor image) both trained on and evaluated on; VehicleID's nested test lists share images
    between their splits, as they should. Else a DatasetError naming the first offenders."""
    twice = frame[frame.duplicated(["path", "split"], keep=False)]
    if len(twice):
        raise DatasetError(
            f"{where} lists {twice['path'].nunique()} image(s) twice in one split (e.g. "
            f"{twice['path'].iloc[0]} in {twice['split'].iloc[0]}): the prepare (or cache) step "
            f"writes it; delete it and rerun"
        )
    train = frame["split"] == "train"
    shared = sorted(set(frame.loc[train, "label"]) & set(frame.loc[~train, "label"]))
    if shared:
        raise DatasetError(
            f"{where}: class(es) {', '.join(map(str, shared[:5]))}{' …' if len(shared) > 5 else ''} "
            f"are both trained on and evaluated on (the protocol's classes are disjoint): the "
            f"prepare (or cache) step writes it; delete it and rerun"
        )


def half_split(frame: pd.DataFrame) -> pd.DataFrame:
    """Zero-shot split used by CUB and Cars: the first half of the class ids train, the rest test."""
    classes = sorted(frame["label"].unique())
    first_test = classes[len(classes) // 2]
    frame = frame.copy()
    frame["split"] = ["train" if label < first_test else "test" for label in frame["label"]]
    return frame
