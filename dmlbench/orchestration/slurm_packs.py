"""Short trainings packed into SLURM submissions: once a projection exists (a preflight budget or
finished runs), the `train` jobs projected under the floor (DMLBENCH_SLURM_MIN_MINUTES) go, in the
order (experiment, dataset, method, seed), into packs of consecutive ones, a pack closed once the
minutes its trainings ask reach the floor and never over the cap (DMLBENCH_SLURM_TRAIN_MINUTES).
A pack is one Snakemake group, one submission on one GPU, running its trainings in turn and asking
their summed time; each asks its projection × DMLBENCH_SLURM_TIME_FACTOR without the floor (the
first also what a last pack lacks of it). A pack sent again (cut at its limit) asks the cap shared
among its trainings. Runs already finished are not packed, so a run taken up again packs what is
left. Without a projection nothing is packed. The grouping names no file: it reruns nothing."""

from __future__ import annotations

from pathlib import Path

from dmlbench.orchestration.slurm_profile import job_minutes, number, projected_minutes

PARENT = "train_pack"  # the profile's `group-components` gives it a count above any pack's size


def packs(plan) -> list[list[str]]:
    """The packs of run folders, in order (cached on the plan); none without a projection."""
    cache = plan.__dict__.get("_slurm_train_packs")
    if cache is None:
        cache = _packed(plan) if plan.has_budget() else []
        plan.__dict__["_slurm_train_packs"] = cache
        plan.__dict__["_slurm_pack_of"] = {folder: (k, pack) for k, pack in enumerate(cache) for folder in pack}
    return cache


def _packed(plan) -> list[list[str]]:
    floor, cap = number("MIN_MINUTES"), number("TRAIN_MINUTES")
    found, open_pack, total = [], [], 0
    for run in sorted(plan.train_job_runs()):
        folder = run.path(plan.name)
        hours = plan.projected_hours([folder])
        if hours is None or (Path(folder) / "metrics.json").exists():
            continue
        minutes = projected_minutes(hours)
        if minutes >= floor:
            continue  # a submission of its own
        if open_pack and total + minutes > cap:
            found.append(open_pack)
            open_pack, total = [], 0
        open_pack.append(folder)
        total += minutes
        if total >= floor:
            found.append(open_pack)
            open_pack, total = [], 0
    return [pack for pack in [*found, open_pack] if len(pack) > 1]  # a pack of one: alone, as before


def pack_of(plan, folder: str) -> tuple[int, list[str]] | None:
    """The index and run folders of the pack `folder` is in (None: a submission of its own)."""
    packs(plan)
    return plan.__dict__["_slurm_pack_of"].get(folder)


def group_id(plan, folder: str, workflow=None) -> str | None:
    """The Snakemake group of the training in `folder` (None: a submission of its own)."""
    found = pack_of(plan, folder)
    if found is None:
        return None
    name = f"{PARENT}.{found[0]}"
    if workflow is not None:
        # Snakemake internals, only here: the trainings of a pack are not connected in the DAG, so
        # they form one group only when `--group-components` gives their group id a count above 1;
        # Snakemake looks that count up under `parent_groupids.get(id, id)`, which it fills for a
        # `group:` pattern with wildcards but not for a function: named here, one count (the
        # profile's `train_pack=…`) covers every pack (snakemake/dag.py `_update_group_components`).
        workflow.parent_groupids[name] = PARENT
    return name


def minutes(plan, folder: str, attempt: int = 1) -> int:
    """What the training in `folder` asks SLURM for: alone, `job_minutes`; in a pack, its projection
    without the floor (the pack's first also what the pack lacks of the floor), or on a later
    attempt the cap shared among the pack's trainings."""
    found = pack_of(plan, folder)
    if found is None:
        return job_minutes(plan.projected_hours([folder]), attempt)
    pack = found[1]
    if attempt > 1:
        return max(1, number("TRAIN_MINUTES") // len(pack))
    own = projected_minutes(plan.projected_hours([folder]))
    if folder != pack[0]:
        return own
    asked = sum(projected_minutes(plan.projected_hours([member])) for member in pack)
    return own + max(0, number("MIN_MINUTES") - asked)
