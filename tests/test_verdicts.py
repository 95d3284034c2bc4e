"""Verdicts on the paper numbers, the claims' tests, Holm's correction and the certificate
(`dmlbench.verdicts`), against scipy and hand computations on made-up per-seed numbers."""

import json
import math
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError
from dmlbench.fair.intervals import mean_interval
from dmlbench.verdicts import claim_decision, claim_kinds, claims, numbers, power

import processes
from conftest import CONFIG_DIR, REPO, full_plan, python_env, snakemake_command
from dmlbench.config.jobs import of as jobs_of

T_975_4 = 2.7764451051977987  # Student t, 0.975 quantile, 4 degrees of freedom (tables: 2.776)

# made-up per-seed Recall@1 (%), seed → value
HOLDS_BETTER = {0: 70.1, 1: 70.5, 2: 69.8, 3: 70.3, 4: 70.0}
HOLDS_WORSE = {0: 68.0, 1: 68.4, 2: 67.9, 3: 68.2, 4: 68.1}  # differences 2.1 2.1 1.9 2.1 1.9
REVERSED_BETTER = {0: 60.0, 1: 60.2, 2: 59.9}
REVERSED_WORSE = {0: 61.0, 1: 61.1, 2: 61.2}  # differences -1.0 -0.9 -1.3
FLAT_BETTER = {0: 65.0, 1: 66.0, 2: 64.0}
FLAT_WORSE = {5: 65.5, 6: 64.5, 7: 65.0}  # other seeds: Welch, equal means


def test_interval_by_hand_and_by_scipy():
    x = [1.0, 2.0, 3.0, 4.0, 5.0]  # mean 3, s² = 10/4, s/√n = √0.5
    mean, half = mean_interval(x)
    assert mean == 3.0
    assert half == pytest.approx(T_975_4 * math.sqrt(0.5))  # 1.9632
    low, high = stats.t.interval(0.95, 4, loc=3.0, scale=stats.sem(x))
    assert (mean - half, mean + half) == pytest.approx((low, high))


def tost_by_scipy(x, paper, margin) -> bool:
    """Equivalence within ±margin by two one-sided t-tests at 5 % each (scipy's one-sample t-test)."""
    above_low = stats.ttest_1samp(x, paper - margin, alternative="greater").pvalue
    below_high = stats.ttest_1samp(x, paper + margin, alternative="less").pvalue
    return max(above_low, below_high) < 0.05


def test_number_verdicts_by_hand_and_by_scipys_one_sided_tests():
    x = [1.0, 2.0, 3.0, 4.0, 5.0]  # mean 3, s/√n = √0.5; t(0.95, 4) = 2.1318, t(0.975, 4) = 2.7764
    t_95_4 = 2.131846786
    assert numbers.judge(x, 3.0, 1.6).verdict == numbers.REPRODUCED  # 90 %: 3 ± 1.5075, inside ±1.6
    assert tost_by_scipy(x, 3.0, 1.6) and not tost_by_scipy(x, 3.0, 1.5)
    assert numbers.judge(x, 3.0, 1.5).verdict == numbers.INCONCLUSIVE  # 1.5075 > 1.5
    margin = numbers.DEFAULT_BAND + numbers.printed_precision("5.9")  # 1 + 0.05
    assert margin == pytest.approx(1.05)
    assert numbers.judge(x, 6.1, margin).verdict == numbers.BELOW  # 95 %: −3.1 + 1.9632 = −1.137 < −1.05
    assert numbers.judge(x, -0.1, margin).verdict == numbers.ABOVE  # 3.1 − 1.9632 = 1.137 > 1.05
    assert numbers.judge(x, 5.9, margin).verdict == numbers.INCONCLUSIVE  # −2.9 ± 1.9632 straddles −1.05
    for paper in (2.2, 2.5, 3.0, 3.4, 3.6):  # the verdict "reproduced" is scipy's TOST
        assert (numbers.judge(x, paper, 1.6).verdict == numbers.REPRODUCED) == tost_by_scipy(x, paper, 1.6)
    assert 1.6 > t_95_4 * math.sqrt(0.5) > 1.5
    # the seeds that would decide 3 ± … against 3.0 with δ = 1.05 with probability 0.8, at the 90 %
    # upper confidence bound of σ (s √(4 / χ²(0.1, 4)) = 3.066): 2,000 simulated verdicts each
    needed = numbers.judge(x, 3.0, 1.05).seeds_needed
    upper = math.sqrt(2.5) * math.sqrt(4 / stats.chi2.ppf(0.1, 4))
    rng = np.random.default_rng(0)

    def decided(m):  # through numbers.decision: judge's verdict, without its own seeds_needed search
        draws = rng.normal(3.0, upper, (2000, m))
        assert numbers.judge(draws[0], 3.0, 1.05).verdict == numbers.decision(
            draws[0].mean() - 3.0, draws[0].std(ddof=1), m, 1.05
        )
        return np.mean([numbers.decision(x.mean() - 3.0, x.std(ddof=1), m, 1.05) == "reproduced" for x in draws])

    assert decided(needed) >= 0.78 and decided(needed - 8) < 0.78  # not the plug-in's 9


