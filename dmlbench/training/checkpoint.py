"""A run's checkpoint: the one to resume if it belongs to the run's settings (else the old files
are moved aside, named by what changed), one atomic file per epoch, and the resume itself."""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from dmlbench.core.io import atomic_path
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
        log(
            f"{path} is corrupt ({' '.join(str(error).split())[:200]}); the run's files were moved to "
            f"{moved} and it trains afresh"
        )
        return None
    if state.get("fingerprint") in run_folder.fingerprints(cfg):
        return state
    old = json.loads(state["config"]) if "config" in state else {}
    changes = run_folder.changed_settings(old, cfg) if old else ["(checkpoint of an older version)"]
    moved = run_folder.supersede(run_dir, state.get("fingerprint", "unknown"))
    log(
        f"settings changed since {path} was written ({'; '.join(changes[:6])}"
        f"{' …' if len(changes) > 6 else ''}): training afresh; the previous files are in {moved}"
    )
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
    log(
        f"settings changed since {run_dir} finished ({'; '.join(changes[:6])}{' …' if len(changes) > 6 else ''}): "
        f"training afresh; the previous files are in {moved}"
    )


def save(run_dir, parts: dict, history: list[dict], cfg: dict, selection: dict) -> None:
    """One atomic file with everything a resumed run needs (model, loss, optimiser, schedule and
    the scheme's state, the early stopping's best model), per-epoch metrics included, and the
    config it belongs to."""
    _write(run_dir, _state(parts, history, cfg, selection))


def _state(parts: dict, history: list[dict], cfg: dict, selection: dict) -> dict:
    return {
        **{name: part.state_dict() for name, part in parts.items()},
        **selection,
        "epochs_done": len(history),
        "history": json.dumps(history),
        "config": json.dumps(cfg, sort_keys=True),
        "fingerprint": run_folder.fingerprint(cfg),
    }


def _write(run_dir, state: dict) -> None:
    with atomic_path(Path(run_dir) / "checkpoint.pt") as tmp, open(tmp, "wb") as handle:
        torch.save(state, handle)


def _host_copy(value):
    """`value` with every tensor copied to host memory (a snapshot the training cannot change)."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {key: _host_copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_host_copy(item) for item in value)
    return value


class Writer:
    """A training's checkpoints. With `minutes` 0, one after every epoch. With `minutes` > 0, one
    at most every `minutes` (writing ~170 MB per epoch is seconds on a network filesystem): the
    state after each finished epoch is kept in host memory meanwhile and written when the training
    stops for any reason it sees (an error, Ctrl-C, SIGTERM from SLURM or Snakemake: `flush`). A
    resumed run continues exactly from the epoch written; a process killed outright (SIGKILL)
    loses at most `minutes` of finished epochs."""

    def __init__(self, run_dir: Path, minutes: float):
        self.run_dir, self.seconds = Path(run_dir), 60.0 * minutes
        self.written_at, self.pending = time.monotonic(), None

    def after_epoch(self, parts: dict, history: list[dict], cfg: dict, selection: dict) -> None:
        if self.seconds <= 0 or time.monotonic() - self.written_at >= self.seconds:
            save(self.run_dir, parts, history, cfg, selection)
            self.written_at, self.pending = time.monotonic(), None
        else:
            self.pending = _host_copy(_state(parts, history, cfg, selection))

    def flush(self) -> None:
        """Write the last finished epoch's state if it is not on disk yet."""
        if self.pending is not None:
            _write(self.run_dir, self.pending)
            self.written_at, self.pending = time.monotonic(), None


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
