"""The evaluation knob's fair value for one seed (a step of suite.knobs that moves it): the fold
models' test embeddings, each L2-normalised and joined into one vector per test image, scored as
the fair protocol's "concatenated" numbers (`dmlbench.fair.summary.joined_metrics`); beside them
the folds' own numbers averaged ("separated")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from dmlbench.core.errors import DmlbenchError
from dmlbench.fair.fold_run import test_embeddings
from dmlbench.fair.summary import joined_metrics
from dmlbench.core.io import write_json
from dmlbench.run_config import RunConfig


def concatenate(run_dirs: list[Path], output: Path) -> dict:
    """Join the test embeddings of the fold runs in `run_dirs` (each with its `model.pt`)."""
    parts, ks, runs = [], None, []
    for run_dir in run_dirs:
        path = Path(run_dir) / "model.pt"
        if not path.exists():
            raise DmlbenchError(f"{path} does not exist: the train step of this fold run writes it")
        state = torch.load(path, map_location="cpu", weights_only=True)
        cfg = RunConfig.from_dict(state["config"], f"{path}: config")
        if not cfg.data.get("fold"):
            raise DmlbenchError(f"{path}: not a fold run (its settings have no data.fold)")
        parts.append(test_embeddings(state, cfg))
        ks = list(cfg.eval.ks)
        runs.append(cfg.run)
    folds = sorted(run["method"] for run in runs)
    per_fold = [joined_metrics([part], ks) for part in parts]
    result = {
        "runs": runs,
        "folds": len(parts),
        "metrics": joined_metrics(parts, ks),
        "separated": {key: float(np.mean([m[key] for m in per_fold])) for key in per_fold[0]},
        "fold_runs": folds,
    }
    write_json(output, result)
    return result
