"""The verdict on one paper number: an equivalence test of our per-seed numbers against the
paper's, with a margin δ fixed before the runs (docs/verdicts.md).

d = mean(ours) − paper, s its seeds' standard deviation, n ≥ 3 seeds, t the Student quantiles:

- reproduced: equivalence shown by two one-sided t-tests at α = 0.05 each, that is the 90 %
  interval d ± t(0.95, n−1)·s/√n inside (−δ, δ);
- below / above (not reproduced): the 95 % interval d ± t(0.975, n−1)·s/√n wholly below −δ or
  wholly above δ;
- inconclusive: neither; `seeds_needed` is the seeds at which it would be decided with
  probability 0.8 (a sample size: `_seeds_needed`); fewer than 3 seeds are always inconclusive
  (a spread from two numbers decides nothing);
- failed: a seed's number is NaN (a run that diverged or whose evaluation failed): counted, not
  dropped.

δ = band (`workflow/config/margins.yaml`, or the experiment's `margin:`; 1.0 point of a metric in %
when this was written, with its source) + half a unit of the
paper's last printed digit (66.85 → 0.005, 85.8 → 0.05): the paper's rounding is no gap. With
zero spread (every seed the same number) the intervals are points and `zero_spread` says so.

For a reader's own margin, `delta_at_least`: the smallest δ at which the number is reproduced,
|d| + t(0.95, n−1)·s/√n. As a sensitivity line, `as_one_run`: the same test counting the paper's
number as one run of the same spread (its seed variance in the interval: s·√(1/n + 1)), since
most papers print one run. `NEAR_CEILING`: a paper number at or above 95 % (Recall@32 of In-Shop,
say), where a point is most of the remaining error: counted apart in the certificate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SELECTED = " (test-selected)"  # the column of a metric at each run's best test epoch (runs.csv)
DEFAULT_BAND = 1.0  # points, where a spec carries no margin (tests): workflow/config/margins.yaml rules
MIN_SEEDS = 3
MAX_SEEDS = 200
ALPHA = 0.05
NEAR_CEILING = 95.0  # points: a paper number at or above it is counted apart (docs/verdicts.md)
REPRODUCED, BELOW, ABOVE, INCONCLUSIVE, FAILED, NOT_RUN = (
    "reproduced",
    "below",
    "above",
    "inconclusive",
    "failed",
    "not run",
)
VERDICTS = (REPRODUCED, BELOW, ABOVE, INCONCLUSIVE, FAILED, NOT_RUN)
DECIDED = (REPRODUCED, BELOW, ABOVE)  # a verdict of a test (one decided at a second wave's look 1 stands)
SYMBOLS = {REPRODUCED: "✓", BELOW: "▼", ABOVE: "▲", INCONCLUSIVE: "?", FAILED: "✗", NOT_RUN: "∅"}
MEANINGS = {
    REPRODUCED: "equivalent to the paper's number within ±δ (the 90 % interval of this suite − paper "
    "inside ±δ: two one-sided tests at 5 %)",
    BELOW: "not reproduced: the 95 % interval of this suite − paper lies wholly below −δ",
    ABOVE: "not reproduced: the 95 % interval of this suite − paper lies wholly above +δ",
    INCONCLUSIVE: f"neither shown (or fewer than {MIN_SEEDS} seeds): the seeds that would decide "
    f"it at the observed spread are given",
    FAILED: "a seed's number is NaN (a diverged or failed run)",
    NOT_RUN: "not run by this preset",
}


@dataclass(frozen=True)
class NumberVerdict:
    verdict: str
    n: int
    mean: float | None = None
    half: float | None = None  # half-width of the 95 % interval of the mean (n ≥ 2)
    delta: float | None = None  # δ, the margin
    seeds_needed: int | None = None  # inconclusive: the seeds that would decide it
    failed: int = 0  # seeds whose number is NaN
    zero_spread: bool = False
    delta_at_least: float | None = None  # the smallest δ at which it is reproduced (n ≥ 3)
    as_one_run: bool | None = None  # reproduced with the paper's number counted as one run


def band_of(margin: dict | None, metric: str) -> float:
    """The band of `metric` in an experiment's margin (`dmlbench.config.margins.of`)."""
    if margin is None:
        return DEFAULT_BAND
    return float(margin["band"].get(metric, margin["default"]))


