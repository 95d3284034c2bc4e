"""What a dataset is to the suite: where its files come from (`SourceFile`, `Layout`), its split
statistics, its parser and fixture writer (`DatasetSpec`), and the helpers parsers share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from dmlbench.data.manifest import SplitStats
from dmlbench.core.errors import DatasetError


@dataclass(frozen=True)
class SourceFile:
    """One distributed file: its sources (tried in order; none where it must be fetched by hand),
    and the size and checksums where they are public."""

    filename: str
    urls: tuple[str, ...] = ()
    size: int | None = None
    md5: str | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class Layout:
    """One way a dataset is distributed: the files that together make it."""

    name: str
    files: tuple[SourceFile, ...]


@dataclass(frozen=True)
class DatasetSpec:
    """Everything the suite knows of one dataset; a module of `dmlbench.data.datasets` each."""

    name: str
    title: str
    layouts: tuple[Layout, ...]
    expected: SplitStats
    parse: Callable[[Path], pd.DataFrame]
    manual: str | None = None
    disk_gb: float = 0.0  # archives + extracted images + 256-pixel cache, roughly
    notes: dict = field(default_factory=dict)
    pixel_side: int | None = None  # equal-sized small images: raw pixels are a reference row
    label: str = ""  # the name the papers' tables print
    evaluation: str = "all_vs_all"  # | query_gallery (In-Shop) | test_lists (VehicleID)
    supers: str | None = None  # what the `super` column holds: categories | vehicle_models
    super_categories: int | None = None  # how many categories (the category-pair samplers)
    write_fixture: Callable | None = None  # (folder, n_classes, per_class, rng, image_size) → SplitStats
    write_shipped: Callable[[Path], None] | None = None  # data shipped in a package: its files, written
    about: str = ""  # one sentence for the report, where the data needs one
    csv: str | None = None  # a dataset of the user's: its CSV file (`dmlbench.data.csv_dataset`)
    csv_sha256: str | None = None  # and the sha256 of its content (its runs' settings hold it)

    @property
    def files(self) -> tuple[SourceFile, ...]:
        """The files of the first (the publisher's own) layout."""
        return self.layouts[0].files if self.layouts else ()


def find_file(root: Path, name: str) -> Path:
    """The first file called `name` under `root` (the user may point at a parent folder)."""
    direct = root / name
    if direct.exists():
        return direct
    for candidate in sorted(root.rglob(name)):
        return candidate
    raise DatasetError(f"{name} not found under {root}: is this the extracted dataset folder?")


def read_table(
    path: Path, names: list[str], unique: tuple[str, ...] = (), integers: tuple[str, ...] = ()
) -> pd.DataFrame:
    """A whitespace-separated list with columns `names`; a line that does not fit, a value of a
    `unique` column given twice or a non-integer in `integers` stops with the file and lines named."""
    try:
        table = pd.read_csv(path, sep=r"\s+", header=None, names=names, dtype=str, engine="python")
    except FileNotFoundError:
        raise DatasetError(f"{path} is missing: is this the complete extracted dataset?") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as error:
        raise DatasetError(
            f"{path} cannot be read as '{' '.join(f'<{n}>' for n in names)}' lines "
            f"({' '.join(str(error).split())[:160]}); use an intact copy"
        ) from None
    incomplete = table[names].isna().any(axis=1)
    for column in integers:
        incomplete |= ~table[column].fillna("").str.fullmatch(r"\d+")
    if incomplete.any():
        line = int(incomplete.to_numpy().argmax()) + 1
        raise DatasetError(
            f"{path}: line {line} is not '{' '.join(f'<{n}>' for n in names)}'; use an intact copy of the file"
        )
    for column in unique:
        repeated(
            table[column].tolist(),
            f"{path}: the {column}",
            "line",
            "each is listed once in the published file: use an intact copy of it",
        )
    return table


def read_lines(path: Path) -> list[str]:
    """The lines of one of a dataset's text lists; a file that is not text stops, naming it."""
    try:
        return Path(path).read_text().splitlines()
    except UnicodeDecodeError as error:
        raise DatasetError(
            f"{path} is not a text list ({error.reason} at byte {error.start}); use an intact copy of the file"
        ) from None


def whole_numbers(values: list[str], path: Path, what: str, lines: list[int]) -> list[int]:
    """`values` (text, from `lines` of `path`) as integers; the first that is not one stops, naming
    the file, its line and the value."""
    for value, line in zip(values, lines):
        if not str(value).strip().isdigit():
            raise DatasetError(
                f"{path}: line {line} has {what} {value!r}, not a whole number; use an intact copy of the file"
            )
    return [int(v) for v in values]


def repeated(values: list, where: str, entry: str, what_to_do: str) -> None:
    """Stop at the first value listed twice, naming it and the two entries (counted from 1)."""
    first: dict = {}
    for number, value in enumerate(values, 1):
        if value in first:
            raise DatasetError(f"{where} {value!r} is listed twice, {entry}s {first[value]} and {number}; {what_to_do}")
        first[value] = number
