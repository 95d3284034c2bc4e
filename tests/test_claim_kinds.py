"""The claims' kinds (`dmlbench.verdicts.claim_kinds`): intersection-union, equivalence,
non-superiority and figure shapes, against scipy's one-sided tests and least squares by hand on
made-up per-seed numbers."""

import numpy as np
import pytest
from scipy import stats

from dmlbench.core.errors import ConfigError
from dmlbench.verdicts import claim_checks, claim_decision, claim_kinds, claims

# made-up per-seed Recall@1 (%): row → dataset → seed → value
RUNS = {
    "a": {"cub": {0: 70.1, 1: 70.5, 2: 69.8, 3: 70.3, 4: 70.0}, "cars": {0: 80.2, 1: 80.0, 2: 80.9, 3: 79.8, 4: 80.4}},
    "b": {"cub": {0: 68.0, 1: 68.4, 2: 67.9, 3: 68.2, 4: 68.1}, "cars": {0: 80.0, 1: 80.3, 2: 80.1, 3: 80.2, 4: 79.9}},
    "c": {"cub": {0: 70.0, 1: 70.6, 2: 69.9, 3: 70.1, 4: 70.2}},
}


def per_seed(row, dataset, metric):
    return RUNS.get(row, {}).get(dataset, {})


def delta_of(metric):
    return 1.0


def diffs(better, worse, dataset):
    x, y = per_seed(better, dataset, None), per_seed(worse, dataset, None)
    return np.array([x[s] - y[s] for s in sorted(x)])


def decide(claim, result, family=1, power=None):
    """The verdict as the certificate gives it, the claim alone in a family of `family` claims
    whose others are untested (p = 1: Holm multiplies this one's p by `family`)."""
    failure_p, way = claim_decision.failure(claim.get("kind", "gain"), result.get("parts") or [result])
    adjusted, adjusted_failure = min(1.0, result["p"] * family), min(1.0, failure_p * family)
    return claim_decision.verdict(claim, result, adjusted, adjusted_failure, way, power)


def test_a_sentence_over_two_datasets_is_one_intersection_union_test():
    claim = {"kind": "gain", "better": "a", "worse": "b", "dataset": ["cub", "cars"], "metric": "recall@1", "gain": 1.0}
    result = claim_kinds.evaluate(claim, per_seed, delta_of)
    p_cub = stats.ttest_rel(list(RUNS["a"]["cub"].values()), list(RUNS["b"]["cub"].values())).pvalue
    p_cars = stats.ttest_rel(list(RUNS["a"]["cars"].values()), list(RUNS["b"]["cars"].values())).pvalue
    assert p_cub < 0.05 < p_cars  # cub alone holds, cars does not
    assert result["p"] == pytest.approx(max(p_cub, p_cars), rel=1e-12) and len(result["parts"]) == 2
    assert result["gain"] == pytest.approx(diffs("a", "b", "cars").mean())  # the deciding part is shown
    assert decide(claim, result) != claims.HOLDS
    alone = {**claim, "dataset": "cub"}
    assert decide(alone, claim_kinds.evaluate(alone, per_seed, delta_of)) in claims.HOLDING


def test_equivalence_is_two_one_sided_tests_by_hand():
    claim = {"kind": "equivalent", "better": "a", "worse": "c", "dataset": "cub", "metric": "recall@1"}
    result = claim_kinds.evaluate(claim, per_seed, delta_of)
    d = diffs("a", "c", "cub")
    lower = stats.ttest_1samp(d + 1.0, 0.0, alternative="greater").pvalue  # H0: d ≤ −δ
    upper = stats.ttest_1samp(d - 1.0, 0.0, alternative="less").pvalue  # H0: d ≥ δ
    assert result["p"] == pytest.approx(max(lower, upper), rel=1e-9)
    assert decide(claim, result) == claims.EQUIVALENT
    apart = {**claim, "worse": "b"}  # a − b ≈ 2.0 points with a tight spread: outside ±1
    assert decide(apart, claim_kinds.evaluate(apart, per_seed, delta_of)) == claims.DIFFERS
    wide = {**claim, "margin": 0.05}  # too narrow a margin for five seeds: neither shown
    assert decide(wide, claim_kinds.evaluate(wide, per_seed, delta_of)) == claims.UNDERPOWERED


