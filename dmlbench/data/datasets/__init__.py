"""The benchmark datasets, one module each (`cub`, `cars`, `sop`, `inshop`, `vehicleid`, `digits`):
its `DatasetSpec` (sources, split statistics, evaluation layout, super-categories), its parser
from the extracted files to the manifest table and its fixture writer. Every module of this
package registers its spec in `DATASETS` when imported: adding a dataset is adding a module."""

from __future__ import annotations

import pkgutil
from importlib import import_module

from dmlbench.data.datasets.spec import DatasetSpec, Layout, SourceFile
from dmlbench.errors import DatasetError
from dmlbench.registry import Registry

__all__ = ["DATASETS", "DatasetSpec", "Layout", "SourceFile", "get", "register"]

DATASETS = Registry("dataset", error=DatasetError)


def register(spec: DatasetSpec) -> DatasetSpec:
    return DATASETS.register(spec.name)(spec)


def get(name: str) -> DatasetSpec:
    return DATASETS.get(name)


for _module in pkgutil.iter_modules(__path__):
    if _module.name != "spec":
        import_module(f"{__name__}.{_module.name}")
