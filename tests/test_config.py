"""Config validation: every typo stops with a message naming it."""

import re

import pytest

from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError
from dmlbench.run_config import RunConfig

from conftest import CONFIG_DIR, full_plan
from dmlbench.config.jobs import of as jobs_of


@pytest.mark.parametrize(
    "config, message",
    [
        (
            {"preset": "demo", "overrides": {"optimiser": {"lr": 1}}},
            "unknown setting 'optimiser' (did you mean 'optimizer'?)",
        ),
        ({"preset": "demo", "overrides": {"optimizer": {"lrate": 1}}}, "overrides.optimizer: unknown setting 'lrate'"),
        ({"preset": "demo", "experiments": ["ms.t9"]}, "unknown experiment id 'ms.t9'"),
        ({"preset": "demo", "datasets": ["cubb"]}, "key datasets.0: 'cubb' is not one of"),
        ({"preset": "demo", "datasets": ["cubb"]}, "(did you mean 'cub'?)"),
        ({"preset": "demo", "epochs": 3}, "'epochs' was unexpected"),
        ({"preset": "demo", "seedz": [0]}, "('seedz' was unexpected) (did you mean 'seeds'?)"),
        ({"preset": "demo", "data": {"source": "web"}}, "key data.source"),
        ({"preset": "nonsense"}, "unknown preset 'nonsense'"),
    ],
)
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
    plan = full_plan()
    cfg = plan.resolve(plan.find_run("suite.baselines", "sop", "ms", 0))
    assert cfg["model"]["backbone"] == "bninception"  # experiment
    assert cfg["batch"]["per_class"] == 4  # per-dataset
    assert cfg["optimizer"]["lr"] == 1e-5  # defaults
    demo = Plan.load(CONFIG_DIR, {"preset": "demo"})
    cfg = demo.resolve(demo.find_run("suite.baselines", "sop", "ms", 0))
    assert cfg["model"]["backbone"] == "small_cnn"  # preset overrides win
    assert cfg["data"]["manifest"] == "data/fixture/24x10-48px/sop/cache40/manifest.csv"  # the demo's size


def test_every_experiment_expands_into_runs_or_is_an_analysis():
    plan = full_plan()
    for experiment in plan.experiment_ids:
        trains = bool(plan.runs(experiment)) or bool(plan.fair_runs(experiment))
        assert plan.is_analysis(experiment) != trains, experiment
        assert not (plan.runs(experiment) and plan.fair_runs(experiment)), experiment


def test_catalogue_ids_follow_reproduction_md():
    """Experiment ids are REPRODUCTION.md's (paper.t<n> / .f<n> / .eq / .grad) or the suite's own."""
    import re

    plan = full_plan()
    for experiment in plan.experiment_ids:
        assert re.fullmatch(r"(dro|ephn|fastap|ms|profs)\.(t\d|f\d|eq|grad)|suite\.\w+", experiment)


def test_every_method_builds():
    import torch

    from dmlbench.methods import plugin_code
    from dmlbench.methods.criterion import Criterion

    plan = full_plan()
    labels = torch.arange(4).repeat_interleave(4)
    for name, method in plan.methods.items():
        parts = {"loss": method["loss"], "miner": method.get("miner")}
        criterion = Criterion({**parts, "code": plugin_code.digests(parts)}, num_classes=4, embedding_dim=8)
        value = criterion(torch.randn(16, 8, requires_grad=True), labels)
        assert torch.isfinite(value), name


def test_every_full_run_resolves_to_a_buildable_criterion():
    from dmlbench.methods.criterion import Criterion
    from dmlbench.training import schemes

    plan = full_plan()
    labels = [c for c in range(200) for _ in range(6)]
    for run in plan.runs():
        cfg = RunConfig.from_dict(plan.resolve(run))
        criterion = Criterion(cfg.method, num_classes=200, embedding_dim=cfg.model.embedding_dim)
        schemes.build(cfg, labels, None, list(criterion.parameters()), criterion)