def test_no_gain_is_a_one_sided_non_superiority_test():
    claim = {"kind": "no_gain", "better": "c", "worse": "a", "dataset": "cub", "metric": "recall@1"}
    result = claim_kinds.evaluate(claim, per_seed, delta_of)
    expected = stats.ttest_1samp(diffs("c", "a", "cub") - 1.0, 0.0, alternative="less").pvalue
    assert result["p"] == pytest.approx(expected, rel=1e-9)
    assert decide(claim, result) == claims.HOLDS
    gaining = {**claim, "better": "a", "worse": "b"}  # a gains 2 points over b: the claim is refuted
    assert decide(gaining, claim_kinds.evaluate(gaining, per_seed, delta_of)) == claims.REVERSED


SWEEP = {
    "m@1": {0: 60.0, 1: 60.4, 2: 59.8},
    "m@2": {0: 61.1, 1: 61.5, 2: 60.8},
    "m@3": {0: 62.8, 1: 62.6, 2: 62.7},
    "m@4": {0: 61.0, 1: 61.3, 2: 60.8},
}


def sweep_seed(row, dataset, metric):
    return SWEEP.get(row, {})


def test_a_trend_is_least_squares_over_the_settings_ranks():
    claim = {"kind": "increasing", "method": "m", "variants": ["1", "2", "3"], "dataset": "cub", "metric": "recall@1"}
    result = claim_kinds.evaluate(claim, sweep_seed, delta_of)
    x = np.repeat([0.0, 1.0, 2.0], 3)
    y = np.array([v for r in ("m@1", "m@2", "m@3") for v in SWEEP[r].values()])
    sxx = ((x - x.mean()) ** 2).sum()
    slope = ((x - x.mean()) * (y - y.mean())).sum() / sxx
    residual = y - (y.mean() + slope * (x - x.mean()))
    se = np.sqrt((residual**2).sum() / (len(x) - 2) / sxx)
    p = 2 * stats.t.sf(abs(slope / se), len(x) - 2)
    assert result["gain"] == pytest.approx(2 * slope) and result["se"] == pytest.approx(2 * se)
    assert result["p"] == pytest.approx(p, rel=1e-9) and result["df"] == len(x) - 2
    assert decide(claim, result) == claims.HOLDS
    falling = {**claim, "kind": "decreasing"}
    assert decide(falling, claim_kinds.evaluate(falling, sweep_seed, delta_of)) == claims.REVERSED


def test_a_best_setting_beats_every_other_one_and_a_plateau_is_equivalence_after_it():
    peak = {
        "kind": "peak",
        "method": "m",
        "variants": ["1", "2", "3", "4"],
        "at": "3",
        "dataset": "cub",
        "metric": "recall@1",
    }
    result = claim_kinds.evaluate(peak, sweep_seed, delta_of)
    assert len(result["parts"]) == 3 and decide(peak, result) == claims.HOLDS
    worst = max(
        stats.ttest_rel(list(SWEEP["m@3"].values()), list(SWEEP[r].values())).pvalue for r in ("m@1", "m@2", "m@4")
    )
    assert result["p"] == pytest.approx(worst, rel=1e-12)
    wrong = {**peak, "at": "2"}  # 2 is beaten by 3 (paired p 0.023), but one part of three
    beaten = stats.ttest_rel(list(SWEEP["m@2"].values()), list(SWEEP["m@3"].values())).pvalue
    failure_p, way = claim_decision.failure("peak", claim_kinds.evaluate(wrong, sweep_seed, delta_of)["parts"])
    assert failure_p == pytest.approx(3 * beaten) and way == claims.REVERSED  # Bonferroni over the parts
    assert decide(wrong, claim_kinds.evaluate(wrong, sweep_seed, delta_of), power=0.9) == claims.NOT_SIGNIFICANT
    two = {**wrong, "variants": ["2", "3"]}  # "2 beats 3" alone: the part is the claim
    assert decide(two, claim_kinds.evaluate(two, sweep_seed, delta_of)) == claims.REVERSED
    plateau = {
        "kind": "plateau",
        "method": "m",
        "variants": ["1", "2", "3", "4"],
        "at": "2",
        "dataset": "cub",
        "metric": "recall@1",
        "margin": 3.0,
    }  # 3 and 4 within ±3 points of 2
    result = claim_kinds.evaluate(plateau, sweep_seed, delta_of)
    assert len(result["parts"]) == 2 and decide(plateau, result) == claims.EQUIVALENT
    narrow = {**plateau, "at": "3", "margin": 0.5}  # 4 falls 1.67 points below 3 (one part)
    assert decide(narrow, claim_kinds.evaluate(narrow, sweep_seed, delta_of)) == claims.DIFFERS


