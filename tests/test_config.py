"""Config validation: every typo stops with a message naming it."""

import pytest

from conftest import CONFIG_DIR
from dmlbench.errors import ConfigError
from dmlbench.plan import Plan


@pytest.mark.parametrize("config, message", [
    ({"preset": "demo", "overrides": {"optimiser": {"lr": 1}}}, "unknown setting 'optimiser' (did you mean 'optimizer'?)"),
    ({"preset": "demo", "overrides": {"optimizer": {"lrate": 1}}}, "overrides.optimizer: unknown setting 'lrate'"),
    ({"preset": "demo", "experiments": ["ms.t9"]}, "unknown experiment id 'ms.t9'"),
    ({"preset": "demo", "datasets": ["cubb"]}, "key datasets"),
    ({"preset": "demo", "epochs": 3}, "'epochs' was unexpected"),
    ({"preset": "demo", "data": {"source": "web"}}, "key data.source"),
    ({"preset": "nonsense"}, "unknown preset 'nonsense'"),
])
def test_config_typos_are_named(config, message):
    with pytest.raises(ConfigError) as error:
        Plan.load(CONFIG_DIR, config)
    assert message in str(error.value)


def test_unknown_method_in_catalogue(tmp_path):
    import shutil

    shutil.copytree(CONFIG_DIR, tmp_path / "config")
    path = tmp_path / "config" / "experiments" / "suite.yaml"
    path.write_text(path.read_text().replace("triplet_semihard, ms]", "triplet_semihrad, ms]"))
    with pytest.raises(ConfigError, match="unknown method 'triplet_semihrad' .*did you mean 'triplet_semihard'"):
        Plan.load(tmp_path / "config", {"preset": "demo"})


def test_merge_order_defaults_experiment_dataset_preset():
    plan = Plan.load(CONFIG_DIR, {"preset": "full"})
    cfg = plan.resolve(plan.find_run("suite.baselines", "sop", "ms", 0))
    assert cfg["model"]["backbone"] == "bninception"      # experiment
    assert cfg["batch"]["per_class"] == 4                 # per-dataset
    assert cfg["optimizer"]["lr"] == 1e-5                 # defaults
    demo = Plan.load(CONFIG_DIR, {"preset": "demo"})
    cfg = demo.resolve(demo.find_run("suite.baselines", "sop", "ms", 0))
    assert cfg["model"]["backbone"] == "small_cnn"        # preset overrides win
    assert cfg["data"]["manifest"] == "data/fixture/sop/cache40/manifest.csv"


def test_every_experiment_expands_into_runs_or_is_an_analysis():
    plan = Plan.load(CONFIG_DIR, {"preset": "full"})
    for experiment in plan.experiment_ids:
        assert plan.is_analysis(experiment) != bool(plan.runs(experiment)), experiment


def test_catalogue_ids_follow_reproduction_md():
    """Experiment ids are REPRODUCTION.md's (paper.t<n> / .f<n> / .eq / .grad) or the suite's own."""
    import re

    plan = Plan.load(CONFIG_DIR, {"preset": "full"})
    for experiment in plan.experiment_ids:
        assert re.fullmatch(r"(dro|ephn|fastap|ms|profs)\.(t\d|f\d|eq|grad)|suite\.\w+", experiment)


def test_every_method_builds():
    import torch

    from dmlbench.method import Criterion

    plan = Plan.load(CONFIG_DIR, {"preset": "full"})
    labels = torch.arange(4).repeat_interleave(4)
    for name, method in plan.methods.items():
        criterion = Criterion({"loss": method["loss"], "miner": method.get("miner")},
                              num_classes=4, embedding_dim=8)
        value = criterion(torch.randn(16, 8, requires_grad=True), labels)
        assert torch.isfinite(value), name


def test_every_full_run_resolves_to_a_buildable_criterion():
    from dmlbench.method import Criterion

    plan = Plan.load(CONFIG_DIR, {"preset": "full"})
    for run in plan.runs():
        cfg = plan.resolve(run)
        Criterion(cfg["method"], num_classes=4, embedding_dim=cfg["model"]["embedding_dim"])


def test_sweeps_expand_into_variants():
    plan = Plan.load(CONFIG_DIR, {"preset": "full"})
    runs = plan.runs("dro.f1")
    assert {r.variant for r in runs} == {"B80", "B160", "B320", "B480", "B640"}
    cfg = plan.resolve(plan.find_run("dro.f1", "inshop", "dro_topk_m@B320", 0))
    assert cfg["batch"]["size"] == 320 and cfg["method"]["loss"]["k_per_anchor"] == 2.0
    cfg = plan.resolve(plan.find_run("dro.f2", "inshop", "dro_topk_m@K960", 0))
    assert cfg["method"]["loss"]["K"] == 960 and cfg["method"]["loss"]["k_per_anchor"] is None