def test_few_seeds_nan_and_zero_spread_say_what_they_are():
    wide = numbers.judge([58.0, 64.0], 66.85, 1.0 + numbers.printed_precision("66.85"))
    assert wide.verdict == numbers.INCONCLUSIVE and wide.n == 2  # was "reproduced": two seeds decide nothing
    tight = numbers.judge([64.4, 64.5, 64.5, 64.6, 64.5], 66.85, 1.005)  # 2.35 below, sd 0.07
    assert tight.verdict == numbers.BELOW
    assert numbers.judge([66.0], 66.85, 1.005).verdict == numbers.INCONCLUSIVE
    assert numbers.judge([], 66.85, 1.005).verdict == numbers.NOT_RUN
    failed = numbers.judge([66.0, float("nan"), 66.2], 66.85, 1.005)
    assert failed.verdict == numbers.FAILED and failed.failed == 1 and failed.n == 2
    flat = numbers.judge([65.0, 65.0, 65.0], 65.5, 1.005)
    assert flat.verdict == numbers.REPRODUCED and flat.zero_spread
    at_margin = numbers.judge([65.0, 65.0, 65.0], 66.0, 1.0)  # no spread, the gap δ exactly: undecidable
    assert at_margin.verdict == numbers.INCONCLUSIVE and at_margin.seeds_needed is None
    from dmlbench.verdicts import certificate_text

    assert "no number of seeds decides it" in certificate_text._why(dict(at_margin.__dict__, verdict=at_margin.verdict))
    assert numbers.printed_precision("66.85") == pytest.approx(0.005)
    assert numbers.printed_precision("97") == 0.5
    from dmlbench.config import margins

    margin = margins.of(
        CONFIG_DIR, {"margin": {"band": {"nmi": 0.5}, "source": "s"}, "table": {"metrics": ["nmi", "f1"]}}
    )
    assert numbers.band_of(margin, "nmi") == 0.5
    assert numbers.band_of(margin, "f1") == margins.default(CONFIG_DIR)["band"] and margin["source"] == "s"


def decide(result, paper_gain=None, family=1, power=None, delta=1.0):
    """A one-part gain claim's verdict as the certificate gives it, in a family of `family` claims
    whose others are untested (Holm multiplies its p-values by `family`)."""
    part = {**result.__dict__, "delta": delta, "gain_paper": paper_gain}
    failure_p, way = claim_decision.failure("gain", [part])
    claim = {"kind": "gain", "gain": paper_gain}
    return claim_decision.verdict(claim, part, min(1.0, result.p * family), min(1.0, failure_p * family), way, power)


def test_a_claim_not_significant_is_underpowered_or_not_by_its_power_before_the_data():
    noisy_better = {0: 66.0, 1: 64.0, 2: 67.5, 3: 63.0, 4: 65.5}
    noisy_worse = {0: 65.0, 1: 64.5, 2: 66.0, 3: 63.5, 4: 64.8}
    result = claims.test(noisy_better, noisy_worse)
    assert result.p > 0.05 and result.gain > 0
    assert decide(result, 1.18, family=20, power=0.3) == claims.UNDERPOWERED
    assert decide(result, 1.18, family=20, power=0.85) == claims.NOT_SIGNIFICANT  # whatever the data say
    assert decide(result, None, family=20, power=None) == claims.UNDERPOWERED  # no power known: no refutation
    assert claims.NOT_SIGNIFICANT not in claims.FAILING  # a test that missed is not listed as failing


def test_power_before_the_data_is_statsmodels_and_a_simulations():
    """A paired gain part: statsmodels' one-sample power of the differences (σ√2 each) on the
    claim's side; an equivalence part: its lower bound never above 5,000 simulated TOSTs."""
    from statsmodels.stats.power import TTestPower

    sd, n, alpha, gain = 0.4, 5, 0.05 / 20, 1.2
    se, df = power.pair_design(n, n, True, sd)
    assert (se, df) == pytest.approx((sd * math.sqrt(2 / n), n - 1))
    expected = TTestPower().power(gain / (sd * math.sqrt(2)), n, alpha / 2, alternative="larger")
    assert power.part("gain", gain, se, df, 1.0, alpha) == pytest.approx(expected, rel=1e-6)
    rng = np.random.default_rng(0)
    differences = rng.normal(0.2, sd * math.sqrt(2), (5_000, 8))
    se_hat = differences.std(axis=1, ddof=1) / math.sqrt(8)
    t_crit = stats.t.ppf(0.95, 7)
    passed = ((differences.mean(axis=1) + 1.0) / se_hat > t_crit) & (
        (differences.mean(axis=1) - 1.0) / se_hat < -t_crit
    )
    bound = power.part("equivalent", 0.2, *power.pair_design(8, 8, True, sd), 1.0, 0.05)
    assert bound <= passed.mean() + 0.01 and bound > 0.9 * passed.mean()
    claim = {"kind": "gain", "better": "a", "worse": "b", "dataset": ["cub", "cars"], "metric": "recall@1"}
    paper = {("a", "cub"): 61.0, ("b", "cub"): 60.0, ("a", "cars"): 80.0, ("b", "cars"): 78.0}
    both = power.claim(claim, lambda r, d, m: paper[r, d], lambda r, d: {0, 1, 2, 3, 4}, lambda m: 1.0, alpha)
    one = [power.part("gain", g, se, df, 1.0, alpha) for g in (1.0, 2.0)]
    assert both == pytest.approx(one[0] * one[1])  # every part must hold: the product


