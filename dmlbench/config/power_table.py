"""The plan's power table (`python -m dmlbench plan --power`): `verdicts.power_plan`'s lines for
every paper the catalogue certifies, at this plan's seeds, with the preflight budget's hours, at
each dataset × metric's seed spread (`seed_spread.spread_of`: the pooled spread of the preset's
finished runs where they exist, else the catalogue's prior), each spread named with its source."""

from __future__ import annotations

from pathlib import Path

from dmlbench.config import seed_spread, verdict_spec
from dmlbench.verdicts import power_plan


def plan_table(plan, root: Path = Path(".")) -> str:
    budget = plan._budget()
    per_pair: dict[tuple, list[float]] = {}
    for run in plan.runs():
        if run.path(plan.name) in budget:
            per_pair.setdefault((run.experiment, run.method, run.dataset), []).append(budget[run.path(plan.name)])

    def hours_of(experiment, pair):
        found = per_pair.get((experiment, *pair))
        return sum(found) / len(found) if found else None

    spread = seed_spread.spread_of(plan.config_dir, root / f"results/{plan.name}")
    used: dict[tuple[str, str], tuple[float, str]] = {}

    def sd_of(dataset, metric):
        used[dataset, metric] = spread(dataset, metric)
        return used[dataset, metric][0]

    found = []
    for paper in verdict_spec.certified_papers(plan, chosen_only=False):
        found += power_plan.lines(verdict_spec.certificate_spec(plan, paper), hours_of, sd_of)
    by_spread: dict[tuple[float, str], list[str]] = {}
    for (dataset, metric), key in sorted(used.items()):
        by_spread.setdefault(key, []).append(f"{dataset}/{metric}")
    spreads = "\n".join(
        f"- σ = {sd:.2f} points ({what}): {', '.join(cells)}" for (sd, what), cells in by_spread.items()
    )
    head = (
        f'Power before the data (docs/verdicts.md, "Power"), the paper right; seeds for {power_plan.TARGET:.0%}: '
        f"every row of it at that many seeds (at most {power_plan.MAX_SEEDS}); extra GPU-h from "
        f"reports/{plan.name}/preflight/budget.csv ({'found' if budget else 'none: make preflight writes it'}). "
        f"The seed spread σ per dataset × metric ({plan.config_dir / seed_spread.SPREAD_FILE}; "
        f"results/{plan.name}/ where finished runs have ≥ 2 seeds):\n{spreads}"
    )
    return head + "\n\n" + power_plan.table(found)
