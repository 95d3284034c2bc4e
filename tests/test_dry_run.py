"""The per-job specs and inputs the rules read (cached once per plan for the dry run of `full`)
equal a fresh computation without those caches, job by job."""

import json

import pytest

from dmlbench.config.plan import Plan
from dmlbench.config.run import Run
from dmlbench.core.errors import ConfigError
from dmlbench.fair import rounds
from dmlbench.fair import space as spaces

from conftest import CONFIG_DIR
from dmlbench.config.jobs import of as jobs_of

SELECTION = {"preset": "full", "experiments": ["suite.fair", "ms.t2"], "datasets": ["cub"]}


def uncached_fair_spec(plan: Plan, run) -> dict:
    """A fold training's spec from the method's plain settings, as a fresh plan resolves them."""
    cfg = plan.resolve(Run(run.experiment, run.dataset, run.method, 0))
    folds = plan.fair_settings(run.experiment)["folds"]
    cfg["seed"] = run.seed
    cfg["run"].update(seed=run.seed, stage=run.stage, index=run.index, fold=run.fold)
    cfg["data"]["fold"] = {"splits": plan.fair_splits(run.dataset, folds), "index": run.fold, "of": folds}
    return {"run": cfg, "space": spaces.to_json(spaces.parse(run.method, plan.methods[run.method]))}


def rule_views(plan: Plan) -> list[str]:
    """What the fair rules hand Snakemake, job by job: each search job's and each final job's spec, its
    inputs and the method's side settings."""
    views = []
    for dataset, method in plan.fair_pairs("suite.fair"):
        side = jobs_of(plan).fair_side("suite.fair", dataset, method)
        for r in range(plan.fair_rounds("suite.fair")):
            views.append(
                json.dumps(
                    [
                        jobs_of(plan).fair_round_job("suite.fair", dataset, method, r),
                        jobs_of(plan).fair_round_inputs("suite.fair", dataset, method, r),
                        side,
                    ],
                    sort_keys=True,
                )
            )
        for g in range(plan.fair_final_groups("suite.fair")):
            views.append(
                json.dumps(
                    [
                        jobs_of(plan).fair_group_spec("suite.fair", dataset, method, g),
                        jobs_of(plan).fair_repetition_inputs("suite.fair", dataset, method),
                        side,
                    ],
                    sort_keys=True,
                )
            )
    return views


def test_fair_job_specs_equal_a_fresh_computation_and_stay_their_own():
    plan = Plan.load(CONFIG_DIR, dict(SELECTION))
    seen = rule_views(plan)
    assert rule_views(plan) == seen  # asked again: the caches hand out what they did, unchanged
    fresh = Plan.load(CONFIG_DIR, dict(SELECTION))
    trained = {}
    for view in seen:
        spec, inputs, side = json.loads(view)
        # a search job's round, or a final job's repetitions, each fold's settings made whole
        parts = [rounds.search_round(spec)] if "trials" in spec else rounds.final_repetitions(spec)
        for part in parts:
            folds = part.get("folds") or [fold for trial in part["trials"] for fold in trial["folds"]]
            for fold in folds:
                trained[fold["run_dir"]] = {"run": {**fold["run"], **side}, "space": part["space"]}
        assert fresh.fair_splits("cub", 4) in inputs  # made from the manifest, which is not named beside it
        assert fresh.manifest("cub") not in inputs and any(path.endswith("/store.json") for path in inputs)
    runs = plan.fair_runs()
    assert len({(r.method, r.stage) for r in runs}) > 2 and set(trained) == {r.path("full") for r in runs}
    for run in runs:
        assert trained[run.path("full")] == json.loads(json.dumps(uncached_fair_spec(fresh, run)))
    for index in range(0, len(runs), 499):  # the copies `resolve` hands out, each from a new plan
        assert Plan.load(CONFIG_DIR, dict(SELECTION)).resolve(runs[index]) == trained[runs[index].path("full")]["run"]


def test_training_runs_found_and_resolved_as_by_a_fresh_plan():
    plan = Plan.load(CONFIG_DIR, dict(SELECTION))
    runs = plan.runs()
    assert runs
    cached = [
        json.dumps(plan.resolve(plan.find_run(r.experiment, r.dataset, r.method, str(r.seed))), sort_keys=True)
        for r in runs
    ]
    fresh = Plan.load(CONFIG_DIR, dict(SELECTION))
    assert cached == [json.dumps(fresh.resolve(r), sort_keys=True) for r in runs]
    with pytest.raises(ConfigError, match="has no run"):
        plan.find_run(runs[0].experiment, runs[0].dataset, runs[0].method, max(r.seed for r in runs) + 1)
