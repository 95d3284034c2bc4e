"""The trainings a preset plans, as a digest per experiment: how many, and the sha256 of their
folders with their resolved settings that decide the numbers (all but keep, tracking, loader).
`tests/data/full_trainings.json` holds the digest of `full` made by the commit before the jobs
were regrouped (0739e16):

    PYTHONPATH=<checkout of 0739e16> python tests/trainings_digest.py > tests/data/full_trainings.json

Since then entries changed on purpose, each remade from this script at the commit that changed it:
suite.modern's, when Proxy-Anchor joined it (2026-11-27, 40 trainings more: 360), and again when its
runs began to score the trunk's feature too (`eval.trunk_feature`); suite.knobs', when the backward
path joined it (2026-11-27); profs.t1's, when it went to six seeds for its HNCM claims' power
(2026-11-29, 66 trainings more: 396); suite.knobs' again the same day, when its profs runs on folds
that keep the paper's test-set choice of epoch began to score their epochs on the test half
(`data.fold.epochs_scored_on`, 240 runs). A setting added since, at the value with which a run computes what it
computed before (`ADDED_SINCE`), is left out, as the runs' fingerprints leave it out.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

SIDE = ("keep", "tracking", "loader")  # spelled out: the commit of before knew no such list
ADDED_SINCE = {("eval", "trunk_feature"): False}


def digest(config_dir: Path, preset: str = "full") -> dict:
    from dmlbench.config.plan import Plan

    plan = Plan.load(config_dir, {"preset": preset})
    lines: dict[str, list[str]] = {}
    for run in plan.runs() + plan.fair_runs():
        numbers = {k: v for k, v in plan.resolve(run).items() if k not in SIDE}
        for (section, key), neutral in ADDED_SINCE.items():
            if numbers.get(section, {}).get(key, neutral) == neutral:
                numbers[section] = {k: v for k, v in numbers[section].items() if k != key}
        settings = json.dumps(numbers, sort_keys=True, default=str)
        lines.setdefault(run.experiment, []).append(f"{run.path(preset)} {settings}")
    return {
        experiment: {"trainings": len(found), "sha256": hashlib.sha256("\n".join(sorted(found)).encode()).hexdigest()}
        for experiment, found in sorted(lines.items())
    }


if __name__ == "__main__":
    import dmlbench

    print(json.dumps(digest(Path(dmlbench.__file__).parents[1] / "workflow" / "config"), indent=1))
    sys.exit(0)