def test_a_gain_reproduced_is_our_90_percent_interval_inside_the_papers_gain_plus_minus_delta():
    """Differences 0.5, 0.2, 0.4, 0.1, 0.3 (mean 0.3, se 0.0707): not significant at a family of 40,
    the 90 % interval 0.3 ± 2.1318·0.0707 = [0.149, 0.451] inside the paper's 0.4 ± 1."""
    better = {0: 60.5, 1: 60.2, 2: 60.4, 3: 60.1, 4: 60.3}
    worse = {s: 60.0 for s in better}
    result = claims.test(better, worse)
    assert result.se == pytest.approx(math.sqrt(0.025) / math.sqrt(5)) and result.p * 40 > 0.05
    assert decide(result, 0.4, family=40) == claims.GAIN_REPRODUCED
    assert decide(result, 0.4, family=40, delta=0.2) == claims.UNDERPOWERED  # 0.149 below 0.4 − 0.2
    assert decide(result, 3.0, family=40) == claims.GAIN_NOT_REPRODUCED  # 95 % interval wholly below 3 − 1
    assert decide(result, 0.4, family=1) == claims.HOLDS  # significant alone: the sentence holds
    assert decide(result, 3.0, family=1) == claims.SMALLER  # significant, below the paper's gain


def test_an_average_on_the_papers_gain_does_not_hide_a_part_far_below_its_own():
    """An independent review's case (ms.t1's four-part claim): three parts on their paper gains, the
    fourth 3 points below its paper gain of 2.42 and negative. The gain averaged over the parts lies
    inside the paper's average ± 1, yet that part's own 95 % interval lies wholly below 2.42 − 1:
    not "gain reproduced". Moved onto its paper gain, the claim is."""
    rng = np.random.default_rng(7)
    paper = [1.5, 2.42, 0.8, 1.1]
    noise = [rng.normal(0.0, 0.3, 5) for _ in paper]

    def parts(far: bool) -> list[dict]:
        out = []
        for k, gain in enumerate(paper):
            d = noise[k] - noise[k].mean() + (-0.634 if far and k == 1 else gain)
            part = claims.test({s: 60.0 + d[s] for s in range(5)}, {s: 60.0 for s in range(5)}).__dict__
            out.append(part | {"delta": 1.0, "gain_paper": gain, "differences": dict(enumerate(d))})
        return out

    far = parts(far=True)
    assert abs(np.mean([p["gain"] for p in far]) - np.mean(paper)) < 1.0  # the average alone would pass
    assert far[1]["gain"] + stats.t.ppf(0.975, 4) * far[1]["se"] < 2.42 - 1.0  # that part: wholly below
    assert not claim_decision.gain_reproduced(far)
    assert claim_decision.gain_reproduced(parts(far=False))


def test_one_part_of_six_at_raw_p_0_047_reverses_no_claim():
    """The issue's adversarial case: five parts flat, one part below zero at two-sided p 0.047.
    Its failure p is 6 × 0.047 (Bonferroni over the parts) before Holm: not reversed."""
    rng = np.random.default_rng(3)
    parts = []
    for k in range(6):
        d = rng.normal(0.0, 0.3, 5)
        if k == 0:  # a part whose mean difference gives p 0.047 exactly
            d = d - d.mean()
            d = d / (d.std(ddof=1) / math.sqrt(5)) * 1.0
            d = d - stats.t.isf(0.047 / 2, 4)
        better = {s: 60.0 + d[s] for s in range(5)}
        part = claims.test(better, {s: 60.0 for s in range(5)}).__dict__ | {"delta": 1.0, "gain_paper": None}
        parts.append(part)
    assert parts[0]["p"] == pytest.approx(0.047) and parts[0]["gain"] < 0
    failure_p, way = claim_decision.failure("gain", parts)
    assert failure_p == pytest.approx(6 * 0.047) and way == claims.REVERSED
    result = {**max(parts, key=lambda p: p["p"]), "parts": parts}
    assert claim_decision.verdict({"kind": "gain"}, result, 1.0, failure_p, way, 0.2) == claims.UNDERPOWERED


def test_reversed_and_not_significant_claims_by_hand():
    reversed_ = claims.test(REVERSED_BETTER, REVERSED_WORSE)
    # differences −1.0 −0.9 −1.3: mean −1.0667, sd √(0.08667 / 2) = 0.20817, t = −8.875 (2 df)
    t = (-3.2 / 3) / (math.sqrt((0.2 / 3) ** 2 + (0.5 / 3) ** 2 + (0.7 / 3) ** 2) / math.sqrt(2) / math.sqrt(3))
    assert t == pytest.approx(-8.875, abs=1e-3)
    assert reversed_.gain == pytest.approx(-3.2 / 3)
    assert reversed_.p == pytest.approx(2 * stats.t.sf(abs(t), 2))  # 0.0125
    flat = claims.test(FLAT_BETTER, FLAT_WORSE)
    assert not flat.paired and flat.gain == pytest.approx(0.0)
    welch = stats.ttest_ind(list(FLAT_BETTER.values()), list(FLAT_WORSE.values()), equal_var=False)
    assert flat.p == pytest.approx(welch.pvalue) and flat.p == pytest.approx(1.0)
    holding = claims.test(HOLDS_BETTER, HOLDS_WORSE)
    adjusted = claims.holm([holding.p, reversed_.p, flat.p])
    assert adjusted[1] == pytest.approx(2 * reversed_.p)  # second smallest of three: × 2
    assert decide(reversed_, None, family=2) == claims.REVERSED  # 2 × 0.0125 < 0.05
    assert decide(reversed_, None, family=5) == claims.UNDERPOWERED  # 5 × 0.0125: not shown at the family's rate
    assert decide(flat, None, power=0.9) == claims.NOT_SIGNIFICANT
    assert decide(holding, 2.0, family=3) == claims.HOLDS
    assert claims.test({0: 1.0}, HOLDS_WORSE) == claims.FEW_SEEDS
    assert claims.test({}, HOLDS_WORSE) == claims.NOT_RUN


