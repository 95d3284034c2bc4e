"""Seconds per preflight group: the preflight of `full`'s ms.t2 and dro.t1 groups (BN-Inception at
its real input size on a GPU; at 64 px on a CPU), the first of each network shape on its trunk,
the others' code paths on the small trunk; projected to all of `full`'s groups, each kind at its
measured mean, run as the preflight runs them (two at a time on this CPU, one on a GPU)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

from dmlbench.config.plan import Plan
from dmlbench.preflight import runner
from dmlbench.preflight.grouping import group_runs, shape_owners

CONFIG_DIR = Path(__file__).resolve().parents[1] / "workflow" / "config"
EXPERIMENTS = ["ms.t2", "dro.t1"]


def run(experiments=EXPERIMENTS, cpu_side: int = 64) -> dict:
    """The preflight of `experiments`, at real input sizes on a GPU, at `cpu_side`-pixel crops on a
    CPU (the tiny run: 32, the smallest BN-Inception takes)."""
    cuda = torch.cuda.is_available()
    image_side = None if cuda else cpu_side
    plan = Plan.load(CONFIG_DIR, {"preset": "full", "experiments": list(experiments)})
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        passed = runner.run(plan, Path(tmp) / "work", Path(tmp) / "out", image_side, "auto", 8, log=lambda m: None)
        seconds = time.perf_counter() - started
        table = pd.read_csv(Path(tmp) / "out" / "preflight.csv")
    light = table["timed_by"] != table["group"]
    full_owners = shape_owners(group_runs(Plan.load(CONFIG_DIR, {"preset": "full"})), image_side)
    shapes = len(set(full_owners.values()))
    at_once = runner.parallel_probes(torch.device("cuda" if cuda else "cpu"))
    per_full, per_light = table.loc[~light, "seconds"].mean(), table.loc[light, "seconds"].mean()
    projected = (shapes * per_full + (len(full_owners) - shapes) * (per_light if light.any() else per_full)) / at_once
    row = {
        "experiments": ", ".join(experiments),
        "groups": len(table),
        "seconds": seconds,
        "passed": passed,
        "image_side": "real input sizes" if cuda else f"{image_side}-px crops",
        "cuda": cuda,
        "device": torch.cuda.get_device_name(0) if cuda else "CPU (no GPU)",
        "full_groups": len(full_owners),
        "full_shapes": shapes,
        "seconds_per_trunk_probe": per_full,
        "seconds_per_code_path_probe": per_light if light.any() else None,
        "full_minutes": projected / 60,
    }
    print(
        f"preflight: {len(table)} group(s) in {seconds:.1f} s ({per_full:.1f} s a probe on its trunk, "
        f"{row['seconds_per_code_path_probe'] or 0:.1f} s on the small one); {len(full_owners)} groups "
        f"({shapes} shapes) at these rates {row['full_minutes']:.1f} min",
        flush=True,
    )
    return row


if __name__ == "__main__":
    run()
