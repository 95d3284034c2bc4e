# Helpers shared by the rules: paths and the per-job specs the package computes.
import json
import re
import shlex
import sys

from dmlbench.config import csv_datasets, verdict_spec
from dmlbench.config.job_params import Untracked, as_json
from dmlbench.config.plan import PRESET_NAME
from dmlbench.config.run import EXPERIMENT_ID, RUN_METHOD, TRAIN_LOG
from dmlbench.orchestration.slurm_profile import job_minutes
from dmlbench.training.run_folder import numbers_and_side
from dmlbench.data.datasets import NAME_PATTERN as DATASET_NAME

# every job runs with the interpreter Snakemake runs under (its environment, activated or not)
PYTHON = shlex.quote(sys.executable)

RUN_DIR = "results/{preset}/{experiment}/{dataset}/{method}/seed{seed}"

wildcard_constraints:   # the plan refuses ids outside these (dmlbench/config/run.py)
    preset=PRESET_NAME.pattern,
    experiment=EXPERIMENT_ID,
    dataset=DATASET_NAME,
    method=RUN_METHOD,
    seed=r"\d+",


def gpu_count(resources):
    """N of `--resources gpu=N` (0 when not given)."""
    gpu = resources.get("gpu")
    return int(getattr(gpu, "value", gpu) or 0)


# Every rule's command runs `"$DMLBENCH_PYTHON" -m dmlbench …` from this checkout (installed or not),
# a GPU job's behind `gpu_slot`, which hands it a free device (none under SLURM or without
# --resources gpu=N). Both are set in the shell prefix, not in the rules' command text: Snakemake
# compares that text to decide whether a rule's code changed, so a moved checkout or environment
# or another --resources gpu=N reruns nothing, and a dry run has two fields fewer to fill per job.
shell.prefix(
    (f"export PYTHONPATH={shlex.quote(workflow.basedir)}:\"$PYTHONPATH\"; DMLBENCH_PYTHON={PYTHON}; "
     f"gpu_slot() {{ \"$DMLBENCH_PYTHON\" -m dmlbench gpu-slot --slots {gpu_count(workflow.global_resources)} "
     f"--per-device {PLAN.preset.get('gpu_per_device', 1)} -- \"$@\"; }}; "
     f"{csv_datasets.environment(PLAN)}")  # the CSV datasets' files (data.csv), by name
    .replace("{", "{{").replace("}", "}}"))  # Snakemake formats the prefix: its braces kept


def job_runtime(runs_of):
    """A GPU job's `runtime` (minutes, what SLURM is asked for): from the finished runs of the same
    kind, else the preflight's budget, for the run folders `runs_of(wildcards)` trains; without
    either, the cap, as does a job submitted again (`attempt` 2 on: cut at its limit)."""
    if not PLAN.has_budget():
        return job_minutes(None)
    return lambda w, attempt: job_minutes(PLAN.projected_hours(runs_of(w)), attempt)


def run_of(w):
    return PLAN.find_run(w.experiment, w.dataset, w.method, int(w.seed))


def run_numbers(w):
    """The run's settings that decide its numbers."""
    return numbers_and_side(PLAN.resolved(run_of(w)))[0]


def run_side(w):
    """The run's side settings (tracking, keep, loader)."""
    return numbers_and_side(PLAN.resolved(run_of(w)))[1]


def experiment_metrics(w):
    return [f"{run.path(PRESET)}/metrics.json" for run in PLAN.runs(w.experiment)]


def every_runs_metrics(w):
    """The metrics of every run of the papers' experiments (the results table's rows)."""
    return [f"{run.path(PRESET)}/metrics.json" for run in PLAN.runs()]
