"""The benchmark datasets, one module each (`cub`, `cars`, `sop`, `inshop`, `vehicleid`, `digits`):
its `DatasetSpec` (sources, split statistics, evaluation layout, super-categories), its parser
from the extracted files to the manifest table and its fixture writer. Every module of this
package registers its spec in `DATASETS` when imported: adding a dataset is adding a module.
A dataset of the user's CSV (`data.csv`) is registered by `add_csv` when the plan loads; the
steps the workflow starts find it by the environment (`CSV_DATASETS`)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from dmlbench.data.datasets.spec import DatasetSpec, Layout, SourceFile
from dmlbench.core.errors import DatasetError
from dmlbench.core.registry import Registry

__all__ = ["DATASETS", "NAME_PATTERN", "DatasetSpec", "Layout", "SourceFile", "add_csv", "get", "register"]

DATASETS = Registry(
    "dataset", error=DatasetError, package=__name__, group="dmlbench.datasets"
)  # each module registers its spec
# a dataset's name is a folder and a Snakemake wildcard of every rule (workflow/rules/common.smk)
NAME_PATTERN = r"[a-z][a-z0-9_]*"
CSV_DATASETS = "DMLBENCH_CSV_DATASETS"  # JSON {name: CSV file} the workflow hands its steps
_FROM_CSV: set[str] = set()  # the names registered by add_csv


def register(spec: DatasetSpec) -> DatasetSpec:
    """Add `spec` to `DATASETS`; its name must match NAME_PATTERN."""
    if not re.fullmatch(NAME_PATTERN, spec.name):
        raise ValueError(
            f"dataset name {spec.name!r}: lowercase letters, digits and underscores, "
            f"starting with a letter ({NAME_PATTERN}), as its folders and the workflow's "
            f"wildcards need"
        )
    return DATASETS.register(spec.name)(spec)


def add_csv(name: str, csv: Path, check_images: bool = True) -> DatasetSpec:
    """Register the dataset of the user's CSV file `csv` as `name` (anew where it was registered
    before); a built-in dataset's name is refused."""
    from dmlbench.data import csv_dataset

    if name in DATASETS and name not in _FROM_CSV:
        raise DatasetError(f"{name!r} is a built-in dataset's name; give your dataset another name")
    spec = csv_dataset.spec(name, Path(csv), check_images)
    DATASETS.unregister(name)
    _FROM_CSV.add(name)
    return register(spec)


def keep_csv(names) -> None:
    """Forget the CSV datasets registered earlier but not among `names` (another plan's)."""
    for name in _FROM_CSV - set(names):
        DATASETS.unregister(name)
        _FROM_CSV.discard(name)


def get(name: str) -> DatasetSpec:
    """The spec of dataset `name`; a CSV dataset the workflow's environment names is read first."""
    if name not in _FROM_CSV and name not in DATASETS:
        given = json.loads(os.environ.get(CSV_DATASETS) or "{}")
        if name in given:
            add_csv(name, Path(given[name]), check_images=False)  # the plan checked the images
    return DATASETS.get(name)
