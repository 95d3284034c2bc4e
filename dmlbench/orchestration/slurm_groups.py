"""The fair search's SLURM submissions: consecutive rounds of one search run in one submission (a
Snakemake group, which SLURM is asked for the rounds' summed time), at most `fair.rounds_per_job`
of them and together within the cap a GPU job may ask (`slurm_profile.job_minutes`). Without a
projection for every round (no preflight budget, no finished runs of its kind) each round is its
own submission asking the cap. A submission cut at its limit and sent again asks the cap shared
among its rounds, so no submission asks more than the cap. The grouping names no file: it changes
no output and reruns nothing (`dmlbench.config.fair_jobs`)."""

from __future__ import annotations

from dmlbench.orchestration.slurm_profile import job_minutes, number


def search_groups(plan, experiment: str, dataset: str, method: str) -> list[list[int]]:
    """The search's rounds cut into submissions, in order (cached on the plan)."""
    cache = plan.__dict__.setdefault("_slurm_search_groups", {})
    key = (experiment, dataset, method)
    if key not in cache:
        rounds = range(plan.fair_rounds(experiment))
        hours = [plan.projected_hours(plan.fair_round_runs(experiment, dataset, method, r)) for r in rounds]
        if any(h is None for h in hours):
            cache[key] = [[r] for r in rounds]
        else:
            size, cap = plan.fair_settings(experiment)["rounds_per_job"], number("TRAIN_MINUTES")
            groups, total = [], 0
            for r, h in zip(rounds, hours):
                minutes = job_minutes(h)
                if groups and len(groups[-1]) < size and total + minutes <= cap:
                    groups[-1].append(r)
                    total += minutes
                else:
                    groups.append([r])
                    total = minutes
            cache[key] = groups
    return cache[key]


def _group_of(plan, experiment, dataset, method, round_index) -> tuple[int, list[int]]:
    for index, rounds in enumerate(search_groups(plan, experiment, dataset, method)):
        if int(round_index) in rounds:
            return index, rounds
    raise ValueError(f"{experiment} has no search round {round_index} in preset {plan.name}")


def group_id(plan, experiment, dataset, method, round_index) -> str | None:
    """The Snakemake group of a search round (None: a submission of its own)."""
    index, rounds = _group_of(plan, experiment, dataset, method, round_index)
    return f"fair_search.{experiment}.{dataset}.{method}.{index}" if len(rounds) > 1 else None


def round_minutes(plan, experiment, dataset, method, round_index, attempt: int = 1) -> int:
    """What a search round asks SLURM for (its group asks the sum): its projection, or on a later
    attempt the cap shared among its group's rounds."""
    _, rounds = _group_of(plan, experiment, dataset, method, round_index)
    if attempt > 1:
        return max(1, number("TRAIN_MINUTES") // len(rounds))
    runs = plan.fair_round_runs(experiment, dataset, method, round_index)
    return job_minutes(plan.projected_hours(runs))
