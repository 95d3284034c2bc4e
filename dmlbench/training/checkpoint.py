"""A run's checkpoint: the one to resume if it belongs to the run's settings (else the old files
are moved aside, named by what changed), one atomic file per epoch, and the resume itself."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from dmlbench.io import atomic_path
from dmlbench.training import cost, run_folder


def load(run_dir: Path, cfg: dict, log) -> dict | None:
    """The checkpoint to resume, if it belongs to `cfg`. One made with other settings is moved
    aside with its files; files of an attempt without a checkpoint are cleared."""
    path = run_dir / "checkpoint.pt"
    if not path.exists():
        _set_aside_finished(run_dir, cfg, log)
        run_folder.discard_unfinished(run_dir)
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        state.get("fingerprint")
    except Exception as error:  # truncated or garbled: torch raises several kinds
        moved = run_folder.supersede(run_dir, "corrupt")
        log(f"{path} is corrupt ({' '.join(str(error).split())[:200]}); the run's files were moved to "
            f"{moved} and it trains afresh")
        return None
    if state.get("fingerprint") in run_folder.fingerprints(cfg):
        return state
    old = json.loads(state["config"]) if "config" in state else {}
    changes = run_folder.changed_settings(old, cfg) if old else ["(checkpoint of an older version)"]
    moved = run_folder.supersede(run_dir, state.get("fingerprint", "unknown"))
    log(f"settings changed since {path} was written ({'; '.join(changes[:6])}"
        f"{' …' if len(changes) > 6 else ''}): training afresh; the previous files are in {moved}")
    return None


def _set_aside_finished(run_dir: Path, cfg: dict, log) -> None:
    """A run that finished and kept no checkpoint (`keep.checkpoint: false`) trains again from
    the start: with other settings its files are moved aside as a changed checkpoint's are."""
    written = run_dir / "config.json"
    if not (run_dir / cost.RECORD).exists() or not written.exists():
        return
    try:
        old = json.loads(written.read_text())
    except ValueError:
        return
    if run_folder.fingerprint(old) == run_folder.fingerprint(cfg):
        log(f"{run_dir} finished before and kept no checkpoint (keep.checkpoint: false): training it again")
        return
    changes = run_folder.changed_settings(old, cfg)
    moved = run_folder.supersede(run_dir, run_folder.fingerprint(old))
    log(f"settings changed since {run_dir} finished ({'; '.join(changes[:6])}{' …' if len(changes) > 6 else ''}): "
        f"training afresh; the previous files are in {moved}")


def save(run_dir, parts: dict, history: list[dict], cfg: dict, selection: dict) -> None:
    """One atomic file with everything a resumed run needs (model, loss, optimiser, schedule and
    the scheme's state, the early stopping's best model), per-epoch metrics included, and the
    config it belongs to."""
    with atomic_path(run_dir / "checkpoint.pt") as tmp:
        torch.save({**{name: part.state_dict() for name, part in parts.items()}, **selection,
                    "epochs_done": len(history), "history": json.dumps(history),
                    "config": json.dumps(cfg, sort_keys=True),
                    "fingerprint": run_folder.fingerprint(cfg)}, tmp)


def resume(state, run_dir, parts: dict, log) -> tuple[int, list[dict]]:
    if state is None:
        return 0, []
    for name, part in parts.items():
        part.load_state_dict(state[name])
    log(f"resuming {run_dir} after epoch {state['epochs_done']}")
    history = json.loads(state["history"])
    try:
        kept = run_folder.read_history(run_dir) if (run_dir / "epochs.jsonl").exists() else None
    except run_folder.DamagedHistoryError as error:
        log(str(error))
        kept = None
    if kept != history:  # damaged, or one epoch short after a kill between the two writes
        run_folder.write_history(run_dir, history)
    return state["epochs_done"], history
