"""Paired differences over seeds, as suite.knobs reports them: mean, 95 % interval, two-sided
t-test (scipy's, through the verdicts' `claims.test`), Holm's adjustment over a recipe's knobs, and
no test where the seeds cannot carry one ("too few seeds": fewer than 3; "no spread": every seed's
difference the same, where a t-test would call any nonzero difference certain)."""

from __future__ import annotations

import math

import numpy as np

from dmlbench.fair.intervals import mean_interval
from dmlbench.verdicts import claims

ALPHA = 0.05
MIN_SEEDS = 3  # an effect over fewer paired seeds is shown, not tested
TOO_FEW, NO_SPREAD = "too few seeds", "no spread"


def interval(values: list[float]) -> tuple[float, float]:
    """(mean, 95 % half-width); NaN half-width with fewer than two seeds."""
    if len(values) < 2:
        return float(np.mean(values)), math.nan
    return mean_interval(values)


def change(after: dict, before: dict) -> dict:
    """after − before over the seeds: mean, paired 95 % interval, two-sided p. No test (NaN p, and
    `untested` saying why) with fewer than `MIN_SEEDS` seeds (the interval is still given) or where
    every seed's difference is the same (zero spread: no interval)."""
    result = claims.test(after, before, min_seeds=2)
    gain = float(np.mean(list(after.values())) - np.mean(list(before.values())))
    if isinstance(result, str):
        untested = NO_SPREAD if result == claims.NO_SPREAD else TOO_FEW
        return {"effect": gain, "low": math.nan, "high": math.nan, "p": math.nan, "untested": untested}
    if not result.se > 1e-9 * max(1.0, abs(result.gain)):  # equal differences, up to rounding: no interval
        return {"effect": result.gain, "low": math.nan, "high": math.nan, "p": math.nan, "untested": NO_SPREAD}
    if min(result.n_better, result.n_worse) < MIN_SEEDS:  # the interval shown (wide), no test
        return {"effect": result.gain, "low": result.low, "high": result.high, "p": math.nan, "untested": TOO_FEW}
    return {"effect": result.gain, "low": result.low, "high": result.high, "p": result.p, "untested": None}


def of_differences(differences: dict[int, float]) -> dict:
    """`change` of per-seed differences (seed → after − before) against zero."""
    return change(differences, {seed: 0.0 for seed in differences})


def holm(rows: list[dict]) -> list[dict]:
    """Adds `p_holm` (Holm over the rows that were tested; NaN for the others) and `significant`."""
    tested = [row for row in rows if row["p"] == row["p"]]
    for row in rows:
        row["p_holm"] = math.nan
    for row, p in zip(tested, claims.holm([row["p"] for row in tested])):
        row["p_holm"] = p
    for row in rows:
        row["significant"] = bool(row["p_holm"] < ALPHA)
    return rows
