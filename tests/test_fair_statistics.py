"""Statistics between the fair table's methods (`dmlbench.fair.comparisons`), against scipy,
statsmodels' Holm, scikit-posthocs' Nemenyi test and Demšar's (JMLR 2006) table of critical values,
on made-up numbers."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dmlbench.fair import comparisons
from dmlbench.report import fair_ranking

# made-up MAP@R (%) of three methods over five repetitions on one dataset: a is clearly above c,
# b is noisy around a
REPETITIONS = {
    "a": [30.1, 31.0, 29.8, 30.5, 30.9],
    "b": [29.0, 31.9, 28.7, 31.8, 30.2],
    "c": [25.2, 26.1, 24.9, 25.8, 26.0],
}


def long_frame(values: dict, dataset="cub", mode="separated", metric="map@r") -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"dataset": dataset, "mode": mode, "metric": metric, "method": m, "repetition": r, "value": v}
            for m, vs in values.items()
            for r, v in enumerate(vs)
        ]
    )


def test_pairwise_is_scipy_paired_t_with_holm_of_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    pairs = comparisons.pairwise(long_frame(REPETITIONS))
    assert list(zip(pairs["a"], pairs["b"])) == [("a", "b"), ("a", "c"), ("b", "c")]
    raw = []
    for _, row in pairs.iterrows():
        x, y = np.array(REPETITIONS[row["a"]]), np.array(REPETITIONS[row["b"]])
        reference = stats.ttest_rel(x, y)
        ci = reference.confidence_interval(0.95)
        assert row["paired"]
        assert row["gain"] == pytest.approx(x.mean() - y.mean())
        assert (row["low"], row["high"]) == pytest.approx((ci.low, ci.high))
        assert row["p"] == pytest.approx(reference.pvalue)
        raw.append(reference.pvalue)
    _, adjusted, _, _ = multitest.multipletests(raw, method="holm")
    assert pairs["p_holm"].tolist() == pytest.approx(adjusted.tolist())
    assert pairs["differ"].tolist() == [p < 0.05 for p in adjusted]
    assert pairs.set_index(["a", "b"])["differ"].to_dict() == {("a", "b"): False, ("a", "c"): True, ("b", "c"): True}


def test_holm_is_corrected_within_each_dataset_mode_and_metric():
    two = pd.concat([long_frame(REPETITIONS), long_frame(REPETITIONS, dataset="cars")])
    pairs = comparisons.pairwise(two)
    alone = comparisons.pairwise(long_frame(REPETITIONS))
    for dataset in ("cub", "cars"):  # three tests per family, not six
        assert pairs[pairs["dataset"] == dataset]["p_holm"].tolist() == pytest.approx(alone["p_holm"].tolist())


def test_a_single_repetition_is_no_test():
    pairs = comparisons.pairwise(long_frame({"a": [30.0], "b": [20.0], "c": [10.0]}))
    assert pairs["untested"].eq("too few seeds").all() and pairs["p_holm"].isna().all() and not pairs["differ"].any()


def test_versus_best_gives_each_method_its_gain_over_the_best():
    pairs = comparisons.pairwise(long_frame(REPETITIONS))
    means = pd.Series({m: np.mean(v) for m, v in REPETITIONS.items()})
    against = comparisons.versus_best(pairs, means, "cub", "separated", "map@r")
    assert against["a"] is None
    assert against["c"][0] == pytest.approx(np.mean(REPETITIONS["c"]) - np.mean(REPETITIONS["a"]))
    assert against["b"][0] < 0 and against["b"][1] >= 0.05 > against["c"][1]


# made-up mean MAP@R, datasets × methods; by hand: ranks per dataset (1 the best)
MEANS = pd.DataFrame(
    {
        "ms": [30.0, 28.0, 40.0, 55.0],
        "dro": [29.0, 28.0, 41.0, 54.0],
        "ephn": [25.0, 20.0, 35.0, 50.0],
        "fastap": [26.0, 21.0, 33.0, 51.0],
    },
    index=["cub", "cars", "sop", "inshop"],
)
RANKS = {
    "ms": (1 + 1.5 + 2 + 1) / 4,
    "dro": (2 + 1.5 + 1 + 2) / 4,
    "ephn": (4 + 4 + 3 + 4) / 4,
    "fastap": (3 + 3 + 4 + 3) / 4,
}


def test_ranking_against_scipy_scikit_posthocs_and_demsar_table():
    posthocs = pytest.importorskip("scikit_posthocs")
    result = comparisons.ranking(MEANS)
    assert result.average_ranks == pytest.approx(RANKS)  # ties share the average rank
    reference = stats.friedmanchisquare(*[MEANS[m] for m in MEANS.columns])
    assert result.friedman_statistic == pytest.approx(reference.statistic)
    assert result.friedman_p == pytest.approx(reference.pvalue)
    # Demšar 2006, Table 5(a): q_0.05 = 2.569 for k = 4 (already divided by √2 there)
    assert result.critical_difference == pytest.approx(2.569 * math.sqrt(4 * 5 / (6 * 4)), abs=2e-3)
    nemenyi = posthocs.posthoc_nemenyi_friedman(MEANS.to_numpy())
    assert result.nemenyi_p.to_numpy() == pytest.approx(nemenyi.to_numpy(), abs=1e-6)


def test_demsar_critical_values_for_other_method_counts():
    for k, q in ((3, 2.343), (5, 2.728), (10, 3.164)):  # Demšar 2006, Table 5(a)
        means = pd.DataFrame(np.random.default_rng(k).normal(size=(6, k)), columns=[f"m{i}" for i in range(k)])
        assert comparisons.ranking(means).critical_difference == pytest.approx(
            q * math.sqrt(k * (k + 1) / (6 * 6)), abs=2e-3
        )


def test_cliques_join_methods_closer_than_the_critical_difference():
    result = comparisons.ranking(MEANS)  # CD ≈ 2.35: ms, dro, fastap within it; dro..ephn too
    assert result.critical_difference == pytest.approx(2.345, abs=1e-2)
    assert comparisons.cliques(result) == [["ms", "dro", "fastap"], ["dro", "fastap", "ephn"]]


def test_too_few_methods_or_datasets_give_a_reason():
    assert "3 methods" in comparisons.ranking(MEANS[["ms", "dro"]])
    assert "2 datasets" in comparisons.ranking(MEANS.iloc[:1])


def test_fair_outputs_hold_the_statistics(tmp_path):
    """The aggregate step's record and figure from made-up per-method means."""
    frame = pd.DataFrame(
        [
            {"dataset": d, "method": m, "mode": "separated", "metric": "map@r", "mean": v}
            for d in MEANS.index
            for m, v in MEANS.loc[d].items()
        ]
    )
    record = fair_ranking.ranking_record(fair_ranking.ranking(frame))
    assert record["average_ranks"] == pytest.approx(RANKS)
    assert record["groups"] == [["ms", "dro", "fastap"], ["dro", "fastap", "ephn"]]
    spec = {"title": "made up", "toy_data": True, "methods": {m: {"label": m.upper()} for m in MEANS.columns}}
    fair_ranking.ranking_figure(record, spec, tmp_path / "cd.png")
    none = fair_ranking.ranking_record(fair_ranking.ranking(frame[frame["dataset"] == "cub"]))
    fair_ranking.ranking_figure(none, spec, tmp_path / "none.png")
    assert "2 datasets" in none["none"]
    assert (tmp_path / "cd.png").stat().st_size > 1000 and (tmp_path / "none.png").stat().st_size > 1000


