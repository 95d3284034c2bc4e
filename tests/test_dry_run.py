"""The per-job specs and inputs the rules read (cached once per plan for the dry run of `full`)
equal a fresh computation without those caches, job by job."""

import json

import pytest

from conftest import CONFIG_DIR
from dmlbench.config.fair_specs import FairSpecs
from dmlbench.config.plan import Plan
from dmlbench.config.run import Run
from dmlbench.errors import ConfigError
from dmlbench.fair import space as spaces

SELECTION = {"preset": "full", "experiments": ["suite.fair", "ms.t2"], "datasets": ["cub"]}


def uncached_fair_spec(plan: Plan, run) -> dict:
    """A fold training's spec from the method's plain settings, as a fresh plan resolves them."""
    cfg = plan.resolve(Run(run.experiment, run.dataset, run.method, 0))
    folds = plan.fair_settings(run.experiment)["folds"]
    cfg["seed"] = run.seed
    cfg["run"].update(seed=run.seed, stage=run.stage, index=run.index, fold=run.fold)
    cfg["data"]["fold"] = {"splits": plan.fair_splits(run.dataset, folds), "index": run.fold, "of": folds}
    return {"run": cfg, "space": spaces.to_json(spaces.parse(run.method, plan.methods[run.method]))}


def rule_view(plan: Plan, run) -> str:
    """What the fold-training rules hand Snakemake for a run: its spec and inputs."""
    found = plan.find_fair_run(run.experiment, run.dataset, run.method, run.stage, str(run.index), str(run.fold))
    return json.dumps([plan.fair_run_spec(found), plan.fair_run_inputs(found)], sort_keys=True)


def test_fair_fold_specs_equal_a_fresh_computation_and_stay_their_own():
    plan = Plan.load(CONFIG_DIR, dict(SELECTION))
    runs = plan.fair_runs()
    assert len({(r.method, r.stage) for r in runs}) > 2
    seen_at_once = [rule_view(plan, run) for run in runs]  # every job, in the order Snakemake asks
    specs = [plan.fair_run_spec(run) for run in runs]
    assert [json.dumps([s, plan.fair_run_inputs(r)], sort_keys=True) for s, r in zip(specs, runs)] == seen_at_once
    fresh = Plan.load(CONFIG_DIR, dict(SELECTION))
    for run, seen in zip(runs, seen_at_once):
        assert json.loads(seen) == json.loads(json.dumps([uncached_fair_spec(fresh, run),
                                                          FairSpecs.fair_run_inputs(fresh, run)]))
    for index in range(0, len(runs), 499):  # the copies `resolve` hands out, each from a new plan
        assert Plan.load(CONFIG_DIR, dict(SELECTION)).resolve(runs[index]) == json.loads(seen_at_once[index])[0]["run"]


def test_training_runs_found_and_resolved_as_by_a_fresh_plan():
    plan = Plan.load(CONFIG_DIR, dict(SELECTION))
    runs = plan.runs()
    assert runs
    cached = [json.dumps(plan.resolve(plan.find_run(r.experiment, r.dataset, r.method, str(r.seed))), sort_keys=True)
              for r in runs]
    fresh = Plan.load(CONFIG_DIR, dict(SELECTION))
    assert cached == [json.dumps(fresh.resolve(r), sort_keys=True) for r in runs]
    with pytest.raises(ConfigError, match="has no run"):
        plan.find_run(runs[0].experiment, runs[0].dataset, runs[0].method, max(r.seed for r in runs) + 1)