@pytest.mark.parametrize(
    "claim, said",
    [
        ({"kind": "trend"}, "kind: one of gain"),
        ({"kind": "peak", "method": "m", "variants": ["1", "2", "3"]}, "a peak claim names at, method, variants"),
        ({"kind": "increasing", "method": "m", "variants": ["1", "9", "3"]}, "variants: three or more of the sweep"),
        ({"kind": "equivalent", "better": "m", "worse": "n", "margin": -1}, "margin: δ of an equivalence"),
    ],
)
def test_a_claim_of_the_wrong_shape_is_refused(claim, said):
    exp = {"methods": ["m", "n"], "sweep": {"1": {}, "2": {}, "3": {}}, "datasets": ["cub"]}
    with pytest.raises(ConfigError, match=said):
        claim_checks.check(claim, exp, "ms.f1.claims[0]")


def test_a_gain_over_unlike_settings_is_tested_like_for_like_without_comparing_its_size():
    claim = {"kind": "gain", "better": "a", "worse": "b", "dataset": "cub", "metric": "recall@1", "gain": 5.0}
    result = claim_kinds.evaluate(claim, per_seed, delta_of)
    assert decide(claim, result) == claims.SMALLER  # our 2.0 [1.8, 2.2] below the paper's 5.0
    unlike = {**claim, "unlike": "the paper's b at d = 512, ours at 1024"}
    assert decide(unlike, result) == claims.HOLDS


def test_a_sentence_only_partly_run_is_tested_on_its_parts_and_given_no_verdict():
    claim = {"kind": "gain", "better": "a", "worse": "b", "dataset": ["cub", "inshop"], "metric": "recall@1"}
    result = claim_kinds.evaluate(claim, per_seed, delta_of)  # no In-Shop runs
    assert (result["parts_run"], result["parts_total"]) == (1, 2)
    alone = claim_kinds.evaluate({**claim, "dataset": "cub"}, per_seed, delta_of)
    assert result["p"] == alone["p"] and result["gain"] == alone["gain"]
    entry = {**result, "kind": "gain", "verdict": claims.PARTIAL, "verdict_on_parts_run": claims.HOLDS}
    assert claim_kinds.verdict_text(entry) == "◐ partly run (1 of 2 parts run: holds)"
    assert claim_kinds.evaluate({**claim, "dataset": "inshop"}, per_seed, delta_of) == claims.NOT_RUN


