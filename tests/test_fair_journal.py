"""The fair search's study journal: bound to its search settings, checked against the trial slots,
healed of a cut last line and named when damaged otherwise; a damaged `epochs.jsonl` of a fold."""

import json
import shutil
import sys

import pandas as pd
import pytest
import yaml
from test_corrupt_files import garble
from test_fair import _fair_plan, _fixture_fold_spec

from dmlbench.core.errors import DmlbenchError
from dmlbench.fair import fold_run, space, study
from dmlbench.fair import journal as journals
from dmlbench.core.io import write_json

import processes
from conftest import REPO, python_env, snakemake_command
from dmlbench.config.jobs import of as jobs_of

pytestmark = pytest.mark.xdist_group("test_fair_journal")  # one worker: its module fixture once

SEARCH = "results/smoke/suite.fair/cub/ms/search"
JOURNAL = f"{SEARCH}/study.journal"


def snakemake(checkout, workdir, trials=2):
    """The search of ms on the smoke fixture of cub (its trials.csv), one epoch per fold, one round
    (one slot) a GPU job, so that a later job asks a slot whose earlier ones an earlier job asked."""
    subset = (
        f"subset={{suite.fair: {{datasets: [cub], methods: [ms], fair: {{folds: 2, trials: {trials}, "
        f"parallel: 1, repetitions: 2, rounds_per_job: 1}}, train: {{epochs: 1, eval: {{every: 1}}}}}}}}"
    )
    command = snakemake_command(
        workdir,
        "--cores",
        "1",
        "--config",
        "preset=smoke",
        "experiments=[suite.fair]",
        subset,
        "--",
        f"{SEARCH}/trials.csv",
        snakefile=checkout / "Snakefile",
    )
    return processes.run(command, timeout=900, capture_output=True, text=True, env=python_env())


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """A checkout (Snakefile and workflow/, to be edited) and a working folder after one search."""
    root = tmp_path_factory.mktemp("searched")
    (root / "checkout").mkdir()
    shutil.copy(REPO / "Snakefile", root / "checkout" / "Snakefile")
    shutil.copytree(REPO / "workflow", root / "checkout" / "workflow")
    result = snakemake(root / "checkout", root / "work")
    assert result.returncode == 0, result.stderr[-3000:]
    return root


def copy_of(searched, tmp_path):
    shutil.copytree(searched, tmp_path, dirs_exist_ok=True, symlinks=True)
    return tmp_path / "checkout", tmp_path / "work"


@pytest.mark.slow
def test_a_changed_search_space_starts_a_new_study_and_keeps_the_old_one_aside(searched, tmp_path):
    checkout, work = copy_of(searched, tmp_path)
    old = pd.read_csv(work / SEARCH / "trials.csv")
    old_journal = (work / JOURNAL).read_bytes()
    methods_file = checkout / "workflow" / "config" / "methods.yaml"
    methods = yaml.safe_load(methods_file.read_text())
    low = methods["ms"]["search"]["loss.alpha"]["low"]
    narrowed = dict(methods["ms"]["search"], **{"loss.alpha": {"low": 1.5, "high": 100}})  # paper: 2.0
    del narrowed["miner.epsilon"]
    methods["ms"]["search"] = narrowed  # a copy: other methods may share the space
    methods_file.write_text(yaml.safe_dump(methods))
    result = snakemake(checkout, work)
    assert result.returncode == 0, result.stderr[-3000:]
    kept = list((work / SEARCH).glob("study.journal.superseded-*"))
    assert len(kept) == 1 and kept[0].read_bytes().startswith(old_journal)  # the old study (opened once more)
    said = (work / "logs/smoke/fair/suite.fair/cub/ms/round0.log").read_text()
    assert f"search settings changed since {JOURNAL}" in said and kept[0].name in said
    assert f"space.loss.alpha.low: {low!r} → 1.5" in said and "space.miner.epsilon:" in said
    new = pd.read_csv(work / SEARCH / "trials.csv")
    assert "miner.epsilon" in old.columns and "miner.epsilon" not in new.columns  # no stale trial kept
    assert list(new["slot"]) == [0, 1] and (new["loss.alpha"] >= 1.5).all()
    assert new.loc[1, "loss.alpha"] != old.loc[1, "loss.alpha"]
    fresh = journals.open_study(work / JOURNAL, "suite.fair/cub/ms")
    previous = journals.open_study(kept[0], "suite.fair/cub/ms")
    assert fresh.user_attrs[study.FINGERPRINT] != previous.user_attrs[study.FINGERPRINT]
    assert sorted(t.params.get("miner.epsilon") is None for t in fresh.get_trials()) == [True, True]
    for fold in (0, 1):  # slot 1's folds trained afresh with the new parameters, the old ones set aside
        validation = json.loads((work / SEARCH / f"trial1/fold{fold}/validation.json").read_text())
        assert validation["params"] == {k: new.loc[1, k] for k in validation["params"]}
        assert list((work / SEARCH / "trial1").glob(f"fold{fold}.superseded-*"))


