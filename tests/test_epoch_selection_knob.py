"""Epoch selection is its own knob (docs/knobs.md): a suite.knobs run on folds that keeps a paper's
choice of epoch on the test set scores its epochs on the test half and keeps the best one, so that
the optimism of choosing on the test set is booked to "epoch selection", never to "data trained on"."""

import json

import pytest
import torch

from conftest import full_plan
from dmlbench.evaluation import evaluate_run
from dmlbench.knobs import attribution, paths
from dmlbench.run_config import RunConfig
from dmlbench.training.early_stopping import Selection

# Recall@1 per epoch on the test half, and on the validation fold: the test set's best epoch (3) is
# 4 points above the last one, and the validation fold would choose epoch 2
TEST = [0.50, 0.58, 0.66, 0.62]
VALIDATION = [0.40, 0.49, 0.47, 0.45]


def kept_epoch(cfg: RunConfig, curve: list[float]) -> int:
    """The epoch whose weights a training keeps (`Selection.for_run`), each epoch's weights a
    one-number model holding its epoch."""
    history, model = [], torch.nn.Linear(1, 1, bias=False)
    selection = Selection.for_run(cfg, history, None)
    for epoch, value in enumerate(curve, start=1):
        torch.nn.init.constant_(model.weight, float(epoch))
        history.append({"epoch": epoch, "recall@1": value})
        selection.after_epoch(history[-1], model)
    selection.restore_best(model, log=lambda message: None)
    return int(model.weight.item())


def fold_config(epochs_on_test: bool, patience: int | None = None) -> RunConfig:
    fold = {"splits": "x.csv", "index": 0, "of": 4, "scored_on": "test_half"}
    if epochs_on_test:
        fold["epochs_scored_on"] = "test_half"
    return RunConfig.from_dict(
        {"epochs": len(TEST), "data": {"fold": fold}, "early_stopping": {"patience": patience, "metric": "recall@1"}}
    )


def test_a_run_on_folds_keeping_the_papers_choice_keeps_its_best_epoch_on_the_test_half():
    assert kept_epoch(fold_config(epochs_on_test=True), TEST) == 3
    assert kept_epoch(fold_config(epochs_on_test=False), TEST) == 4  # no selection: the last epoch
    assert kept_epoch(fold_config(epochs_on_test=False, patience=10), VALIDATION) == 2  # the fair: validation
    sparse = Selection.for_run(fold_config(epochs_on_test=True), [{"epoch": 1}], None)
    sparse.after_epoch({"epoch": 1}, torch.nn.Linear(1, 1))  # an epoch the paper's eval.every skips


def test_the_test_set_optimism_is_booked_to_epoch_selection_not_to_data(tmp_path):
    """Three knobs (data; selection and evaluation need it), the data changing nothing: each step's
    number follows from the curves as the runs keep their epoch (the paper: best on test from its
    history; on folds without the selection knob: the kept best epoch on the test half; with it:
    the validation fold's). Data's share is 0; selection's is test at the validation's epoch minus
    the test set's best, −4 points less the validation's own miss."""
    built = paths.build(["data", "selection", "evaluation"], {"selection": ("data",), "evaluation": ("data",)})
    recipe = {
        "knobs": [{"name": k} for k in ("data", "selection", "evaluation")],
        "cumulative": [s.name for s in built.cumulative],
        "alone": {k: [a.name, b.name] for k, (a, b) in built.alone.items()},
        "back": {k: [a.name, b.name] for k, (a, b) in built.back.items()},
        "moved": {s.name: list(s.moved) for s in built.steps},
        "test_selected": True,
    }
    values = {}
    for step, moved in recipe["moved"].items():
        folder = tmp_path / step
        folder.mkdir()
        if not moved:  # the paper's run: every epoch scored on the test set, its history read
            (folder / "epochs.jsonl").write_text(
                "".join(json.dumps({"epoch": e + 1, "recall@1": v}) + "\n" for e, v in enumerate(TEST))
            )
            result = {
                "metrics": {"recall@1": TEST[-1]},
                "test_selected": evaluate_run.test_selected_epoch(folder / "epochs.jsonl"),
            }
        else:
            on_test = "selection" not in moved
            cfg = fold_config(epochs_on_test=on_test, patience=None if on_test else 10)
            result = {"metrics": {"recall@1": TEST[kept_epoch(cfg, TEST if on_test else VALIDATION) - 1]}}
        (folder / "metrics.json").write_text(json.dumps(result))
        values[step] = {s: attribution.step_value(folder / "metrics.json", recipe, step) for s in range(3)}
    shares = {r["knob"]: r["effect"] for r in attribution.method_attribution(recipe, values)["shares"]}
    assert shares["data"] == pytest.approx(0.0, abs=1e-9)
    assert shares["evaluation"] == pytest.approx(0.0, abs=1e-9)
    assert shares["selection"] == pytest.approx(100 * (TEST[1] - max(TEST)))  # epoch 2 on validation


@pytest.fixture(scope="module")
def full():
    return full_plan()


def test_the_profs_paths_at_full_score_their_epochs_on_the_test_half_where_they_move_data_alone(full):
    """profs selects on the test set: its runs on folds that keep the paper's selection score their
    epochs on the test half (and keep the best); those that move the selection, and every other
    paper's runs, do not."""
    from dmlbench.config.jobs import of as jobs_of

    recipes = jobs_of(full).knob_aggregate_spec("suite.knobs")["recipes"]
    moved = {(r["paper"], r["dataset"]): r["moved"] for r in recipes}
    selects_on_test = {r["paper"] for r in recipes if r["test_selected"]}
    on_test = 0
    for run in full.runs("suite.knobs"):
        fold = full.resolve(run)["data"].get("fold")
        if not fold:
            continue
        paper, step = run.method.split("@")[1].split(".fold")[0].split("-", 1)
        expected = paper in selects_on_test and "selection" not in moved[paper, run.dataset][step]
        assert (fold.get("epochs_scored_on") == "test_half") == expected, (run.method, fold)
        on_test += expected
    assert selects_on_test == {"profs"} and on_test == 240