def test_sweeps_expand_into_variants():
    plan = full_plan()
    runs = plan.runs("dro.f1")
    assert {r.variant for r in runs} == {"B80", "B160", "B320", "B480", "B640"}
    cfg = plan.resolve(plan.find_run("dro.f1", "inshop", "dro_topk_m@B320", 0))
    assert cfg["batch"]["size"] == 320 and cfg["method"]["loss"]["k_per_anchor"] == 2.0
    cfg = plan.resolve(plan.find_run("dro.f2", "inshop", "dro_topk_m@K960", 0))
    assert cfg["method"]["loss"]["K"] == 960 and cfg["method"]["loss"]["k_per_anchor"] is None


# --- values, as Snakemake 9 hands them over from `--config` (nested values arrive as text) ---


def test_command_line_text_becomes_the_schema_types():
    plan = Plan.load(
        CONFIG_DIR,
        {
            "preset": "smoke",
            "seeds": ["0", "1", "2"],
            "data": {"cache": "null", "download": "false"},
            "overrides": {"optimizer": {"lr": "1e-4"}, "epochs": "3", "model": {"pretrained": "false"}},
        },
    )
    assert plan.preset["seeds"] == [0, 1, 2]
    assert plan.preset["data"]["cache"] is None and plan.preset["data"]["download"] is False
    cfg = plan.resolve(plan.runs()[0])
    assert cfg["optimizer"]["lr"] == 1e-4 and cfg["epochs"] == 3 and cfg["model"]["pretrained"] is False
    assert cfg["data"]["manifest"].endswith("/manifest.csv") and "cache" not in cfg["data"]["manifest"]


def test_per_dataset_settings_from_the_command_line_are_converted_and_checked_by_value():
    plan = Plan.load(
        CONFIG_DIR, {"preset": "smoke", "per_dataset": {"cub": {"epochs": "3", "optimizer": {"lr": "1e-4"}}}}
    )
    cub = next(run for run in plan.runs() if run.dataset == "cub" and run.experiment == "suite.baselines")
    cfg = plan.resolve(cub)
    assert cfg["epochs"] == 3 and cfg["optimizer"]["lr"] == 1e-4
    with pytest.raises(ConfigError, match="per_dataset.cub: setting epochs: 'three' is not of type 'integer'"):
        Plan.load(CONFIG_DIR, {"preset": "smoke", "per_dataset": {"cub": {"epochs": "three"}}})


def test_text_stays_text_where_the_schema_wants_text():
    plan = Plan.load(
        CONFIG_DIR, {"preset": "smoke", "data": {"paths": {"cub": "1"}}, "experiments": ["suite.baselines"]}
    )
    assert plan.preset["data"]["paths"]["cub"] == "1"


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            {"optimizer": {"name": "adamax"}},
            "setting optimizer.name: 'adamax' is not one of ['adam', 'adamw', 'rmsprop', 'sgd']",
        ),
        ({"optimizer": {"lr": "fast"}}, "setting optimizer.lr: 'fast' is not of type 'number'"),
        ({"optimizer": {"lr": "1.0e+6"}}, "setting optimizer.lr: 1000000.0 is greater than the maximum of 10"),
        ({"device": "gpu"}, "setting device: 'gpu' does not match"),
        ({"model": {"pooling": "mean"}}, "setting model.pooling: 'mean' is not one of ['avg', 'max']"),
        ({"model": {"backbone": "vgg16"}}, "setting model.backbone: 'vgg16' is not one of"),
        ({"batch": {"size": -8}}, "setting batch.size: -8 is less than the minimum of 2"),
        ({"epochs": 0}, "setting epochs: 0 is less than the minimum of 1"),  # no run "finishes" untrained
        ({"eval": {"ks": []}}, "setting eval.ks: [] should be non-empty"),
        ({"scheme": {"name": "prof"}}, "setting scheme.name: 'prof' is not one of ['plain', 'profs']"),
        ({"scheme": {"rho": 0}}, "setting scheme.rho: 0 is less than or equal to the minimum of 0"),
    ],
)
def test_setting_values_are_checked_before_any_job(overrides, message):
    with pytest.raises(ConfigError) as error:
        Plan.load(CONFIG_DIR, {"preset": "smoke", "overrides": overrides})
    assert f"preset smoke.overrides: {message}" in str(error.value)


