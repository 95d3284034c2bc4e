"""Wall time of `snakemake -n` of the full preset, with its job count: the papers' experiments
(target < 15 s), the fair table (`suite.fair`: a job per search round and per final repetition)
and the knob paths (`suite.knobs`, thousands) on their own, and the whole preset
(`python -m benchmarks.workflow`, target ≤ 20 s and ≤ 12,000 jobs)."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def papers_experiments() -> list[str]:
    from dmlbench.config.plan import Plan

    plan = Plan.load(REPO / "workflow" / "config")
    return [key for key in plan.experiment_ids if plan.experiments[key].get("kind") not in ("fair", "knobs")]


def stand_in_digests() -> str:
    """`trunk_sha256` for the timm trunks with no digest on record, which `full` plans only once one is
    recorded (docs/backbones.md): a dry run reads no weights, so any digest of the right form stands in."""
    from dmlbench.models.timm_trunks import TRUNKS

    return "trunk_sha256={" + ", ".join(f"{t}: {'e' * 64}" for t, trunk in TRUNKS.items() if not trunk.sha256) + "}"


def run(
    repeats: int = 3, experiments: list[str] | None = None, what: str = "papers' experiments", quiet: bool = False
) -> dict:
    """`experiments`: None for the papers' experiments, [] for the whole preset. `quiet`: `snakemake
    -n -q`, the plan without Snakemake's description of every job (nor its job count)."""
    times, jobs = [], None
    experiments = papers_experiments() if experiments is None else experiments
    with tempfile.TemporaryDirectory() as workdir:
        for _ in range(repeats):
            start = time.perf_counter()
            chosen = [
                "--config",
                stand_in_digests(),
                *([f"experiments=[{','.join(experiments)}]"] if experiments else []),
            ]
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "snakemake",
                    "-n",
                    "-s",
                    str(REPO / "Snakefile"),
                    "-d",
                    workdir,
                    "--cores",
                    "all",
                    "--resources",
                    "gpu=8",
                    *chosen,
                    *(["-q"] if quiet else []),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            times.append(time.perf_counter() - start)
            match = re.search(r"^total\s+(\d+)$", out.stdout, re.M)
            jobs = int(match.group(1)) if match else None
    times.sort()
    row = {
        "median_s": times[len(times) // 2],
        "min_s": times[0],
        "max_s": times[-1],
        "jobs": jobs,
        "what": what,
        "quiet": quiet,
    }
    print(
        f"snakemake -n{' -q' if quiet else ''} (full preset, {what}): {row['median_s']:.1f} s median"
        f"{f' for {jobs} jobs' if jobs else ''}",
        flush=True,
    )
    return row


if __name__ == "__main__":
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    run(repeats=repeats, experiments=[], what="every experiment")
    run(repeats=repeats, experiments=[], what="every experiment", quiet=True)
