"""A trunk ranking against the fair table's (`dmlbench.report.ranking_vs_fair`): what τ can show
with N methods, checked against every permutation of N, and the bootstrap interval and power on
made-up seeds."""

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dmlbench.report import ranking_vs_fair as rvf


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_the_smallest_p_and_critical_tau_are_those_of_every_permutation(n):
    taus = {}
    for order in itertools.permutations(range(n)):
        tau, p = stats.kendalltau(order, range(n))
        taus[round(tau, 9)] = p
    assert rvf.smallest_p(n) == pytest.approx(min(taus.values())) == pytest.approx(2 / math.factorial(n))
    significant = [t for t, p in taus.items() if p < rvf.ALPHA and t > 0]
    assert (rvf.critical_tau(n) == pytest.approx(min(significant))) if significant else math.isnan(rvf.critical_tau(n))


def test_five_methods_can_never_reach_below_p_0_017_and_four_never_below_0_083():
    """The review's figures: 5 methods a dataset, In-Shop 4."""
    assert rvf.smallest_p(5) == pytest.approx(0.0167, abs=1e-4) and rvf.smallest_p(4) == pytest.approx(0.0833, abs=1e-4)


def _seeds(means: list[float], spread: float, rng, n: int = 5) -> dict[str, list[float]]:
    return {f"m{i}": list(mean + spread * rng.standard_normal(n)) for i, mean in enumerate(means)}


def test_agreeing_rankings_with_clear_gaps_are_tau_one_with_full_power():
    rng = np.random.default_rng(1)
    ours, fair = _seeds([50, 55, 60, 65, 70, 75], 0.2, rng), _seeds([40, 42, 44, 46, 48, 50], 0.2, rng)
    row = rvf.compare(ours, fair, np.random.default_rng(0))
    assert row["tau"] == pytest.approx(1.0) and row["tau_low"] == pytest.approx(1.0) and row["power"] == 1.0
    assert row["methods"] == 6 and row["p_value"] == pytest.approx(rvf.smallest_p(6))


def test_a_close_race_gives_a_wide_interval_and_low_power():
    rng = np.random.default_rng(2)
    ours, fair = _seeds([50, 50.1, 50.2, 50.3, 50.4], 3.0, rng), _seeds([40, 40.1, 40.2, 40.3, 40.4], 3.0, rng)
    row = rvf.compare(ours, fair, np.random.default_rng(0))
    assert row["tau_high"] - row["tau_low"] > 1.0 and row["power"] < 0.5


def test_four_methods_say_that_no_tau_can_be_significant():
    rng = np.random.default_rng(3)
    row = rvf.compare(_seeds([1, 2, 3, 4], 0.1, rng), _seeds([1, 2, 3, 4], 0.1, rng), np.random.default_rng(0))
    assert row["tau"] == pytest.approx(1.0) and row["power"] == 0.0 and "no τ over 4 methods" in row["note"]


def test_the_table_pairs_each_trunk_with_the_fair_methods_under_their_fair_ids(tmp_path):
    runs = pd.DataFrame(
        [
            {"dataset": "cub", "method": f"{m}@vit", "seed": s, "recall@1": v + s}
            for m, v in (("ms", 60), ("contrastive", 50), ("proxy_nca_rc", 55))
            for s in range(3)
        ]
    )
    runs.to_csv(tmp_path / "runs.csv", index=False)
    fair = {}
    for method, value in (("ms", 0.62), ("contrastive", 0.58), ("proxy_nca_rc", 0.60)):
        path = tmp_path / f"{method}.json"
        path.write_text(
            json.dumps({"per_repetition": [{"concatenated": {"recall@1": value + r / 100}} for r in range(2)]})
        )
        fair[method] = str(path)
    table = rvf.write({"runs": str(tmp_path / "runs.csv"), "trunks": {"vit": "ViT"}, "fair": {"cub": fair}}, tmp_path)
    assert table.loc[0, "methods"] == 3 and table.loc[0, "tau"] == pytest.approx(1.0)
    assert "| cub | ViT | 3 | +1.00" in (tmp_path / "ranking_vs_fair.md").read_text()