@pytest.mark.parametrize(
    "key, value, where",
    [
        ("per_dataset", {"digits": {"model": {"backbone": "lenet"}}}, "preset smoke.per_dataset.digits"),
        ("per_dataset", {"mnist": {"epochs": 2}}, "key per_dataset"),
        ("cpu_fallback", {"input": {"crop": -64}}, "preset smoke.cpu_fallback"),
    ],
)
def test_per_dataset_and_cpu_fallback_values_are_checked_before_any_job(key, value, where):
    with pytest.raises(ConfigError, match=re.escape(where)):
        Plan.load(CONFIG_DIR, {"preset": "smoke", key: value})


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"batch": {"size": 18, "per_class": 4}}, "batch.size 18 is not a multiple of batch.per_class 4"),
        ({"scheme": {"name": "profs"}, "batch": {"size": 16, "per_class": 1}}, "batch.per_class must be ≥ 2, not 1"),
        ({"input": {"resize": 30, "crop": 32, "padding": 0}}, "input.crop 32 is larger than input.resize 30"),
    ],
)
def test_settings_that_do_not_fit_together_name_the_run(overrides, message):
    with pytest.raises(ConfigError, match=r"run results/smoke/suite\.baselines/\w+/\w+/seed0: ") as error:
        Plan.load(CONFIG_DIR, {"preset": "smoke", "overrides": overrides})
    assert message in str(error.value)


def test_a_catalogue_value_out_of_range_is_named(tmp_path):
    import shutil

    shutil.copytree(CONFIG_DIR, tmp_path / "config")
    path = tmp_path / "config" / "experiments" / "suite.yaml"
    text = path.read_text()
    assert "train:" in text
    path.write_text(text.replace("train:", "train:\n    optimizer: {name: rmsprob}", 1))
    with pytest.raises(ConfigError, match=r"experiment suite.baselines.train: setting optimizer.name: 'rmsprob'"):
        Plan.load(tmp_path / "config", {"preset": "demo"})


# --- narrowing a preset from the command line ---


def test_preset_narrowed_to_one_experiment_ignores_the_subsets_of_the_others():
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke", "experiments": ["suite.baselines"]})
    assert plan.experiment_ids == ["suite.baselines"] and plan.runs()


def test_preset_narrowed_to_a_dataset_skips_experiments_left_without_runs():
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke", "datasets": ["cub"]})
    assert {run.dataset for run in plan.runs()} == {"cub"}
    assert "ephn.f3" in plan.skipped and "ephn.f3" not in plan.experiment_ids
    assert "none of its datasets ['cars'] is among datasets=['cub']" in plan.skipped["ephn.f3"]
    assert "suite.baselines" in plan.experiment_ids and "ms.f1" in plan.experiment_ids


def test_narrowing_to_nothing_is_refused():
    with pytest.raises(ConfigError, match="nothing to run: ephn.f3: none of its datasets"):
        Plan.load(CONFIG_DIR, {"preset": "smoke", "experiments": ["ephn.f3"], "datasets": ["cub"]})


