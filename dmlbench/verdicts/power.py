"""A claim's power, computed before the data (docs/verdicts.md, "Power").

From the planned seeds of the claim's rows, a seed standard deviation per dataset × metric (the
catalogue's prior, `workflow/config/seed_spread.yaml`; `ASSUMED_SD` where none is given), the
paper's gain of each part (its own table's numbers where both rows have one, else the claim's
`gain`, else δ) and the paper family's strictest level α/m: the probability that the claim's test
reaches its outcome if the paper is right. Nothing here reads a run's numbers, so "underpowered"
(power < 0.8) is known before training and cannot follow from what the runs found.

Per part (the noncentral t distribution, scipy's `nct`): a gain or a peak's pairwise gain, the
two-sided t-test (paired: se = σ√2/√n, n − 1 degrees of freedom; else Welch's, se = σ√(1/n₁ + 1/n₂)
at the Welch–Satterthwaite degrees of freedom for equal spreads; against a number the paper
quotes, one-sample: se = σ/√n); an equivalence or plateau part,
the two one-sided tests (the lower bound P(A) + P(B) − 1 of their joint power); a no-gain part, the
one-sided non-superiority test; a trend, the slope's t-test over the planned points (N − 2
degrees of freedom). A claim over several parts (intersection-union) needs every part: its power
is the product of theirs (independent parts)."""

from __future__ import annotations

import math

import numpy as np

ASSUMED_SD = 0.4  # points: the spread where the caller gives none (seed_spread.yaml's default, its source)


def directional(gain: float, se: float, df: float, alpha: float) -> float:
    """The two-sided t-test at `alpha` rejecting on the claim's side (better − worse > 0)."""
    from scipy import stats

    return float(stats.nct.sf(stats.t.ppf(1 - alpha / 2, df), df, gain / se))


def equivalence(gain: float, se: float, df: float, delta: float, alpha: float) -> float:
    from scipy import stats

    critical = stats.t.ppf(1 - alpha, df)
    above = stats.nct.sf(critical, df, (gain + delta) / se)  # rejects gain ≤ −δ
    below = stats.nct.cdf(-critical, df, (gain - delta) / se)  # rejects gain ≥ δ
    return float(max(0.0, above + below - 1.0))


def non_superiority(gain: float, se: float, df: float, delta: float, alpha: float) -> float:
    from scipy import stats

    return float(stats.nct.cdf(-stats.t.ppf(1 - alpha, df), df, (gain - delta) / se))


def pair_design(n_better: int, n_worse: int, paired: bool, sd: float) -> tuple[float, float]:
    """(standard error, degrees of freedom) of better − worse at `sd` per seed."""
    if paired:
        return sd * math.sqrt(2.0 / n_better), float(n_better - 1)
    a, b = 1.0 / n_better, 1.0 / n_worse
    df = (a + b) ** 2 / (a**2 / (n_better - 1) + b**2 / (n_worse - 1))
    return sd * math.sqrt(a + b), float(df)


def trend_design(points_per_setting: list[int], sd: float) -> tuple[float, float]:
    """(standard error of the fitted change over the range, degrees of freedom)."""
    xs = np.repeat(np.arange(len(points_per_setting)), points_per_setting)
    spread = float(((xs - xs.mean()) ** 2).sum())
    return sd / math.sqrt(spread) * (len(points_per_setting) - 1), float(len(xs) - 2)


def part(kind: str, gain: float, se: float, df: float, delta: float, alpha: float) -> float:
    """The power of one part of a claim of `kind` whose true gain is `gain`."""
    if not (se > 0 and df >= 1):
        return 0.0
    if kind in ("equivalent", "plateau"):
        return equivalence(gain, se, df, delta, alpha)
    if kind == "no_gain":
        return non_superiority(gain, se, df, delta, alpha)
    return directional(gain, se, df, alpha)  # gain, peak, increasing, decreasing


def claim(
    claim: dict, paper_of, planned_of, delta_of, alpha: float, sd=ASSUMED_SD, quoted: set = frozenset()
) -> float | None:
    """The claim's power before the data, or None where a row is not planned. `paper_of(row,
    dataset, metric)` → the paper's number or None; `planned_of(row, dataset)` → the planned seeds
    (a set); `delta_of(metric)` → δ; `sd`: points per seed, or `sd(dataset, metric)` per part;
    `quoted`: rows that are a quoted constant, never run."""
    from dmlbench.verdicts import claim_kinds
    from dmlbench.verdicts import claims as claim_tests

    kind = claim.get("kind", "gain")
    delta_claim = claim.get("margin")
    total = 1.0
    for rows, dataset, metric in claim_kinds.part_rows(claim):
        delta = delta_claim or delta_of(metric)
        sigma = sd(dataset, metric) if callable(sd) else sd
        against_quoted = kind == "gain" and rows[1] in quoted
        seeds = [planned_of(row, dataset) for row in rows[: 1 if against_quoted else None]]
        trend = kind in ("increasing", "decreasing")  # its points are the settings': one seed each will do
        if any(len(s) < (2 if trend else claim_tests.MIN_SEEDS) for s in seeds):
            return None  # never tested at these seeds: no power to state
        values = [paper_of(row, dataset, metric) for row in rows]
        if kind in ("increasing", "decreasing"):
            se, df = trend_design([len(s) for s in seeds], sigma)
            if all(v is not None for v in values):
                slope = np.polyfit(np.arange(len(values)), values, 1)[0] * (len(values) - 1)
                gain = slope if kind == "increasing" else -slope
            else:
                gain = delta
        else:
            if against_quoted:  # a quoted number is a constant: one-sample
                se, df = sigma / math.sqrt(len(seeds[0])), float(len(seeds[0]) - 1)
            else:
                se, df = pair_design(len(seeds[0]), len(seeds[1]), seeds[0] == seeds[1], sigma)
            if all(v is not None for v in values):
                gain = values[0] - values[1]
            elif kind in ("equivalent", "plateau", "no_gain"):
                gain = 0.0
            else:
                gain = claim["gain"] if claim.get("gain") is not None else delta
        total *= part(kind, gain, se, df, delta, alpha)
    return total
