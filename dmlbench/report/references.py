"""The reference rows of a table (embeddings before any training step, `dmlbench.evaluation.reference`) and
the sentence that says how each method compares with them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from dmlbench.core.errors import DmlbenchError
from dmlbench.evaluation import reference
from dmlbench.core.io import set_aside
from dmlbench.evaluation.names import dataset_label, metric_label

KIND_ORDER = {kind: i for i, kind in enumerate(reference.KINDS)}
SHORT = {"initial": "untrained network", "trunk": "its trunk's features", "pixels": "raw pixels"}


def read(files: list[Path], metrics: list[str]) -> pd.DataFrame:
    """One summary row (as `aggregate.summarise` writes them, `reference` true) per reference
    file × kind × metric; `method` is the reference's row label, `kind` its kind."""
    rows = []
    for path in files:
        try:
            data = json.loads(Path(path).read_text())
            key = data["reference"]
            for kind, values in sorted(data["rows"].items(), key=lambda item: KIND_ORDER[item[0]]):
                for metric in metrics:
                    if metric in values:
                        rows.append(
                            {
                                "dataset": key["dataset"],
                                "method": reference.label(key, kind),
                                "metric": metric,
                                "mean": 100.0 * float(values[metric]),
                                "std": float("nan"),
                                "n": 1,
                                "paper": None,
                                "reference": True,
                                "kind": kind,
                                "name": Path(path).parent.name,
                            }
                        )
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as error:
            moved = set_aside(Path(path))
            raise DmlbenchError(
                f"{path} is not a reference file of the suite ({type(error).__name__}: "
                f"{error}); set aside as {moved.name}. Rerun: the reference step "
                f"writes it again"
            ) from None
    return pd.DataFrame(rows)


def comparison_metric(summary: pd.DataFrame) -> str | None:
    """MAP@R where the table has it, else Recall@1, else its first metric."""
    metrics = list(dict.fromkeys(summary["metric"]))
    return next((m for m in ("map@r", "recall@1") if m in metrics), metrics[0] if metrics else None)


def sentences(summary: pd.DataFrame, reference_of: list, labels: dict) -> list[str]:
    """Per dataset, one sentence: each method's number against each of its reference rows."""
    if "reference" not in summary or not summary["reference"].fillna(False).astype(bool).any():
        return []
    refs = summary[summary["reference"].fillna(False).astype(bool)]
    runs = summary[~summary["reference"].fillna(False).astype(bool)]
    metric = comparison_metric(summary)
    out = []
    for dataset in dict.fromkeys(runs["dataset"]):
        parts = []
        for dataset_, method, name in reference_of:
            if dataset_ != dataset:
                continue
            ours = runs[(runs["dataset"] == dataset) & (runs["method"] == method) & (runs["metric"] == metric)]
            own = refs[(refs["name"] == name) & (refs["metric"] == metric)]
            if ours.empty or own.empty:
                continue
            value = float(ours["mean"].iloc[0])
            against = [
                f"{SHORT[r.kind]} {r.mean:.2f}: {value - float(r.mean):+.2f}"
                for r in own.sort_values("kind", key=lambda k: k.map(KIND_ORDER)).itertuples()
            ]
            parts.append(f"{labels.get(method, method)} {value:.2f} ({'; '.join(against)})")
        if parts:
            out.append(
                f"{dataset_label(dataset)}, {metric_label(metric)}, trained vs no training: " + ", ".join(parts) + "."
            )
    return out