@pytest.mark.slow
def test_a_slot_whose_earlier_slots_are_missing_from_the_emptied_journal_is_refused(searched, tmp_path):
    checkout, work = copy_of(searched, tmp_path)
    (work / JOURNAL).write_bytes(b"")  # emptied (a lost journal is made again empty)
    result = snakemake(checkout, work, trials=3)
    assert result.returncode != 0
    said = (work / "logs/smoke/fair/suite.fair/cub/ms/round2.log").read_text()
    assert f"{JOURNAL} has no trial of slot(s) 0, 1, asked before slot 2" in said
    assert "Traceback" not in said and not (work / SEARCH / "trial2/params.json").exists()
    assert f"delete {SEARCH}/round*.json and trial*/params.json" in said
    for path in [*(work / SEARCH).glob("round*.json"), *(work / SEARCH).glob("trial*/params.json")]:
        path.unlink()  # what the message says to do
    result = snakemake(checkout, work, trials=3)
    assert result.returncode == 0, result.stderr[-3000:]
    assert list(pd.read_csv(work / SEARCH / "trials.csv")["slot"]) == [0, 1, 2]
    assert not list((work / SEARCH / "trial0").glob("fold*.superseded-*"))  # the paper's setting: kept


def _ask_spec(tmp_path, slot):
    spec = jobs_of(_fair_plan()).fair_ask_spec("suite.fair", "cub", "ms", slot)
    spec["journal"] = str(tmp_path / "study.journal")
    return spec


def test_a_cut_last_journal_line_is_dropped_and_other_damage_is_named(tmp_path, capsys):
    journal = tmp_path / "study.journal"
    study.ask(_ask_spec(tmp_path, 0), tmp_path / "p0.json")
    cut = b'{"op_code":6,"worker_id":"w","trial_id":0,"par'  # a writer killed mid-line
    journal.write_bytes(journal.read_bytes() + cut)
    study.ask(_ask_spec(tmp_path, 1), tmp_path / "p1.json")
    assert f"{journal}: its last line was cut" in capsys.readouterr().err
    study.ask(_ask_spec(tmp_path, 2), tmp_path / "p2.json")
    lines = journal.read_bytes().splitlines()
    assert all(json.loads(line)["op_code"] >= 0 for line in lines)  # nothing glued onto the cut line
    trials = journals.open_study(journal, "suite.fair/cub/ms").get_trials()
    assert sorted(t.user_attrs[study.SLOT] for t in trials) == [0, 1, 2]
    intact = journal.read_bytes()
    garbled_line = intact.replace(lines[1], lines[1][:-9] + b"}garbled}")
    random_bytes = intact[:40] + b"\xff\xfe\x00\x9c" + intact[44:]
    for damaged in (garbled_line, random_bytes):
        journal.write_bytes(damaged)
        with pytest.raises(DmlbenchError, match=rf"{journal}, line \d+, is damaged .*restore it from a backup"):
            study.ask(_ask_spec(tmp_path, 3), tmp_path / "p3.json")
    ask = _ask_spec(tmp_path, 3)  # the step as Snakemake runs it (a search job asking slot 3): one line, no traceback
    spec = json.dumps(
        {
            "ask": ask,
            "space": ask["space"],
            "base": ask["run"],
            "output": str(tmp_path / "round1.json"),
            "trials": [
                {"slot": 3, "params": str(tmp_path / "p3.json"), "result": str(tmp_path / "r3.json"), "folds": []}
            ],
        }
    )
    result = processes.run(
        [sys.executable, "-m", "dmlbench", "fair-round", "--spec", spec, "--side", "{}"],
        timeout=300,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"dmlbench fair-round: error: {journal}, line 1, is damaged" in result.stderr


def test_a_garbled_epochs_file_of_a_finished_fold_is_named_set_aside_and_rebuilt(tmp_path):
    spec, _ = _fixture_fold_spec(tmp_path)
    spec = json.loads(json.dumps(spec))  # as the step reads it (--spec)
    spec["run"].update(epochs=2, keep={"checkpoint": True, "fold_model": False})  # rebuilt from a kept checkpoint
    params = tmp_path / "params.json"
    write_json(params, {"params": space.paper_setting(space.from_json(spec["space"]), spec["run"])})
    run_dir, output = tmp_path / "run", tmp_path / "validation.json"
    first = fold_run.run(spec, params, run_dir, output, log=lambda m: None)
    history = (run_dir / "epochs.jsonl").read_text()
    garble(run_dir / "epochs.jsonl")
    output.unlink()  # the fold's step runs again
    messages = []
    assert fold_run.run(spec, params, run_dir, output, log=messages.append) == first
    assert any(
        f"{run_dir / 'epochs.jsonl'} is damaged" in m and "set aside as epochs.jsonl.corrupt" in m for m in messages
    )
    assert (run_dir / "epochs.jsonl").read_text() == history
    assert (run_dir / "epochs.jsonl.corrupt").exists()
