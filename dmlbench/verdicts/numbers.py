"""The verdict on one paper number: the paper's value against our mean ± 95 % interval over seeds
(Student t, `dmlbench.fair.intervals`), widened by the experiment's tolerance.

tolerance = band (the catalogue's `tolerance`, default 1.0 point of a metric in %) + half a unit
of the paper's last printed digit (66.85 → 0.005, 85.8 → 0.05): the paper's rounding is no gap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmlbench.fair.intervals import mean_interval

SELECTED = " (test-selected)"  # the column of a metric at each run's best test epoch (runs.csv)
DEFAULT_BAND = 1.0  # points of a metric in % (Recall@K, NMI, F1, MAP@R): docs/verdicts.md
REPRODUCED, BELOW, ABOVE, NOT_RUN, SINGLE_RUN = "reproduced", "below", "above", "not run", "single run"
VERDICTS = (REPRODUCED, BELOW, ABOVE, NOT_RUN, SINGLE_RUN)
SYMBOLS = {REPRODUCED: "✓", BELOW: "▼", ABOVE: "▲", NOT_RUN: "∅", SINGLE_RUN: "①"}
MEANINGS = {REPRODUCED: "the paper's number is inside this suite's 95 % interval widened by the tolerance",
            BELOW: "this suite's number is below the paper's beyond interval and tolerance",
            ABOVE: "this suite's number is above the paper's beyond interval and tolerance",
            NOT_RUN: "not run by this preset",
            SINGLE_RUN: "one seed: no interval, no verdict"}


@dataclass(frozen=True)
class NumberVerdict:
    verdict: str
    n: int
    mean: float | None = None
    half: float | None = None     # half-width of the 95 % interval (n ≥ 2)
    tolerance: float | None = None


def band_of(tolerance, metric: str) -> float:
    """The catalogue's `tolerance` of an experiment (a number, or metric → number) for `metric`."""
    if tolerance is None:
        return DEFAULT_BAND
    if isinstance(tolerance, dict):
        return float(tolerance.get(metric, DEFAULT_BAND))
    return float(tolerance)


def printed_precision(text: str) -> float:
    """Half a unit of the last digit the paper prints: '66.85' → 0.005, '97' → 0.5."""
    decimals = len(text.partition(".")[2])
    return 0.5 * 10.0 ** -decimals


def judge(values, paper: float, tolerance: float) -> NumberVerdict:
    """`values`: our per-seed numbers (NaN dropped); `tolerance`: band + printed precision."""
    x = np.asarray([v for v in values if v == v], dtype=float)
    if x.size == 0:
        return NumberVerdict(NOT_RUN, 0)
    if x.size == 1:
        return NumberVerdict(SINGLE_RUN, 1, float(x[0]))
    mean, half = mean_interval(x)
    if paper > mean + half + tolerance:
        verdict = BELOW
    elif paper < mean - half - tolerance:
        verdict = ABOVE
    else:
        verdict = REPRODUCED
    return NumberVerdict(verdict, int(x.size), mean, half, tolerance)
