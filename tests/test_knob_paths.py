"""suite.knobs' paths and numbers: the steps of each path, the runs of the plan (each one-at-a-time
run differs from its base in its knob's settings alone), and the attribution's arithmetic checked
against scipy's paired t-test and the telescoping sum of the cumulative path."""

import math

import numpy as np
import pytest
from conftest import CONFIG_DIR
from scipy import stats

from dmlbench.config import knob_recipes
from dmlbench.config.plan import Plan
from dmlbench.config.run import Run
from dmlbench.knobs import attribution, paths
from dmlbench.knobs.derive import setting_values


def test_the_paths_over_four_knobs_written_out_by_hand():
    built = paths.build(["batch", "data", "selection", "evaluation"],
                        {"selection": ("data",), "evaluation": ("data",)})
    assert [(s.name, s.moved) for s in built.cumulative] == [
        ("upto-batch", ("batch",)), ("upto-data", ("batch", "data")),
        ("upto-selection", ("batch", "data", "selection")),
        ("upto-evaluation", ("batch", "data", "selection", "evaluation"))]
    assert {k: (a.moved, b.moved) for k, (a, b) in built.alone.items()} == {
        "batch": (("batch",), ()), "data": (("data",), ()), "selection": (("data", "selection"), ("data",)),
        "evaluation": (("data", "evaluation"), ("data",))}
    # paper, 4 cumulative, data alone, data+selection, data+evaluation (batch alone = upto-batch)
    assert len(built.steps) == 8
    assert built.alone["batch"][0].name == "upto-batch"


def test_a_knob_whose_need_is_not_moved_before_it_is_refused():
    with pytest.raises(ValueError, match=r"knob selection needs \['data'\]"):
        paths.build(["selection", "data"], {"selection": ("data",)})


@pytest.fixture(scope="module")
def full():
    return Plan.load(CONFIG_DIR, {"preset": "full"})


def _settings_between(plan, a: Run, b: Run) -> set[str]:
    x, y = plan.resolve(a), plan.resolve(b)
    differ = {k for k, v in setting_values(x).items() if setting_values(y)[k] != v}
    if x["data"].get("fold") != y["data"].get("fold"):
        differ.add("data.fold")
    return differ


def test_each_one_at_a_time_run_differs_from_its_base_in_its_knobs_settings_alone(full):
    specs = {k.name: k for k in knob_recipes.catalogue(full).knobs}
    checked = 0
    for path in full.knob_paths("suite.knobs"):
        for method, fair_method in path.methods:
            def run(step, seed=0):
                return full.knob_run_of(path, method, fair_method, step, seed)

            for knob in path.knobs:
                step, base = path.paths.alone[knob.name]
                allowed = set(specs[knob.name].settings) | ({"data.fold"} if specs[knob.name].protocol else set())
                for seed in (0, 1):
                    differ = _settings_between(full, run(step, seed), run(base, seed))
                    assert differ <= allowed, (path.paper, path.dataset, method, knob.name, differ)
                    assert differ or specs[knob.name].protocol == "evaluation"  # joining the folds is no setting
                against_paper = _settings_between(full, run(step), run(path.paths.paper))
                assert against_paper <= {s for n in step.moved for s in specs[n].settings} | {"data.fold"}
                checked += 1
    assert checked > 200


def test_every_run_of_the_plan_differs_from_its_paper_recipe_in_its_steps_knobs_alone(full):
    specs = {k.name: k for k in knob_recipes.catalogue(full).knobs}
    papers: dict = {}
    for run, info in full.knob_run_index("suite.knobs").items():
        paper = full.knob_run_of(info.path, info.method, info.fair_method, info.path.paths.paper, run.seed)
        if paper not in papers:
            papers[paper] = setting_values(full.resolve(paper))
        resolved = full.resolve(run)
        differ = {k for k, v in setting_values(resolved).items() if papers[paper][k] != v}
        moved = {s for name in info.step.moved for s in specs[name].settings}
        assert differ <= moved, (run, differ - moved)
        assert bool(resolved["data"].get("fold")) == ("data" in info.step.moved), run


