"""Trainings the plan would run twice: runs of different experiments whose settings that decide
the numbers (`run_folder.numbers_and_side`) are the same but for the experiment's name, seed
included (dro.f4's CUB runs are dro.t1's, fastap.t3's are fastap.t2's, ms.t1's are
suite.baselines' on their seeds). Each is trained once, as the run where it first appears in the
plan's order; every other run folder is a link to that one (rule `train_alias`), so each
experiment's folders stay readable and its tables, figures and certificate read the same files.
A knob experiment's runs (trained in joined fold jobs) are left as they are."""

from __future__ import annotations

from dmlbench.config.run import Run
from dmlbench.training import run_folder


def _key(plan, run: Run) -> str:
    numbers = run_folder.numbers_and_side(plan.resolved(run))[0]
    return run_folder.fingerprint({**numbers, "run": {k: v for k, v in numbers["run"].items() if k != "experiment"}})


def trained_as(plan) -> dict[Run, Run]:
    """Each run trained as an earlier one → that run (cached on the plan)."""
    cache = plan.__dict__.get("_trained_as")
    if cache is None:
        first: dict[str, Run] = {}
        cache = {}
        for run in plan.runs():
            if plan.is_knobs(run.experiment):
                continue
            found = first.setdefault(_key(plan, run), run)
            if found != run:
                cache[run] = found
        plan.__dict__["_trained_as"] = cache
    return cache
