"""A paper's claims decided together (docs/verdicts.md, "Claims"): each claim's test
(`claim_kinds`), the paper's gain on each of its parts, its power before the data (`power`), and
the verdicts from the p-values Holm-adjusted over the paper's family (`claim_decision`)."""

from __future__ import annotations

import copy

from dmlbench.verdicts import claim_decision, claim_kinds, numbers, power
from dmlbench.verdicts import claims as claim_tests

DECIDED = claim_tests.HOLDING + claim_tests.FAILING
# decided by Holm's holding test (not *gain reproduced*, an equivalence test beside it)
REJECTED = (claim_tests.HOLDS, claim_tests.SMALLER, claim_tests.LARGER, claim_tests.EQUIVALENT)


def tested(exp: dict, per_seed) -> list[dict]:
    """Every claim of `exp` (a certificate spec's experiment) with its test, or the verdict why
    there is none; `per_seed(row, dataset, metric)` → {seed: our number} (empty where not run)."""
    out = []
    names = exp.get("names") or {}

    def named(what: str, key: str) -> str:  # the paper's name of a dataset or metric (ids stay in the JSON)
        return (names.get(what) or {}).get(key, key)

    for claim in exp["claims"]:
        metrics = claim_kinds.listed(claim["metric"])
        result = claim_kinds.evaluate(
            claim, per_seed, lambda metric: numbers.band_of(exp["margin"], metric), exp.get("quoted")
        )
        entry = {
            **{k: v for k, v in claim.items() if k != "gain"},
            "gain_paper": claim.get("gain"),
            "text": claim["text"]
            + (f" (on {named('settings', claim['on'])})" if "on" in claim else "")
            + (f" [unlike settings: {claim['unlike']}]" if claim.get("unlike") else ""),
            "kind": claim.get("kind", "gain"),
            "rows": claim_kinds.rows_text(claim, names.get("rows")),
            "where": f"{', '.join(named('datasets', d) for d in claim_kinds.listed(claim['dataset']))}; "
            + ", ".join(named("metrics", m) for m in metrics),
            "experiment": exp["id"],
            "test_selected": any(m in exp["selected"] for m in metrics),
        }
        if isinstance(result, str):
            entry["verdict"] = result
        else:
            entry.update(result)
            if entry["kind"] == "gain" and not claim.get("unlike"):
                for part in entry.get("parts") or [entry]:
                    part["gain_paper"] = _paper_gain(exp, claim, part)
        out.append(entry)
    return out


def _paper_value(exp: dict, row: str, dataset: str, metric: str) -> float | None:
    """The paper's number of a row it runs, else of a quoted row (`best quoted`: the best)."""
    text = exp["reported"].get(row, {}).get(dataset, {}).get(metric)
    if text is not None:
        return float(text)
    competitor = claim_kinds.quoted_number(exp.get("quoted") or {}, row, dataset, metric)
    return None if competitor is None else competitor[1]


def _paper_gain(exp: dict, claim: dict, part: dict) -> float | None:
    """The paper's gain on one part of a gain claim: its own table's where it prints both rows,
    else the claim's `gain` (the sentence's, or its smallest part's)."""
    on = part["on"]
    better, worse = (_paper_value(exp, row, on["dataset"], on["metric"]) for row in on["rows"])
    return better - worse if better is not None and worse is not None else claim.get("gain")


def _planned(exp: dict):
    """(row, dataset) → the seeds the plan trains it on."""
    seeds: dict[tuple[str, str], set[int]] = {}
    for key in exp["fingerprints"]:
        dataset, row, seed = key.split("/")
        seeds.setdefault((row, dataset), set()).add(int(seed.removeprefix("seed")))
    return lambda row, dataset: seeds.get((row, dataset), set())


def first_look(spec_exp: dict) -> dict | None:
    """`spec_exp` as its first wave planned it (its runs narrowed to `wave_one_seeds`), or None
    where no second wave added seeds to it."""
    first = spec_exp.get("wave_one_seeds")
    if first is None:
        return None
    kept = {}
    for key, found in spec_exp["fingerprints"].items():
        dataset, row, seed = key.split("/")
        if int(seed.removeprefix("seed")) in first.get(f"{dataset}/{row}", ()):
            kept[key] = found
    return None if len(kept) == len(spec_exp["fingerprints"]) else {**spec_exp, "fingerprints": kept}


def _prior_sd(exp: dict, dataset: str, metric: str) -> float:
    """The seed spread the power before the data assumes: the spec's prior for the dataset ×
    metric (`seed_sd`, from the catalogue's seed_spread.yaml), else `power.ASSUMED_SD`."""
    return ((exp.get("seed_sd") or {}).get(dataset) or {}).get(metric, power.ASSUMED_SD)


def power_of(claim: dict, spec_exp: dict, planned_of, alpha: float) -> float | None:
    """The claim's power before the data at `alpha` with `planned_of(row, dataset)` → its seeds."""
    return power.claim(
        {**claim, "gain": claim.get("gain_paper")},
        lambda row, dataset, metric: _paper_value(spec_exp, row, dataset, metric),
        planned_of,
        lambda metric: numbers.band_of(spec_exp["margin"], metric),
        alpha,
        sd=lambda dataset, metric: _prior_sd(spec_exp, dataset, metric),
        quoted=set(spec_exp.get("quoted") or ()) | {claim_kinds.BEST_QUOTED},
    )


def seeds_at_looks(claim: dict, spec_exp: dict) -> tuple[int, int] | None:
    """(n₁, n) of a claim's run cells: the fewest first-wave seeds, the most seeds planned now."""
    planned, first = _planned(spec_exp), spec_exp.get("wave_one") or {}
    cells = [(row, d) for rows, d, _ in claim_kinds.part_rows(claim) for row in rows if f"{d}/{row}" in first]
    if not cells:
        return None
    return min(first[f"{d}/{row}"] for row, d in cells), max(len(planned(row, d)) for row, d in cells)