def test_every_path_run_of_full_is_planned_with_five_seeds(full):
    runs = set(full.runs("suite.knobs"))
    assert {r.seed for r in runs} == {0, 1, 2, 3, 4}
    assert {(p.paper, p.dataset) for p in full.knob_paths("suite.knobs")} == {
        (r.paper, r.dataset) for r in knob_recipes.recipes(full)}
    trained = set()
    for path in full.knob_paths("suite.knobs"):
        for method, fair_method in path.methods:
            for step in path.paths.steps:
                folds = range(full.knob_folds) if "evaluation" in step.moved else [0]
                found = {full.knob_run_of(path, method, fair_method, step, seed, fold)
                         for seed in range(5) for fold in folds}
                assert found <= runs and len(found) == 5 * len(folds), (path.paper, path.dataset, method, step)
                trained |= found
    assert trained == runs  # no run outside the paths


def test_a_step_on_folds_is_trained_once_as_the_fold_run_of_its_joined_twin(full):
    path = next(p for p in full.knob_paths("suite.knobs") if p.paper == "ms" and p.dataset == "cub")
    steps = {s.name: s for s in path.paths.steps}
    run = full.knob_run_of(path, "ms", "ms", steps["only-data"], 6)
    assert run.method == "ms@ms-only-evaluation.fold2"
    assert full.knob_twin(path, "ms", "ms", steps["only-selection"]) is None  # no joined step moves the same