def test_a_failed_seed_is_left_out_of_the_pairing_and_named():
    """A NaN seed of one row: the rows stay paired on the seeds both finished (scipy's ttest_rel on
    those), the seed is named, and the test does not fall back to Welch's."""
    better = {**HOLDS_BETTER, 2: float("nan")}
    result = claims.test(better, HOLDS_WORSE)
    kept = [0, 1, 3, 4]
    expected = stats.ttest_rel([HOLDS_BETTER[s] for s in kept], [HOLDS_WORSE[s] for s in kept])
    assert result.paired and (result.n_better, result.n_worse) == (4, 4)
    assert result.p == pytest.approx(expected.pvalue) and result.failed_better == (2,) and result.failed_worse == ()


def test_fewer_than_three_seeds_or_no_spread_is_no_test():
    two = {0: 70.0, 1: 71.0}
    assert claims.test(two, {0: 68.0, 1: 69.5}) == claims.FEW_SEEDS  # two seeds: a number needs three too
    three_failed_one = {0: 70.0, 1: 71.0, 2: float("nan")}
    assert claims.test(three_failed_one, {0: 68.0, 1: 69.5, 2: 68.5}) == claims.FEW_SEEDS  # two finished both
    equal_differences = claims.test({0: 70.0, 1: 71.0, 2: 72.0}, {0: 68.0, 1: 69.0, 2: 70.0})
    assert equal_differences == claims.NO_SPREAD  # scipy would give p NaN (or 0 for 2.0000001)
    assert claims.test({0: 70.0, 1: 70.0, 2: 70.0}, {5: 68.0, 6: 68.0, 7: 68.0}) == claims.NO_SPREAD
    one_row_spread = claims.test({0: 70.0, 1: 70.0, 2: 70.0}, {5: 68.0, 6: 69.0, 7: 68.5})
    assert isinstance(one_row_spread, claims.ClaimTest) and not one_row_spread.paired


def test_holm_against_a_worked_example():
    # p = 0.01, 0.04, 0.03, 0.005 (m = 4). Sorted: 0.005 × 4 = 0.02; 0.01 × 3 = 0.03;
    # 0.03 × 2 = 0.06; 0.04 × 1 = 0.04, raised to the running maximum 0.06.
    assert claims.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert claims.holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert claims.holm([]) == []


def _catalogue_with(tmp_path, old: str, new: str):
    shutil.copytree(CONFIG_DIR, tmp_path / "config")
    path = tmp_path / "config" / "experiments" / "ms.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return tmp_path / "config"


def _first_claim_of_ms_t1_with(tmp_path, key: str, value: str):
    """A copy of the catalogue where ms.t1's first claim has `key: value`."""
    shutil.copytree(CONFIG_DIR, tmp_path / "config")
    path = tmp_path / "config" / "experiments" / "ms.yaml"
    text = path.read_text()
    start = text.index("\n  claims:", text.index("\nms.t1:"))
    end = text.index("\n    - id:", text.index("\n    - id:", start) + 1)  # the second claim
    claim = re.sub(rf"(\n    (?:- |  ){key}: )[^\n]+", rf"\g<1>{value}", text[start:end], count=1)
    assert claim != text[start:end]
    path.write_text(text[:start] + claim + text[end:])
    return tmp_path / "config"


@pytest.mark.parametrize(
    "key, value, said",
    [
        ("better", "msx", "'msx' is no row the experiment runs"),
        ("worse", "binomial", "better and worse are the same row"),
        ("dataset", "vehicleid", "'vehicleid' is not run by the experiment"),
        ("metric", "recall@3", "'recall@3' is not in the experiment's table"),
        ("gain", ".nan", "gain: a finite number (points, the paper's better − worse) or null, not nan"),
        ("gain", "-.inf", "gain: a finite number (points, the paper's better − worse) or null, not -inf"),
    ],
)
def test_a_claim_naming_what_the_experiment_does_not_run_is_refused(tmp_path, key, value, said):
    if key == "worse":  # the first claim's better row, as its worse row too
        value = Plan.load(CONFIG_DIR, {"preset": "demo"}).experiments["ms.t1"]["claims"][0]["better"]
        said = f"better and worse are the same row '{value}'"
    config = _first_claim_of_ms_t1_with(tmp_path, key, value)
    with pytest.raises(ConfigError, match=re.escape("ms.yaml: experiment ms.t1.claims[0]") + ".*" + re.escape(said)):
        Plan.load(config, {"preset": "demo"})


def test_a_claim_id_twice_in_a_paper_is_refused(tmp_path):
    first = Plan.load(CONFIG_DIR, {"preset": "demo"}).experiments["ms.t1"]["claims"]
    config = _first_claim_of_ms_t1_with(tmp_path, "id", first[1]["id"])
    with pytest.raises(ConfigError, match=f"ms.yaml: experiment ms.t1.claims: id '{first[1]['id']}'"):
        Plan.load(config, {"preset": "demo"})


