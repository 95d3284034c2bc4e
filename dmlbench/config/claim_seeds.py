"""Seeds per experiment cell: an experiment's `claim_seeds` (claim id → seeds) gives the cells
(method × sweep variant × dataset) that claim reads those seeds, the other cells the experiment's
`seeds` (docs/experiments.md, "Seeds per cell"); a preset's `seeds` (or a subset's) replaces
both. The catalogue's values are checked here when it loads; the GPU-hours the extra seeds add
are projected from their training images (`training.projection`) against a preset's
`claim_budget` (tests/test_claim_seeds.py, `plan --power`)."""

from __future__ import annotations

from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean
from dmlbench.run_config import RunConfig
from dmlbench.training import projection
from dmlbench.verdicts.claim_kinds import part_rows
from dmlbench.verdicts.claims import per_variant


def reads(exp: dict, claim: dict) -> set[tuple[str, str]]:
    """The (row, dataset) cells a catalogue claim reads, over every variant of the sweep."""
    one = per_variant({**exp, "claims": [claim]}, list(exp.get("sweep") or {}))
    return {(row, dataset) for c in one for rows, dataset, _ in part_rows(c) for row in rows}


def cells(exp: dict, first: int | None = None) -> dict[tuple[str, str], list[int]]:
    """(row, dataset) → the seeds of a cell some claim of `claim_seeds` reads (the union of
    theirs; of each claim's smallest `first` seeds and the experiment's, when a preset's
    `second_wave.wave_one_claim_seeds` leaves the rest to the second wave); a cell not in it trains
    the experiment's `seeds`."""
    wanted = exp.get("claim_seeds") or {}
    base = set(exp.get("seeds") or [0])
    found: dict[tuple[str, str], set[int]] = {}
    for claim in exp.get("claims") or []:
        seeds = sorted(wanted.get(claim["id"], []))
        for cell in reads(exp, claim) if claim["id"] in wanted else ():
            found.setdefault(cell, set()).update(seeds if first is None else base | set(seeds[:first]))
    return {cell: sorted(seeds) for cell, seeds in found.items()}


def check(exp: dict, where: str, max_seed: int) -> None:
    """`claim_seeds`: a mapping of the experiment's claim ids to lists of distinct seeds, each a
    superset of the experiment's `seeds`."""
    given = exp.get("claim_seeds")
    if given is None:
        return
    ids = [c.get("id") for c in exp.get("claims") or []]
    if not isinstance(given, dict) or not given:
        raise ConfigError(f"{where}.claim_seeds: a mapping of claim id → seeds, not {given!r}")
    base = exp.get("seeds") or [0]
    for claim, seeds in given.items():
        key = f"{where}.claim_seeds.{claim}"
        if claim not in ids:
            raise ConfigError(
                f"{key}: no claim {claim!r} in this experiment{did_you_mean(str(claim), ids)}; its claims: {ids}"
            )
        if not (isinstance(seeds, list) and all(type(s) is int and 0 <= s <= max_seed for s in seeds)):
            raise ConfigError(f"{key}: a list of whole numbers from 0 to {max_seed}, not {seeds!r}")
        if len(set(seeds)) < len(seeds):
            raise ConfigError(f"{key}: {sorted({s for s in seeds if seeds.count(s) > 1})} given twice in {seeds}")
        missing = sorted(set(base) - set(seeds))
        if missing:
            raise ConfigError(
                f"{key}: {seeds} lacks the experiment's seeds {missing}: a claim's cells train the "
                f"experiment's seeds {base} and more; list them first, e.g. {sorted(set(base) | set(seeds))}"
            )


def extra_hours(plan) -> dict[str, float]:
    """Per experiment with `claim_seeds`, the projected GPU-hours of the runs its claims add at
    this plan (none where the preset's `seeds` replace them)."""
    out = {}
    for key in plan.experiment_ids:
        exp = plan.experiments[key]
        if not exp.get("claim_seeds") or plan.is_knobs(key) or plan.is_fair(key) or plan.is_analysis(key):
            continue
        base = set(plan.seeds_of(key)[0])
        added = [run for run in plan.runs(key) if run.seed not in base]
        out[key] = sum(projection.gpu_hours(RunConfig.from_dict(plan.resolve(r)), r.dataset) for r in added)
    return out


def budget_line(plan) -> str:
    """What the claims' extra seeds cost at this plan, against the preset's `claim_budget`."""
    hours = extra_hours(plan)
    budget = (plan.preset.get("claim_budget") or {}).get("gpu_hours")
    return (
        f"claim seeds (the catalogue's claim_seeds, docs/experiments.md): {sum(hours.values()):,.0f} "
        f"GPU-hours projected (training steps at the measured H100 throughput) over {len(hours)} experiments; budget: "
        + ("none stated (claim_budget)" if budget is None else f"{budget:,.0f} (claim_budget)")
    )
