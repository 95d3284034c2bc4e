"""`python -m dmlbench plan --power`: before any training, per paper, every paper number's and
every claim's power at the planned seeds, the seeds that would give `TARGET` power, and the
device-hours those extra seeds would cost (from the preflight's budget, where it exists); the
plan's table of them: `dmlbench.config.power_table`.

The spread per dataset × metric is the caller's `sd_of` (the plan's: the pooled spread of finished
runs, else the catalogue's prior), else the spec's prior (`seed_sd`, what the certificate assumes):
nothing here reads a run. A paper number's power is the chance that it is *reproduced* (the two
one-sided tests at α = 0.05 inside ±δ) if the paper is right (true gap 0) at n seeds, computed
exactly over the sample spread (`number_power`; simulated through the verdict code in
tests/test_power_plan.py); a claim's is
`power.claim` at the paper family's strictest level α/m, as the certificate states it. The seeds
for `TARGET` give every row of the number or claim that many seeds (paired), up to `MAX_SEEDS`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from dmlbench.verdicts import claim_family, claim_kinds, numbers, power
from dmlbench.verdicts import claims as claim_tests

TARGET = 0.8
MAX_SEEDS = 20  # the most seeds the plan proposes for one row


@dataclass(frozen=True)
class Line:
    paper: str
    experiment: str
    what: str  # "number" or "claim"
    name: str  # row/dataset/metric of a number, the claim's id
    seeds: int  # the fewest seeds a row of it is planned with (0: not run by this preset)
    sd: float  # points per seed assumed (a claim: the largest of its parts')
    power: float | None  # at the planned seeds; None: never tested at them
    seeds_for_target: int | None  # None: more than MAX_SEEDS
    extra_hours: float | None  # device-hours of the extra seeds; None: no budget, or not needed


@cache  # the same few (n, δ) recur over a paper's numbers
def number_power(n: int, delta: float, sd: float = power.ASSUMED_SD, gap: float = 0.0) -> float | None:
    """The chance that n seeds of true gap `gap` from the paper, at spread `sd`, give *reproduced*:
    the 90 % interval d ± t(0.95, n−1)·s/√n inside ±δ. Exact, not the two one-sided tests' lower
    bound: over the sample SD s (σ·√(χ²(n−1)/(n−1))), P(|d| < δ − t·s/√n) for d ~ N(gap, σ²/n)."""
    from scipy import integrate, stats

    if n < numbers.MIN_SEEDS:
        return None
    se, t = sd / math.sqrt(n), stats.t.ppf(1 - numbers.ALPHA, n - 1)
    chi2 = stats.chi2(n - 1)
    limit = (delta * math.sqrt(n) / (t * sd)) ** 2 * (n - 1)  # χ² above which δ − t·s/√n < 0: never

    def inside(q: float) -> float:
        room = delta - t * sd * math.sqrt(q / (n - 1)) / math.sqrt(n)
        return (stats.norm.cdf((room - gap) / se) - stats.norm.cdf((-room - gap) / se)) * chi2.pdf(q)

    return float(integrate.quad(inside, 0.0, limit, limit=200)[0])


def _fewest(chance) -> int | None:
    for n in range(numbers.MIN_SEEDS, MAX_SEEDS + 1):
        found = chance(n)
        if found is not None and found >= TARGET:
            return n
    return None


def _extra_hours(pairs: set[tuple[str, str]], planned, wanted: int | None, hours_of) -> float | None:
    """Device-hours of `wanted` seeds for each (row, dataset) beyond its planned ones, at the
    budget's mean hours of its planned runs; None without a budget for one of them."""
    if wanted is None:
        return None
    total = 0.0
    for pair in pairs:
        have = len(planned(*pair))
        if wanted <= have:
            continue
        hours = hours_of(pair)
        if hours is None:
            return None
        total += (wanted - have) * hours
    return total


