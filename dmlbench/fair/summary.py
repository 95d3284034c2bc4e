"""The final test numbers of one method × dataset: for each repetition, "separated" (each fold's
model evaluated alone, the results averaged over the folds) and "concatenated" (the folds'
embeddings of each test image joined into one vector, each part L2-normalised, then evaluated); then
mean and 95 % interval over the repetitions (`intervals`). Metrics: P@1 (= Recall@1), R-Precision,
MAP@R and Recall@K at the dataset's K. In-Shop: its query images search its gallery. Also how many
of the final fold trainings ran into the epoch cap (`capped_folds`), from the `validation.json`
that each fold training writes beside its `test.npz`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dmlbench.evaluation.metrics import retrieval_metrics
from dmlbench.fair.intervals import mean_interval
from dmlbench.fair.study import read_json
from dmlbench.core.io import write_json

MODES = ("separated", "concatenated")


def joined_metrics(parts: list, ks) -> dict:
    """Metrics of embeddings given per split (`test`, or `query` and `gallery`); `parts` are the
    folds' arrays (mappings such as a loaded `test.npz`), joined along the feature axis."""

    def joined(split):
        return np.concatenate([_unit(p[f"{split}_embeddings"]) for p in parts], axis=1)

    first = parts[0]
    for p in parts[1:]:
        for key in first.keys():
            if key.endswith("_labels") and not np.array_equal(first[key], p[key]):
                raise ValueError("the folds' test embeddings are of other images (labels differ)")
    if "query_embeddings" in first:
        out = retrieval_metrics(
            joined("gallery"), first["gallery_labels"], ks, joined("query"), first["query_labels"], clustering=False
        )
    else:
        out = retrieval_metrics(joined("test"), first["test_labels"], ks, clustering=False)
    out["p@1"] = out["recall@1"]
    return out


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def repetition(files: list[Path], ks) -> dict:
    loaded = [np.load(path) for path in files]
    per_fold = [joined_metrics([part], ks) for part in loaded]
    separated = {key: float(np.mean([m[key] for m in per_fold])) for key in per_fold[0]}
    return {"separated": separated, "concatenated": joined_metrics(loaded, ks), "folds": per_fold}


def stops(embeddings: list[list[Path]]) -> dict:
    """How the final fold trainings ended: {"patience": n, "cap": m} (fold_run's `stopped_by`)."""
    ends = [read_json(Path(path).parent / "validation.json")["stopped_by"] for files in embeddings for path in files]
    return {end: ends.count(end) for end in ("patience", "cap")}


def summarise(spec: dict, embeddings: list[list[Path]], output: Path) -> dict:
    """`embeddings[r][k]`: repetition r's fold k test.npz."""
    reps = [repetition(files, spec["ks"]) for files in embeddings]
    ended = stops(embeddings)
    result = {
        "method": spec["method"],
        "dataset": spec["dataset"],
        "repetitions": len(reps),
        "interval": "mean ± t(0.975, n−1) · s / √n over the repetitions",
        "per_repetition": reps,
        "stopped_by": ended,
        "capped_folds": ended["cap"],
        "fold_trainings": sum(ended.values()),
    }
    for mode in MODES:
        result[mode] = {}
        for key in reps[0][mode]:
            mean, half = mean_interval([r[mode][key] for r in reps])
            result[mode][key] = {"mean": mean, "ci95": half}
    write_json(output, result)
    return result
