# Helpers shared by the rules: paths and the per-job specs the package computes.
import json
import re
import shlex
import sys

from dmlbench.config import verdict_spec
from dmlbench.data.datasets import NAME_PATTERN as DATASET_NAME

# every job runs with the interpreter Snakemake runs under (its environment, activated or not)
PYTHON = shlex.quote(sys.executable)

RUN_DIR = "results/{preset}/{experiment}/{dataset}/{method}/seed{seed}"

wildcard_constraints:
    preset=r"[A-Za-z0-9_-]+",
    experiment=r"[A-Za-z0-9_.-]+",
    dataset=DATASET_NAME,
    method=r"[A-Za-z0-9_.@-]+",
    seed=r"\d+",


def gpu_count(resources):
    """N of `--resources gpu=N` (0 when not given)."""
    gpu = resources.get("gpu")
    return int(getattr(gpu, "value", gpu) or 0)


def run_of(w):
    return PLAN.find_run(w.experiment, w.dataset, w.method, int(w.seed))


def run_spec(w):
    return json.dumps(PLAN.resolve(run_of(w)), sort_keys=True)


def gpu_slot():
    """Prefix that hands the job a free device (none under SLURM or without --resources gpu=N)."""
    return f"{PYTHON} -m dmlbench gpu-slot --slots {GPU_SLOTS} --"


def experiment_metrics(w):
    return [f"{run.path(PRESET)}/metrics.json" for run in PLAN.runs(w.experiment)]


def every_runs_metrics(w):
    """The metrics of every run of the papers' experiments (the results table's rows)."""
    return [f"{run.path(PRESET)}/metrics.json" for run in PLAN.runs()]
