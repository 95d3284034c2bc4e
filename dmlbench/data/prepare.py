"""The data step: acquire a dataset (download, user files or fixture), parse it, check it, write its manifest.

Layout under the data root: `downloads/<dataset>/` holds the publishers' files (shared by every
preset), `<source>/<dataset>/raw/` the extracted files and `<source>/<dataset>/manifest.csv` the
table every later stage reads. `source` is `real`, or `fixture/<size>` (one folder per fixture
size, `fixtures.folder_name`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd

from dmlbench.data import acquire, datasets, duplicates, fixtures, manifest
from dmlbench.core.errors import DatasetError
from dmlbench.core.machine import data_root_problem
from dmlbench.core.io import atomic_dir, atomic_path


def prepare(
    dataset: str,
    source: str,
    root: Path,
    output: Path,
    user_path: str | None = None,
    allow_download: bool = True,
    fixture_size: dict | None = None,
    csv_sha256: str | None = None,
) -> pd.DataFrame:
    """Build and check the manifest of `dataset`, writing it to `output` only when every check passes
    (a CSV dataset's file must still have the content `csv_sha256` the plan read)."""
    spec = datasets.get(dataset)
    problem = data_root_problem(root)
    if problem:
        raise DatasetError(problem)
    root = Path(root)
    output = Path(output)
    folder = output.parent
    expected = spec.expected
    if spec.write_shipped:  # shipped in a package: the same files whatever the source
        raw = folder / "raw"
        with atomic_dir(raw) as tmp:
            spec.write_shipped(tmp)
        table = spec.parse(raw)
    elif spec.csv:  # a dataset of the user's CSV: its images used in place, whatever the source
        table = _from_csv(spec, folder, csv_sha256)
    elif source == "fixture":
        archives = folder / "archives"
        with atomic_dir(archives) as tmp:
            fixtures.write(dataset, tmp, **(fixture_size or {}))
        expected = fixtures.read_stats(archives)
        layout = acquire.complete_layout(spec, archives)
        table = spec.parse(acquire.extract([archives / f.filename for f in layout.files], folder / "raw"))
    elif source == "real":
        table = _real(spec, root, folder, user_path, allow_download)
    else:
        raise DatasetError(f"unknown data source {source!r}: use 'real' or 'fixture'")
    try:
        manifest.check_paths_inside(table, f"{spec.title}: the dataset's lists")
        table = _anchor_paths(table, table.attrs.get("base", folder / "raw"), folder)
        manifest.check(table, expected, f"{spec.title} ({source})")
        _check_images_exist(table, folder, spec.title)
        same = duplicates.warning(table, folder, spec.title)
        if same:
            print(same, file=sys.stderr)
        manifest.write(table, output)
        if spec.csv:  # the content the link's images were listed by (`relink`)
            with atomic_path(folder / CSV_RECORD) as tmp:
                tmp.write_text(spec.csv_sha256 + "\n")
    except BaseException:
        if (folder / USER_LINK).is_symlink() and not output.exists():  # no manifest: no link either
            (folder / USER_LINK).unlink()
        raise
    _summary(table, spec.title, output)
    return table


def _real(spec, root: Path, folder: Path, user_path: str | None, allow_download: bool):
    """The user's folder first (a layout's files, or the extracted dataset), else the download
    folder's files, else the sources."""
    if user_path:
        given = Path(user_path).expanduser()
        if not given.exists():
            raise DatasetError(f"data.paths.{spec.name} = {given} does not exist")
        if not given.is_dir():
            raise DatasetError(
                f"data.paths.{spec.name} = {given} is a file: point it at the folder holding the "
                f"dataset's files or the extracted dataset"
            )
        layout = acquire.complete_layout(spec, given)
        if layout is not None:  # the publisher's files: checked, never modified
            for source in layout.files:
                acquire.verify(given / source.filename, source)
            return spec.parse(acquire.extract([given / f.filename for f in layout.files], folder / "raw"))
        table = spec.parse(given)  # the extracted dataset, used in place through a link
        table.attrs["base"] = _link_user_folder(given, folder)
        return table
    files = acquire.obtain(spec, root / "downloads" / spec.name, allow_download)
    return spec.parse(acquire.extract(files, folder / "raw"))


USER_LINK = "user-data"
CSV_RECORD = "user-data.sha256"  # beside a CSV dataset's link: the sha256 of the CSV it was made from


def _from_csv(spec, folder: Path, planned: str | None) -> pd.DataFrame:
    """A CSV dataset's rows, their images reached through `user-data`, a link to their common folder."""
    if planned and planned != spec.csv_sha256:
        raise DatasetError(
            f"{spec.csv} changed after the workflow was planned (sha256 {spec.csv_sha256[:12]}…, planned "
            f"{planned[:12]}…): run snakemake again, which plans the new content"
        )
    table = spec.parse(Path(spec.csv))
    table.attrs["base"] = _link_user_folder(Path(table.attrs["top"]), folder)
    return table


def relink(spec, folder: Path) -> Path | None:
    """Point a prepared CSV dataset's link at its images again after its CSV moved with its
    content unchanged (the sha256 recorded when it was prepared): nothing is made again. The
    folder linked now, or None where the link was right or is not this content's."""
    link, record = Path(folder) / USER_LINK, Path(folder) / CSV_RECORD
    if not link.is_symlink() or not record.is_file() or record.read_text().strip() != spec.csv_sha256:
        return None
    top = Path(spec.parse(Path(spec.csv)).attrs["top"])
    if Path(os.readlink(link)) == top.resolve():
        return None
    return _link_user_folder(top, Path(folder)).resolve()


def _link_user_folder(given: Path, folder: Path) -> Path:
    """`<manifest folder>/user-data`, a link to the user's extracted dataset, so that every
    manifest path is relative and inside the manifest's folder."""
    folder.mkdir(parents=True, exist_ok=True)
    link, tmp = folder / USER_LINK, folder / f".{USER_LINK}.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(given.resolve(), target_is_directory=True)
    os.replace(tmp, link)
    return link


def _anchor_paths(table: pd.DataFrame, base: Path, folder: Path) -> pd.DataFrame:
    """Make image paths relative to the manifest's folder (`base` lies inside it: `raw/` or the
    link to the user's folder)."""
    prefix = Path(os.path.relpath(Path(base).absolute(), Path(folder).absolute()))
    table = table.copy()
    table["path"] = [str(prefix / p) for p in table["path"]]
    return table


def _check_images_exist(table: pd.DataFrame, folder: Path, title: str) -> None:
    missing = [p for p in table["path"] if not (folder / p).exists()]
    if missing:
        raise DatasetError(
            f"{title}: {len(missing)} images listed in the annotation files are missing, e.g. "
            f"{folder / missing[0]}. The extracted dataset is incomplete: remove it and rerun."
        )


def _summary(table: pd.DataFrame, title: str, output: Path) -> None:
    stats = manifest.SplitStats.of(table)
    parts = ", ".join(f"{k}: {stats.images[k]} images / {stats.classes[k]} classes" for k in sorted(stats.images))
    print(f"{title}: {parts} → {output}", file=sys.stderr)