def printed_precision(text: str) -> float:
    """Half a unit of the last digit the paper prints: '66.85' → 0.005, '97' → 0.5."""
    decimals = len(text.partition(".")[2])
    return 0.5 * 10.0**-decimals


def plain(n: int) -> tuple[float, float]:
    """The levels of a test at one look: each one-sided test of the equivalence at α, the interval at 1 − α."""
    return ALPHA, ALPHA


def judge(values, paper: float, margin: float, levels=plain) -> NumberVerdict:
    """`values`: our per-seed numbers (a NaN is a failed seed); `margin`: δ, band + printed precision;
    `levels(n)`: the tests' levels at n seeds (a second wave's look, `sequential.Design.number_levels`)."""
    from scipy import stats

    raw = np.asarray(list(values), dtype=float)
    failed = int(np.isnan(raw).sum())
    x = raw[~np.isnan(raw)]
    if raw.size == 0:
        return NumberVerdict(NOT_RUN, 0)
    mean = float(x.mean()) if x.size else None
    if failed:
        return NumberVerdict(FAILED, int(x.size), mean, None, margin, failed=failed)
    n, d = int(x.size), mean - paper
    sd = float(x.std(ddof=1)) if n > 1 else float("nan")
    half = float(stats.t.ppf(1 - ALPHA / 2, n - 1) * sd / math.sqrt(n)) if n > 1 else None
    if n < MIN_SEEDS:
        return NumberVerdict(INCONCLUSIVE, n, mean, half, margin, _seeds_needed(d, sd, margin, n, levels))
    verdict = decision(d, sd, n, margin, levels)
    equivalence = stats.t.ppf(1 - levels(n)[0], n - 1) * sd / math.sqrt(n)
    needed = _seeds_needed(d, sd, margin, n, levels) if verdict == INCONCLUSIVE else None
    one_run = stats.t.ppf(1 - ALPHA, n - 1) * sd * math.sqrt(1 / n + 1)
    return NumberVerdict(
        verdict,
        n,
        mean,
        half,
        margin,
        needed,
        zero_spread=sd == 0.0,
        delta_at_least=abs(d) + float(equivalence),
        as_one_run=bool(-margin < d - one_run and d + one_run < margin),
    )


def decision(d: float, sd: float, n: int, margin: float, levels=plain) -> str:
    """The verdict on a gap d from the paper of n ≥ `MIN_SEEDS` seeds of spread sd: the 90 % (at
    `levels`) interval inside ±δ, the 95 % one wholly beyond, or neither."""
    from scipy import stats

    one_sided, two_sided = levels(n)
    equivalence = stats.t.ppf(1 - one_sided, n - 1) * sd / math.sqrt(n)
    beyond = stats.t.ppf(1 - two_sided / 2, n - 1) * sd / math.sqrt(n)
    if -margin < d - equivalence and d + equivalence < margin:
        return REPRODUCED
    if d + beyond < -margin:
        return BELOW
    if d - beyond > margin:
        return ABOVE
    return INCONCLUSIVE


def _seeds_needed(d: float, sd: float, margin: float, n: int, levels=plain) -> int | None:
    """The fewest seeds (more than `n`) at which the verdict would be decided with probability 0.8
    (`power`, at `levels`) if the true gap were the observed d and the spread the 90 % upper confidence bound of
    σ from these n seeds (chi-square): equivalence where |d| < δ (two one-sided tests), a
    difference beyond δ where |d| > δ (the 95 % interval wholly outside). A sample size, not the
    plug-in "the interval at this s would fit". None: more than MAX_SEEDS, no spread known (one
    seed), or |d| = δ."""
    from scipy import stats

    from dmlbench.verdicts import power

    if abs(d) == margin or not math.isfinite(sd) or n < 2:
        return None
    upper = sd * math.sqrt((n - 1) / stats.chi2.ppf(0.1, n - 1)) if sd > 0 else 0.0
    for m in range(max(n + 1, MIN_SEEDS), MAX_SEEDS + 1):
        se = upper / math.sqrt(m)
        if se == 0:
            return m
        one_sided, two_sided = levels(m)
        if abs(d) < margin:
            chance = power.equivalence(d, se, m - 1, margin, one_sided)
        else:
            chance = float(stats.nct.sf(stats.t.ppf(1 - two_sided / 2, m - 1), m - 1, (abs(d) - margin) / se))
        if chance >= 0.8:
            return m
    return None
