"""Seconds per preflight group: the preflight of `full`'s ms.t2 groups (BN-Inception at its real
input size on a GPU; at 64 px on a CPU), projected to all of `full`'s groups at that rate."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import torch

from dmlbench.config.plan import Plan
from dmlbench.preflight import runner
from dmlbench.preflight.grouping import group_runs

CONFIG_DIR = Path(__file__).resolve().parents[1] / "workflow" / "config"
EXPERIMENTS = ["ms.t2"]


def run(experiments=EXPERIMENTS) -> dict:
    cuda = torch.cuda.is_available()
    image_side = None if cuda else 64
    plan = Plan.load(CONFIG_DIR, {"preset": "full", "experiments": list(experiments)})
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        passed = runner.run(plan, Path(tmp) / "work", Path(tmp) / "out", image_side, "auto", 8,
                            log=lambda m: None)
        seconds = time.perf_counter() - started
    groups = len(group_runs(plan))
    full_groups = len(group_runs(Plan.load(CONFIG_DIR, {"preset": "full"})))
    row = {"experiments": ", ".join(experiments), "groups": groups, "seconds": seconds, "passed": passed,
           "image_side": "real input sizes" if cuda else f"{image_side}-px crops", "cuda": cuda,
           "device": torch.cuda.get_device_name(0) if cuda else "CPU (no GPU)", "full_groups": full_groups,
           "full_minutes": seconds / groups * full_groups / 60}
    print(f"preflight: {groups} group(s) in {seconds:.1f} s; {full_groups} groups at this rate "
          f"{row['full_minutes']:.1f} min", flush=True)
    return row


if __name__ == "__main__":
    run()
