"""The evaluation step of one run: final model → test-split metrics (`metrics.json`)."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import torch

from dmlbench.core import environment
from dmlbench import models
from dmlbench.data import folds, manifest
from dmlbench.core.errors import DmlbenchError
from dmlbench.evaluation import model_eval
from dmlbench.evaluation.reference import TrunkFeatures
from dmlbench.core.io import atomic_path, set_aside, write_json
from dmlbench.run_config import RunConfig


def evaluate(run_dir: Path, output: Path) -> dict:
    model_path = run_dir / "model.pt"
    if not model_path.exists():
        raise DmlbenchError(f"{model_path} does not exist: train the run first")
    try:
        state = _load_model(model_path)
    except Exception as error:  # truncated or garbled: torch raises several kinds
        moved = set_aside(model_path)
        problem = f"{model_path} is corrupt ({' '.join(str(error).split())[:200]}); set aside as {moved.name}"
        state = _model_from_checkpoint(run_dir)
        if state is None:
            raise DmlbenchError(
                f"{problem}, and the run keeps no checkpoint to write it from. Its numbers, where "
                f"{run_dir / 'metrics.json'} exists, stand; to train the run again, delete that file and rerun"
            ) from None
        with atomic_path(model_path) as tmp, open(tmp, "wb") as handle:
            torch.save(state, handle)  # a handle: the file records no temporary name
        print(f"{problem}, and written again from the run's complete checkpoint.pt", file=sys.stderr)
    cfg = RunConfig.from_dict(state["config"], f"{model_path}: config")
    device = environment.pick_device(cfg.device)
    environment.set_tf32(cfg.performance.tf32)
    model = models.build(dataclasses.replace(cfg.model, pretrained=False)).to(device)
    model.load_state_dict(state["model"])
    result = result_of(model, cfg, run_dir, device)
    write_json(output, result)
    shown = ", ".join(f"{k} {v:.4f}" for k, v in result["metrics"].items())
    print(f"{run_dir}: {shown}", file=sys.stderr)
    return result


def result_of(model, cfg: RunConfig, run_dir: Path, device) -> dict:
    """What `metrics.json` holds for `model`: the test metrics (with clustering), the time they
    took, the device, the test-selected epoch where the run evaluated every epoch, and the trunk
    feature's metrics where `eval.trunk_feature` asks for them. A run
    trained on folds (`data.fold`) is scored on its held-out fold, or on the test half where the
    fold says so (`folds.evaluation_view`); its epochs were evaluated on the held-out fold, so it has
    no test-selected epoch."""
    table = folds.evaluation_view(manifest.read(Path(cfg.data["manifest"])), cfg.data)
    started = time.perf_counter()
    metrics = model_eval.evaluate_model(model, table, Path(cfg.data["manifest"]).parent, cfg, device)
    result = {
        "run": cfg.run,
        "metrics": metrics,
        "seconds": round(time.perf_counter() - started, 3),
        "device": str(device),
    }
    if cfg.eval.trunk_feature:  # the trunk's pooled feature, the head removed, on the same images
        result["trunk_feature"] = model_eval.evaluate_model(
            TrunkFeatures(model), table, Path(cfg.data["manifest"]).parent, cfg, device
        )
    selected = None if cfg.data.get("fold") else test_selected_epoch(Path(run_dir) / "epochs.jsonl")
    if selected:
        result["test_selected"] = selected
    return result


def _load_model(path: Path) -> dict:
    state = torch.load(path, map_location="cpu", weights_only=True)
    state["config"]["model"], state["model"]  # the keys evaluation reads
    return state


def _model_from_checkpoint(run_dir: Path) -> dict | None:
    """What train writes as model.pt, from a checkpoint that holds every epoch of its run."""
    try:
        checkpoint = torch.load(run_dir / "checkpoint.pt", map_location="cpu", weights_only=True)
        record = json.loads(checkpoint["config"])
        cfg = RunConfig.from_dict(record)
        if cfg.early_stopping.patience:
            return None  # where it stopped and which epoch it kept: the train step decides
        if checkpoint["epochs_done"] != cfg.epochs:
            return None
        return {"model": checkpoint["model"], "config": record}
    except Exception:  # no checkpoint, or a damaged one: the train step has to run
        return None


def test_selected_epoch(history: Path, by: str = "recall@1") -> dict | None:
    """The per-epoch test metrics of the epoch with the best `by` (the first, on ties): how
    several papers report ("best epoch"), which selects on the test set. None without
    per-epoch evaluation (`eval.every: 0`)."""
    if not history.exists():
        return None
    rows = [json.loads(line) for line in history.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if by in r]
    if not rows:
        return None
    best = max(rows, key=lambda r: r[by])  # max keeps the first of equal values
    return {"epoch": best["epoch"], **{k: v for k, v in best.items() if "recall@" in k}}