def test_one_method_leaves_no_pair_and_no_ranking():
    """The aggregate step with a single method (the kill test's selection): empty tables, no error."""
    pairs = comparisons.pairwise(long_frame({"a": REPETITIONS["a"]}))
    assert pairs.empty and "p_holm" in pairs and "dataset" in pairs
    assert comparisons.versus_best(pairs, pd.Series({"a": 30.0}), "cub", "separated", "map@r") == {"a": None}
    assert "3 methods" in comparisons.ranking(pd.DataFrame({"a": [1.0, 2.0]}, index=["cub", "cars"]))


@pytest.mark.parametrize("k, n", [(3, 2), (4, 2), (32, 5), (6, 5)])
def test_the_rankings_smallest_p_is_scipys_on_datasets_that_all_agree(k, n):
    """Every dataset ranking the methods alike gives the Friedman test its largest statistic: its
    p-value is the smallest the ranking can reach (the demo's 3 methods on 2 datasets: 0.135)."""
    from dmlbench.fair.comparisons import ranking

    agreeing = pd.DataFrame(
        [[float(k - m + d) for m in range(k)] for d in range(n)], columns=[f"m{m}" for m in range(k)]
    )
    result = ranking(agreeing)
    assert result.smallest_p == pytest.approx(stats.friedmanchisquare(*[agreeing[c] for c in agreeing]).pvalue)
    assert result.smallest_p == pytest.approx(result.friedman_p)
    if (k, n) == (3, 2):
        assert result.smallest_p == pytest.approx(0.1353, abs=1e-4)