def lines(spec: dict, hours_of=lambda experiment, pair: None, sd_of=None) -> list[Line]:
    """Every paper number and claim of a certificate spec (`verdict_spec.certificate_spec`);
    `hours_of(experiment, (row, dataset))` → the mean device-hours of one of its runs, or None;
    `sd_of(dataset, metric)` → the seed spread in points (None: the spec's priors)."""
    family = sum(len(exp["claims"]) for exp in spec["experiments"])
    out = []
    for exp in spec["experiments"]:
        planned = claim_family._planned(exp)  # (row, dataset) → seeds
        spread = sd_of or (lambda dataset, metric, exp=exp: claim_family._prior_sd(exp, dataset, metric))
        cost = lambda pair, key=exp["id"]: hours_of(key, pair)  # noqa: E731
        for row, per_dataset in exp["reported"].items():
            for dataset, metrics in per_dataset.items():
                for metric, text in metrics.items():
                    delta = numbers.band_of(exp["margin"], metric) + numbers.printed_precision(text)
                    n, sd = len(planned(row, dataset)), spread(dataset, metric)
                    wanted = _fewest(lambda m, d=delta, s=sd: number_power(m, d, s))
                    out.append(
                        Line(
                            spec["paper"],
                            exp["id"],
                            "number",
                            f"{row}/{dataset}/{metric}",
                            n,
                            sd,
                            number_power(n, delta, sd),
                            wanted,
                            _extra_hours({(row, dataset)}, planned, wanted, cost),
                        )
                    )
        quoted = set(exp.get("quoted") or ()) | {claim_kinds.BEST_QUOTED}
        for claim in exp["claims"]:

            def chance(seeds_of, claim=claim):
                return power.claim(
                    claim,
                    lambda row, dataset, metric: claim_family._paper_value(exp, row, dataset, metric),
                    seeds_of,
                    lambda metric: numbers.band_of(exp["margin"], metric),
                    claim_tests.ALPHA / family,
                    sd=spread,
                    quoted=quoted,
                )

            pairs = {(row, d) for rows, d, _ in claim_kinds.part_rows(claim) for row in rows if row not in quoted}
            n = min((len(planned(*pair)) for pair in pairs), default=0)
            wanted = _fewest(lambda m: chance(lambda row, dataset: set(range(m))))
            out.append(
                Line(
                    spec["paper"],
                    exp["id"],
                    "claim",
                    claim["id"],
                    n,
                    max((spread(d, m) for _, d, m in claim_kinds.part_rows(claim)), default=power.ASSUMED_SD),
                    chance(planned),
                    wanted,
                    _extra_hours(pairs, planned, wanted, cost),
                )
            )
    return out


def _cell(value, form: str) -> str:
    return "—" if value is None else format(value, form)


def table(found: list[Line]) -> str:
    """Per paper: one row per number and claim, then the paper's sums."""
    out = []
    for paper in dict.fromkeys(line.paper for line in found):
        mine = [line for line in found if line.paper == paper]
        out.append(f"## {paper}: power before the data at each row's σ (points per seed)")
        out.append(
            f"{'experiment':<12} {'kind':<6} {'number or claim':<48} {'seeds':>5} {'σ':>5} {'power':>6} "
            f"{'for 80 %':>8} {'extra GPU-h':>11}"
        )
        for line in mine:
            out.append(
                f"{line.experiment:<12} {line.what:<6} {line.name[:48]:<48} {line.seeds:>5} {line.sd:>5.2f} "
                f"{_cell(line.power, '.2f'):>6} {_cell(line.seeds_for_target, 'd'):>8} "
                f"{_cell(line.extra_hours, '.1f'):>11}"
            )
        for what in ("number", "claim"):
            kind = [line for line in mine if line.what == what]
            decided = sum(line.power is not None and line.power >= TARGET for line in kind)
            unrun = sum(line.seeds == 0 for line in kind)  # rows this preset does not train at all
            never = sum(line.power is None and line.seeds > 0 for line in kind)
            costs = [
                line.extra_hours for line in kind if line.seeds > 0 and (line.power is None or line.power < TARGET)
            ]
            cost = "—" if any(c is None for c in costs) else f"{sum(costs):.1f}"
            out.append(
                f"{paper}: {decided} of {len(kind)} {what}s at {TARGET:.0%} power or more with the planned seeds, "
                f"{never} never tested at them, {unrun} not run by this preset; the others' extra seeds: "
                f"{cost} GPU-hours"
            )
        out.append("")
    return "\n".join(out)