def second_look_seeds(claim: dict, spec_exp: dict, design, family: int) -> int | None:
    """The fewest seeds per run cell (≤ the cap `max_seeds`) at which the claim's look 2 has power
    0.8 before the data, at look 2's nominal level over the `family`; None where none does."""
    looks = seeds_at_looks(claim, spec_exp)
    if looks is None:
        return None
    for m in range(looks[0] + 1, design.max_seeds + 1):
        alpha = design.level(claim_tests.ALPHA, 2, looks[0], m) / family
        chance = power_of(claim, spec_exp, lambda row, dataset, m=m: set(range(m)), alpha)
        if chance is not None and chance >= claim_tests.POWER:
            return m
    return None


def one_look(claim: dict, spec_exp: dict, design, family: int) -> bool:
    """A claim no second look could decide (`second_look_seeds` None, known before the data): it
    has one look, the plain test at α on its first wave's seeds, whatever else wave 2 trains."""
    looks = seeds_at_looks(claim, spec_exp)
    return (
        looks is not None and looks[0] < design.max_seeds and second_look_seeds(claim, spec_exp, design, family) is None
    )


def _decided(claim: dict) -> str:
    """A claim's verdict, or of a claim partly run the verdict on its parts run."""
    return claim.get("verdict_on_parts_run", claim["verdict"])


def decide(claims_per_experiment: list[list[dict]], spec_experiments: list[dict], design=None, stopped=None) -> None:
    """Each claim's power, Holm-adjusted p-values and verdict, in place. The family is every claim
    of the paper in the catalogue, run or not (an untested one counts with p = 1), so that a
    claim's verdict does not depend on what else the preset ran; the failure tests are adjusted
    over the same family. Under a second-wave `design` (`sequential.Design`) a claim's p-values
    enter Holm scaled by α over its look's nominal level, so that Holm at α is its look's test, its
    power is computed at that level (a strict look 1 leaves a claim underpowered, not a miss), and
    *gain reproduced*'s interval is its look's too; a claim of `one_look` has the plain test, at
    its first wave's seeds. `stopped`: the same claims at look 1 (tested on the first wave's
    seeds), after a second wave: a claim decided there keeps that verdict, one rejected there
    enters Holm at look 2 as rejected (p = 0: its α passed on to the others, as group-sequential
    Holm does), and a claim of one look enters with its test there."""
    family = sum(len(claims) for claims in claims_per_experiment)
    for claims, earlier in zip(claims_per_experiment, stopped or []):  # one look: its test on wave 1's seeds
        for claim, first_test in zip(claims, earlier):
            if first_test.get("one_look"):
                claim.clear()
                claim.update(copy.deepcopy(first_test))
    scale, one_sided = {}, {}  # per claim under a design: α over its look's level; its one-sided level
    for claims, spec_exp in zip(claims_per_experiment, spec_experiments):
        for claim in claims:  # at α/m (Holm's strictest step), for every claim, run or not; at its look's level
            looks = seeds_at_looks(claim, spec_exp) if design and "p" in claim else None  # tested claims
            planned = _planned(spec_exp)
            if looks and one_look(claim, spec_exp, design, family):
                looks, planned, claim["one_look"] = None, _planned(first_look(spec_exp) or spec_exp), True
            level = design.level(claim_tests.ALPHA, 2, *looks) if looks else claim_tests.ALPHA
            claim["power"] = power_of(claim, spec_exp, planned, level / family)
            if looks:
                claim["look"] = design.look(*looks)
                scale[id(claim)] = claim_tests.ALPHA / level
                one_sided[id(claim)] = design.level(claim_tests.ALPHA, 1, *looks)
    first = {}  # id of a claim → the same claim decided at look 1
    for claims, earlier in zip(claims_per_experiment, stopped or []):
        first.update({id(c): e for c, e in zip(claims, earlier) if _decided(e) in DECIDED})
    tested = [c for claims in claims_per_experiment for c in claims if "p" in c]
    untested = [1.0] * (family - len(tested))
    rejected = lambda c, way: id(c) in first and _decided(first[id(c)]) in way  # noqa: E731
    adjusted_ps = claim_tests.holm(
        [0.0 if rejected(c, REJECTED) else min(1.0, c["p"] * scale.get(id(c), 1.0)) for c in tested] + untested
    )
    failures = [claim_decision.failure(c["kind"], c.get("parts") or [c], family) for c in tested]
    adjusted_failures = claim_tests.holm(
        [
            0.0 if rejected(c, claim_tests.FAILING) else min(1.0, p * scale.get(id(c), 1.0))
            for c, (p, _) in zip(tested, failures)
        ]
        + untested
    )
    for claim, adjusted, adjusted_failure, (_, way) in zip(tested, adjusted_ps, adjusted_failures, failures):
        claim["p_holm"], claim["p_failure_holm"] = adjusted, adjusted_failure
        claim["verdict"] = claim_decision.verdict(
            {**claim, "gain": claim.get("gain_paper")},
            claim,
            adjusted,
            adjusted_failure,
            way,
            claim["power"],
            one_sided.get(id(claim), claim_tests.ALPHA),
        )
        if claim["parts_run"] < claim["parts_total"]:  # a part of the sentence only: no verdict on it
            claim["verdict_on_parts_run"], claim["verdict"] = claim["verdict"], claim_tests.PARTIAL
    for claims in claims_per_experiment:  # decided at look 1: that verdict stands
        for claim in claims:
            if id(claim) in first:
                decided = first[id(claim)]
                claim.clear()
                claim.update(decided)
