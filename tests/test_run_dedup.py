"""No training twice: runs of different experiments with the same settings and seed are trained
once, where they first appear in the plan, and every other run folder is a link to that one."""

from __future__ import annotations

import json
import os
from collections import defaultdict

import pandas as pd
import pytest
import yaml
from conftest import CONFIG_DIR, FULL_DIGESTS, REPO, python_env, snakemake_command

from dmlbench.config.plan import Plan
import processes
from dmlbench.core.errors import DmlbenchError
from dmlbench.training import run_folder, run_link


def _full() -> Plan:
    return Plan.load(CONFIG_DIR, {"preset": "full", "trunk_sha256": yaml.safe_load(FULL_DIGESTS[1].split("=", 1)[1])})


def _numbers_key(plan: Plan, run) -> str:
    """The settings that decide a run's numbers, the experiment's name left out."""
    numbers = run_folder.numbers_and_side(plan.resolved(run))[0]
    numbers["run"] = {k: v for k, v in numbers["run"].items() if k != "experiment"}
    return json.dumps(numbers, sort_keys=True)


def test_no_two_trainings_of_full_share_their_settings_and_seed():
    plan = _full()
    same = defaultdict(list)
    for run in plan.all_runs():
        same[_numbers_key(plan, run)].append(run)
    assert any(len(runs) > 1 for runs in same.values()), "full has runs of one training under several experiments"
    trained = plan.trainings()
    assert len({_numbers_key(plan, run) for run in trained}) == len(trained) == len(same)  # each training once
    once = set(trained)
    for runs in same.values():
        assert [run for run in runs if run in once] == runs[:1], runs  # the first is trained
        assert all(plan.trained_as(run) == runs[0] for run in runs)  # the others read it
    jobs = [path for job in plan.gpu_jobs() for path in job["runs"]]
    assert len(jobs) == len(set(jobs)) == len(trained)  # the budget's jobs train each training once


def test_a_link_replaces_an_empty_folder_keeps_a_trained_one_aside_and_needs_a_finished_run(tmp_path):
    trained = tmp_path / "a" / "cub" / "ms" / "seed0"
    trained.mkdir(parents=True)
    linked = tmp_path / "b" / "cub" / "ms" / "seed0"
    with pytest.raises(DmlbenchError, match="metrics.json is missing"):
        run_link.link(linked, trained)
    (trained / "metrics.json").write_text("{}")
    linked.mkdir(parents=True)  # Snakemake makes the output's folder first
    run_link.link(linked, trained)
    assert linked.is_symlink() and os.readlink(linked) == "../../../a/cub/ms/seed0"
    run_link.link(linked, trained)  # again: nothing changes
    assert (linked / "metrics.json").read_text() == "{}"
    other = tmp_path / "c" / "cub" / "ms" / "seed0"
    other.mkdir(parents=True)
    (other / "model.pt").write_text("trained before the two were one")
    run_link.link(other, trained)
    assert other.is_symlink() and (other.parent / "seed0.superseded" / "model.pt").is_file()


@pytest.mark.slow
def test_a_linked_run_reads_the_earlier_training_through_snakemake_and_reruns_nothing(tmp_path):
    config = ["preset=smoke", "experiments=[ms.t1,suite.baselines]", "datasets=[cub]"]
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke", "experiments": ["ms.t1", "suite.baselines"], "datasets": ["cub"]})
    links = {run: plan.trained_as(run) for run in plan.runs() if plan.trained_as(run) != run}
    assert links, "smoke's MS on cub is ms.t1's run and suite.baselines' run"
    command = snakemake_command(tmp_path, "--cores", "2", "--config", *config, snakefile=REPO / "Snakefile")
    result = processes.run(command, timeout=900, capture_output=True, text=True, env=python_env())
    assert result.returncode == 0, result.stderr[-4000:]
    assert "rule train_alias" in result.stdout + result.stderr
    for run, first in links.items():
        folder = tmp_path / run.path("smoke")
        assert folder.is_symlink() and folder.resolve() == (tmp_path / first.path("smoke")).resolve()
    for run, first in links.items():
        mine = pd.read_csv(tmp_path / f"reports/smoke/{run.experiment}/runs.csv")
        theirs = pd.read_csv(tmp_path / f"reports/smoke/{first.experiment}/runs.csv")
        row = mine[(mine["method"] == run.method) & (mine["seed"] == run.seed)]
        assert list(row["experiment"]) == [run.experiment]  # the row is the linked run's own
        other = theirs[(theirs["method"] == first.method) & (theirs["seed"] == first.seed)]
        assert row.drop(columns=["experiment"]).to_dict("records") == other.drop(columns=["experiment"]).to_dict(
            "records"
        )
    again = processes.run([*command, "--dry-run"], timeout=600, capture_output=True, text=True, env=python_env())
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stdout[-2000:]


def test_a_verdict_takes_a_linked_runs_numbers_made_with_either_runs_settings(tmp_path):
    """A run that is an earlier run's training is planned with both fingerprints (the link's
    folder holds the earlier run's; a narrower selection trained it in its own); any other is refused."""
    from dmlbench.verdicts import asked

    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    linked = next(run for run in plan.runs() if plan.trained_as(run) != run)
    planned = plan.accepted_fingerprints(linked)
    own = run_folder.fingerprint(plan.resolved(linked))
    first = run_folder.fingerprint(plan.resolved(plan.trained_as(linked)))
    assert planned == [first, own] and own != first
    key = {"dataset": linked.dataset, "method": linked.method, "seed": linked.seed}
    for found in (own, first):
        assert (
            len(asked.rows(pd.DataFrame([{**key, "fingerprint": found}]), {"x": "y", _key(linked): planned}, tmp_path))
            == 1
        )
    with pytest.raises(DmlbenchError, match="trained with other settings"):
        asked.rows(pd.DataFrame([{**key, "fingerprint": "0" * 64}]), {_key(linked): planned}, tmp_path)


def _key(run) -> str:
    return f"{run.dataset}/{run.method}/seed{run.seed}"