@pytest.mark.parametrize("preset", ["demo", "smoke"])
def test_every_run_of_the_cpu_presets_gets_its_batches(preset, tmp_path):
    """Each run's sampler, built on its preset's fixture (the real parser's output), yields a
    batch: a batch that a fixture cannot fill is found here, not minutes into the demo."""
    import torch

    from dmlbench.data import manifest
    from dmlbench.data.prepare import prepare
    from dmlbench.methods.criterion import Criterion
    from dmlbench.training import schemes

    plan = Plan.load(CONFIG_DIR, {"preset": preset, "data": {"root": str(tmp_path)}})
    tables = {}
    for dataset in plan.datasets:
        spec = jobs_of(plan).prepare_spec(dataset)
        out = tmp_path / spec["source"] / dataset / "manifest.csv"
        prepare(dataset, spec["source"], tmp_path, out, fixture_size=spec["fixture"])
        table = manifest.read(out)
        tables[dataset] = table[table["split"] == "train"]
    for run in plan.runs():
        cfg = RunConfig.from_dict(plan.resolve(run))
        train = tables[run.dataset]
        labels = train["label"].rank(method="dense").astype(int) - 1
        criterion = Criterion(cfg.method, num_classes=int(labels.max()) + 1, embedding_dim=cfg.model.embedding_dim)
        scheme = schemes.build(
            cfg, labels.to_numpy(), train["super"].to_numpy(), list(criterion.parameters()), criterion
        )
        batches = scheme.batches(torch.Generator().manual_seed(0), cfg.batches_per_epoch)
        assert len(next(iter(batches))) == cfg.batch.size, run


def test_a_batch_needing_more_classes_than_the_real_dataset_has_is_refused():
    """Found by the preflight: full's digits runs asked for 16 classes of 5."""
    with pytest.raises(
        ConfigError,
        match=r"run results/full/suite.baselines/digits/\w+/seed0: batch.size 80 "
        r"at batch.per_class 5 needs 16 classes, but digits's training split has 5",
    ):
        Plan.load(
            CONFIG_DIR,
            {
                "preset": "full",
                "experiments": ["suite.baselines"],
                "datasets": ["digits"],
                "overrides": {"batch": {"size": 80, "per_class": 5}},
            },
        )
    plan = Plan.load(CONFIG_DIR, {"preset": "full", "experiments": ["suite.baselines"], "datasets": ["digits"]})
    cfg = plan.resolve(plan.runs()[0])
    assert cfg["batch"]["size"] // cfg["batch"]["per_class"] <= 5


def test_merging_layers_at_once_equals_merging_them_one_after_another():
    import copy
    import random

    from dmlbench.config.loading import deep_merge, merge_layers

    rng = random.Random(0)

    def layer(depth=0):
        return {
            rng.choice("abcd"): (
                layer(depth + 1) if depth < 2 and rng.random() < 0.5 else rng.choice([1, None, [1, {"x": 2}], "s", {}])
            )
            for _ in range(rng.randint(0, 3))
        }

    for _ in range(300):
        layers = [layer() if rng.random() < 0.8 else None for _ in range(rng.randint(1, 5))]
        kept = copy.deepcopy(layers)
        expected = {}
        for item in layers:
            expected = deep_merge(expected, item)
        merged = merge_layers(*layers)
        assert merged == expected and layers == kept
        for key, value in merged.items():  # nothing shared with the layers
            assert all(value is not (item or {}).get(key) or not isinstance(value, (dict, list)) for item in layers)


def test_a_key_given_twice_in_a_yaml_file_is_refused_naming_the_file_the_key_and_both_lines(tmp_path):
    preset = (CONFIG_DIR / "presets" / "smoke.yaml").read_text()
    lines = preset.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("seeds:"))
    path = tmp_path / "mine.yaml"
    path.write_text("\n".join(lines + ["seeds: [0, 1, 2]"]) + "\n")  # the last one would win silently
    with pytest.raises(
        ConfigError,
        match=rf"{re.escape(str(path))} is not valid YAML: "
        r"(.|\n)*found the key 'seeds' twice "
        rf"\(first on line {at + 1}\)(.|\n)*line {len(lines) + 1}, column 1",
    ):
        Plan.load(CONFIG_DIR, {"preset_file": str(path)})
    path.write_text("\n".join(lines) + "\n")
    assert Plan.load(CONFIG_DIR, {"preset_file": str(path)}).preset["seeds"] == [0]  # the same file, once: fine
