"""Mean and 95 % confidence interval over repetitions.

For n values x_i with mean x̄ and sample standard deviation s (n − 1 in the denominator), the
interval is x̄ ± t_{0.975, n−1} · s / √n, t the Student-t quantile with n − 1 degrees of freedom
(the repetitions are taken as independent draws of a normally distributed score).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def mean_interval(values, level: float = 0.95) -> tuple[float, float]:
    """(mean, half-width of the `level` interval); at least two values."""
    x = np.asarray(values, dtype=float)
    if x.size < 2 or not np.isfinite(x).all():
        raise ValueError(f"a confidence interval needs two or more finite values, got {x.tolist()}")
    half = stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return float(x.mean()), float(half)


def overlaps(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether the intervals mean ± half of `a` and `b` share a point."""
    return abs(a[0] - b[0]) <= a[1] + b[1]
