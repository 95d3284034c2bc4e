"""One fold of the fair protocol: train on the other folds with the trial's (or the best)
parameters, select the epoch on the held-out fold's MAP@R, write `validation.json` (with whether
the fold stopped by patience or by the epoch cap, `stopped_by`); for the final runs also the test
half's embeddings of the selected model (`test.npz`, test images × embedding size × 4 bytes),
which only the summary step reads. The fold's `model.pt` is then removed unless
`keep.fold_model` (like every training, it keeps no checkpoint unless `keep.checkpoint`). A trial
that diverges is recorded as diverged (the search goes on without it); a final run that diverges
stops with the error."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import torch

from dmlbench.core import environment
from dmlbench import models
from dmlbench.data import folds, manifest
from dmlbench.core.errors import DmlbenchError
from dmlbench.evaluation.model_eval import embed, split_loader
from dmlbench.fair import space as spaces
from dmlbench.fair.study import read_json
from dmlbench.core.io import atomic_path, write_json
from dmlbench.run_config import RunConfig
from dmlbench.training import run_folder, step, train

VALIDATION_KEYS = ("map@r", "r_precision", "recall@1")


def run(
    spec: dict, params_file: Path, run_dir: Path, output: Path, test_output: Path | None = None, log=train.log_stderr
) -> dict:
    """Train the fold (or take its result when it finished with these settings) → `output`."""
    chosen = read_json(params_file)["params"]
    space = spaces.from_json(spec["space"])
    cfg = RunConfig.from_dict(spaces.apply(spec["run"], space, chosen), f"{params_file}: the run")
    earlier = finished(cfg, chosen, Path(run_dir), Path(output), test_output)
    if earlier is not None:
        log(f"{run_dir}: finished before with these settings ({output.name} kept)")
        return earlier
    try:
        train.train(cfg, run_dir, log=log, final_evaluation=False)
    except step.DivergedError as error:
        if test_output is not None:
            raise
        result = {"status": "diverged", "error": str(error), "params": chosen}
        write_json(output, result)
        return result
    state = torch.load(Path(run_dir) / "model.pt", map_location="cpu", weights_only=True)
    history = [row for row in run_folder.read_history(Path(run_dir)) if row["epoch"] == state["selected_epoch"]]
    result = {
        "status": "finished",
        "params": chosen,
        "selected_epoch": state["selected_epoch"],
        "epochs_trained": state["epochs_trained"],
        "stopped_by": state["stopped_by"],
        "epoch_cap": cfg.epochs,
        "validation": {key: history[0][key] for key in VALIDATION_KEYS},
    }
    if test_output is not None:
        _write_test_embeddings(state, cfg, Path(test_output))
    write_json(output, result)
    if not cfg.keep.fold_model:  # validation.json (and test.npz) are what is read later
        (Path(run_dir) / "model.pt").unlink(missing_ok=True)
    return result


def finished(cfg: RunConfig, chosen: dict, run_dir: Path, output: Path, test_output: Path | None) -> dict | None:
    """The fold's `validation.json` when it is this training's: the same parameters, its test
    embeddings where asked, and the run folder's `config.json` of the same fingerprint."""
    if not output.exists() or (test_output is not None and not test_output.exists()):
        return None
    try:
        result = read_json(output)
    except DmlbenchError:
        return None  # damaged: trained again
    same = run_folder.trained_with(run_dir, cfg.to_dict())
    return result if same and result.get("params") == chosen else None


def _write_test_embeddings(state: dict, cfg: RunConfig, output: Path) -> None:
    out = test_embeddings(state, cfg)
    with atomic_path(output) as tmp:
        with open(tmp, "wb") as handle:
            np.savez(handle, **out)


def test_embeddings(state: dict, cfg: RunConfig) -> dict:
    """The test half's embeddings and labels of a fold's model (`model.pt`'s `state`), per split
    of the test half (`test_embeddings`, or `query_…` and `gallery_…`)."""
    device = environment.pick_device(cfg.device)
    model = models.build(dataclasses.replace(cfg.model, pretrained=False)).to(device)
    model.load_state_dict(state["model"])
    path = Path(cfg.data["manifest"])
    table = manifest.read(path)
    test = folds.test_view(table, folds.read(Path(cfg.data["fold"]["splits"]), table))
    out = {}
    for split in sorted(set(test["split"])):
        embeddings, labels = embed(model, split_loader(test, path.parent, split, cfg, device), device)
        out[f"{split}_embeddings"], out[f"{split}_labels"] = embeddings, labels
    return out
