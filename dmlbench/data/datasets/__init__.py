"""The benchmark datasets, one module each (`cub`, `cars`, `sop`, `inshop`, `vehicleid`, `digits`):
its `DatasetSpec` (sources, split statistics, evaluation layout, super-categories), its parser
from the extracted files to the manifest table and its fixture writer. Every module of this
package registers its spec in `DATASETS` when imported: adding a dataset is adding a module."""

from __future__ import annotations

import re

from dmlbench.data.datasets.spec import DatasetSpec, Layout, SourceFile
from dmlbench.core.errors import DatasetError
from dmlbench.core.registry import Registry

__all__ = ["DATASETS", "NAME_PATTERN", "DatasetSpec", "Layout", "SourceFile", "get", "register"]

DATASETS = Registry(
    "dataset", error=DatasetError, package=__name__, group="dmlbench.datasets"
)  # each module registers its spec
# a dataset's name is a folder and a Snakemake wildcard of every rule (workflow/rules/common.smk)
NAME_PATTERN = r"[a-z][a-z0-9_]*"


def register(spec: DatasetSpec) -> DatasetSpec:
    """Add `spec` to `DATASETS`; its name must match NAME_PATTERN."""
    if not re.fullmatch(NAME_PATTERN, spec.name):
        raise ValueError(
            f"dataset name {spec.name!r}: lowercase letters, digits and underscores, "
            f"starting with a letter ({NAME_PATTERN}), as its folders and the workflow's "
            f"wildcards need"
        )
    return DATASETS.register(spec.name)(spec)


def get(name: str) -> DatasetSpec:
    return DATASETS.get(name)
