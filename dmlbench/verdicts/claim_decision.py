"""A tested claim's verdict (docs/verdicts.md, "Claims"), one evidence standard for every outcome.

- *holds* (and *equivalent*): the claim's test, Holm-adjusted over the paper's family, at α;
- *reversed*, *differs*, *gain not reproduced*: the claim's failure test, Holm-adjusted over the
  same family, at α: its p is the smallest of its parts' failure p-values times their count
  (Bonferroni inside the claim), so a claim is listed as failing at the family-wise error rate at
  which one holds, never from one part's unadjusted interval;
- *gain reproduced*: a gain claim with the paper's gain on every part, the 90 % interval of our
  gain inside the paper's gain ± δ (a sentence over parts: the gain averaged over them, seed by
  seed, against the paper's average, and no part's own 95 % interval wholly outside its paper
  gain ± δ): the paper's effect measured, though too small to be significant at these seeds;
- otherwise *not significant* where the claim's power before the data (`power`) is at least 0.8
  at the paper's gain, else *underpowered*.

A part's failure p-values: a gain, peak or trend part whose gain is negative, its two-sided p
(*reversed*); a gain part with the paper's gain g, 2·min of the one-sided p-values of our gain
above g + δ or below g − δ (*gain not reproduced*: the 95 % interval wholly outside g ± δ); an
equivalence or plateau part, the same against 0 ± δ (*differs*); a no-gain part, twice the
one-sided p of a gain above δ (*reversed*).
"""

from __future__ import annotations

import numpy as np

from dmlbench.verdicts import claims as gain_tests

ALPHA = gain_tests.ALPHA


def _outside(gain: float, se: float, df: float, centre: float, delta: float) -> float:
    """2·min(P(above centre + δ), P(below centre − δ)) of a t statistic: p of an interval outside."""
    from scipy import stats

    if not se > 0:
        return 0.0 if abs(gain - centre) > delta else 1.0
    above = stats.t.sf((gain - centre - delta) / se, df)
    below = stats.t.cdf((gain - centre + delta) / se, df)
    return float(min(1.0, 2 * min(above, below)))


def _above(gain: float, se: float, df: float, delta: float) -> float:
    """2·P(a t statistic above δ): p of an interval wholly above δ."""
    from scipy import stats

    if not se > 0:
        return 0.0 if gain > delta else 1.0
    return float(min(1.0, 2 * stats.t.sf((gain - delta) / se, df)))


def failure(kind: str, parts: list[dict], family: int = 1) -> tuple[float, str]:
    """The claim's failure p (Bonferroni over its parts' failure tests) and the verdict it gives:
    that of its smallest p; a gain not reproduced is named *reversed* only where a part's reversal
    test alone passes the family's strictest level (its p × the claim's tests × `family` < α)."""
    tests = []
    for part in parts:
        if kind in ("equivalent", "plateau"):
            tests.append((_outside(part["gain"], part["se"], part["df"], 0.0, part["delta"]), gain_tests.DIFFERS))
            continue
        if kind == "no_gain":
            tests.append((_above(part["gain"], part["se"], part["df"], part["delta"]), gain_tests.REVERSED))
            continue
        tests.append((part["p"] if part["gain"] < 0 else 1.0, gain_tests.REVERSED))  # p: the two-sided p
        if part.get("gain_paper") is not None:
            p = _outside(part["gain"], part["se"], part["df"], part["gain_paper"], part["delta"])
            tests.append((p, gain_tests.GAIN_NOT_REPRODUCED))
    p, way = min(tests, key=lambda t: t[0])
    reversal = min(t[0] for t in tests if t[1] == gain_tests.REVERSED) if kind not in ("equivalent", "plateau") else 1.0
    if way == gain_tests.GAIN_NOT_REPRODUCED and reversal * len(tests) * family < ALPHA:
        way = gain_tests.REVERSED  # the stronger statement, shown at the same standard
    return min(1.0, p * len(tests)), way


def gain_reproduced(parts: list[dict], level: float = ALPHA) -> bool:
    """Every part has the paper's gain, and our gain's 1 − 2·`level` interval (90 % at the plain
    test; under a second wave, `level` is its look's one-sided nominal level) lies inside the
    paper's gain ± δ: a part's own; for a sentence over several parts paired on the same seeds,
    the gain averaged over its parts seed by seed (so parts that share runs are not taken as
    independent) against the paper's average, and no part's own 95 % interval wholly outside its
    paper gain ± δ (unadjusted: the average must not hide a part far from the paper's)."""
    from scipy import stats

    if not parts or any(part.get("gain_paper") is None for part in parts):
        return False
    if any(_outside(p["gain"], p["se"], p["df"], p["gain_paper"], p["delta"]) < ALPHA for p in parts):
        return False
    seeds = set.intersection(*(set(part.get("differences") or ()) for part in parts))
    if len(parts) > 1 and all("differences" in part for part in parts) and len(seeds) >= gain_tests.MIN_SEEDS:
        off = np.array([np.mean([part["differences"][s] - part["gain_paper"] for part in parts]) for s in seeds])
        pooled = [(float(off.mean()), float(off.std(ddof=1) / np.sqrt(len(off))), len(off) - 1.0, 0.0)]
    else:
        pooled = [(part["gain"], part["se"], part["df"], part["gain_paper"]) for part in parts]
    delta = min(part["delta"] for part in parts)
    for gain, se, df, centre in pooled:
        half = float(stats.t.ppf(1 - level, df)) * se
        if not (centre - delta < gain - half and gain + half < centre + delta):
            return False
    return True


def verdict(
    claim: dict,
    result: dict,
    adjusted_p: float,
    adjusted_failure: float,
    way: str,
    power: float | None,
    gain_level: float = ALPHA,
) -> str:
    """The verdict of a tested claim from its Holm-adjusted p-values and its power before the data
    (`gain_level`: the one-sided level of *gain reproduced*'s test, its look's under a second wave)."""
    kind = claim.get("kind", "gain")
    parts = result.get("parts") or [result]
    if adjusted_p < ALPHA:
        if kind in ("equivalent", "plateau"):
            return gain_tests.EQUIVALENT
        if kind == "no_gain":
            return gain_tests.HOLDS
        if all(p["gain"] > 0 for p in parts):  # the direction is the claim's rows', better − worse > 0
            return _size(claim, result, parts)
    if adjusted_failure < ALPHA:
        return way
    if kind == "gain" and gain_reproduced(parts, gain_level):
        return gain_tests.GAIN_REPRODUCED
    return gain_tests.NOT_SIGNIFICANT if power is not None and power >= gain_tests.POWER else gain_tests.UNDERPOWERED


def _size(claim: dict, result: dict, parts: list[dict]) -> str:
    """*holds, smaller / larger* where a one-part gain's 95 % interval lies wholly below / above the
    paper's gain: the part's own (its table's, or against a quoted row), else the sentence's (not
    for `unlike` settings, whose size is not the paper's)."""
    paper = parts[0].get("gain_paper", claim.get("gain")) if len(parts) == 1 else None
    if claim.get("kind", "gain") != "gain" or len(parts) != 1 or paper is None or claim.get("unlike"):
        return gain_tests.HOLDS
    if result["high"] < paper:
        return gain_tests.SMALLER
    if result["low"] > paper:
        return gain_tests.LARGER
    return gain_tests.HOLDS
