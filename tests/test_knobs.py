"""The knobs between a paper's recipe and the fair recipe: derived from the two resolved configs,
equal to lists written by hand from the experiment files, and refused where a setting has no knob."""

import shutil
from dataclasses import replace

import pytest
import yaml

from dmlbench.config import knob_recipes
from dmlbench.config.loading import load_yaml
from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError
from dmlbench.knobs import catalogue as knob_catalogue
from dmlbench.knobs.derive import derive

from conftest import CONFIG_DIR, full_plan

# the fair recipe, as workflow/config/experiments/suite.yaml writes suite.fair's `train`
FAIR = {
    "model.backbone": "bninception",
    "model.embedding_dim": 128,
    "model.frozen_bn": True,
    "input.crop": 227,
    "input.padding": 0,
    "optimizer.name": "rmsprop",
    "optimizer.lr": 1e-6,
    "optimizer.loss_lr_mult": 100.0,
    "optimizer.weight_decay": 1e-4,
    "optimizer.momentum": 0.9,
    "batch.size": 32,
    "batch.per_class": 4,
    "schedule.milestones": (),
    "epochs": 1000,
    "batches_per_epoch": 100,
    "early_stopping.patience": 9,
    "eval.every": 1,
}
PROTOCOL_KNOBS = {"data", "evaluation"}


@pytest.fixture(scope="module")
def full():
    return full_plan()


def knobs_by_hand(paper: dict) -> dict:
    """knob → {setting: (paper, fair)} for the settings of `paper` (read off its experiment file)
    that differ from the fair recipe."""
    of = {
        "model.backbone": "backbone",
        "model.embedding_dim": "embedding",
        "input.crop": "input",
        "input.padding": "input",
        "model.frozen_bn": "batchnorm",
        "batch.size": "batch",
        "batch.per_class": "batch",
        "optimizer.name": "optimiser",
        "optimizer.lr": "optimiser",
        "optimizer.loss_lr_mult": "optimiser",
        "optimizer.weight_decay": "optimiser",
        "optimizer.momentum": "optimiser",
        "schedule.milestones": "schedule",
        "epochs": "schedule",
        "batches_per_epoch": "schedule",
        "early_stopping.patience": "selection",
        "eval.every": "selection",
    }
    out: dict = {}
    for key, value in paper.items():
        if value != FAIR[key]:
            out.setdefault(of[key], {})[key] = (value, FAIR[key])
    return out


def derived(plan, paper: str, dataset: str) -> dict:
    recipe = next(r for r in knob_recipes.recipes(plan) if r.paper == paper and r.dataset == dataset)
    return {k.name: {s: (k.paper[s], k.fair[s]) for s in k.settings} for k in knob_recipes.knobs_of(plan, recipe)}


def test_the_knobs_of_ms_on_cub_are_those_written_by_hand(full):
    # ms.t2: BN-Inception 512-d, 227 of 256, Adam 1e-5, B 80 with 5 per class, 50 epochs, last epoch
    paper = {
        "model.backbone": "bninception",
        "model.embedding_dim": 512,
        "model.frozen_bn": False,
        "input.crop": 227,
        "input.padding": 0,
        "optimizer.name": "adam",
        "optimizer.lr": 1e-5,
        "optimizer.loss_lr_mult": 1.0,
        "optimizer.weight_decay": 0.0,
        "optimizer.momentum": 0.9,
        "batch.size": 80,
        "batch.per_class": 5,
        "schedule.milestones": (),
        "epochs": 50,
        "batches_per_epoch": None,
        "early_stopping.patience": None,
        "eval.every": 0,
    }
    found = derived(full, "ms", "cub")
    assert {k: v for k, v in found.items() if k not in PROTOCOL_KNOBS} == knobs_by_hand(paper)
    assert list(found) == [
        "embedding",
        "batchnorm",
        "batch",
        "optimiser",
        "data",
        "selection",
        "schedule",
        "evaluation",
    ]


def test_the_knobs_of_ephn_on_cars_are_those_written_by_hand(full):
    # ephn.t1: ResNet-50 512-d, 256 of 256 padded by 10, SGD 0.005 without momentum, steps at 20 and
    # 30, B 128 with 16 per class on Cars196, 40 epochs, last epoch
    paper = {
        "model.backbone": "resnet50",
        "model.embedding_dim": 512,
        "model.frozen_bn": False,
        "input.crop": 256,
        "input.padding": 10,
        "optimizer.name": "sgd",
        "optimizer.lr": 0.005,
        "optimizer.loss_lr_mult": 1.0,
        "optimizer.weight_decay": 0.0,
        "optimizer.momentum": 0.0,
        "batch.size": 128,
        "batch.per_class": 16,
        "schedule.milestones": (20, 30),
        "epochs": 40,
        "batches_per_epoch": None,
        "early_stopping.patience": None,
        "eval.every": 0,
    }
    found = derived(full, "ephn", "cars")
    assert {k: v for k, v in found.items() if k not in PROTOCOL_KNOBS} == knobs_by_hand(paper)


