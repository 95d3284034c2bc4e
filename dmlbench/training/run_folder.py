"""A run folder belongs to one resolved config and to one training process at a time.

- `fingerprint(cfg)`: sha256 of the resolved config; the checkpoint stores it, and a checkpoint of
  other settings is never resumed: its files are moved aside (`seed0.superseded-<fingerprint>/`)
  and training starts afresh, saying which settings changed.
- `exclusive(run_dir)`: a lock file in the folder, so that two trainings of one run (two
  Snakemake instances after a forced `--unlock`, a hand-started step) cannot run at once.
- `discard_unfinished(run_dir)`: after a failure before the first checkpoint nothing of the
  attempt is left that a later run could take for its own, not even the folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

from dmlbench.core.errors import DmlbenchError
from dmlbench.core.io import atomic_path, open_lock, set_aside

LOCK = ".train.lock"


class RunBusyError(DmlbenchError):
    """Another process is training the same run folder."""


# settings that change what a run keeps, reports or how fast it loads, not what it computes: a
# checkpoint stays valid, and the workflow does not rerun a job for them (`numbers_and_side`)
NOT_IN_FINGERPRINT = ("keep", "tracking", "loader")
# before `loader` was among them (runs, checkpoints and studies of earlier versions carry this one)
_LEGACY_NOT_IN_FINGERPRINT = ("keep", "tracking")


# settings added after runs were made, at the value with which a run computes what it computed
# before they existed: left out of the fingerprint at that value, so finished runs stay valid
INTRODUCED_AT = {
    ("model", "weights_sha256"): None,
    ("model", "frozen_patch_embed"): False,
    ("optimizer", "layer_decay"): 1.0,
    ("optimizer", "clip_grad_norm"): None,
    ("eval", "trunk_feature"): False,
    ("method", "code"): {},  # the suite's own components: no file of a user's
}


def fingerprint(cfg: dict) -> str:
    """sha256 of the settings that decide a run's numbers."""
    return _digest(cfg, NOT_IN_FINGERPRINT)


def fingerprints(cfg: dict) -> tuple[str, str]:
    """This version's fingerprint and the one earlier versions wrote for the same settings: a
    checkpoint or a study of either belongs to `cfg`."""
    return fingerprint(cfg), _digest(cfg, _LEGACY_NOT_IN_FINGERPRINT)


def numbers_and_side(cfg: dict) -> tuple[dict, dict]:
    """A resolved config split into the settings that decide its numbers and the side settings
    (`NOT_IN_FINGERPRINT`): the workflow passes the first as a rerun trigger, the second not."""
    return (
        {key: value for key, value in cfg.items() if key not in NOT_IN_FINGERPRINT},
        {key: value for key, value in cfg.items() if key in NOT_IN_FINGERPRINT},
    )


def _digest(cfg: dict, left_out: tuple[str, ...]) -> str:
    kept = {key: value for key, value in cfg.items() if key not in left_out}
    for (section, key), neutral in INTRODUCED_AT.items():
        if isinstance(kept.get(section), dict) and kept[section].get(key, neutral) == neutral:
            kept[section] = {k: v for k, v in kept[section].items() if k != key}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()


def trained_with(run_dir: Path, cfg: dict) -> bool:
    """Whether the run folder's `config.json` holds settings of `cfg`'s fingerprint."""
    try:
        return fingerprint(json.loads((Path(run_dir) / "config.json").read_text())) == fingerprint(cfg)
    except (OSError, ValueError):
        return False


def changed_settings(old: dict, new: dict, prefix: str = "") -> list[str]:
    """`key: old → new` for every leaf that differs between two configs."""
    out = []
    for key in sorted(set(old) | set(new), key=str):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += changed_settings(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: {a!r} → {b!r}")
    return out


@contextmanager
def exclusive(run_dir: Path):
    """Hold the run folder's lock for the block; stop at once if another process holds it. Only
    the holder cleans up after itself (a refused process leaves the holder's lock alone)."""
    handle = open_lock(run_dir / LOCK)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise RunBusyError(
            f"{run_dir} is being trained by another process (pid {holder}). Two Snakemake "
            f"instances are working in this folder: let the other finish, or stop it, then "
            f"rerun (see docs/interrupted-runs.md)"
        ) from None
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield
    finally:
        if run_dir.exists() and not _contents(run_dir):  # nothing but the lock: leave no folder
            (run_dir / LOCK).unlink(missing_ok=True)
            run_dir.rmdir()
        handle.close()


def _contents(run_dir: Path) -> list[Path]:
    return [p for p in run_dir.iterdir() if p.name != LOCK]


def supersede(run_dir: Path, old_fingerprint: str) -> Path:
    """Move every file of the folder (but the lock) to a new sibling folder; return its path. One
    set aside before under that name stays (`-2`, `-3`, … name the later ones): the callers say
    where the files went, and no superseded run is ever deleted."""
    name = f"{run_dir.name}.superseded-{old_fingerprint[:12]}"
    target = next(
        path
        for path in (run_dir.with_name(name + (f"-{n}" if n > 1 else "")) for n in itertools.count(1))
        if not path.exists()
    )
    target.mkdir()
    for path in _contents(run_dir):
        path.rename(target / path.name)
    return target


def discard_unfinished(run_dir: Path) -> None:
    """Remove what an attempt wrote before its first checkpoint, or what a finished run kept
    when it trains again (`exclusive` then removes the folder itself when nothing else is in it).
    Files set aside as damaged (`*.corrupt`, named to the user when set aside) stay."""
    for path in _contents(run_dir):
        if path.name.endswith(".corrupt"):
            continue
        shutil.rmtree(path) if path.is_dir() else path.unlink()


def write_history(run_dir, rows: list[dict]) -> None:
    with atomic_path(run_dir / "epochs.jsonl") as tmp:
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))


class DamagedHistoryError(DmlbenchError):
    """A run's `epochs.jsonl` does not parse (it has been set aside)."""


def read_history(run_dir: Path) -> list[dict]:
    """The per-epoch rows of a run (`epochs.jsonl`); a damaged file is named and set aside."""
    path = Path(run_dir) / "epochs.jsonl"
    try:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if not all(isinstance(row, dict) and "epoch" in row for row in rows):
            raise ValueError("a line is not an epoch's row")
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
        moved = set_aside(path)
        raise DamagedHistoryError(
            f"{path} is damaged ({error}): set aside as {moved.name}; the train step "
            f"writes it again from the run's checkpoint (rerun it)"
        ) from None
    return rows