def test_a_run_on_folds_is_scored_on_the_test_half_only_where_its_fold_says_so(tmp_path):
    import pandas as pd

    from dmlbench.data import folds

    table = pd.DataFrame({"path": [f"{i}.jpg" for i in range(12)], "label": [i // 2 for i in range(12)],
                          "split": ["train"] * 8 + ["test"] * 4})
    splits = tmp_path / "folds.csv"
    folds.assign(table, 2).to_csv(splits, index=False)
    fair = folds.evaluation_view(table, {"fold": {"splits": str(splits), "index": 1, "of": 2}})
    knob = folds.evaluation_view(table, {"fold": {"splits": str(splits), "index": 1, "of": 2, "scored_on": "test_half"}})
    assert fair["path"].tolist() == [f"{i}.jpg" for i in range(8)]  # the training half: the fair search's view
    assert set(fair.loc[fair["split"] == "test", "label"]) == {2, 3}  # its held-out fold
    assert knob["path"].tolist() == [f"{i}.jpg" for i in range(8, 12)] and set(knob["split"]) == {"test"}


# --- the attribution's arithmetic, on made-up numbers ---------------------------------------------

RECIPE = {"knobs": [{"name": "batch"}, {"name": "data"}, {"name": "evaluation"}],
          "cumulative": ["upto-batch", "upto-data", "upto-evaluation"],
          "alone": {"batch": ["upto-batch", "paper"], "data": ["only-data", "paper"],
                    "evaluation": ["only-evaluation", "only-data"]},
          "moved": {"paper": [], "upto-batch": ["batch"], "upto-data": ["batch", "data"],
                    "upto-evaluation": ["batch", "data", "evaluation"], "only-data": ["data"],
                    "only-evaluation": ["data", "evaluation"]},
          "test_selected": True}


def _made_up(seed):
    rng = np.random.default_rng(seed)
    return {step: {s: float(50 + 10 * rng.random()) for s in range(5)} for step in RECIPE["moved"]}


def test_the_cumulative_steps_add_up_to_the_total():
    values = _made_up(1)
    result = attribution.method_attribution(RECIPE, values)
    total = np.mean(list(values["upto-evaluation"].values())) - np.mean(list(values["paper"].values()))
    assert sum(row["effect"] for row in result["cumulative"]) == pytest.approx(total, abs=1e-9)
    assert result["total"] == pytest.approx(total, abs=1e-9)
    assert result["interaction"] == pytest.approx(total - sum(r["effect"] for r in result["alone"]), abs=1e-9)


def test_a_knobs_effect_alone_is_scipys_paired_test_against_its_base():
    values = _made_up(2)
    result = attribution.method_attribution(RECIPE, values)
    row = next(r for r in result["alone"] if r["knob"] == "evaluation")
    x = np.array([values["only-evaluation"][s] for s in range(5)])
    y = np.array([values["only-data"][s] for s in range(5)])
    test = stats.ttest_rel(x, y)
    ci = test.confidence_interval(0.95)
    assert (row["effect"], row["low"], row["high"], row["p"]) == pytest.approx(
        ((x - y).mean(), ci.low, ci.high, test.pvalue))
    ps = [r["p"] for r in result["alone"]]
    m = len(ps)
    smallest = min(range(m), key=lambda i: ps[i])
    assert result["alone"][smallest]["p_holm"] == pytest.approx(min(1.0, m * ps[smallest]))


def test_an_effect_of_two_seeds_or_of_zero_spread_is_shown_and_not_tested():
    """The demo's case: both paired differences exactly one test image (0.833 %) gave a
    zero-width interval and Holm p = 0.000; now no test, and the table says why."""
    values = _made_up(3)
    values["only-evaluation"] = {s: values["only-data"][s] - 0.833 for s in range(5)}  # zero spread
    result = attribution.method_attribution(RECIPE, values)
    row = next(r for r in result["alone"] if r["knob"] == "evaluation")
    assert row["effect"] == pytest.approx(-0.833) and row["untested"] == attribution.NO_SPREAD
    assert math.isnan(row["p"]) and not row["significant"]
    two = {step: {s: v for s, v in seeds.items() if s < 2} for step, seeds in _made_up(4).items()}
    for row in attribution.method_attribution(RECIPE, two)["alone"]:
        assert row["untested"] == attribution.TOO_FEW and not row["significant"] and math.isnan(row["p_holm"])


def test_the_paper_epoch_chosen_on_the_test_set_is_read_only_where_epochs_were_scored_there(tmp_path):
    path = tmp_path / "metrics.json"
    path.write_text('{"metrics": {"recall@1": 0.5}, "test_selected": {"epoch": 3, "recall@1": 0.6}}')
    assert attribution.step_value(path, RECIPE, "upto-batch") == pytest.approx(60.0)
    assert attribution.step_value(path, RECIPE, "upto-data") == pytest.approx(50.0)
    assert attribution.step_value(path, {**RECIPE, "test_selected": False}, "paper") == pytest.approx(50.0)


@pytest.mark.parametrize("text", ["", '{"metrics": {"recall@1": 0.5', '{"metrics": {}}'])
def test_a_garbled_step_result_is_named_with_what_to_do(tmp_path, text):
    from dmlbench.errors import DmlbenchError

    path = tmp_path / "metrics.json"
    path.write_text(text)
    with pytest.raises(DmlbenchError, match=r"metrics\.json cannot be read as a step's result .*delete it and rerun"):
        attribution.step_value(path, RECIPE, "paper")


def test_the_landing_line_names_the_knobs_that_close_the_gap():
    gap = {"paper": 4.0, "fair": 1.0, "changes": [{"knob": "batch", "change": -2.5}, {"knob": "data", "change": -0.5},
                                                  {"knob": "evaluation", "change": 0.0}]}
    line = attribution.landing_line("ms", "contrastive", "MS", [gap],
                                    {"batch": "batch size", "data": "data trained on", "evaluation": "evaluation"})
    assert line.startswith("ms: 3.0 of the 4.0-point gap of MS over contrastive is explained by: "
                           "batch size (2.5), data trained on (0.5)")
    assert "no gap" in attribution.landing_line("ms", "c", "MS", [{**gap, "paper": -1.0}], {})
    assert not math.isnan(gap["paper"])


def test_digits_takes_the_cub_recipe_where_a_preset_names_it():
    demo = Plan.load(CONFIG_DIR, {"preset": "demo", "experiments": ["suite.knobs"],
                                  "subset": {"suite.knobs": {"datasets": ["cub", "digits"]}}})
    by_dataset = {p.dataset: p for p in demo.knob_paths("suite.knobs")}
    assert by_dataset["digits"].stand_in == "cub" and by_dataset["cub"].stand_in is None
    assert by_dataset["digits"].paper == by_dataset["cub"].paper
    assert [s.moved for s in by_dataset["digits"].paths.steps] == [s.moved for s in by_dataset["cub"].paths.steps]
    runs = demo.runs("suite.knobs")
    digits, cub = ({r.method: r for r in runs if r.dataset == d and r.seed == 0} for d in ("digits", "cub"))
    assert digits.keys() == cub.keys()
    for name in digits:  # the method is the CUB paper row's; the data are digits'
        a, b = demo.resolve(digits[name]), demo.resolve(cub[name])
        assert a["method"] == b["method"] and a["data"]["manifest"] != b["data"]["manifest"]