def test_the_protocol_knobs_name_both_sides(full):
    recipe = next(r for r in knob_recipes.recipes(full) if r.paper == "ms" and r.dataset == "cub")
    knobs = {k.name: k for k in knob_recipes.knobs_of(full, recipe)}
    assert knobs["data"].paper["protocol"] == "the whole training half"
    assert knobs["data"].fair["protocol"] == "3 of 4 class-disjoint folds of the training half"
    assert knobs["selection"].paper["protocol"] == "the last epoch"


def test_a_differing_setting_without_a_knob_is_refused_with_its_name(full):
    catalogue = knob_recipes.catalogue(full)
    without = replace(
        catalogue,
        knobs=tuple(
            replace(k, settings=tuple(s for s in k.settings if s != "model.frozen_bn")) for k in catalogue.knobs
        ),
    )
    recipe = next(r for r in knob_recipes.recipes(full) if r.paper == "ms" and r.dataset == "cub")
    with pytest.raises(
        ConfigError,
        match=r"setting model\.frozen_bn differs \(False .* True .*\) "
        r"and belongs to no knob",
    ):
        derive(full.resolve(recipe.paper_run), full.resolve(recipe.fair_run), without, "ms on cub")


def test_the_plan_refuses_a_knob_file_that_leaves_a_setting_out(tmp_path):
    shutil.copytree(CONFIG_DIR, tmp_path / "config")
    path = tmp_path / "config" / "knobs.yaml"
    data = yaml.safe_load(path.read_text())
    data["knobs"]["batchnorm"]["settings"] = []
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(ConfigError, match=r"knobs\.yaml: setting\(s\) model\.frozen_bn belong to no knob"):
        Plan.load(tmp_path / "config", {"preset": "smoke"})


def test_a_misspelt_setting_in_the_knob_file_is_refused(tmp_path):
    path = tmp_path / "knobs.yaml"
    data = yaml.safe_load((CONFIG_DIR / "knobs.yaml").read_text())
    data["knobs"]["batchnorm"]["settings"] = ["model.frozen_nb"]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(
        ConfigError,
        match=r"'model\.frozen_nb' is no training setting "
        r"\(did you mean 'model\.frozen_bn'\?\)",
    ):
        knob_catalogue.parse(load_yaml(path), str(path))


def test_every_paper_has_a_recipe_on_the_datasets_it_prints(full):
    recipes = {(r.paper, r.dataset) for r in knob_recipes.recipes(full)}
    assert {paper for paper, _ in recipes} == {"ms", "dro", "ephn", "fastap", "profs"}
    assert {("ms", d) for d in ("cub", "cars", "sop", "inshop")} <= recipes


@pytest.mark.parametrize(
    "text, message",
    [
        (None, r"knobs\.yaml does not exist"),
        ("knobs: [unclosed", r"knobs\.yaml is not valid YAML"),
        ("knobs:\n  batchnorm: {label: BN, settings: model.frozen_bn}\n", r"knob batchnorm: settings must be a list"),
    ],
)
def test_a_missing_or_garbled_knob_file_is_named_by_the_plan(tmp_path, text, message):
    shutil.copytree(CONFIG_DIR, tmp_path / "config")
    path = tmp_path / "config" / "knobs.yaml"
    path.unlink()
    if text is not None:
        path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        Plan.load(tmp_path / "config", {"preset": "smoke"})


def test_a_knob_that_needs_a_later_knob_is_refused(tmp_path):
    data = yaml.safe_load((CONFIG_DIR / "knobs.yaml").read_text())
    data["knobs"]["batch"]["needs"] = ["selection"]
    with pytest.raises(ConfigError, match=r"knob batch: needs \['selection'\]: a list of knobs listed before it"):
        knob_catalogue.parse(data, "knobs.yaml")


def test_the_protocol_text_reads_the_patience_and_folds_the_preset_resolves():
    """The review's case: smoke's suite.fair stops after 2 epochs without gain on 2 folds, where the
    catalogue's suite.fair says 9 and 4; the knob's text once said "(patience 9)"."""
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    recipe = next(r for r in knob_recipes.recipes(plan) if (r.paper, r.dataset) == ("ms", "cub"))
    text = knob_recipes.protocol(plan, recipe)
    assert text["selection"][1].endswith("(patience 2)") and text["folds"][1].startswith("1 of 2 ")