@pytest.mark.parametrize("planted, expected", [(3.0, claims.HOLDS), (-3.0, claims.REVERSED)])
def test_a_claims_direction_is_its_rows_whatever_the_sign_of_the_papers_gain(planted, expected):
    """profs's 'Hard negative class mining boosts C-PROFS further': the paper's own table gives its
    smallest part as −0.9; HNCM planted 3 points above C-PROFS on every part holds, 3 below is
    reversed (the sign of `gain` once turned the claim round)."""
    from conftest import full_plan

    plan = full_plan()
    claim = next(c for c in plan.experiments["profs.t1"]["claims"] if c["id"] == "hncm-over-profs-c")
    assert claim["gain"] < 0 and claim["better"] == "c_profs_hncm"
    noise = np.random.default_rng(0).normal(0.0, 0.4, size=(2, 5))

    def planted_seeds(row, dataset, metric):
        base = 60.0 + noise[0] if row == claim["worse"] else 60.0 + planted + noise[1]
        return dict(enumerate(base.tolist()))

    result = claim_kinds.evaluate(claim, planted_seeds, delta_of)
    assert len(result["parts"]) == 9
    assert decide(claim, result, family=27) == expected


def test_a_failed_seed_of_any_part_is_counted_and_named_in_the_claims_test():
    runs = {row: {d: dict(v) for d, v in per.items()} for row, per in RUNS.items()}
    runs["b"]["cars"][3] = float("nan")  # a diverged seed of the second part's worse row
    claim = {"kind": "gain", "better": "a", "worse": "b", "dataset": ["cub", "cars"], "metric": "recall@1"}
    result = claim_kinds.evaluate(claim, lambda r, d, m: runs.get(r, {}).get(d, {}), delta_of)
    assert result["failed"] == ["b on cars seed 3"]
    cars = next(p for p in result["parts"] if p["n_better"] == 4)
    kept = [0, 1, 2, 4]
    expected = stats.ttest_rel([RUNS["a"]["cars"][s] for s in kept], [RUNS["b"]["cars"][s] for s in kept])
    assert cars["paired"] and cars["p"] == pytest.approx(expected.pvalue)
    text = claim_kinds.test_text({**result, "kind": "gain"})
    assert "1 failed seed left out (b on cars seed 3)" in text


def test_a_trend_of_too_few_points_or_without_residual_spread_is_no_test():
    def rows(values):
        return lambda row, dataset, metric: values.get(row, {})

    claim = {"kind": "increasing", "method": "m", "variants": ["1", "2", "3"], "dataset": "cub", "metric": "recall@1"}
    two = {"m@1": {0: 60.0}, "m@2": {0: 61.0}, "m@3": {0: float("nan")}}
    assert claim_kinds.evaluate(claim, rows(two), delta_of) == claims.NOT_RUN  # a setting with no finished seed
    on_a_line = {"m@1": {0: 60.0, 1: 60.0}, "m@2": {0: 61.0, 1: 61.0}, "m@3": {0: 62.0, 1: 62.0}}
    assert claim_kinds.evaluate(claim, rows(on_a_line), delta_of) == claims.NO_SPREAD
    noisy = {**on_a_line, "m@3": {0: 62.5, 1: float("nan"), 2: 61.8}}
    result = claim_kinds.evaluate(claim, rows(noisy), delta_of)
    assert result["n_better"] == 6 and result["failed"] == ["m@3 on cub seed 1"]


QUOTED = {  # numbers a paper quotes from the literature: row → dataset → metric → printed text
    "Margin": {"cub": {"recall@1": "68.9"}, "cars": {"recall@1": "79.6"}},
    "ABIER": {"cub": {"recall@1": "67.5"}, "cars": {"recall@1": "80.1"}},
}


