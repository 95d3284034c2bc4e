"""The plan's power table (`python -m dmlbench plan --power`): `verdicts.power_plan`'s lines for
every paper the catalogue certifies, at this plan's seeds, with the preflight budget's hours."""

from __future__ import annotations

from dmlbench.config import verdict_spec
from dmlbench.verdicts import power, power_plan


def plan_table(plan) -> str:
    budget = plan._budget()
    per_pair: dict[tuple, list[float]] = {}
    for run in plan.runs():
        if run.path(plan.name) in budget:
            per_pair.setdefault((run.experiment, run.method, run.dataset), []).append(budget[run.path(plan.name)])

    def hours_of(experiment, pair):
        found = per_pair.get((experiment, *pair))
        return sum(found) / len(found) if found else None

    found = []
    for paper in verdict_spec.certified_papers(plan, chosen_only=False):
        found += power_plan.lines(verdict_spec.certificate_spec(plan, paper), hours_of)
    head = (
        f'Power before the data (docs/verdicts.md, "Power"): σ = {power.ASSUMED_SD} points per seed (an '
        f"assumption: no paper prints a seed spread), the paper right; seeds for {power_plan.TARGET:.0%}: every row "
        f"of it at that many seeds (at most {power_plan.MAX_SEEDS}); extra GPU-h from "
        f"reports/{plan.name}/preflight/budget.csv ({'found' if budget else 'none: make preflight writes it'})."
    )
    return head + "\n\n" + power_plan.table(found)
