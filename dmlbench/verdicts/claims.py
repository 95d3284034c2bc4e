"""A paper's claims (`claims:` of an experiment in the catalogue: row `better` beats row `worse` on
a dataset and metric, by the paper's `gain`), checked when the catalogue loads, and tested on our
per-seed numbers.

Our gain is mean(better) − mean(worse) with its 95 % interval; the test is paired (scipy's
`ttest_rel`) where both rows ran the same seeds, else Welch's (`ttest_ind`, unequal variances);
the p-values of one paper's claims are Holm-corrected together (`holm`) and judged at α = 0.05
(`claim_decision`; power before the data: `power`).
In an experiment with a sweep, a claim naming bare methods is tested once per variant the preset
runs (`per_variant`): the same comparison on each trunk, say.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dmlbench.core.errors import ConfigError

ALPHA = 0.05
REQUIRED = {"id", "text", "dataset", "metric", "source"}  # and those of the claim's kind (claim_kinds)
HOLDS, SMALLER, LARGER = "holds", "holds, smaller", "holds, larger"
NOT_SIGNIFICANT, REVERSED, NOT_RUN = "not significant", "reversed", "not run"
FEW_SEEDS, NO_SPREAD = "too few seeds", "no spread"
MIN_SEEDS = 3  # finished seeds a row needs for a test (a paper number needs as many: `numbers.MIN_SEEDS`)
UNDERPOWERED, EQUIVALENT, DIFFERS, PARTIAL = "underpowered", "equivalent", "differs", "partly run"
GAIN_REPRODUCED, GAIN_NOT_REPRODUCED = "gain reproduced", "gain not reproduced"
VERDICTS = (
    HOLDS,
    SMALLER,
    LARGER,
    EQUIVALENT,
    GAIN_REPRODUCED,
    UNDERPOWERED,
    NOT_SIGNIFICANT,
    REVERSED,
    DIFFERS,
    GAIN_NOT_REPRODUCED,
    PARTIAL,
    NOT_RUN,
    FEW_SEEDS,
    NO_SPREAD,
)
POWER = 0.8
HOLDING = (HOLDS, SMALLER, LARGER, EQUIVALENT, GAIN_REPRODUCED)
# listed as failing: only outcomes decided at the family-wise error rate a claim holds at
# (`claim_decision`); *not significant* is not among them (a test that missed is no evidence)
FAILING = (REVERSED, DIFFERS, GAIN_NOT_REPRODUCED)
SYMBOLS = {
    HOLDS: "✓",
    SMALLER: "✓▽",
    LARGER: "✓△",
    EQUIVALENT: "✓≈",
    GAIN_REPRODUCED: "✓g",
    GAIN_NOT_REPRODUCED: "✗g",
    UNDERPOWERED: "…",
    NOT_SIGNIFICANT: "○",
    REVERSED: "✗",
    DIFFERS: "✗≠",
    PARTIAL: "◐",
    NOT_RUN: "∅",
    FEW_SEEDS: "①",
    NO_SPREAD: "=",
}
MEANINGS = {
    HOLDS: "significant in the sentence's direction (Holm over the paper's family), the paper's gain inside "
    "this suite's gain's interval",
    SMALLER: "holds, but this suite's gain's interval lies below the paper's gain",
    LARGER: "holds, but this suite's gain's interval lies above the paper's gain",
    EQUIVALENT: "an equivalence or plateau claim: the difference shown inside ±δ (two one-sided tests)",
    GAIN_REPRODUCED: "not significant, but this suite's gain's 90 % interval lies inside the paper's gain ± δ "
    "on every part: the paper's effect measured",
    UNDERPOWERED: "not significant, and the test's power before the data (at the paper's gain, the assumed "
    "seed spread and these seeds) is below 0.8: more seeds are needed, not a refutation",
    NOT_SIGNIFICANT: "not significant though the test's power before the data was at least 0.8: "
    "no evidence either way, not listed as failing",
    REVERSED: "the opposite sign shown at the family-wise rate a claim holds at (a no-gain claim: a gain "
    "beyond δ shown)",
    DIFFERS: "an equivalence or plateau claim: the difference shown outside ±δ at the family-wise rate",
    GAIN_NOT_REPRODUCED: "this suite's gain shown outside the paper's gain ± δ at the family-wise rate",
    PARTIAL: "a claim over several datasets, metrics or settings of which the preset runs only some: "
    "tested on those (what they say is given), no verdict on the claim",
    NOT_RUN: "a row of the claim is not run by this preset",
    FEW_SEEDS: f"a row has fewer than {MIN_SEEDS} finished seeds (paired rows: seeds both finished): no test",
    NO_SPREAD: "every seed gives the same difference (or both rows are constant): no spread, no test",
}


def check_ids(experiments: dict, source_of) -> None:
    """Claim ids are unique within a paper; `source_of(key)` names an experiment's file."""
    seen: dict[tuple, str] = {}
    for key, exp in experiments.items():
        for claim in exp.get("claims") or []:
            paper_id = (exp.get("paper"), claim["id"])
            if paper_id in seen:
                raise ConfigError(
                    f"{source_of(key)}: experiment {key}.claims: id {claim['id']!r} is "
                    f"also a claim of {seen[paper_id]}; ids are unique within a paper"
                )
            seen[paper_id] = key


