"""The certificate's error rates, simulated through the real code at `full`'s planned seeds
(`benchmarks.verdict_oc`): a faithful reproduction (the paper's numbers + N(0, 0.4) per seed)
passes, a method planted 2 points low is caught, a claim planted 3 points up holds."""

import pytest

from benchmarks import verdict_oc
from conftest import CONFIG_DIR, full_plan
from dmlbench.config.plan import Plan


@pytest.fixture(scope="module")
def simulated():
    plan = full_plan()
    return {row["scenario"]: row for row in verdict_oc.simulate(plan, "ms", 0.4, replicates=3, seed=1)}


def test_a_faithful_reproduction_is_reproduced_and_its_supported_claims_are_not_listed_failing(simulated):
    faithful = simulated["faithful"]
    assert faithful["numbers"] > 100 and faithful["reproduced"] >= 0.95
    assert faithful["supported"] > 10 and faithful["supported_failing"] <= 0.05 and faithful["supported_hold"] >= 0.8


def test_a_method_planted_two_points_low_is_below_and_its_claims_do_not_hold(simulated):
    low = next(row for name, row in simulated.items() if name.endswith("2 points low"))
    assert low["planted_caught"] >= 0.9
    assert low["broken_claims"] and low["broken_hold"] <= 0.5


def test_a_claim_planted_three_points_up_holds(simulated):
    planted = next(row for name, row in simulated.items() if "+3" in name)  # the weakest paper gain
    assert planted["planted_claim_holds"] == 1.0


def test_a_claim_is_supported_only_where_every_part_is_true_in_the_papers_table():
    reported = {
        "a": {"cub": {"recall@1": "61.0"}, "cars": {"recall@1": "80.0"}},
        "b": {"cub": {"recall@1": "60.5"}, "cars": {"recall@1": "80.5"}},
    }
    claim = {"better": "a", "worse": "b", "dataset": ["cub", "cars"], "metric": "recall@1"}
    assert not verdict_oc.supported(claim, reported, 1.0)  # cars: a below b in the paper's own table
    assert verdict_oc.supported({**claim, "dataset": "cub"}, reported, 1.0)
    assert verdict_oc.supported({**claim, "kind": "equivalent"}, reported, 1.0)  # within ±1 on both


def test_the_suites_holm_family_is_the_catalogues_whatever_trunks_a_preset_runs():
    from dmlbench.config import verdict_spec

    def family(variants):
        subset = {"suite.modern": {"datasets": ["cub"], "variants": variants}}
        plan = Plan.load(CONFIG_DIR, {"preset": "full", "subset": subset})
        return sum(len(e["claims"]) for e in verdict_spec.certificate_spec(plan, "suite")["experiments"])

    sweep = list(full_plan().experiments["suite.modern"]["sweep"])
    assert len(sweep) >= 2 and family(sweep[:1]) == family(sweep)


def test_the_margins_stated_source_figure_is_the_catalogues_median_claimed_gain():
    import re
    import statistics

    from dmlbench.config import margins
    from dmlbench.report.claims_page import claimed_gains

    source = margins.default(CONFIG_DIR)["source"]
    median, count = re.search(r"([\d.]+) points over\s+the (\d+) claimed gains", source).groups()
    gains = claimed_gains(full_plan())
    assert (float(median), int(count)) == (round(statistics.median(gains), 2), len(gains))
