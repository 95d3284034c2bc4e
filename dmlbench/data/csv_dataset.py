"""A dataset of the user's from one CSV file in open-metric-learning's columns: `path` (an image,
relative to the CSV's folder or absolute), `label` (a whole number: the class), `split` (`train`
or `validation`: the suite's train and test halves), optionally `is_query` and `is_gallery`
(validation rows only, 0/1 or true/false) and `category` (a super-category).

Without the two flags, or with both 1 on every validation row (as OML writes CUB), every test image
queries all the others (`all_vs_all`); otherwise each validation row is a query or a gallery image
(`query_gallery`, In-Shop's protocol). Every refusal names the file, the line (the header is line
1), the column and the value, and what to do."""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pandas as pd

from dmlbench.core.errors import DatasetError
from dmlbench.core.registry import did_you_mean
from dmlbench.data.datasets.spec import DatasetSpec
from dmlbench.data.manifest import SplitStats

REQUIRED = ("path", "label", "split")
FLAGS = ("is_query", "is_gallery")
KNOWN = (*REQUIRED, *FLAGS, "category", "category_name")  # category_name: OML's, read by no step
BOXES = ("x_1", "x_2", "y_1", "y_2")
SPLITS = {"train": "train", "validation": "test"}  # OML's split names → the suite's
TRUE, FALSE, EMPTY = {"1", "true"}, {"0", "false"}, {"", "none", "nan"}
FORMAT = "path,label,split[,is_query,is_gallery]"


@dataclass(frozen=True)
class Read:
    """A checked CSV: its rows (absolute image paths, suite splits, the CSV's line of each), its
    sha256 and its evaluation layout."""

    table: pd.DataFrame
    sha256: str
    evaluation: str


_READ: dict[tuple, Read] = {}  # one read per file version and process


def read(csv: Path, check_images: bool = True) -> Read:
    """The CSV at `csv`, checked (with `check_images`, every image file too); a DatasetError names
    the first problem."""
    csv = Path(csv).absolute()
    data = _content(csv)
    stat = csv.stat()
    key = (str(csv), stat.st_mtime_ns, stat.st_size)
    for asked in (True, check_images):
        if (*key, asked) in _READ:
            return _READ[(*key, asked)]
    frame = _frame(csv, data)
    table, evaluation = _rows(csv, frame)
    _check_protocol(csv, table)
    if check_images:
        _check_images(csv, table)
    _READ[(*key, check_images)] = found = Read(table, hashlib.sha256(data).hexdigest(), evaluation)
    return found


def _content(csv: Path) -> bytes:
    try:
        return csv.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{csv}: no such file; give the path of your dataset's CSV ({FORMAT})") from None
    except IsADirectoryError:
        raise DatasetError(f"{csv} is a folder; give the CSV file in it ({FORMAT})") from None
    except PermissionError:
        raise DatasetError(f"{csv} cannot be read by this user (permission denied): make it readable") from None


def _frame(csv: Path, data: bytes) -> pd.DataFrame:
    try:
        frame = pd.read_csv(
            io.BytesIO(data), dtype=str, keep_default_na=False, encoding="utf-8-sig", skip_blank_lines=False
        )
    except UnicodeDecodeError as error:
        raise DatasetError(
            f"{csv} is not UTF-8 text ({error.reason} at byte {error.start}); save it as a UTF-8 CSV"
        ) from None
    except pd.errors.EmptyDataError:
        raise DatasetError(f"{csv} is empty; its first line names the columns, {FORMAT}") from None
    except pd.errors.ParserError as error:
        raise DatasetError(
            f"{csv} cannot be read as a CSV ({' '.join(str(error).split())[:160]}): one line per image, "
            f"fields separated by commas"
        ) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise DatasetError(
            f"{csv}: no column {missing[0]!r} in its header ({','.join(frame.columns)}); the columns are {FORMAT}"
        )
    boxes = [c for c in BOXES if c in frame.columns]
    if boxes:
        raise DatasetError(
            f"{csv}: column {boxes[0]!r}: bounding boxes are not read by the suite; crop the images and "
            f"remove the columns {', '.join(BOXES)}"
        )
    unknown = [c for c in frame.columns if c not in KNOWN]
    if unknown:
        raise DatasetError(
            f"{csv}: unknown column {unknown[0]!r}{did_you_mean(unknown[0], KNOWN)}; the columns are "
            f"{FORMAT}, and optionally category"
        )
    if sum(c in frame.columns for c in FLAGS) == 1:
        given = next(c for c in FLAGS if c in frame.columns)
        raise DatasetError(f"{csv}: column {given!r} without {({*FLAGS} - {given}).pop()!r}: give both or neither")
    frame = frame[(frame != "").any(axis=1)]  # blank lines dropped, each row keeps its line number
    if frame.empty:
        raise DatasetError(f"{csv} has a header but no rows: one line per image")
    return frame


