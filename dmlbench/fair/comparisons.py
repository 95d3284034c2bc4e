"""Statistics between the fair table's methods.

- Pairwise, per dataset × mode × metric: every pair of methods tested over the final repetitions
  (repetition r of every method trains with the same seed and folds, so the test is paired:
  `verdicts.claims.test`, scipy's `ttest_rel`), the p-values of one dataset × mode × metric
  Holm-corrected together (`verdicts.claims.holm`).
- Across datasets (Demšar, JMLR 2006): the methods ranked within each dataset by their mean
  (rank 1 the best, ties sharing the average rank), the Friedman test of equal average ranks
  (scipy's `friedmanchisquare`) and the Nemenyi post-hoc: two methods differ where their average
  ranks differ by at least the critical difference CD = q_α(k, ∞) / √2 · √(k (k + 1) / (6 N)),
  k methods, N datasets, q the studentized range quantile (scipy's `studentized_range`); the
  pairwise p-value is that of |R_i − R_j| / √(k (k + 1) / (6 N)) · √2 under the same law.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from dmlbench.verdicts import claims

ALPHA = 0.05
COLUMNS = ["dataset", "mode", "metric", "a", "b", "gain", "low", "high", "p", "paired", "p_holm", "differ", "untested"]


def pairwise(per_repetition: pd.DataFrame) -> pd.DataFrame:
    """`per_repetition`: columns dataset, mode, metric, method, repetition, value. One row per
    dataset × mode × metric × pair (a before b in the table's order): gain = mean(a) − mean(b)
    with its 95 % interval, p, Holm-adjusted p and whether a and b differ at α = 0.05."""
    rows = []
    for (dataset, mode, metric), group in per_repetition.groupby(["dataset", "mode", "metric"], sort=False):
        values = {
            method: dict(zip(mine["repetition"], mine["value"])) for method, mine in group.groupby("method", sort=False)
        }
        tested = []
        for a, b in itertools.combinations(values, 2):
            result = claims.test(values[a], values[b], min_seeds=2)  # two repetitions: a test (docs/fair-table.md)
            row = {"dataset": dataset, "mode": mode, "metric": metric, "a": a, "b": b}
            if isinstance(result, claims.ClaimTest):
                row.update(
                    gain=result.gain, low=result.low, high=result.high, p=result.p, paired=result.paired, untested=""
                )
                tested.append(len(rows))
            else:
                row.update(
                    gain=math.nan,
                    low=math.nan,
                    high=math.nan,
                    p=math.nan,
                    paired=False,
                    untested=result,
                    p_holm=math.nan,
                    differ=False,
                )
            rows.append(row)
        for index, adjusted in zip(tested, claims.holm([rows[i]["p"] for i in tested])):
            rows[index]["p_holm"] = adjusted
            rows[index]["differ"] = adjusted < ALPHA
    return pd.DataFrame(rows, columns=COLUMNS)  # the columns also where one method leaves no pair


def versus_best(pairs: pd.DataFrame, means: pd.Series, dataset: str, mode: str, metric: str) -> dict:
    """method → (gain over the best, Holm p) for one dataset × mode × metric; `means`: method →
    mean. The best itself maps to None."""
    best = means.idxmax()
    mine = pairs[(pairs["dataset"] == dataset) & (pairs["mode"] == mode) & (pairs["metric"] == metric)]
    out: dict = {best: None}
    for _, row in mine.iterrows():
        if best in (row["a"], row["b"]):
            other = row["b"] if row["a"] == best else row["a"]
            sign = -1.0 if row["a"] == best else 1.0
            out[other] = (sign * row["gain"], row["p_holm"])
    return out


@dataclass(frozen=True)
class Ranking:
    methods: list[str]
    datasets: list[str]
    average_ranks: dict[str, float]
    friedman_statistic: float
    friedman_p: float
    critical_difference: float
    nemenyi_p: pd.DataFrame  # methods × methods
    smallest_p: float = 0.0  # the Friedman p-value when every dataset ranks the methods alike

    def as_dict(self) -> dict:
        return {
            "methods": self.methods,
            "datasets": self.datasets,
            "average_ranks": self.average_ranks,
            "friedman": {"statistic": self.friedman_statistic, "p": self.friedman_p},
            "critical_difference": self.critical_difference,
            "alpha": ALPHA,
            "smallest_p": self.smallest_p,
            "nemenyi_p": {a: {b: float(self.nemenyi_p.at[a, b]) for b in self.methods} for a in self.methods},
        }


def ranking(means: pd.DataFrame) -> Ranking | str:
    """`means`: datasets × methods (higher is better). A `Ranking`, or why there is none (fewer
    than 3 methods or 2 datasets: the Friedman test needs both)."""
    means = means.dropna(axis=1)
    k, n = means.shape[1], means.shape[0]
    if k < 3 or n < 2:
        return (
            f"a ranking over datasets needs at least 3 methods and 2 datasets with every method; "
            f"here {k} method{'s' * (k != 1)} and {n} dataset{'s' * (n != 1)}"
        )
    ranks = means.rank(axis=1, ascending=False, method="average")
    average = ranks.mean(axis=0)
    columns = [means[m].to_numpy() for m in means.columns]
    friedman = stats.friedmanchisquare(*columns)
    scale = math.sqrt(k * (k + 1) / (6.0 * n))
    q = float(stats.studentized_range.ppf(1 - ALPHA, k, np.inf))
    difference = np.abs(average.to_numpy()[:, None] - average.to_numpy()[None, :]) / scale * math.sqrt(2)
    p = stats.studentized_range.sf(difference, k, np.inf)
    np.fill_diagonal(p, 1.0)
    statistic, p_value = float(friedman.statistic), float(friedman.pvalue)
    return Ranking(
        list(means.columns),
        list(means.index),
        {m: float(r) for m, r in average.items()},
        statistic,
        1.0 if p_value != p_value else p_value,  # no spread: nothing to tell apart
        q / math.sqrt(2) * scale,
        pd.DataFrame(np.clip(p, 0.0, 1.0), index=means.columns, columns=means.columns),
        smallest_friedman_p(k, n),
    )


def smallest_friedman_p(k: int, n: int) -> float:
    """The power of the ranking in one number: the Friedman p-value (χ² approximation, as scipy's)
    when all n datasets rank the k methods in the same order, χ² = n (k − 1); at or above α the
    test cannot reject whatever the results."""
    return float(stats.chi2.sf(n * (k - 1), k - 1))


def cliques(result: Ranking) -> list[list[str]]:
    """The maximal runs of methods, in average-rank order, whose ranks lie within one critical
    difference of each other (the bars of a critical-difference diagram); single methods left out."""
    order = sorted(result.methods, key=lambda m: result.average_ranks[m])
    runs = []
    for start in range(len(order)):
        end = start
        while (
            end + 1 < len(order)
            and result.average_ranks[order[end + 1]] - result.average_ranks[order[start]] < result.critical_difference
        ):
            end += 1
        if end > start and not any(s <= start and end <= e for s, e in runs):
            runs.append((start, end))
    return [order[s : e + 1] for s, e in runs]
