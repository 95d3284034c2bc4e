"""The second wave's seeds (docs/verdicts.md, "The second wave"): a preset's `second_wave` design
(`max_seeds`, the cap on a cell's seeds over both looks; `spending`, the boundaries' shape,
`verdicts.sequential`; `wave_one_claim_seeds`, optional, the most of a claim's cells' `claim_seeds`
the first wave trains, the rest left to the planner; `second_look`, optional: `numbers_and_claims`
(the default) or `claims`, the numbers then judged once, at the plain test on the first wave's
seeds, and only the claims looked at twice) and the file `reports/<preset>/second_wave.yaml`
that `python -m dmlbench second-wave` writes after the first wave (`second_wave_plan`). The plan
adds the file's seeds to its cells (`add`, from `Plan.seeds_of`): the next `snakemake` trains those
and nothing else again. Both are checked when the plan loads, naming the file, the key and the value."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from dmlbench.config.loading import load_yaml
from dmlbench.core.errors import ConfigError
from dmlbench.run_config.values import from_text
from dmlbench.verdicts import numbers, sequential

KEYS = {"max_seeds", "spending", "wave_one_claim_seeds", "second_look"}
SECOND_LOOKS = ("numbers_and_claims", "claims")  # what may be judged twice (`sequential.Design.numbers_once`)


def path(plan) -> Path:
    """Where the second wave's seeds are (relative to the working folder, as `reports/` is)."""
    return Path(f"reports/{plan.name}/second_wave.yaml")


def _preset_file(plan) -> Path:
    return plan.preset_file or plan.config_dir / "presets" / f"{plan.name}.yaml"


def design(plan) -> dict | None:
    """The preset's `second_wave`, checked, its spending filled in: {spending, max_seeds} or None."""
    given = plan.preset.get("second_wave")
    if given is None:
        return None
    where = f"{_preset_file(plan)} (or --config): second_wave"
    if not isinstance(given, dict) or not set(given) <= KEYS or "max_seeds" not in given:
        raise ConfigError(
            f"{where}: {given!r}: a mapping of max_seeds (required), spending, wave_one_claim_seeds and "
            "second_look, e.g. "
            "{max_seeds: 10}"
        )
    cap, spending = given["max_seeds"], given.get("spending", sequential.DEFAULT_SPENDING)
    cap = from_text(cap) if isinstance(cap, str) else cap  # snakemake's --config gives text
    if type(cap) is not int or not numbers.MIN_SEEDS < cap <= numbers.MAX_SEEDS:
        raise ConfigError(
            f"{where}.max_seeds: {cap!r}: the seeds a cell may reach over both looks, a whole number "
            f"from {numbers.MIN_SEEDS + 1} to {numbers.MAX_SEEDS}"
        )
    if spending not in sequential.SPENDINGS:
        raise ConfigError(f"{where}.spending: {spending!r}: one of {', '.join(sequential.SPENDINGS)}")
    first = given.get("wave_one_claim_seeds")
    first = from_text(first) if isinstance(first, str) else first
    if first is not None and (type(first) is not int or not numbers.MIN_SEEDS <= first <= cap):
        raise ConfigError(
            f"{where}.wave_one_claim_seeds: {first!r}: the most seeds of a claim's cells' claim_seeds the "
            f"first wave trains, a whole number from {numbers.MIN_SEEDS} to max_seeds ({cap})"
        )
    look = given.get("second_look", SECOND_LOOKS[0])
    if look not in SECOND_LOOKS:
        raise ConfigError(
            f"{where}.second_look: {look!r}: numbers_and_claims (either may get more seeds) or claims (the "
            "numbers judged once, on the first wave's seeds)"
        )
    return (
        {"spending": spending, "max_seeds": cap}
        | ({} if first is None else {"wave_one_claim_seeds": first})
        | ({} if "second_look" not in given else {"second_look": look})
    )


def wave_one_claim_seeds(plan) -> int | None:
    """How many of a claim's cells' `claim_seeds` the first wave trains (None: all of them)."""
    return (design(plan) or {}).get("wave_one_claim_seeds")


def cells(plan) -> dict[str, dict[tuple[str, str], list[int]]]:
    """Experiment → (row, dataset) → the second wave's seeds (none before the file is written),
    read and checked once per plan."""
    if "_second_wave" in plan.__dict__:
        return plan._second_wave
    found, file = {}, path(plan)
    planned = design(plan)
    if file.exists():
        data = load_yaml(file) or {}
        if planned is None or data.get("design") != planned:
            raise ConfigError(
                f"{file}: design: {data.get('design')!r} was planned, the preset states "
                f"second_wave: {planned!r}; state that design again, or delete the file to train the first wave's seeds"
            )
        for key, per_cell in (data.get("cells") or {}).items():
            if key not in plan.experiments or not isinstance(per_cell, dict):
                raise ConfigError(f"{file}: cells.{key}: {per_cell!r}: not an experiment of the catalogue's with cells")
            for cell, entry in per_cell.items():
                seeds = entry.get("seeds") if isinstance(entry, dict) else None
                if not isinstance(cell, str) or cell.count("/") != 1:
                    raise ConfigError(f"{file}: cells.{key}.{cell!r}: a cell is named dataset/row")
                if not (isinstance(seeds, list) and seeds and all(type(s) is int and s >= 0 for s in seeds)) or len(
                    set(seeds)
                ) < len(seeds):
                    raise ConfigError(f"{file}: cells.{key}.{cell}.seeds: {seeds!r}: distinct whole numbers ≥ 0")
                dataset, row = cell.split("/")
                found.setdefault(key, {})[row, dataset] = sorted(seeds)
    plan._second_wave = found
    return found


def add(plan, experiment: str, base: list[int], per_cell: dict) -> dict:
    """`per_cell` (row, dataset) → seeds with the second wave's seeds of `experiment` added."""
    extra = cells(plan).get(experiment) or {}
    return {**per_cell, **{cell: sorted(set(per_cell.get(cell, base)) | set(s)) for cell, s in extra.items()}}


def wave_one_seeds(plan, experiment: str) -> dict[str, list[int]]:
    """'dataset/row' → the seeds the first wave trains in each cell of `experiment`."""
    extra = cells(plan).get(experiment) or {}
    found: dict[str, list[int]] = {}
    for run in plan.runs(experiment):
        if run.seed not in extra.get((run.method, run.dataset), ()):
            found.setdefault(f"{run.dataset}/{run.method}", []).append(run.seed)
    return {cell: sorted(seeds) for cell, seeds in found.items()}


def wave_one(plan, experiment: str) -> dict[str, int]:
    """'dataset/row' → how many seeds the first wave trains in each cell of `experiment`."""
    return {cell: len(seeds) for cell, seeds in wave_one_seeds(plan, experiment).items()}


@contextmanager
def first_wave(plan):
    """The plan without the second wave's seeds, for a while (a first wave's certificate read again)."""
    kept = cells(plan)
    plan._second_wave = {}
    plan.__dict__.pop("_run_sets", None)
    try:
        yield plan
    finally:
        plan._second_wave = kept
        plan.__dict__.pop("_run_sets", None)
