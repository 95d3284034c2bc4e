"""The typed run settings: one source for the defaults, the schema, the docs and what training reads."""

import dataclasses

import jsonschema
import pytest

from dmlbench import run_config
from dmlbench.run_config import values
from dmlbench.core.errors import ConfigError
from dmlbench.run_config import Optimizer, RunConfig, TrainingSettings
from dmlbench.training.optimisers import OPTIMISERS

from conftest import full_plan


def leaves(tree: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in tree.items():
        out += leaves(value, f"{prefix}{key}.") if isinstance(value, dict) else [prefix + key]
    return out


def test_the_defaults_pass_the_schema_made_from_the_same_fields():
    jsonschema.validate(run_config.defaults(), run_config.json_schema(OPTIMISERS.names()))


def test_every_setting_is_documented_once_with_its_default():
    rows = run_config.documented()
    defaults = run_config.defaults()
    assert [key for key, *_ in rows] == leaves(defaults)
    for key, kind, default, doc in rows:
        value = defaults
        for part in key.split("."):
            value = value[part]
        assert value == default and doc.strip() and kind, key


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("optimizer.lr", 0, "0 is less than or equal to the minimum of 0"),
        ("optimizer.name", "adamax", "'adamax' is not one of"),
        ("batch.size", 1, "1 is less than the minimum of 2"),
        ("eval.ks", [], "should be non-empty"),
        ("optimizer.betas", [0.9], "is too short"),
        ("model.pooling", "mean", "'mean' is not one of \\['avg', 'max'\\]"),
        ("scheme.iterations", 0, "0 is less than the minimum of 1"),
        ("device", "tpu", "does not match"),
    ],
)
def test_the_generated_schema_refuses_values_outside_each_fields_rules(key, value, message):
    section, name = key.rsplit(".", 1) if "." in key else (None, key)
    update = {section: {name: value}} if section else {name: value}
    with pytest.raises(ConfigError, match=f"setting {key}: .*{message}"):
        values.check(update, run_config.json_schema(OPTIMISERS.names()), "where")


def test_every_resolved_run_of_full_round_trips_through_the_typed_config():
    """What the rules pass on (the plan's resolved mapping) is exactly the typed config's JSON form:
    nothing the plan resolves is lost or added by the typed view training reads."""
    plan = full_plan()
    runs = plan.runs()
    assert len(runs) > 500
    for run in runs:
        resolved = plan.resolve(run)
        assert RunConfig.from_dict(resolved).to_dict() == resolved, run


def test_the_typed_view_reads_the_plans_values():
    plan = full_plan()
    run = next(r for r in plan.runs("dro.t1") if r.method == "dro_topk_m")
    resolved = plan.resolve(run)
    typed = RunConfig.from_dict(resolved)
    assert typed.optimizer.lr == resolved["optimizer"]["lr"] and typed.batch.size == resolved["batch"]["size"]
    assert typed.eval.ks == tuple(resolved["eval"]["ks"]) and typed.method.loss == resolved["method"]["loss"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        typed.optimizer.lr = 1.0


def test_an_unknown_setting_is_refused_with_the_closest_name():
    with pytest.raises(ConfigError, match="run x.optimizer: unknown setting 'lrr' \\(did you mean 'lr'\\?\\)"):
        RunConfig.from_dict({"optimizer": {"lrr": 0.1}, "method": {"loss": {"name": "contrastive"}}}, "run x")


def test_a_missing_setting_takes_its_default():
    typed = RunConfig.from_dict({"optimizer": {"lr": 0.5}, "method": {"loss": {"name": "contrastive"}}})
    assert typed.optimizer == dataclasses.replace(Optimizer(), lr=0.5)
    assert typed.model == TrainingSettings().model


def test_the_backbone_names_are_the_registered_backbones():
    from dmlbench.models.backbones import BACKBONES

    assert sorted(run_config.BACKBONE_NAMES) == sorted(BACKBONES.names())
