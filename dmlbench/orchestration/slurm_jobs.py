"""`python -m dmlbench slurm-jobs [--cancel]`: the suite's SLURM jobs still queued or running for
this working folder, after the Snakemake that submitted them was killed (they run on, and a new
Snakemake would submit their runs again beside them). A job is the suite's when the SLURM
executor's comment names one of the workflow's rules (`rule_<name>…`) and its working folder is
this one; `--cancel` hands their ids to `scancel`."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from dmlbench.core.errors import DmlbenchError

RULES_DIR = Path(__file__).resolve().parents[2] / "workflow" / "rules"


@dataclass(frozen=True)
class Job:
    id: str
    rule: str
    state: str
    elapsed: str
    comment: str


def rule_names(rules_dir: Path = RULES_DIR) -> set[str]:
    """The workflow's rule names, read from its rule files."""
    return {m for path in rules_dir.glob("*.smk") for m in re.findall(r"^rule (\w+):", path.read_text(), re.M)}


def _slurm(command: list[str]) -> str:
    if shutil.which(command[0]) is None:
        raise DmlbenchError(f"{command[0]} is not on PATH: run slurm-jobs on the cluster's login node")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise DmlbenchError(f"{' '.join(command[:2])} failed: {done.stderr.strip() or done.returncode}")
    return done.stdout


def suite_jobs(folder: Path) -> list[Job]:
    """This user's queued and running jobs submitted for `folder` by the suite's workflow."""
    rules, here = rule_names(), folder.resolve()
    out = _slurm(["squeue", "--me", "--noheader", "--format", "%i|%T|%M|%Z|%k"])
    jobs = []
    for line in out.splitlines():
        parts = line.split("|", 4)
        if len(parts) != 5:
            continue
        job_id, state, elapsed, workdir, comment = parts
        rule = next((r for r in sorted(rules, key=len, reverse=True) if re.match(rf"rule_{r}(_|$)", comment)), None)
        if rule and Path(workdir).resolve() == here:
            jobs.append(Job(job_id, rule, state, elapsed, comment))
    return jobs


def cancel(jobs: list[Job]) -> None:
    if jobs:
        _slurm(["scancel", *(job.id for job in jobs)])


def report(jobs: list[Job], cancelled: bool) -> str:
    if not jobs:
        return "no SLURM job of the suite is queued or running for this folder"
    lines = [f"{j.id:>10}  {j.state:<10} {j.elapsed:>10}  {j.comment}" for j in jobs]
    verb = "cancelled" if cancelled else "queued or running (cancel them with --cancel)"
    return "\n".join(lines + [f"{len(jobs)} job(s) {verb}"])
