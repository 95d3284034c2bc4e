"""Walltimes from what runs took: the finished trainings of a preset (`<run>/cost.json`, written
when a training ends: its stop epoch, seconds per epoch and `wall_seconds` over all its attempts),
pooled per kind of run (one experiment × dataset × method × stage: the run folder with its seed,
trial, repetition and fold numbers dropped), give the time a not yet finished run of that kind is
asked for: the `QUANTILE` of the kind's wall hours. Used by the SLURM jobs' time requests before
the preflight's projection (`Steps.projected_hours`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

QUANTILE = 0.9  # of the finished runs' wall hours (numpy's linear interpolation): the largest with one to nine
INDEX = re.compile(r"/(seed|trial|rep|fold)\d+(?=/|$)")


def kind(run: str) -> str:
    """The run folder's kind: `results/p/e/d/m/search/trial3/fold1` → `results/p/e/d/m/search/trial*/fold*`."""
    return INDEX.sub(r"/\1*", run)


def measured_hours(preset: str, root: Path = Path(".")) -> dict[str, float]:
    """Kind → the `QUANTILE` of its finished runs' wall hours (a run with `metrics.json` and a
    readable `cost.json`), from `results/<preset>/` under `root`."""
    hours: dict[str, list[float]] = {}
    base = root / "results" / preset
    for record in base.glob("**/cost.json") if base.is_dir() else ():
        if not (record.parent / "metrics.json").is_file():
            continue
        try:
            seconds = float(json.loads(record.read_text())["wall_seconds"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a record being written or of an older layout: no measurement
        run = record.parent.relative_to(root).as_posix()
        hours.setdefault(kind(run), []).append(seconds / 3600)
    return {k: float(np.quantile(v, QUANTILE)) for k, v in hours.items()}
