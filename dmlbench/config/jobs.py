"""What the Snakemake rules ask of a plan, in one place: each step's inputs, its spec and its rerun
trigger (`step_jobs`, `fair_step_jobs`, `knob_step_jobs`, `retrieved_jobs`). A thin adapter over `Plan`, which owns
the catalogue's checks, the runs and their resolved settings: every other name is the plan's.
The rules call `JOBS = jobs.of(PLAN)`; a step's command run by hand builds its spec the same way."""

from __future__ import annotations

from dmlbench.config.fair_step_jobs import FairStepJobs
from dmlbench.config.knob_step_jobs import KnobStepJobs
from dmlbench.config.retrieved_jobs import RetrievedJobs
from dmlbench.config.step_jobs import StepJobs


class Jobs(StepJobs, FairStepJobs, KnobStepJobs, RetrievedJobs):
    """The steps' inputs, specs and triggers of one plan."""

    def __init__(self, plan):
        self.plan = plan

    def __getattr__(self, name: str):
        return getattr(self.plan, name)  # the plan's runs, settings, paths and catalogue


def of(plan) -> Jobs:
    """The plan's `Jobs` (one per plan: what its members cache is kept)."""
    if "_jobs" not in plan.__dict__:
        plan.__dict__["_jobs"] = Jobs(plan)
    return plan.__dict__["_jobs"]
