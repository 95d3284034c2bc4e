"""Datasets' and metrics' names as the papers print them, for every table a reader sees (ids stay
in the JSON and CSV files)."""

from __future__ import annotations

import re

from dmlbench.data import datasets


def dataset_label(name: str) -> str:
    """A dataset's name as the papers' tables print it (its spec's `label`)."""
    return datasets.get(name).label or name


def metric_label(metric: str) -> str:
    """`recall@4` → `R@4`, `large_recall@1` → `large R@1`, `nmi` → `NMI`."""
    prefix, _, name = metric.rpartition("_") if "_recall@" in metric else ("", "", metric)
    name = re.sub(r"^recall@", "R@", name)
    name = {"nmi": "NMI", "f1": "F1", "map@r": "MAP@R", "r_precision": "RP"}.get(name, name)
    return f"{prefix} {name}".strip()