def _refuse(csv: Path, frame: pd.DataFrame, bad, column: str, problem: str) -> None:
    """Stop at the first row of `bad` (a boolean array), naming its line, `column` and value."""
    if bad.any():
        n = int(bad.argmax())
        value = frame[column].iloc[n]
        raise DatasetError(f"{csv}: line {frame.index[n] + 2}, column {column}: {value!r} {problem}")


def _rows(csv: Path, frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The rows with absolute paths, whole-number labels and the suite's splits; the layout."""
    paths = frame["path"].tolist()
    empty = (frame["path"].str.strip() == "").to_numpy(dtype=bool)
    _refuse(csv, frame, empty, "path", "is empty: name the image file (relative to the CSV's folder)")
    labels = frame["label"].str.strip()
    whole = labels.str.fullmatch(r"-?[0-9]+").to_numpy(dtype=bool)
    _refuse(csv, frame, ~whole, "label", "is not a whole number: a class is a number such as 3")
    splits = frame["split"].str.strip()
    known = splits.isin(list(SPLITS)).to_numpy(dtype=bool)
    _refuse(csv, frame, ~known, "split", "is not 'train' or 'validation' (OML's name of the test half)")
    folder = str(csv.parent)
    table = pd.DataFrame(
        {
            "path": [os.path.normpath(os.path.join(folder, p)) for p in paths],
            "label": labels.astype(int).to_numpy(),
            "split": splits.map(SPLITS).to_numpy(),
            "super": frame["category"].str.strip().to_numpy() if "category" in frame else "",
            "line": frame.index.to_numpy() + 2,
        }
    )
    if FLAGS[0] not in frame:
        return table, "all_vs_all"
    return _query_gallery(csv, frame, table)


def _query_gallery(csv: Path, frame: pd.DataFrame, table: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The validation rows split into query and gallery by the flags; all-vs-all where every
    validation row is both."""
    test = (table["split"] == "test").to_numpy()
    flags = {}
    for column in FLAGS:
        values = frame[column].str.strip().str.lower()
        empty = values.isin(list(EMPTY)).to_numpy(dtype=bool)
        _refuse(csv, frame, ~test & ~empty, column, "on a train row: the flags mark validation images; leave it empty")
        given = values.isin(list(TRUE | FALSE)).to_numpy(dtype=bool)
        _refuse(csv, frame, test & ~given, column, "on a validation row: give 0/1 or true/false")
        flags[column] = values.isin(list(TRUE)).to_numpy(dtype=bool) & test
    query, gallery = flags["is_query"], flags["is_gallery"]
    if (query & gallery).sum() == test.sum():
        return table, "all_vs_all"
    lines = table["line"].to_numpy()
    neither = test & ~query & ~gallery
    if neither.any():
        raise DatasetError(
            f"{csv}: line {lines[neither][0]}: is_query and is_gallery both 0: a validation image is a "
            f"query or a gallery image; mark it, or remove the line"
        )
    if (query & gallery).any():
        raise DatasetError(
            f"{csv}: line {lines[query & gallery][0]} is both a query and a gallery image while line "
            f"{lines[test & ~(query & gallery)][0]} is not: the query/gallery evaluation keeps the queries out "
            f"of the gallery; mark each validation row one of them, or every one both (all-vs-all)"
        )
    table = table.copy()
    table.loc[query, "split"] = "query"
    table.loc[gallery, "split"] = "gallery"
    unmatched = sorted(set(table.loc[query, "label"]) - set(table.loc[gallery, "label"]))
    if unmatched:
        line = lines[query & (table["label"] == unmatched[0]).to_numpy()][0]
        raise DatasetError(
            f"{csv}: class {unmatched[0]} has queries (line {line}) but no gallery image: each query "
            f"needs its class in the gallery; mark one of its images is_gallery"
        )
    return table, "query_gallery"


def _check_protocol(csv: Path, table: pd.DataFrame) -> None:
    """No image twice, train and test classes disjoint (the zero-shot protocol), at least two
    classes per half and two images per class."""
    twice = table[table.duplicated("path", keep=False)]
    if len(twice):
        first = twice[twice["path"] == twice["path"].iloc[0]]["line"].tolist()
        raise DatasetError(
            f"{csv}: lines {first[0]} and {first[1]} list the same image, {twice['path'].iloc[0]}: an image "
            f"belongs to one row (one class, one split); remove one of them"
        )
    train = table["split"] == "train"
    shared = sorted(set(table.loc[train, "label"]) & set(table.loc[~train, "label"]))
    if shared:
        rows = table[table["label"] == shared[0]]
        raise DatasetError(
            f"{csv}: class {shared[0]} is in train (line {rows.loc[train, 'line'].iloc[0]}) and in validation "
            f"(line {rows.loc[~train, 'line'].iloc[0]}): the test classes are unseen in training (the "
            f"zero-shot protocol); give each class one split"
        )
    for half, rows in (("train", table[train]), ("validation", table[~train])):
        if rows["label"].nunique() < 2:
            raise DatasetError(f"{csv}: {rows['label'].nunique()} class(es) in {half}: each half needs at least 2")
        counts = rows.groupby("label").size()
        if (counts < 2).any():
            label = counts.index[counts.to_numpy() < 2][0]
            line = rows.loc[rows["label"] == label, "line"].iloc[0]
            raise DatasetError(
                f"{csv}: line {line}, column label: class {label} has one {half} image: a class needs at "
                f"least 2 (an image and its match); add one or remove the line"
            )


def _check_images(csv: Path, table: pd.DataFrame) -> None:
    missing = [(line, path) for line, path in zip(table["line"], table["path"]) if not os.path.isfile(path)]
    if missing:
        line, path = missing[0]
        raise DatasetError(
            f"{csv}: line {line}, column path: {len(missing)} image file(s) not found, the first {path}; "
            f"relative paths are read from the CSV's folder ({csv.parent})"
        )


def common_folder(paths) -> str:
    """The deepest folder that holds every image (the manifest's paths are relative to it): the
    characters the first and last path (in sorting order) share, cut back to a folder."""
    paths = list(paths)
    shared = os.path.commonprefix([min(paths), max(paths)])
    return shared[: shared.rfind(os.sep)] or os.sep


def parse(csv: Path, root: Path | None = None) -> pd.DataFrame:
    """The manifest table of the CSV (`root` unused: the images stay where they are), paths relative
    to the images' common folder, `attrs['top']`."""
    table = read(csv, check_images=False).table
    top = common_folder(table["path"])
    cut = len(os.path.join(top, ""))  # every path is normalised and starts with the folder's
    rows = pd.DataFrame(
        {
            "path": [p[cut:] for p in table["path"].tolist()],
            "label": table["label"].to_numpy(),
            "split": table["split"].to_numpy(),
            "super": table["super"].to_numpy(),
        }
    )
    rows.attrs["top"] = top
    return rows


def spec(name: str, csv: Path, check_images: bool = True) -> DatasetSpec:
    """The DatasetSpec of the CSV `csv` under `name`: its counts are its own `expected` ones."""
    csv = Path(csv).absolute()
    found = read(csv, check_images)
    table = found.table
    categories = table.loc[table["split"] == "train", "super"].nunique() if (table["super"] != "").any() else None
    stats = SplitStats.of(table)
    return DatasetSpec(
        name,
        f"{name} (your CSV)",
        (),
        stats,
        partial(parse, csv),
        label=name,
        evaluation=found.evaluation,
        supers="categories" if categories else None,
        super_categories=categories,
        csv=str(csv),
        csv_sha256=found.sha256,
        about=f"{name}: your own images, listed in a CSV ({len(table):,} images; {stats.classes['train']} "
        f"training classes; evaluated {found.evaluation.replace('_', ' ')}).",
    )