def test_every_claim_of_the_catalogue_names_rows_datasets_and_metrics_of_its_experiment():
    plan = full_plan()  # loading checks them (the test above: it can fail)
    found = [c for exp in plan.experiments.values() for c in exp.get("claims") or []]
    assert found, "the catalogue has claims"
    for key, exp in plan.experiments.items():
        for claim in exp.get("claims") or []:
            datasets, metrics = claim_kinds.listed(claim["dataset"]), claim_kinds.listed(claim["metric"])
            assert set(datasets) <= set(exp["datasets"]) and set(metrics) <= set(exp["table"]["metrics"])


def test_a_margin_must_be_points_of_a_table_metric_with_its_source(tmp_path):
    config = _catalogue_with(tmp_path, "ms.t1:\n", "ms.t1:\n  margin: {band: {nmi: 1.0}, source: spread}\n")
    with pytest.raises(ConfigError, match="ms.yaml: experiment ms.t1.margin.band: 'nmi' is not in the table"):
        Plan.load(config, {"preset": "demo"})
    config = _catalogue_with(tmp_path / "again", "ms.t1:\n", "ms.t1:\n  margin: {band: 0.5}\n")
    with pytest.raises(ConfigError, match="ms.t1.margin: a mapping with `band` .* and `source`"):
        Plan.load(config, {"preset": "demo"})


def verdict_cli(workdir, config: dict, *more: str) -> subprocess.CompletedProcess:
    return processes.run(
        [
            sys.executable,
            "-m",
            "dmlbench",
            "verdict",
            "ms",
            "--config-dir",
            str(CONFIG_DIR),
            "--config",
            json.dumps(config),
            *more,
        ],
        timeout=300,
        capture_output=True,
        text=True,
        env=dict(python_env(), PYTHONPATH=str(REPO)),
        cwd=workdir,
    )


def test_the_demo_page_shows_intervals_verdicts_claims_and_the_certificate(tmp_path, monkeypatch):
    """ms.t1 of the demo (Binomial and RAW+VTHM on cub, three seeds) on made-up numbers: RAW+VTHM
    2 points above Binomial on every seed; the page, the certificate and the landing line agree."""
    from test_report import fake_run

    from dmlbench.config import verdict_spec
    from dmlbench.report import aggregate, index
    from dmlbench.verdicts import certificate, certificate_text

    plan = Plan.load(CONFIG_DIR, {"preset": "demo"})
    value = {"binomial": [0.600, 0.604, 0.602], "ms": [0.620, 0.625, 0.621]}
    files = [fake_run(tmp_path, run, {"recall@1": value[run.method][run.seed]}) for run in plan.runs("ms.t1")]
    folder = tmp_path / "reports/demo/ms.t1"
    aggregate.aggregate(jobs_of(plan).aggregate_spec("ms.t1"), files, folder)
    monkeypatch.chdir(tmp_path)
    cert = certificate.build(verdict_spec.certificate_spec(plan, "ms"), "abc")
    (tmp_path / "reports/demo/ms").mkdir()
    (tmp_path / "reports/demo/ms/certificate.json").write_text(json.dumps(cert))
    index.write(plan, tmp_path / "reports/demo/index.html")
    page = (tmp_path / "reports/demo/index.html").read_text()
    mean, half = mean_interval([62.0, 62.5, 62.1])
    assert f"{mean:.2f} ± {half:.2f} <span class='n'>n=3</span>" in page
    binomial = next(
        x for e in cert["experiments"] for x in e["numbers"] if (x["row"], x["dataset"]) == ("binomial", "cub")
    )
    assert binomial["verdict"] == numbers.BELOW  # 60.2 ± 0.5 against the paper's 64.45
    assert f"{60.2 - 64.45:+.2f} {numbers.SYMBOLS[numbers.BELOW]}</td>" in page and "class='legend'" in page
    # each row of the paper's table opens with its verdicts counted, the worst colouring the cell
    binomial_row = re.search(r"<tr><td class='row-verdict ([^']*)'[^>]*>([^<]*)</td><th class='row'>Binomial", page)
    assert binomial_row and binomial_row.group(1) == "v-below", page[:0]
    assert f"{numbers.SYMBOLS[numbers.BELOW]}1" in binomial_row.group(2)
    assert "<th rowspan='2' class='row-verdict'>verdict</th>" in page
    assert "Operating characteristics" in page and "power before the data" in page  # the error rates, the power
    claim = next(c for e in cert["experiments"] for c in e["claims"] if c["id"] == "ms-over-binomial")
    # one sentence over four datasets, of which the demo runs CUB: tested there, no verdict on the claim
    assert claim["dataset"] == ["cub", "cars", "sop", "inshop"] and (claim["parts_run"], claim["parts_total"]) == (1, 4)
    assert claim["paired"] and claim["gain"] == pytest.approx(62.2 - 60.2)  # means 62.2 and 60.2
    # differences 2.0, 2.1, 1.9: mean 2.0, sd 0.1; interval 2.0 ± 4.303 · 0.1 / √3 = [1.752, 2.248]
    assert (claim["low"], claim["high"]) == pytest.approx((1.752, 2.248), abs=1e-3)
    paper_gain = claim["gain_paper"]
    expected = claims.HOLDS if 1.752 <= paper_gain <= 2.248 else claims.SMALLER if paper_gain > 2.248 else claims.LARGER
    # the Holm family is every claim of ms in the catalogue, the untested ones at p = 1: the only
    # tested claim's adjusted p is m p
    family = sum(len(exp.get("claims") or []) for key, exp in plan.experiments.items() if key.startswith("ms."))
    assert cert["claims"]["total"] == family > 1
    assert claim["p_holm"] == pytest.approx(min(1.0, family * claim["p"])) and claim["p_holm"] < 0.05
    assert claim["verdict"] == claims.PARTIAL and claim["verdict_on_parts_run"] == expected
    line = certificate_text.headline(cert)
    assert line.startswith("ms: 0 of ") and line in page
    not_reproduced = cert["numbers"][numbers.BELOW] + cert["numbers"][numbers.ABOVE]
    assert not_reproduced == 2 and "numbers reproduced (2 not reproduced)" in line  # binomial's two numbers
    landing = (tmp_path / "reports/index.html").read_text()
    assert line in landing
    # the scorecard opens the landing page and the preset's report: ms's two numbers below in red
    for text in (landing, page):
        card = re.search(r"<table class='scorecard'>.*?</table>", text, re.S).group(0)
        ms_row = re.search(r"<th class='row'>ms</th>(.*?)</tr>", card).group(1)
        cells = re.findall(r"<td[^>]*>(\d+)</td>", ms_row)
        assert cells[2] == "2" and "v-below'>2</td>" in ms_row  # not reproduced
    from dmlbench.verdicts import terminal

    plain, coloured = terminal.summary(cert), terminal.summary(cert, colour=True)
    below = [row for row in plain.splitlines() if row.startswith(f"{numbers.SYMBOLS[numbers.BELOW]} below")]
    assert len(below) == 2 and any("ms.t1 binomial cub recall@1: paper 64.45" in row for row in below)
    assert f"{terminal.RED}{below[0]}{terminal.RESET}" in coloured and "\033[" not in plain