def test_a_gain_over_the_best_quoted_row_is_a_one_sample_test_against_its_number():
    """'beats the state of the art': on each part our seeds against the highest quoted number there
    (Margin on cub, ABIER on cars), scipy's one-sample t; a failed seed is left out and named."""
    runs = {"a": {d: dict(v) for d, v in RUNS["a"].items()}}
    runs["a"]["cars"][2] = float("nan")
    claim = {"kind": "gain", "better": "a", "worse": claim_kinds.BEST_QUOTED, "dataset": ["cub", "cars"]}
    claim["metric"] = "recall@1"
    result = claim_kinds.evaluate(claim, lambda r, d, m: runs.get(r, {}).get(d, {}), delta_of, QUOTED)
    cub, cars = result["parts"]
    assert (cub["quoted"], cars["quoted"]) == ({"row": "Margin", "number": 68.9}, {"row": "ABIER", "number": 80.1})
    for part, dataset, number in ((cub, "cub", 68.9), (cars, "cars", 80.1)):
        ours = [v for v in runs["a"][dataset].values() if v == v]
        expected = stats.ttest_1samp(ours, number)
        interval = expected.confidence_interval(0.95)
        assert part["gain"] == pytest.approx(np.mean(ours) - number)
        assert part["p"] == pytest.approx(expected.pvalue) and part["df"] == len(ours) - 1
        assert (part["low"], part["high"]) == pytest.approx((interval.low - number, interval.high - number))
    assert result["failed"] == ["a on cars seed 2"] and cars["n_better"] == 4
    text = claim_kinds.test_text({**result, "kind": "gain"})
    assert text.startswith("one-sample t against the quoted") and "1 failed seed left out (a on cars seed 2)" in text
    named = claim_kinds.evaluate({**claim, "worse": "ABIER", "dataset": "cub"}, per_seed, delta_of, QUOTED)
    assert named["quoted"] == {"row": "ABIER", "number": 67.5}


def test_a_claim_against_a_quoted_row_is_checked_against_the_quoted_table():
    exp = {"methods": ["a", "b"], "datasets": ["cub", "cars"], "table": {"metrics": ["recall@1", "recall@2"]}}
    exp["quoted"] = QUOTED
    claim = {"id": "x", "text": "t", "source": "s", "better": "a", "worse": "best quoted", "metric": "recall@1"}
    claim_checks.check_experiment({**exp, "claims": [{**claim, "dataset": ["cub", "cars"]}]}, "ms.t2")
    for bad, said in (
        ({"metric": "recall@2", "dataset": "cub"}, "no number on cub recall@2; name a quoted row printed there"),
        ({"better": "Margin", "dataset": "cub"}, "better: 'Margin' is no row the experiment runs"),
        ({"kind": "equivalent", "dataset": "cub"}, "only a gain claim of an experiment without a sweep"),
    ):
        with pytest.raises(ConfigError, match=said):
            claim_checks.check_experiment({**exp, "claims": [{**claim, **bad}]}, "ms.t2")
    swept = {**exp, "sweep": {"B80": {}}, "claims": [{**claim, "dataset": "cub"}]}
    with pytest.raises(ConfigError, match="only a gain claim of an experiment without a sweep"):
        claim_checks.check_experiment(swept, "dro.f1")
    both = {**exp, "methods": ["a", "b", "Margin"], "claims": [{**claim, "worse": "Margin", "dataset": "cub"}]}
    with pytest.raises(ConfigError, match="names both a row the experiment runs and a quoted row"):
        claim_checks.check_experiment(both, "ms.t2")


def test_a_one_part_claim_against_a_quoted_row_is_sized_against_its_tables_gain():
    """The sentence gives no number (gain: null); the table's gain over the quoted row is the paper's
    (68.9 − 63.6 = 5.3 on cub): our +2.0 [1.8, 2.2] is "holds, smaller" than it."""
    runs = {"a": {"cub": {s: 63.6 + 2.0 + d for s, d in enumerate([0.1, -0.1, 0.2, -0.2, 0.0])}}}
    claim = {"kind": "gain", "better": "a", "worse": "best quoted", "dataset": "cub", "metric": "recall@1"}
    quoted = {"Margin": {"cub": {"recall@1": "63.6"}}}
    result = claim_kinds.evaluate(claim, lambda r, d, m: runs.get(r, {}).get(d, {}), delta_of, quoted)
    result["parts"][0]["gain_paper"] = 5.3  # as claim_family sets it on each part from the table
    assert decide(claim, result) == claims.SMALLER