def per_variant(exp: dict, variants: list[str]) -> list[dict]:
    """`exp`'s claims, each claim between bare methods of a swept experiment repeated for every
    variant in `variants` (rows `method@variant`, id suffixed, the variant in `on`), variant by variant after
    the claims that name their variants."""
    claims = exp.get("claims") or []
    if not exp.get("sweep"):
        return list(claims)
    bare = [
        c for c in claims if "better" in c and "variants" not in c and "@" not in c["better"] and "@" not in c["worse"]
    ]
    return [c for c in claims if c not in bare] + [
        {
            **c,
            "id": f"{c['id']}@{v}",
            "on": v,  # the certificate says the setting by its name (`claim_family`)
            "better": f"{c['better']}@{v}",
            "worse": f"{c['worse']}@{v}",
        }
        for v in variants
        for c in bare
    ]


@dataclass(frozen=True)
class ClaimTest:
    gain: float  # mean(better) − mean(worse), points
    low: float  # 95 % interval of the gain
    high: float
    p: float  # two-sided, before Holm
    paired: bool
    n_better: int
    n_worse: int
    se: float  # standard error of the gain
    df: float  # the t-test's degrees of freedom
    failed_better: tuple = ()  # seeds of `better` whose number is NaN (a diverged or failed run): left out
    failed_worse: tuple = ()


def test(better: dict, worse: dict, min_seeds: int = MIN_SEEDS) -> ClaimTest | str:
    """better, worse: seed → our number (NaN: a failed seed, left out and named). Rows trained on
    the same seeds are paired on the seeds both finished (scipy's `ttest_rel`), other rows by
    Welch's t. A `ClaimTest`, or the verdict why there is none: NOT_RUN, FEW_SEEDS (fewer than
    `min_seeds` seeds to test on: a claim's `MIN_SEEDS`; the fair table and the knobs, which say
    what two seeds give, ask 2), NO_SPREAD (equal differences, or two constant rows: a t-test has
    no variance to divide by)."""
    b = {s: v for s, v in better.items() if v == v}
    w = {s: v for s, v in worse.items() if v == v}
    if not b or not w:
        return NOT_RUN
    from scipy import stats  # imported where a claim is tested, not by the plan that checks claims

    paired = set(better) == set(worse)
    if paired:
        seeds = sorted(set(b) & set(w))
        x, y = np.array([b[s] for s in seeds]), np.array([w[s] for s in seeds])
        if len(seeds) < min_seeds:
            return FEW_SEEDS
        if _constant(x - y):
            return NO_SPREAD
        result = stats.ttest_rel(x, y)
        se = float(np.std(x - y, ddof=1) / math.sqrt(len(x)))
    else:
        x, y = np.array(list(b.values())), np.array(list(w.values()))
        if min(len(x), len(y)) < min_seeds:
            return FEW_SEEDS
        if _constant(x) and _constant(y):
            return NO_SPREAD
        result = stats.ttest_ind(x, y, equal_var=False)
        se = float(math.sqrt(np.var(x, ddof=1) / len(x) + np.var(y, ddof=1) / len(y)))
    interval = result.confidence_interval(1 - ALPHA)
    return ClaimTest(
        float(x.mean() - y.mean()),
        float(interval.low),
        float(interval.high),
        float(result.pvalue),
        paired,
        len(x),
        len(y),
        se,
        float(result.df),
        tuple(sorted(s for s, v in better.items() if v != v)),
        tuple(sorted(s for s, v in worse.items() if v != v)),
    )


def _constant(values: np.ndarray) -> bool:
    """Whether every value is the same, up to the rounding of numbers printed in % (1e-9 relative)."""
    return float(np.ptp(values)) <= 1e-9 * max(1.0, float(np.abs(values).max()))


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the given order: sorted ascending, the i-th
    smallest (from 0) is multiplied by m − i, capped at 1 and kept non-decreasing."""
    m = len(pvalues)
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda i: pvalues[i])):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted
