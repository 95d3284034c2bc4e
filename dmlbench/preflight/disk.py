"""The disk a plan's results need (`results/<preset>/`), per experiment, before anything runs.

What a finished training keeps (`dmlbench.training.train`, `dmlbench.fair.fold_run`):

  a run of a paper's experiment  model.pt (+ checkpoint.pt with `keep.checkpoint`); so is a run of
                                 suite.knobs, on folds or not (its joining step reads the models)
  a fold training of a search    its records only (+ model.pt with `keep.fold_model`)
  a final fold training          test.npz (+ model.pt with `keep.fold_model`)

  model.pt     = bytes of the network's state (parameters and buffers, counted on PyTorch's meta
                 device at the planned backbone and embedding size)
  checkpoint   ≈ model.pt × (1 + optimiser state tensors per parameter + 1 with early stopping's best copy)
  test.npz     = test images × (embedding size + 1) × 4 bytes (embeddings and labels)
  records      = 64 KiB per training (config, epochs, metrics, cost, environment; measured on the demo:
                 under 10 KiB each, rounded up for long runs' epoch lines and TensorBoard events)
"""

from __future__ import annotations

import dataclasses
import functools
import json

import pandas as pd

from dmlbench.data import datasets
from dmlbench.run_config import Model, RunConfig
from dmlbench.training import optimisers

RECORDS_BYTES = 64 * 1024


@functools.lru_cache(maxsize=None)
def model_bytes(model_json: str) -> int:
    """Bytes of the state of the network described by `model_json` (no weights are loaded)."""
    import torch

    from dmlbench import models

    with torch.device("meta"):
        model = models.build(Model(**dict(json.loads(model_json), pretrained=False, weights=None)))
    return sum(t.numel() * t.element_size() for t in model.state_dict().values())


def run_bytes(cfg: RunConfig, dataset: str) -> int:
    """What one finished training of resolved settings `cfg` keeps on disk."""
    keep = cfg.keep
    model = model_bytes(json.dumps(dataclasses.asdict(cfg.model), sort_keys=True))
    stage = cfg.run.get("stage")  # a fold training of the fair protocol (search or final)
    total = RECORDS_BYTES
    if stage is None or keep.fold_model:
        total += model
    if stage == "final":
        expected = datasets.get(dataset).expected.images
        test_images = sum(n for split, n in expected.items() if split != "train")
        total += test_images * (cfg.model.embedding_dim + 1) * 4
    if keep.checkpoint:
        states = optimisers.state_tensors(cfg.optimizer)
        total += model * (1 + states + (1 if cfg.early_stopping.patience else 0))
    return total


def plan_need(plan) -> pd.DataFrame:
    """One row per experiment: trainings and the gigabytes (10⁹ bytes) their results keep."""
    need: dict[str, list] = {}
    for run in plan.trainings():
        row = need.setdefault(run.experiment, [0, 0])
        row[0] += 1
        row[1] += run_bytes(RunConfig.from_dict(plan.resolve(run)), run.dataset)
    return pd.DataFrame(
        [{"experiment": key, "trainings": n, "gb": size / 1e9} for key, (n, size) in need.items()],
        columns=["experiment", "trainings", "gb"],
    )
