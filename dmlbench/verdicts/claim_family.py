"""A paper's claims decided together (docs/verdicts.md, "Claims"): each claim's test
(`claim_kinds`), the paper's gain on each of its parts, its power before the data (`power`), and
the verdicts from the p-values Holm-adjusted over the paper's family (`claim_decision`)."""

from __future__ import annotations

from dmlbench.verdicts import claim_decision, claim_kinds, numbers, power
from dmlbench.verdicts import claims as claim_tests


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


def decide(claims_per_experiment: list[list[dict]], spec_experiments: list[dict], design=None) -> None:
    """Each claim's power, Holm-adjusted p-values and verdict, in place. The family is every claim
    of the paper in the catalogue, run or not (an untested one counts with p = 1), so that a
    claim's verdict does not depend on what else the preset ran; the failure tests are adjusted
    over the same family. Under a second-wave `design` (`sequential.Design`) a claim's p-values
    enter Holm scaled by α over its look's nominal level, so that Holm at α is its look's test."""
    family = sum(len(claims) for claims in claims_per_experiment)
    scale = {}
    for claims, spec_exp in zip(claims_per_experiment, spec_experiments):
        for claim in claims:  # at α/m (Holm's strictest step), for every claim, run or not
            claim["power"] = power_of(claim, spec_exp, _planned(spec_exp), claim_tests.ALPHA / family)
            looks = seeds_at_looks(claim, spec_exp) if design and "p" in claim else None  # tested claims
            if looks:
                claim["look"] = design.look(*looks)
                scale[id(claim)] = claim_tests.ALPHA / design.level(claim_tests.ALPHA, 2, *looks)
    tested = [c for claims in claims_per_experiment for c in claims if "p" in c]
    untested = [1.0] * (family - len(tested))
    adjusted_ps = claim_tests.holm([min(1.0, c["p"] * scale.get(id(c), 1.0)) for c in tested] + untested)
    failures = [claim_decision.failure(c["kind"], c.get("parts") or [c], family) for c in tested]
    adjusted_failures = claim_tests.holm(
        [min(1.0, p * scale.get(id(c), 1.0)) for c, (p, _) in zip(tested, failures)] + untested
    )
    for claim, adjusted, adjusted_failure, (_, way) in zip(tested, adjusted_ps, adjusted_failures, failures):
        claim["p_holm"], claim["p_failure_holm"] = adjusted, adjusted_failure
        claim["verdict"] = claim_decision.verdict(
            {**claim, "gain": claim.get("gain_paper")}, claim, adjusted, adjusted_failure, way, claim["power"]
        )
        if claim["parts_run"] < claim["parts_total"]:  # a part of the sentence only: no verdict on it
            claim["verdict_on_parts_run"], claim["verdict"] = claim["verdict"], claim_tests.PARTIAL
