"""The evaluation step of one run: final model → test-split metrics (`metrics.json`)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

from dmlbench import environment, model_eval, models
from dmlbench.data import manifest
from dmlbench.errors import DmlbenchError
from dmlbench.io import set_aside, write_json


def evaluate(run_dir: Path, output: Path) -> dict:
    model_path = run_dir / "model.pt"
    if not model_path.exists():
        raise DmlbenchError(f"{model_path} does not exist: train the run first")
    try:
        state = torch.load(model_path, map_location="cpu", weights_only=True)
        cfg = state["config"]
        state["model"]
    except Exception as error:  # truncated or garbled: torch raises several kinds
        moved = set_aside(model_path)
        raise DmlbenchError(f"{model_path} is corrupt ({' '.join(str(error).split())[:200]}); set aside "
                            f"as {moved.name}. Rerun: the train step writes it again from the run's "
                            f"last checkpoint") from None
    device = environment.pick_device(cfg["device"])
    model = models.build(dict(cfg["model"], pretrained=False)).to(device)
    model.load_state_dict(state["model"])
    table = manifest.read(Path(cfg["data"]["manifest"]))
    started = time.perf_counter()
    metrics = model_eval.evaluate_model(model, table, Path(cfg["data"]["manifest"]).parent, cfg, device)
    result = {"run": cfg["run"], "metrics": metrics,
              "seconds": round(time.perf_counter() - started, 3), "device": str(device)}
    selected = test_selected_epoch(run_dir / "epochs.jsonl")
    if selected:
        result["test_selected"] = selected
    write_json(output, result)
    shown = ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
    print(f"{run_dir}: {shown}", file=sys.stderr)
    return result


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
