"""The fair protocol (`suite.fair`): folds, the search on validation only, the interval, the
journal's resumption, and the refusal of a method without a search space."""

import json
import math
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dmlbench.config import fair_catalogue, validation
from dmlbench.config.loading import deep_merge
from dmlbench.config.plan import Plan
from dmlbench.config.run import FairRun
from dmlbench.data import folds, manifest
from dmlbench.data.datasets import cub
from dmlbench.data.prepare import prepare
from dmlbench.core.errors import ConfigError, DatasetError, DmlbenchError
from dmlbench.fair import fold_run, space, study
from dmlbench.fair import journal as journals
from dmlbench.fair.intervals import mean_interval
from dmlbench.core.io import read_json, write_json
from dmlbench.run_config import RunConfig

from conftest import CONFIG_DIR, python_env, snakemake_command
from dmlbench.config.jobs import of as jobs_of
from processes import run, start, stop


def _cub_table(shared_datasets, tmp_path) -> pd.DataFrame:
    root = tmp_path / "cub"
    shutil.copytree(shared_datasets / "CUB_200_2011", root / "CUB_200_2011")
    return cub.parse_cub(root)


def test_folds_partition_the_first_half_of_cubs_classes_and_hold_no_test_class(shared_datasets, tmp_path):
    table = _cub_table(shared_datasets, tmp_path)
    classes = sorted(table["label"].unique())
    first_half = set(classes[: len(classes) // 2])
    assert set(table.loc[table["split"] == "train", "label"]) == first_half  # the training half
    splits = folds.assign(table, 4)
    parts = {p: set(splits.loc[splits["part"] == p, "label"]) for p in set(splits["part"])}
    fold_sets = [parts[f"fold{k}"] for k in range(4)]
    assert set().union(*fold_sets) == first_half
    assert sum(len(s) for s in fold_sets) == len(first_half)  # disjoint
    assert [len(s) for s in fold_sets] == [25, 25, 25, 25]
    assert all(max(fold_sets[k]) < min(fold_sets[k + 1]) for k in range(3))  # in class order
    assert parts["test"] == set(classes) - first_half
    assert (splits.loc[splits["part"] == "test"].index == table.index[table["split"] == "test"]).all()
    for k in range(4):
        view = folds.fold_view(table, splits, k)
        assert set(view["label"]) <= first_half  # no test class in a fold's view
        assert set(view.loc[view["split"] == "test", "label"]) == fold_sets[k]
        assert set(view.loc[view["split"] == "train", "label"]) == first_half - fold_sets[k]
        assert len(view) == (table["split"] == "train").sum()


def test_a_split_file_of_another_manifest_is_refused(tmp_path):
    out = tmp_path / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", tmp_path, out, fixture_size={"n_classes": 16, "per_class": 3, "image_size": 24})
    table = manifest.read(out)
    splits = folds.write(out, out.parent / "fair_folds2.csv", 2)
    assert folds.read(out.parent / "fair_folds2.csv", table).equals(splits)
    shuffled = splits.assign(label=splits["label"].sample(frac=1, random_state=0).to_numpy())
    shuffled.to_csv(out.parent / "bad.csv", index=False)
    with pytest.raises(Exception, match="does not belong to the manifest"):
        folds.read(out.parent / "bad.csv", table)
    (out.parent / "garbled.csv").write_bytes(b'path,label,part\n"unclosed\n\xff\xfe')
    with pytest.raises(DatasetError, match=r"garbled.csv cannot be read .*delete it and rerun"):
        folds.read(out.parent / "garbled.csv", table)


def test_a_damaged_parameter_file_is_named(tmp_path):
    (tmp_path / "params.json").write_text('{"slot": 0, "par')
    with pytest.raises(DmlbenchError, match=r"params.json is damaged .*delete it and rerun"):
        study.tell({"journal": str(tmp_path / "j"), "study": "s"}, tmp_path / "params.json", [], tmp_path / "r.json")


def test_interval_against_the_t_table_and_its_coverage():
    # Student-t quantiles t(0.975, df) from the printed table: df 1, 4, 9
    for n, quantile in ((2, 12.706), (5, 2.776), (10, 2.262)):
        x = np.arange(n, dtype=float) ** 1.5
        mean, half = mean_interval(x)
        assert mean == pytest.approx(x.mean())
        by_hand = quantile * math.sqrt(sum((v - x.mean()) ** 2 for v in x) / (n - 1)) / math.sqrt(n)
        assert half == pytest.approx(by_hand, rel=1e-3)
    rng = np.random.default_rng(0)  # the interval covers the true mean 95 % of the time
    covered = [
        abs(mean - 3.0) <= half for mean, half in (mean_interval(rng.normal(3.0, 2.0, size=10)) for _ in range(4000))
    ]
    assert np.mean(covered) == pytest.approx(0.95, abs=0.012)
    with pytest.raises(ValueError):
        mean_interval([0.5])


def _fair_plan(**fair) -> Plan:
    config = {"preset": "smoke", "experiments": ["suite.fair"]}
    if fair:
        config["subset"] = {"suite.fair": {"fair": fair}}
    return Plan.load(CONFIG_DIR, config)


def _fold_spec(plan, method: str, stage: str, fold: int) -> dict:
    """What a round (search) or a repetition (final) job hands fold_run for one fold on cub."""
    if stage == "search":
        job = jobs_of(plan).fair_round_spec("suite.fair", "cub", method, 0)
        folds = job["trials"][0]["folds"]
    else:
        job = jobs_of(plan).fair_repetition_spec("suite.fair", "cub", method, 0)
        folds = job["folds"]
    side = jobs_of(plan).fair_side("suite.fair", "cub", method)
    return {"run": {**folds[fold]["run"], **side}, "space": job["space"]}


def _fixture_fold_spec(tmp_path, method="ms", stage="search", fold=0) -> tuple[dict, Path]:
    """A fold run's spec of the smoke preset over a fixture written here, without the store."""
    out = tmp_path / "data" / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", tmp_path / "data", out, fixture_size={"n_classes": 16, "per_class": 6, "image_size": 40})
    splits = out.parent / "fair_folds2.csv"
    folds.write(out, splits, 2)
    plan = _fair_plan()
    spec = json.loads(json.dumps(_fold_spec(plan, method, stage, fold)))  # as the rule sends it
    spec["run"]["data"] = {"manifest": str(out), "fold": {"splits": str(splits), "index": fold, "of": 2}}
    return spec, out


def test_the_search_reads_the_validation_fold_only_never_the_test_half(tmp_path):
    spec, out = _fixture_fold_spec(tmp_path)
    params = tmp_path / "params.json"
    write_json(params, {"params": {"loss.alpha": 2.0, "loss.beta": 50.0, "loss.gamma": 0.5, "miner.epsilon": 0.1}})
    first = fold_run.run(spec, params, tmp_path / "run1", tmp_path / "v1.json", log=lambda m: None)
    assert first["status"] == "finished"
    table = manifest.read(out)
    test_rows = table[table["split"] != "train"]
    for path in test_rows["path"]:  # every test-half image becomes unreadable
        (out.parent / path).write_bytes(b"not an image")
    again = fold_run.run(spec, params, tmp_path / "run2", tmp_path / "v2.json", log=lambda m: None)
    assert again["validation"] == first["validation"]
    assert again["selected_epoch"] == first["selected_epoch"]
    # a final run does read the test half: there the broken images stop it
    with pytest.raises(Exception):
        fold_run.run(spec, params, tmp_path / "run3", tmp_path / "v3.json", tmp_path / "test.npz", log=lambda m: None)


def _ask_spec(tmp_path, slot: int) -> dict:
    plan = _fair_plan()
    spec = jobs_of(plan).fair_ask_spec("suite.fair", "cub", "ms", slot)
    spec["journal"] = str(tmp_path / "study.journal")
    return spec


def test_the_papers_setting_is_the_first_trial_and_asking_again_repeats_nothing(tmp_path):
    first = study.ask(_ask_spec(tmp_path, 0), tmp_path / "p0.json")
    assert first["paper"] and first["params"] == {
        "loss.alpha": 2.0,
        "loss.beta": 50.0,
        "loss.gamma": 0.5,
        "miner.epsilon": 0.1,
    }
    second = study.ask(_ask_spec(tmp_path, 1), tmp_path / "p1.json")
    assert second["trial"] != first["trial"] and not second["paper"]
    dims = {d.path: d for d in space.from_json(_ask_spec(tmp_path, 1)["space"]).dimensions}
    assert all(dims[k].low <= v <= dims[k].high for k, v in second["params"].items())
    assert study.ask(_ask_spec(tmp_path, 1), tmp_path / "p1b.json") == second  # a rerun gets the same trial
    folds_out = []
    for k, value in enumerate((0.4, 0.6)):
        path = tmp_path / f"v{k}.json"
        write_json(path, {"status": "finished", "params": second["params"], "validation": {"map@r": value}})
        folds_out.append(path)
    told = study.tell(_ask_spec(tmp_path, 1), tmp_path / "p1.json", folds_out, tmp_path / "r1.json")
    assert told["objective"] == pytest.approx(0.5)
    study.tell(_ask_spec(tmp_path, 1), tmp_path / "p1.json", folds_out, tmp_path / "r1.json")  # told once
    trials = journals.open_study(tmp_path / "study.journal", _ask_spec(tmp_path, 0)["study"]).get_trials()
    assert len(trials) == 2 and [t.value for t in trials if t.value is not None] == [pytest.approx(0.5)]
    wrong = tmp_path / "wrong.json"
    write_json(wrong, {"status": "finished", "params": first["params"], "validation": {"map@r": 0.9}})
    with pytest.raises(Exception, match="not trial"):
        study.tell(_ask_spec(tmp_path, 1), tmp_path / "p1.json", [wrong, folds_out[1]], tmp_path / "r1.json")


def test_the_objective_is_the_mean_validation_map_at_r_and_a_diverged_fold_fails_the_trial():
    assert study.fold_objective(
        [
            {"status": "finished", "validation": {"map@r": 0.2, "recall@1": 0.9}},
            {"status": "finished", "validation": {"map@r": 0.4, "recall@1": 0.1}},
        ]
    ) == pytest.approx(0.3)
    assert study.fold_objective([{"status": "finished", "validation": {"map@r": 0.2}}, {"status": "diverged"}]) is None


def _catalogue_copy(tmp_path) -> Path:
    folder = tmp_path / "config"
    shutil.copytree(CONFIG_DIR, folder)
    return folder


def test_a_users_own_setting_outside_its_search_range_is_called_theirs(tmp_path):
    """A method of the user's methods file: 'your loss.margin', never 'the paper's' (issue 72)."""
    methods = tmp_path / "mine.yaml"
    entry = {"label": "Mine", "loss": {"name": "contrastive", "pos_margin": 1.0, "neg_margin": 0.5}}
    entry |= {"sampler": "m_per_class", "search": {"loss.neg_margin": {"low": 0.6, "high": 0.9}}}
    methods.write_text(yaml.safe_dump({"methods": {"mine": entry}, "join": ["suite.fair"]}))
    with pytest.raises(ConfigError, match=r"your loss.neg_margin = 0.5 lies outside method mine's .*\(your setting"):
        Plan.load(CONFIG_DIR, {"preset": "smoke", "methods_file": str(methods), "experiments": ["suite.fair"]})


def test_a_method_without_a_search_space_is_refused_before_any_job_naming_it(tmp_path):
    folder = _catalogue_copy(tmp_path)
    methods = yaml.safe_load((folder / "methods.yaml").read_text())
    del methods["dro_topk_m"]["search"]
    (folder / "methods.yaml").write_text(yaml.safe_dump(methods))
    with pytest.raises(ConfigError, match="method dro_topk_m has no search space"):
        Plan.load(folder, {"preset": "smoke"})  # what the Snakefile does first: before any job
    methods["dro_topk_m"]["search"] = {"loss.margin": {"low": 0.5, "high": 1.0}}
    (folder / "methods.yaml").write_text(yaml.safe_dump(methods))
    with pytest.raises(ConfigError, match=r"paper's loss.margin = 0.2 lies outside method dro_topk_m"):
        Plan.load(folder, {"preset": "smoke"})
    methods["dro_topk_m"]["search"] = {"loss.nonsense": {"low": 0.0, "high": 1.0}}
    (folder / "methods.yaml").write_text(yaml.safe_dump(methods))
    with pytest.raises(ConfigError, match="method dro_topk_m.search: loss.nonsense: loss 'dro_topk' has no parameter"):
        Plan.load(folder, {"preset": "smoke"})


def test_fair_settings_are_checked_by_value():
    with pytest.raises(ConfigError, match=r"suite.fair.fair.repetitions: 1 is less than the minimum of 2"):
        _fair_plan(repetitions=1)
    with pytest.raises(ConfigError, match=r"suite.fair.fair.*'rounds' was unexpected"):
        _fair_plan(rounds=3)
    plan = Plan.load(
        CONFIG_DIR,
        {
            "preset": "smoke",
            "experiments": ["suite.fair"],  # command-line text
            "subset": {"suite.fair": {"fair": {"trials": "3"}}},
        },
    )
    assert plan.fair_settings("suite.fair")["trials"] == 3
    catalogue = dict(
        plan.experiments["suite.fair"],
        fair={"folds": 1, "trials": 2, "parallel": 1, "repetitions": 2, "rounds_per_job": 1, "repetitions_per_job": 1},
    )
    plan.experiments["suite.fair"] = catalogue
    with pytest.raises(ConfigError, match=r"experiment suite.fair.fair.folds: an integer ≥ 2, not 1"):
        validation.check_fair(plan, "suite.fair", "experiment suite.fair")
    with pytest.raises(ConfigError, match=r"suite.fair.fair.rounds_per_job: 0 is less than the minimum of 1"):
        _fair_plan(rounds_per_job=0)


def test_a_method_that_changes_the_protocols_trunk_is_refused(tmp_path):
    folder = _catalogue_copy(tmp_path)
    methods = yaml.safe_load((folder / "methods.yaml").read_text())
    methods["ms"]["train"] = {"model": {"embedding_dim": 512}}
    (folder / "methods.yaml").write_text(yaml.safe_dump(methods))
    with pytest.raises(ConfigError, match="method ms.train sets model.embedding_dim"):
        Plan.load(folder, {"preset": "smoke"})


def _nested(path: str, value) -> dict:
    head, _, rest = path.partition(".")
    return {head: _nested(rest, value) if rest else value}


@pytest.mark.parametrize(
    "method, key, value",
    [
        ("ms", "schedule.milestones", [10]),
        ("ms", "batch.per_class", 2),
        ("ms", "optimizer.momentum", 0.5),
        ("ms", "optimizer.head_lr_mult", 10.0),
        ("ms", "optimizer.loss_lr_mult", 1.0),
        ("softtriple", "optimizer.loss_params.optimizer", "sgd"),
        ("ms", "model.normalize", False),
        ("ms", "scheme.name", "profs"),
        ("ms", "batch.small_classes", "repeat"),
        ("ms", "epochs", 5),
        ("npair", "optimizer.momentum", 0.5),  # a method with necessities: others still refused
    ],
)
def test_the_recipe_guard_refuses_each_recipe_key_naming_method_and_key(tmp_path, method, key, value):
    folder = _catalogue_copy(tmp_path)
    methods = yaml.safe_load((folder / "methods.yaml").read_text())
    methods[method]["train"] = deep_merge(methods[method].get("train") or {}, _nested(key, value))
    (folder / "methods.yaml").write_text(yaml.safe_dump(methods))
    with pytest.raises(ConfigError, match=rf"method {method}.train sets {re.escape(key)}, which the fair protocol"):
        Plan.load(folder, {"preset": "smoke"})


def test_only_the_documented_necessities_pass_the_guard(tmp_path):
    plan = Plan.load(CONFIG_DIR, {"preset": "full", "experiments": ["suite.fair"]})
    fair = plan.experiments["suite.fair"]
    needs = fair["necessities"]
    for method in fair["methods"]:  # every key a fair method's train sets is one of its necessities
        for path in fair_catalogue.leaf_paths(plan.methods[method].get("train")):
            assert any(path == n or path.startswith(n + ".") for n in needs.get(method, {})), (method, path)
    assert plan.resolve(FairRun("suite.fair", "cub", "npair", 0))["batch"]["per_class"] == 2  # N-pair's own
    assert plan.resolve(FairRun("suite.fair", "cub", "angular_fair", 0))["batch"]["per_class"] == 4
    folder = _catalogue_copy(tmp_path)  # a necessity may not open the trunk
    suite = yaml.safe_load((folder / "experiments" / "suite.yaml").read_text())
    suite["suite.fair"]["necessities"]["npair"]["model.embedding_dim"] = "wants 512"
    (folder / "experiments" / "suite.yaml").write_text(yaml.safe_dump(suite))
    with pytest.raises(ConfigError, match=r"necessities.npair: model.embedding_dim would let the method change"):
        Plan.load(folder, {"preset": "smoke"})


def _similarity(distance: float) -> float:
    """A margin on distances of unit vectors as a similarity: S = 1 − d²/2 (a negative one ≡ 0)."""
    return 1 - max(distance, 0.0) ** 2 / 2


# The reality check's published optima (powerful-benchmarker docs/papers/mlrc.md, "Optimal
# hyperparameters", CUB200 / Cars196 / SOP at batch 32); rates as learning rates.
MS_MINER = {
    "loss.alpha": [17.97, 7.49, 15.94],
    "loss.beta": [75.66, 47.99, 156.61],
    "loss.gamma": [0.77, 0.63, 0.72],
    "miner.epsilon": [0.39, 0.72, 0.34],
}
SOFTTRIPLE = {
    "rate": [5.37e-5, 1.40e-4, 8.68e-5],
    "loss.la": [78.02, 17.69, 100.0],
    "loss.gamma": [58.95, 19.18, 47.90],
    "loss.tau": [0.3754, 0.0669],
    "loss.margin": [0.4307, 0.3588, 0.3145],
}
MARGIN = {
    "rate": [1.31e-3, 1.11e-4, 1.82e-3],
    "loss.margin": [0.0878, 0.0781, 0.0915],
    "loss.beta": [0.7838, 1.3164, 1.1072],
}
TRIPLET = {"loss.margin": [0.0961, 0.1190, 0.0451]}
REALITY_CHECK = {
    "contrastive": {
        "loss.pos_margin": [_similarity(d) for d in (-0.2, 0.2652, 0.2850)],
        "loss.neg_margin": [_similarity(d) for d in (0.3841, 0.5409, 0.5130)],
    },
    "triplet_semihard": TRIPLET,
    "triplet_hard": TRIPLET,
    "t_profs": TRIPLET,
    "raw": {"loss.alpha": [0.01, 14.35, 8.49], "loss.beta": [50.60, 75.83, 57.38], "loss.gamma": [0.56, 0.66, 0.41]},
    "ms": MS_MINER,
    "ms_profs": MS_MINER,
    "softtriple": SOFTTRIPLE,
    "st_profs": SOFTTRIPLE,
    "proxy_nca": {"rate": [6.04e-3, 4.43e-3, 5.28e-4], "loss.scale": [13.98, 7.97, 10.73]},
    "margin_hard_fair": MARGIN,
    "m_profs_fair": MARGIN,
    "fastap": {"loss.num_bins": [17, 27, 16]},
}


def test_every_search_space_holds_the_papers_value_and_the_reality_checks_optima():
    from dmlbench.methods.criterion import Criterion

    plan = Plan.load(CONFIG_DIR, {"preset": "full", "experiments": ["suite.fair"]})
    methods = plan.experiments["suite.fair"]["methods"]
    assert set(REALITY_CHECK) <= set(methods)
    for method in methods:
        cfg = plan.resolve(FairRun("suite.fair", "cub", method, 0))
        dims = {d.path: d for d in plan.fair_space(method).dimensions}
        for path, d in dims.items():  # the paper's value, as the run resolves it
            assert d.low <= space.value_at(cfg, path) <= d.high, (method, path)
        lr = cfg["optimizer"]["lr"]
        for path, optima in REALITY_CHECK.get(method, {}).items():
            d = dims["optimizer.loss_lr_mult" if path == "rate" else path]
            for optimum in optima:
                value = optimum / lr if path == "rate" else optimum
                assert d.low <= value * (1 + 1e-12) and value <= d.high * (1 + 1e-12), (method, path, optimum)
        learnable = [
            p for p in Criterion(cfg["method"], num_classes=4, embedding_dim=8).parameters() if p.requires_grad
        ]
        if learnable:  # the loss parameters' rate searched over [1e-6, 1] on a log scale
            rate = dims["optimizer.loss_lr_mult"]
            assert rate.log and rate.low * lr <= 1e-6 * (1 + 1e-9) and rate.high * lr >= 1 - 1e-9, method
            assert cfg["optimizer"]["loss_params"]["optimizer"] == "shared", method


def test_final_repetitions_use_seeds_no_trial_used():
    plan = Plan.load(CONFIG_DIR, {"preset": "full", "experiments": ["suite.fair"]})
    runs = plan.fair_runs()
    trial_seeds = {plan.resolve(r)["seed"] for r in runs if r.stage == "search" and r.fold == 0 and r.method == "ms"}
    trial_seeds |= {r.seed for r in runs if r.stage == "search"}
    final = [r for r in runs if r.stage == "final"]
    final_seeds = {r.seed for r in final} | {plan.resolve(r)["seed"] for r in final if r.method == "ms" and r.fold == 0}
    assert final_seeds and not final_seeds & trial_seeds
    repetitions = plan.fair_settings("suite.fair")["repetitions"]
    assert len({r.seed for r in final if r.method == "ms" and r.dataset == "cub"}) == repetitions  # one each
    handed = jobs_of(plan).fair_repetition_spec("suite.fair", "cub", "ms", 0)["folds"][1]["run"]  # what the job trains
    assert handed["seed"] not in trial_seeds and handed["seed"] in {r.seed for r in final}


def test_the_paper_number_map_is_complete_at_full_and_names_printed_numbers(tmp_path):
    plan = Plan.load(CONFIG_DIR, {"preset": "full", "experiments": ["suite.fair"]})
    fair = plan.experiments["suite.fair"]
    catalogue = {}
    for path in (CONFIG_DIR / "experiments").glob("*.yaml"):
        catalogue.update(yaml.safe_load(path.read_text()))
    recall = fair_catalogue.paper_recall_at_1(plan, "suite.fair", plan.datasets_of("suite.fair"))
    for method in plan.fair_methods("suite.fair"):
        entry = fair["paper_numbers"][method]
        if "none" in entry:
            assert entry["none"].strip() and method not in recall
            continue
        for experiment, row in entry.items():
            printed = {**(catalogue[experiment].get("reported") or {}), **(catalogue[experiment].get("quoted") or {})}[
                row
            ]
            found = {
                d: v["recall@1"] for d, v in printed.items() if "recall@1" in v and d in plan.datasets_of("suite.fair")
            }
            assert found, (method, experiment, row)
            for dataset, value in found.items():
                shown, source = recall[method][dataset]
                if source == experiment:
                    assert float(shown) == value
    folder = _catalogue_copy(tmp_path)
    suite = yaml.safe_load((folder / "experiments" / "suite.yaml").read_text())
    del suite["suite.fair"]["paper_numbers"]["fastap"]
    (folder / "experiments" / "suite.yaml").write_text(yaml.safe_dump(suite))
    with pytest.raises(ConfigError, match=r"suite.fair.paper_numbers.fastap: missing"):
        Plan.load(folder, {"preset": "smoke"})
    suite["suite.fair"]["paper_numbers"]["fastap"] = {"fastap.t3": "fastap_hard_r18x"}
    (folder / "experiments" / "suite.yaml").write_text(yaml.safe_dump(suite))
    with pytest.raises(ConfigError, match=r"fastap.t3 has no Recall@1 of row 'fastap_hard_r18x'"):
        Plan.load(folder, {"preset": "smoke"})


def test_tied_settings_follow_their_source():
    tied = space.parse(
        "triplet_semihard",
        {"search": {"loss.margin": {"low": 0, "high": 1}, "miner.margin": {"same_as": "loss.margin"}}},
    )
    cfg = {"method": {"loss": {"margin": 0.1}, "miner": {"margin": 0.1}}}
    moved = space.apply(cfg, tied, {"loss.margin": 0.3})
    assert moved["method"]["loss"]["margin"] == moved["method"]["miner"]["margin"] == 0.3
    assert cfg["method"]["loss"]["margin"] == 0.1


def _fold_with_early_stopping(
    tmp_path, epochs: int, patience: int, keep_model: bool = False, log=lambda m: None
) -> dict:
    """A fixture fold trained at the paper's setting with at most `epochs` and this patience."""
    spec, _ = _fixture_fold_spec(tmp_path)
    spec["run"].update(epochs=epochs)
    spec["run"]["keep"]["fold_model"] = keep_model
    spec["run"]["early_stopping"] = {"patience": patience, "metric": "map@r"}
    params = tmp_path / "params.json"
    write_json(params, {"params": space.paper_setting(space.from_json(spec["space"]), spec["run"])})
    return fold_run.run(spec, params, tmp_path / "run", tmp_path / "v.json", log=log)


def test_early_stopping_keeps_the_best_validation_epoch(tmp_path):
    result = _fold_with_early_stopping(tmp_path, epochs=8, patience=1, keep_model=True)
    rows = [json.loads(line) for line in (tmp_path / "run" / "epochs.jsonl").read_text().splitlines()]
    best = max(rows, key=lambda r: r["map@r"])  # the first of equal values
    assert result["selected_epoch"] == best["epoch"]
    assert len(rows) == min(8, best["epoch"] + 1)  # one epoch without improvement, then stop
    assert result["stopped_by"] == ("patience" if len(rows) - best["epoch"] >= 1 else "cap")
    assert read_json(tmp_path / "v.json")["stopped_by"] == result["stopped_by"]
    assert result["validation"]["map@r"] == best["map@r"]
    assert not (tmp_path / "run" / "final_metrics.json").exists()  # no final evaluation: nothing reads it
    from dmlbench.evaluation import evaluate_run

    kept = evaluate_run.evaluate(tmp_path / "run", tmp_path / "again.json")["metrics"]  # the kept model.pt, afresh
    assert kept["map@r"] == pytest.approx(best["map@r"], abs=1e-6)  # model.pt is the selected epoch's
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


def test_a_fold_that_finished_with_these_settings_is_not_trained_again(tmp_path):
    said = []
    first = _fold_with_early_stopping(tmp_path, epochs=2, patience=5, log=said.append)
    assert any(m.startswith("epoch 1/2") for m in said)
    said.clear()
    assert _fold_with_early_stopping(tmp_path, epochs=2, patience=5, log=said.append) == first
    assert said == [f"{tmp_path / 'run'}: finished before with these settings (v.json kept)"]
    said.clear()
    other = _fold_with_early_stopping(tmp_path, epochs=3, patience=5, log=said.append)  # other settings: trained
    assert other["epochs_trained"] == 3 and any(m.startswith("epoch 1/3") for m in said)


def test_a_fold_that_reaches_the_epoch_cap_with_patience_left_is_recorded_as_capped(tmp_path):
    result = _fold_with_early_stopping(tmp_path, epochs=2, patience=5)
    assert result["epochs_trained"] == 2 and result["stopped_by"] == "cap" and result["epoch_cap"] == 2


def test_the_fair_tables_show_trials_capped_folds_notes_and_the_embedding_size(tmp_path):
    from dmlbench.report import fair_section, fair_tables

    plan = Plan.load(CONFIG_DIR, {"preset": "smoke", "experiments": ["suite.fair"]})
    spec = json.loads(json.dumps(jobs_of(plan).fair_aggregate_spec("suite.fair")))
    spec["folder"] = str(tmp_path / "DATASET" / "METHOD")
    metrics = {"p@1": 0.5, "r_precision": 0.3, "map@r": 0.2}
    for i, method in enumerate(spec["methods"]):  # method i: i + 1 capped final folds, i capped trial folds
        folder = tmp_path / "cub" / method
        stops = ["cap"] * (i + 1) + ["patience"] * (4 - i - 1)
        write_json(
            folder / "final" / "summary.json",
            {
                "repetitions": 2,
                "capped_folds": stops.count("cap"),
                "fold_trainings": len(stops),
                "per_repetition": [
                    {mode: {k: v + r / 100 for k, v in metrics.items()} for mode in fair_tables.MODES} for r in range(2)
                ],
                **{mode: {k: {"mean": v, "ci95": 0.01} for k, v in metrics.items()} for mode in fair_tables.MODES},
            },
        )
        write_json(
            folder / "search" / "best.json",
            {"params": {"loss.a": 1.0}, "paper": {"loss.a": 2.0}, "trials": 3, "diverged": 1, "objective": 0.2},
        )
        trials = pd.DataFrame(
            {
                "slot": [0, 1, 2],
                "fold0_stopped_by": ["cap" if i else "patience", "patience", None],
                "fold1_stopped_by": ["patience", "patience", None],
            }
        )
        trials.to_csv(folder / "search" / "trials.csv", index=False)
    out = tmp_path / "report"
    fair_tables.aggregate(spec, out)
    lines = (out / "fair_table.md").read_text().splitlines()
    assert (
        "| trials (diverged) | capped folds (final; search) |"
        in lines[[i for i, l in enumerate(lines) if l.startswith("| method")][0]]
    )
    for i, method in enumerate(spec["methods"]):
        row = next(l for l in lines if l.startswith(f"| {spec['methods'][method]['label']} |"))
        assert row.endswith(f"| 3 (1) | {i + 1}/4; {1 if i else 0}/4 |")
    assert any("N-pair" not in l and l.startswith("- Epoch cap 3:") for l in lines)  # smoke's cap
    assert any(l.startswith("- Left out: Triplet-Semi:") for l in lines)
    assert any(l.startswith("- No paper number for") for l in lines) is False  # smoke's three all have one
    dims = plan.fair_embedding_dims("suite.fair")  # the preset's size (smoke shrinks the model), not the protocol's
    size = plan.resolve(FairRun("suite.fair", "cub", "ms", 0))["model"]["embedding_dim"]
    assert dims == [size]
    assert f"each fold's {size}-d model" in fair_section.caption(dims, 2) and f"({2 * size}-d)" in fair_section.caption(
        dims, 2
    )
    assert "each fold's 64-d model" in fair_section.caption([64], 4) and "(256-d)" in fair_section.caption([64], 4)
    html = fair_section.dataset_table(
        pd.read_csv(out / "fair_table.csv"), "cub", plan.papers, pd.read_csv(out / "fair_pairwise.csv")
    )
    assert "<th rowspan='2'>capped folds</th>" in html and "<td>1/4; 0/4</td>" in html


@pytest.mark.slow
def test_kill_9_during_the_search_resumes_without_losing_or_repeating_a_trial(tmp_path):
    args = [
        "--cores",
        "1",
        "--config",
        "preset=smoke",
        "experiments=[suite.fair]",
        "subset={suite.fair: {datasets: [cub], methods: [ephn_2nd], fair: {folds: 2, trials: 4, parallel: 1,"
        " repetitions: 2}, train: {epochs: 2, eval: {every: 1}, early_stopping: {patience: 1}}}}",
    ]
    search = tmp_path / "results/smoke/suite.fair/cub/ephn_2nd/search"
    child = start(
        snakemake_command(tmp_path, *args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=python_env()
    )
    try:
        deadline = time.time() + 600
        while not (search / "trial2" / "params.json").exists():  # trials 0 and 1 told, trial 2 training
            assert child.poll() is None and time.time() < deadline, "the search ended before the kill"
            time.sleep(0.2)
        os.killpg(child.pid, signal.SIGKILL)  # Snakemake and its jobs, as kill -9 would
    finally:
        stop(child)
    told = {t: (search / f"trial{t}" / "result.json").read_text() for t in (0, 1)}
    assert not (search / "best.json").exists()
    unlocked = run(
        snakemake_command(tmp_path, "--unlock", *args), timeout=300, capture_output=True, text=True, env=python_env()
    )  # what Snakemake asks for after a kill
    assert unlocked.returncode == 0, unlocked.stderr[-2000:]
    result = run(
        snakemake_command(tmp_path, "--rerun-incomplete", *args),
        timeout=1200,
        capture_output=True,
        text=True,
        env=python_env(),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for t, text in told.items():  # finished trials kept as they were
        assert (search / f"trial{t}" / "result.json").read_text() == text
    trials = pd.read_csv(search / "trials.csv")
    assert list(trials["slot"]) == [0, 1, 2, 3] and trials["trial"].is_unique
    found = journals.open_study(search / "study.journal", "suite.fair/cub/ephn_2nd").get_trials()
    complete = [t for t in found if t.state.name == "COMPLETE"]
    assert sorted(t.user_attrs[study.SLOT] for t in complete) == [0, 1, 2, 3]  # none lost, none twice
    assert sorted(t.number for t in complete) == sorted(trials["trial"])
    assert (tmp_path / "reports/smoke/suite.fair/fair_table.csv").exists()


@pytest.mark.slow
@pytest.mark.xdist_group("full_dry_run")
def test_full_dry_run_lists_every_fold_trial_and_final_run_of_suite_fair(full_dry_run):
    result, _ = full_dry_run
    plan = Plan.load(CONFIG_DIR, {"preset": "full", "experiments": ["suite.fair"]})
    settings = plan.fair_settings("suite.fair")
    pairs = plan.fair_pairs("suite.fair")
    assert len(pairs) == 4 * len(plan.experiments["suite.fair"]["methods"])
    assert {d for d, _ in pairs} == {"cub", "cars", "sop", "inshop"}
    assert settings == {
        "folds": 4,
        "trials": 50,
        "parallel": 2,
        "repetitions": 10,
        "rounds_per_job": 5,
        "repetitions_per_job": 5,
    }
    stdout = result.stdout
    listed = {path.strip() for line in re.findall(r"^\s+output: (.*)$", stdout, re.M) for path in line.split(",")}
    rounds = -(-settings["trials"] // settings["parallel"])
    groups = -(-settings["repetitions"] // settings["repetitions_per_job"])
    for dataset, method in pairs:
        folder = plan.fair_folder("suite.fair", dataset, method)
        for r in range(rounds):
            assert f"{folder}/search/round{r}.json" in listed
        ends = [min((g + 1) * settings["repetitions_per_job"], settings["repetitions"]) - 1 for g in range(groups)]
        for last in range(settings["repetitions"]):  # a final job's output: its last repetition's record
            assert (f"{folder}/final/rep{last}/folds.json" in listed) == (last in ends)
        assert f"{folder}/final/summary.json" in listed
    counts = {
        line.split()[0]: int(line.split()[1])
        for line in stdout[stdout.index("Job stats:") :].splitlines()
        if len(line.split()) == 2 and line.split()[1].isdigit()
    }
    assert counts["fair_round"] == len(pairs) * rounds  # one GPU job per round: its slots' folds
    assert counts["fair_final"] == len(pairs) * groups  # one per 5 repetitions: their folds
    assert not {"fair_ask", "fair_tell", "fair_trial_fold", "fair_final_fold"} & set(counts)
    assert counts["fair_best"] == counts["fair_summary"] == len(pairs)
    assert counts["fair_splits"] == 4 and counts["fair_aggregate"] == 1


def test_the_preflight_groups_and_probes_the_fair_fold_trainings(tmp_path):
    from dmlbench.preflight import budget
    from dmlbench.preflight.grouping import group_runs
    from dmlbench.preflight.probe import probe

    plan = Plan.load(CONFIG_DIR, {"preset": "full", "experiments": ["suite.fair"]})
    groups = group_runs(plan)
    assert sum(len(g.runs) for g in groups) == len(plan.fair_runs()) > 0
    assert all(isinstance(run, FairRun) for g in groups for run in g.runs)
    methods = set(plan.experiments["suite.fair"]["methods"])
    assert {g.run.method for g in groups} == methods  # every method's fold training has a group
    group = next(g for g in groups if g.run.dataset == "inshop" and g.run.method == "ms")
    result = probe(group.cfg, "inshop", tmp_path / "work", image_side=32, device="cpu")
    assert result["status"] == "passed", result["traceback"]
    final = RunConfig.from_dict(plan.resolve(FairRun("suite.fair", "sop", "ms", 3, "final", 3, 1)))
    search = RunConfig.from_dict(plan.resolve(FairRun("suite.fair", "sop", "ms", 0, "search", 7, 1)))
    assert budget.run_seconds(final, "sop", 0.01, 0.001) > budget.run_seconds(search, "sop", 0.01, 0.001)