def test_a_verdict_before_the_results_names_what_is_missing(tmp_path):
    result = verdict_cli(tmp_path, {"preset": "smoke", "experiments": ["ms.t1"]})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "reports/smoke/ms.t1/runs.csv is missing" in result.stderr and "run the pipeline first" in result.stderr


@pytest.mark.slow
def test_the_smoke_runs_certificate_from_the_pipeline_and_from_the_command_line_agree(tmp_path):
    from dmlbench.verdicts import certificate_text

    result = processes.run(
        snakemake_command(
            tmp_path,
            "reports/smoke/ms/certificate.md",
            "--cores",
            "2",
            "--config",
            "preset=smoke",
            "experiments=[ms.t1]",
        ),
        timeout=1800,
        capture_output=True,
        text=True,
        env=python_env(),
    )
    assert result.returncode == 0, result.stderr[-4000:]
    written = (tmp_path / "reports/smoke/ms/certificate.md").read_text()
    cert = json.loads((tmp_path / "reports/smoke/ms/certificate.json").read_text())
    printed = verdict_cli(tmp_path, {"preset": "smoke", "experiments": ["ms.t1"]}, "--all")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == written
    compact = verdict_cli(tmp_path, {"preset": "smoke", "experiments": ["ms.t1"]})
    assert (
        compact.returncode == 0
        and compact.stdout.splitlines()[0] == certificate_text.headline(cert) + " (preset smoke)"
    )
    assert "\033[" not in compact.stdout and "inconclusive numbers" in compact.stdout.splitlines()[-1]
    assert max(len(line) for line in compact.stdout.splitlines()) < 200
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke", "experiments": ["ms.t1"]})
    ran = {(r.dataset, r.method) for r in plan.runs("ms.t1")}
    numbers_t1 = next(e for e in cert["experiments"] if e["id"] == "ms.t1")["numbers"]
    for number in numbers_t1:  # one seed each: inconclusive where the preset trains the row, else not run
        expected = numbers.INCONCLUSIVE if (number["dataset"], number["row"]) in ran else numbers.NOT_RUN
        assert number["verdict"] == expected, number
    assert cert["numbers"][numbers.INCONCLUSIVE] == sum((n["dataset"], n["row"]) in ran for n in numbers_t1)
    assert cert["fixture_data"] and "Fixture data" in written
    assert set(cert["checksums"]) == {"cub"} and len(cert["checksums"]["cub"]) == 64
    other = verdict_cli(tmp_path, {"preset": "smoke", "experiments": ["ms.t1"], "overrides": {"epochs": 3}})
    # other settings than the numbers were made with: refused, naming the runs.csv, no certificate printed
    assert other.returncode == 1 and "trained with other settings than those asked" in other.stderr, other.stderr
    assert "runs.csv" in other.stderr and cert["fingerprint"] not in other.stdout


