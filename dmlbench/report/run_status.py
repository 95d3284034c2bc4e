"""Where a planned run stands, read from its folder and its train job's log without touching
either: what the results table says of a sweep in progress.

- `finished`: its `metrics.json` holds metrics computed with the plan's settings;
- `stale`: it holds metrics of other settings (a run not trained again after a change, as
  `--rerun-triggers mtime` allows); its numbers are not shown;
- `running`: a process holds the run folder's lock;
- `failed`: its train job's log ends with an error (the `error` column has its last line);
- `interrupted`: a checkpoint and no running process (the next run resumes from it);
- `not started`: none of these.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FINISHED, STALE, RUNNING, FAILED, INTERRUPTED, NOT_STARTED = (
    "finished",
    "stale",
    "running",
    "failed",
    "interrupted",
    "not started",
)

# how the last line of a failed job's log begins or ends: dmlbench's one-line error, a Python
# exception, or Snakemake's notice
FAILURE_MARKS = (": error:", "Error", "Exception", "Traceback")


def metrics_fingerprint(run_dir: Path, result: dict) -> str | None:
    """The config fingerprint the metrics were computed with: recorded in `metrics.json` since
    2026-11-27 (`"fingerprint": null` where numbers were made by hand: None, nothing to compare),
    before that the run folder's `config.json`."""
    if "fingerprint" in result:
        return result["fingerprint"]
    from dmlbench.training import run_folder

    try:
        return run_folder.fingerprint(json.loads((run_dir / "config.json").read_text()))
    except (OSError, ValueError):
        return None


def status(run_dir: Path, result: dict, planned: str | list[str], log: Path) -> tuple[str, str | None]:
    """The run's status and, for a failed one, its error line. `result`: its `metrics.json` ({}
    when there is none); `planned`: the fingerprint of the plan's settings for it (or those it
    may carry, `RunSettings.accepted_fingerprints`)."""
    if result.get("metrics"):
        accepted = planned if isinstance(planned, list) else [planned]
        return (FINISHED, None) if metrics_fingerprint(run_dir, result) in accepted else (STALE, None)
    if _locked(run_dir):
        return RUNNING, None
    last = _last_line(log)
    if last and any(mark in last for mark in FAILURE_MARKS):
        return FAILED, last
    if (run_dir / "checkpoint.pt").exists():
        return INTERRUPTED, None
    return NOT_STARTED, None


def wall_seconds(run_dir: Path, spent: dict) -> float | None:
    """The run's wall seconds: its cost record's, else the epochs it has done so far."""
    if spent.get("wall_seconds") is not None:
        return float(spent["wall_seconds"])
    try:
        rows = [json.loads(line) for line in (run_dir / "epochs.jsonl").read_text().splitlines() if line]
    except (OSError, ValueError):
        return None
    return round(sum(float(row.get("seconds", 0.0)) for row in rows), 3) if rows else None


def _locked(run_dir: Path) -> bool:
    """Whether a process on this machine holds the run folder's lock (read from /proc/locks: taking
    the lock to find out could refuse a training that starts at that moment)."""
    from dmlbench.training.run_folder import LOCK

    try:
        found = (run_dir / LOCK).stat()
        with open("/proc/locks") as handle:
            held = handle.read()
    except OSError:
        return False
    where = f"{os.major(found.st_dev):02x}:{os.minor(found.st_dev):02x}:{found.st_ino} "
    return any(where in line for line in held.splitlines())


def _last_line(log: Path) -> str | None:
    try:
        with open(log, "rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - 4096))
            lines = [line.strip() for line in handle.read().decode(errors="replace").splitlines()]
    except OSError:
        return None
    lines = [line for line in lines if line]
    return lines[-1] if lines else None
