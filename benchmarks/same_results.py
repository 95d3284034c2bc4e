"""Did a change alter any number? Compare the results of one preset in two checkouts.

    python -m benchmarks.same_results BEFORE AFTER [--preset demo] [--dropped GLOB ...]

Run the preset in both (e.g. a clone of the old commit and one of the new, same seeds), then
compare: every run's resolved settings that decide its numbers (`config.json` without `keep`,
`tracking` and `loader`, as the runs' fingerprint), every metrics record (`metrics.json`,
`final_metrics.json`, the fair protocol's `validation.json`, the reference rows) and every table of
the report (`reports/<preset>/**/*.csv`). Prints what differs; exits 1 if a number differs or a
file is in one checkout only. Tables of wall-clock timings (`timing.csv`) are listed apart: they
differ from run to run. A run folder that links to the run it is the same training as
(`dmlbench/config/run_dedup.py`) is read through its link. Left out, since a linked run carries
the earlier run's: the experiment's name (`run.experiment`), and the hashes of files that embed
it (`fingerprint`, of the settings, which `config.json` compares, and `model_sha256`, of model.pt,
whose numbers the metrics compare). `--dropped GLOB` names records the change stops writing on purpose (e.g.
the fair fold trainings' final evaluation, which nothing read): found only before, they are
counted apart, not as a difference.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys
from pathlib import Path

from dmlbench.training.run_folder import NOT_IN_FINGERPRINT  # keep, tracking, loader

RECORDS = ("config.json", "metrics.json", "final_metrics.json", "validation.json")
TIMINGS = ("timing.csv",)
HASHES = ("fingerprint", "model_sha256")  # of files that hold the experiment's name


def _without_names(record):
    """A record without the experiment's name and the hashes of what holds it, at any depth."""
    if not isinstance(record, dict):
        return record
    kept = {k: _without_names(v) for k, v in record.items() if k not in HASHES}
    if isinstance(kept.get("run"), dict):
        kept["run"] = {k: v for k, v in kept["run"].items() if k != "experiment"}
    return kept


def _numbers(path: Path):
    """What a record holds apart from its wall-clock seconds and device."""
    if path.suffix == ".csv":
        rows = csv.DictReader(io.StringIO(path.read_text()))
        return [{k: v for k, v in row.items() if k not in HASHES} for row in rows]
    record = _without_names(json.loads(path.read_text()))
    if path.name == "final_metrics.json":
        record = record.get("result", record)
    if path.name == "config.json" and isinstance(record, dict):  # the settings that decide the numbers
        record = {k: v for k, v in record.items() if k not in NOT_IN_FINGERPRINT}
    return {k: v for k, v in record.items() if k not in ("seconds", "device")} if isinstance(record, dict) else record


def compare(before: Path, after: Path, preset: str, dropped: tuple[str, ...] = ()) -> dict:
    """Files only in one checkout, files whose numbers differ, and how many were compared."""

    def walk(top: Path):  # through linked run folders
        for folder, _, names in os.walk(top, followlinks=True):
            yield from (Path(folder) / name for name in names)

    def files(root: Path) -> dict:
        found = {p.relative_to(root): p for p in walk(root / "results" / preset) if p.name in RECORDS}
        found.update({p.relative_to(root): p for p in walk(root / "reports" / preset) if p.suffix == ".csv"})
        return found

    a, b = files(before), files(after)
    shared = sorted(set(a) & set(b))
    differ = [str(r) for r in shared if r.name not in TIMINGS and _numbers(a[r]) != _numbers(b[r])]
    gone = sorted(str(r) for r in set(a) - set(b) if any(r.match(pattern) for pattern in dropped))
    return {
        "compared": len(shared),
        "dropped": gone,
        "only_before": sorted(str(r) for r in set(a) - set(b) if str(r) not in gone),
        "only_after": sorted(map(str, set(b) - set(a))),
        "differ": differ,
        "timings": [str(r) for r in shared if r.name in TIMINGS],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--preset", default="demo")
    parser.add_argument(
        "--dropped",
        action="append",
        default=[],
        metavar="GLOB",
        help="records no longer written on purpose (relative path pattern; repeatable)",
    )
    args = parser.parse_args(argv)
    found = compare(args.before, args.after, args.preset, tuple(args.dropped))
    print(
        f"{found['compared']} files compared; {len(found['differ'])} differ; "
        f"{len(found['only_before'])} only before, {len(found['only_after'])} only after; "
        f"{len(found['dropped'])} dropped on purpose ({', '.join(args.dropped) or 'none named'}); "
        f"timings not compared: {', '.join(found['timings']) or 'none'}"
    )
    for key in ("differ", "only_before", "only_after"):
        for name in found[key][:20]:
            print(f"  {key}: {name}")
    return 1 if found["differ"] or found["only_before"] or found["only_after"] else 0


if __name__ == "__main__":
    sys.exit(main())