def test_a_suite_claim_is_tested_on_every_trunk_the_preset_runs(tmp_path, monkeypatch):
    """suite.modern's DRO-TopK_M-over-MS claim, made-up numbers on two trunks: TopK_M 2 points
    above MS on ViT-S/16 on every seed, 1 point below on DINOv2; the suite's certificate tests the
    claim per trunk (Holm over the two) and leaves the claims of rows or datasets not run untested."""
    from test_report import fake_run

    from dmlbench.config import verdict_spec
    from dmlbench.report import aggregate
    from dmlbench.verdicts import certificate, certificate_text

    subset = {
        "datasets": ["cub"],
        "methods": ["ms", "dro_topk_m"],
        "variants": ["vits16_dino", "dinov2_s14"],
        "seeds": [0, 1, 2],
    }
    plan = Plan.load(CONFIG_DIR, {"preset": "demo", "subset": {"suite.modern": subset}})
    assert "suite" in verdict_spec.certified_papers(plan)
    value = {
        ("ms", "vits16_dino"): [0.600, 0.610, 0.605],
        ("dro_topk_m", "vits16_dino"): [0.620, 0.631, 0.624],
        ("ms", "dinov2_s14"): [0.700, 0.702, 0.698],
        ("dro_topk_m", "dinov2_s14"): [0.690, 0.6919, 0.6881],
    }
    files = [
        fake_run(tmp_path, run, {"recall@1": value[tuple(run.method.split("@"))][run.seed]})
        for run in plan.runs("suite.modern")
    ]
    aggregate.aggregate(jobs_of(plan).aggregate_spec("suite.modern"), files, tmp_path / "reports/demo/suite.modern")
    monkeypatch.chdir(tmp_path)
    cert = certificate.build(verdict_spec.certificate_spec(plan, "suite"), "abc")
    tested = {c["id"]: c for e in cert["experiments"] for c in e["claims"] if "p" in c}
    assert set(tested) == {"topk-m-over-ms-cub-r1@vits16_dino", "topk-m-over-ms-cub-r1@dinov2_s14"}
    vit, dino = tested["topk-m-over-ms-cub-r1@vits16_dino"], tested["topk-m-over-ms-cub-r1@dinov2_s14"]
    for claim, better, worse in (
        (vit, "dro_topk_m@vits16_dino", "ms@vits16_dino"),
        (dino, "dro_topk_m@dinov2_s14", "ms@dinov2_s14"),
    ):
        assert (claim["better"], claim["worse"]) == (better, worse)
        expected = stats.ttest_rel(
            100 * np.array(value[tuple(better.split("@"))]), 100 * np.array(value[tuple(worse.split("@"))])
        )
        assert claim["paired"] and claim["p"] == pytest.approx(expected.pvalue)
    family = claims.holm([vit["p"], dino["p"]] + [1.0] * 67)  # the 69 claims of the catalogue's 3 trunks, 67 not run
    assert [vit["p_holm"], dino["p_holm"]] == pytest.approx(family[:2])
    assert vit["gain"] == pytest.approx(2.0) and vit["verdict"] in claims.HOLDING  # differences 2.0, 2.1, 1.9
    assert dino["gain"] == pytest.approx(-1.0) and dino["verdict"] == claims.REVERSED  # -1.0, -1.01, -0.99
    assert cert["claims"]["total"] == 3 * 23 and cert["numbers"]["total"] == 0  # vit_tiny's claims: not run
    assert (
        certificate_text.headline(cert)
        == f"suite: {cert['claims']['holding']} of 69 claims hold (1 reversed, 67 not run)"
    )
    assert "numbers reproduced" not in certificate_text.markdown(cert)


def test_a_claim_of_a_swept_experiment_names_both_variants_or_neither(tmp_path):
    shutil.copytree(CONFIG_DIR, tmp_path / "config")
    path = tmp_path / "config" / "experiments" / "suite.yaml"
    text = path.read_text()
    old = 'id: topk-m-over-ms-cub-r1, text: "DRO-TopK_M beats MS on CUB at Recall@1", better: dro_topk_m,'
    assert old in text
    path.write_text(text.replace(old, old.replace("better: dro_topk_m", "better: dro_topk_m@dinov2_s14")))
    with pytest.raises(ConfigError, match=r"suite.yaml: experiment suite.modern.claims\[0\].*name both rows"):
        Plan.load(tmp_path / "config", {"preset": "demo"})


@pytest.mark.parametrize("band", [float("nan"), float("inf"), -1.0, {"recall@1": float("nan")}])
def test_a_margin_that_is_not_a_finite_number_of_points_is_refused(band):
    from dmlbench.config.margins import check_experiment

    with pytest.raises(ConfigError, match="margin.band.*a finite number of points ≥ 0"):
        check_experiment({"margin": {"band": band, "source": "s"}, "table": {"metrics": ["recall@1"]}}, "ms.t1")
    check_experiment({"margin": {"band": 1.5, "source": "s"}, "table": {"metrics": ["recall@1"]}}, "ms.t1")


def test_the_default_margin_file_is_checked(tmp_path):
    from dmlbench.config import margins

    (tmp_path / "margins.yaml").write_text("default: {band: 1.0, source: ''}\n")
    with pytest.raises(ConfigError, match="margins.yaml: default.source: say where the band comes from"):
        margins.default(tmp_path)


