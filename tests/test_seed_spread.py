"""The seed spread the power computations assume (workflow/config/seed_spread.yaml): checked by value
when the catalogue loads, a prior per dataset × metric (its own, the dataset's largest, the default),
and the pooled spread of a preset's finished runs once they exist."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from conftest import CONFIG_DIR

from dmlbench.config import seed_spread
from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError
from dmlbench.verdicts import power, power_plan

DEFAULT = "default:\n  sd: 0.4\n  source: an assumption\n"


def _catalogue(tmp_path, spreads: str):
    (tmp_path / seed_spread.SPREAD_FILE).write_text(DEFAULT + "spreads:\n" + spreads)
    return tmp_path


def _spec(dataset="cub", metric="recall@1", seeds=3):
    return {
        "paper": "made_up",
        "experiments": [
            {
                "id": "made_up.t1",
                "fingerprints": {f"{dataset}/ms/seed{s}": "x" for s in range(seeds)},
                "reported": {"ms": {dataset: {metric: "60.0"}}},
                "quoted": {},
                "margin": {"band": {}, "default": 0.3},
                "claims": [],
            }
        ],
    }


def test_the_catalogue_file_loads_and_gives_every_dataset_a_prior_with_its_source():
    found = seed_spread.catalogue(CONFIG_DIR)
    assert found["default"]["source"].strip()
    for dataset in ("cub", "cars", "sop", "inshop", "vehicleid"):
        sd, source = seed_spread.prior(CONFIG_DIR, dataset, "recall@1")
        assert seed_spread.SD_RANGE[0] <= sd <= seed_spread.SD_RANGE[1] and source.strip()


@pytest.mark.parametrize(
    "spreads, named",
    [
        ("  cub:\n    recall@1: {sd: 0.004, source: Roth Table 1}\n", "spreads.cub.recall@1.sd"),  # a fraction
        ("  cub:\n    recall@1: {sd: .nan, source: Roth Table 1}\n", "spreads.cub.recall@1.sd"),
        ("  cub:\n    recall@1: {sd: -0.5, source: Roth Table 1}\n", "-0.5"),
        ("  cub:\n    recal@1: {sd: 0.5, source: Roth Table 1}\n", "spreads.cub.recal@1"),
        ("  birds:\n    recall@1: {sd: 0.5, source: Roth Table 1}\n", "spreads.birds"),
        ("  cub:\n    recall@1: {sd: 0.5, source: ''}\n", "spreads.cub.recall@1.source"),
        ("  cub:\n    recall@1: {sd: 0.5}\n", "spreads.cub.recall@1"),
    ],
)
def test_a_bad_sd_an_unknown_dataset_or_metric_or_a_missing_source_is_refused_by_name(tmp_path, spreads, named):
    with pytest.raises(ConfigError) as refused:
        seed_spread.catalogue(_catalogue(tmp_path, spreads))
    assert str(tmp_path / seed_spread.SPREAD_FILE) in str(refused.value) and named in str(refused.value)


def test_the_catalogue_is_checked_when_the_plan_loads(tmp_path):
    config = tmp_path / "config"
    shutil.copytree(CONFIG_DIR, config)
    _catalogue(config, "  cub:\n    nmi: {sd: 40, source: a variance}\n")
    with pytest.raises(ConfigError, match="spreads.cub.nmi.sd"):
        Plan.load(config, {"preset": "smoke"})


def test_a_cell_without_its_own_prior_takes_its_datasets_largest_else_the_default(tmp_path):
    config = _catalogue(
        tmp_path, "  cub:\n    recall@1: {sd: 0.6, source: T1 R@1}\n    nmi: {sd: 0.9, source: T1 NMI}\n"
    )
    assert seed_spread.prior(config, "cub", "recall@1") == (0.6, "T1 R@1")
    sd, source = seed_spread.prior(config, "cub", "recall@8")
    assert sd == 0.9 and source.startswith("derived: the largest") and "T1 NMI" in source
    assert seed_spread.prior(config, "inshop", "recall@1") == (0.4, "an assumption")


def test_a_numbers_power_in_the_plan_is_the_number_power_at_its_datasets_prior(tmp_path):
    config = _catalogue(tmp_path, "  cub:\n    recall@1: {sd: 0.9, source: T1 R@1}\n")
    sd_of = seed_spread.spread_of(config)
    sd = seed_spread.catalogue(config)["spreads"]["cub"]["recall@1"]["sd"]
    (line,) = power_plan.lines(_spec(), sd_of=lambda d, m: sd_of(d, m)[0])
    assert line.sd == sd and line.power == pytest.approx(power_plan.number_power(3, 0.35, sd))
    assert line.power < power_plan.number_power(3, 0.35, power.ASSUMED_SD)  # a wider spread: less power
    spec = _spec()
    spec["experiments"][0]["seed_sd"] = {"cub": {"recall@1": sd}}  # the certificate spec's priors
    assert power_plan.lines(spec)[0].power == pytest.approx(line.power)
    (real,) = power_plan.lines(_spec("sop"), sd_of=lambda d, m: seed_spread.prior(CONFIG_DIR, d, m)[0])
    assert real.power == pytest.approx(
        power_plan.number_power(3, 0.35, seed_spread.prior(CONFIG_DIR, "sop", "recall@1")[0])
    )


def test_a_claims_power_takes_each_parts_own_spread():
    claim = {"kind": "gain", "better": "a", "worse": "b", "dataset": "cub", "metric": "recall@1"}
    args = (claim, lambda r, d, m: {"a": 61.0, "b": 60.0}[r], lambda r, d: set(range(5)), lambda m: 1.0, 0.01)
    assert power.claim(*args, sd=lambda d, m: 0.7) == pytest.approx(power.claim(*args, sd=0.7))
    assert power.claim(*args, sd=lambda d, m: 0.7) < power.claim(*args)


def _finished(root, experiment, dataset, method, values):
    for seed, value in enumerate(values):
        folder = root / experiment / dataset / method / f"seed{seed}"
        folder.mkdir(parents=True)
        (folder / "metrics.json").write_text(json.dumps({"metrics": {"recall@1": value, "nmi": 0.5}}))


def test_finished_runs_pooled_spread_replaces_the_prior_once_they_exist(tmp_path):
    results = tmp_path / "results" / "full"
    assert seed_spread.spread_of(CONFIG_DIR, results)("cub", "recall@1")[1].startswith("prior: ")
    a, b = [0.610, 0.618, 0.604], [0.552, 0.560]
    _finished(results, "ms.t1", "cub", "ms", a)
    _finished(results, "ms.t1", "cub", "contrastive", b)
    _finished(results, "ms.t1", "cars", "ms", [0.8])  # one seed: no spread
    ss = sum(((100 * np.array(v)) - 100 * np.mean(v)) @ ((100 * np.array(v)) - 100 * np.mean(v)) for v in (a, b))
    expected = float(np.sqrt(ss / (len(a) - 1 + len(b) - 1)))
    sd_of = seed_spread.spread_of(CONFIG_DIR, results)
    assert sd_of("cub", "recall@1") == (pytest.approx(expected), "spread: pooled from 5 finished runs")
    assert sd_of("cub", "nmi")[1].startswith("prior: ")  # every seed the same: no spread measured
    assert sd_of("cars", "recall@1")[1].startswith("prior: ")
    (line,) = power_plan.lines(_spec(), sd_of=lambda d, m: sd_of(d, m)[0])
    assert line.power == pytest.approx(power_plan.number_power(3, 0.35, expected))


def test_plan_power_says_which_spread_each_cell_uses(tmp_path):
    from dmlbench.config.power_table import plan_table

    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    _finished(tmp_path / "results" / "smoke", "ms.t1", "cub", "ms", [0.61, 0.62])
    head = plan_table(plan, root=tmp_path).split("\n\n")[0]
    assert "spread: pooled from 2 finished runs): cub/recall@1" in head
    assert "points (prior: " in head and "cub/nmi" in head