def test_verdict_and_results_find_the_preset_that_has_results(tmp_path):
    """No --preset: the one preset with results is used; with none or several, they are named."""

    def dmlbench(*args):
        return processes.run(
            [
                sys.executable,
                "-m",
                "dmlbench",
                *args,
                *(["--config-dir", str(CONFIG_DIR)] if args[0] == "verdict" else []),
            ],
            timeout=300,
            capture_output=True,
            text=True,
            env=dict(python_env(), PYTHONPATH=str(REPO)),
            cwd=tmp_path,
        )

    nothing = dmlbench("verdict", "ms")
    assert nothing.returncode == 1 and (
        "no preset has aggregated results (reports/<preset>/*/runs.csv) yet" in nothing.stderr
    )
    assert "Traceback" not in nothing.stderr
    (tmp_path / "reports/smoke/ms.t1").mkdir(parents=True)
    (tmp_path / "reports/smoke/ms.t1/runs.csv").write_text("experiment,dataset,method,seed,recall@1\n")
    found = dmlbench("verdict", "ms")
    assert found.returncode == 0, found.stderr
    assert "preset smoke (the one with results" in found.stderr and "(preset smoke)" in found.stdout
    (tmp_path / "reports/demo/ms.t1").mkdir(parents=True)
    (tmp_path / "reports/demo/ms.t1/runs.csv").write_text("experiment,dataset,method,seed,recall@1\n")
    both = dmlbench("verdict", "ms")
    assert both.returncode == 1 and "exist for the presets demo, smoke: choose one with --preset" in both.stderr
    table = tmp_path / "results/smoke/runs.parquet"
    table.parent.mkdir(parents=True)
    import pandas as pd

    pd.DataFrame({"value": [0.5]}).to_parquet(table)
    (tmp_path / "reports/smoke/ephn.t1").mkdir(parents=True)  # ephn.t1 alone ran (ephn.f4 did not)
    (tmp_path / "reports/smoke/ephn.t1/runs.csv").write_text("experiment,dataset,method,seed,recall@1\n")
    narrowed = dmlbench("verdict", "ephn.t1", "--preset", "smoke")
    assert narrowed.returncode == 0, narrowed.stderr
    assert "ephn.f4: no aggregated results (reports/smoke/ephn.f4/runs.csv), counted as not run" in narrowed.stderr
    unjudged = dmlbench("verdict", "suite.baselines", "--preset", "smoke")
    assert unjudged.returncode == 1 and "suite.baselines has no printed numbers or claims to judge" in unjudged.stderr
    answer = dmlbench("results", "SELECT sum(value) AS s FROM runs", "--csv")
    assert answer.returncode == 0 and answer.stdout.split() == ["s", "0.5"], answer.stderr


def test_numbers_that_cannot_reach_a_verdict_at_the_planned_seeds_are_named_before_training():
    from dmlbench.config import verdict_spec

    demo = Plan.load(CONFIG_DIR, {"preset": "demo"})
    found = verdict_spec.undecidable_numbers(demo)
    assert "ms.t1" not in found  # Binomial and RAW+VTHM on cub: three seeds
    reported = demo.experiments["dro.t1"]["reported"]
    trained = {(r.method, r.dataset) for r in demo.runs("dro.t1")}
    expected = sum(len(metrics) for row, per in reported.items() for d, metrics in per.items() if (row, d) in trained)
    assert found["dro.t1"] == (expected, expected) and expected > 0  # one seed each
    assert "cannot reach a verdict at the planned seeds" in verdict_spec.undecidable_line(demo)
    full = full_plan()
    assert verdict_spec.undecidable_numbers(full) == {}  # five seeds wherever the paper prints numbers
    # every cell a claim reads has the seeds its test needs (`claim_seeds`): none untestable at full
    assert verdict_spec.untestable_claims(full) == {} and verdict_spec.undecidable_line(full) is None
    # one seed everywhere (the figure experiments' own seeds): their best-setting and gap claims cannot be tested
    once = verdict_spec.untestable_claims(Plan.load(CONFIG_DIR, {"preset": "full", "seeds": [0]}))
    assert once["ephn.f4"] == (5, 5) and once["dro.f2"] == (2, 2)
    assert once["profs.f2"] == (12, 12)  # a peak for each of the four losses on each of three datasets


def test_a_gain_not_reproduced_is_named_reversed_only_on_a_reversal_shown_at_the_familys_level():
    """The independent review's case: part A far above the paper's gain (its failure test decides),
    part B below zero at raw p 0.018 only: the claim is not reproduced, not 'reversed'."""
    above = claims.test({s: 80 + 0.1 * s for s in range(5)} | {0: 80.05}, {s: 70 + 0.1 * s for s in range(5)})
    below = claims.test({s: 60 + d for s, d in enumerate([-0.9, -0.3, -0.6, -0.8, -0.15])}, {s: 60.0 for s in range(5)})
    assert below.p == pytest.approx(0.018, abs=0.001) and below.gain < 0
    parts = [{**t.__dict__, "delta": 1.0, "gain_paper": 1.0} for t in (above, below)]
    assert claim_decision.failure("gain", parts, family=10)[1] == claims.GAIN_NOT_REPRODUCED
    clearly = claims.test({s: 58 + 0.01 * s for s in range(5)}, {s: 60.0 + 0.02 * s for s in range(5)})
    parts = [{**t.__dict__, "delta": 1.0, "gain_paper": 1.0} for t in (above, clearly)]
    assert claim_decision.failure("gain", parts, family=10)[1] == claims.REVERSED


def test_the_power_of_a_gain_over_a_quoted_number_is_statsmodels_one_sample_power():
    """A quoted number is a constant: se σ/√n, n − 1 degrees of freedom (not a pair's σ√2/√n)."""
    from statsmodels.stats.power import TTestPower

    sd, n, alpha = 0.4, 5, 0.05 / 30
    claim = {"kind": "gain", "better": "a", "worse": "best quoted", "dataset": "cub", "metric": "recall@1"}
    paper = {"a": 66.85, "best quoted": 66.25}
    found = power.claim(
        claim, lambda r, d, m: paper[r], lambda r, d: set(range(n)), lambda m: 1.0, alpha, quoted={"best quoted"}
    )
    expected = TTestPower().power(0.6 / sd, n, alpha / 2, alternative="larger")
    assert found == pytest.approx(expected, rel=1e-6)
    two = power.claim(
        claim, lambda r, d, m: paper[r], lambda r, d: {0, 1}, lambda m: 1.0, alpha, quoted={"best quoted"}
    )
    assert two is None  # two seeds are never tested (too few seeds): no power is stated for them
