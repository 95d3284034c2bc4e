"""A sweep in progress and stale numbers: the results table's status of every run, aggregation
refusing metrics of other settings, and the SQL prompt locked to the table."""

import copy
import fcntl
import json
import re

import pandas as pd
import pytest

from dmlbench.config.plan import Plan
from dmlbench.data.prepare import prepare
from dmlbench.core.errors import DmlbenchError
from dmlbench.report import aggregate, results_table, run_status
from dmlbench.training import run_folder
from dmlbench.training.train import train

from conftest import CONFIG_DIR


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One tiny finished run of the smoke plan's suite.baselines/cub/ms/seed0 settings."""
    root = tmp_path_factory.mktemp("sweep")
    manifest = root / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", root, manifest, fixture_size={"n_classes": 8, "per_class": 6, "image_size": 40})
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    cfg = plan.resolve(plan.find_run("suite.baselines", "cub", "ms", 0))
    cfg["data"] = {"manifest": str(manifest)}
    cfg.update(epochs=2, batches_per_epoch=2)
    run_dir = root / "results" / "smoke" / "suite.baselines" / "cub" / "ms" / "seed0"
    train(cfg, run_dir, log=lambda m: None)
    (run_dir / "metrics.json").write_text(
        json.dumps(json.loads((run_dir / "final_metrics.json").read_text())["result"])
    )
    return cfg, run_dir


NAMES = {"preset": "p", "experiment": "ms.t1", "dataset": "cub", "method": "ms", "seed": 0}


def test_metrics_record_the_fingerprint_of_their_settings(trained):
    cfg, run_dir = trained
    result = json.loads((run_dir / "metrics.json").read_text())
    assert result["fingerprint"] == run_folder.fingerprint(cfg)
    rows = results_table.run_rows(run_dir, NAMES, run_folder.fingerprint(cfg))
    assert {r["status"] for r in rows} == {"finished"} and all(r["metric"] for r in rows)
    assert all(r["wall_seconds"] > 0 for r in rows)


def test_metrics_of_other_settings_are_stale_in_the_table_and_refused_by_aggregation(trained, tmp_path):
    cfg, run_dir = trained
    changed = copy.deepcopy(cfg)
    changed["optimizer"]["lr"] *= 2  # the plan now says another learning rate; the run was not retrained
    planned = run_folder.fingerprint(changed)
    rows = results_table.run_rows(run_dir, NAMES, planned)
    assert [(r["status"], r["metric"], r["value"]) for r in rows] == [("stale", None, None)]
    key = "/".join(run_dir.parts[-3:])
    with pytest.raises(DmlbenchError, match=r"1 metrics file\(s\) were computed with other settings.*--forcerun"):
        aggregate.collect([run_dir / "metrics.json"], {key: planned[:16]})
    assert len(aggregate.collect([run_dir / "metrics.json"], {key: run_folder.fingerprint(cfg)[:16]})) == 1


def test_metrics_of_earlier_versions_are_checked_against_their_run_folders_config(trained, tmp_path):
    cfg, run_dir = trained
    old = tmp_path / "suite.baselines" / "cub" / "ms" / "seed0"
    old.mkdir(parents=True)
    result = json.loads((run_dir / "metrics.json").read_text())
    del result["fingerprint"]
    (old / "metrics.json").write_text(json.dumps(result))
    (old / "config.json").write_text((run_dir / "config.json").read_text())
    assert run_status.metrics_fingerprint(old, result) == run_folder.fingerprint(cfg)
    with pytest.raises(DmlbenchError, match="other settings"):
        aggregate.collect([old / "metrics.json"], {"cub/ms/seed0": "0" * 16})


def test_every_state_of_a_sweep_in_progress_has_its_row(trained, tmp_path):
    """Running (its lock held), failed (its log ends with the error), interrupted (a checkpoint),
    not started: each a row with its status; the failed one names its error."""
    cfg, run_dir = trained
    planned = run_folder.fingerprint(cfg)
    running, failed, interrupted, waiting = (tmp_path / name for name in ("running", "failed", "interrupted", "new"))
    for folder in (running, failed, interrupted):
        folder.mkdir()
    (running / run_folder.LOCK).write_text("123\n")
    (running / "epochs.jsonl").write_text('{"epoch": 1, "seconds": 2.5}\n{"epoch": 2, "seconds": 3.0}\n')
    log = tmp_path / "failed.log"
    log.write_text("epoch 1/3 loss 0.4\ndmlbench train: error: results/x: training diverged: loss is nan\n")
    (interrupted / "checkpoint.pt").write_bytes(b"x")
    with open(running / run_folder.LOCK) as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        states = {
            folder.name: results_table.run_rows(
                folder, dict(NAMES, seed=seed), planned, log if folder == failed else None
            )
            for seed, folder in enumerate((running, failed, interrupted, waiting))
        }
    assert {name: [r["status"] for r in rows] for name, rows in states.items()} == {
        "running": ["running"],
        "failed": ["failed"],
        "interrupted": ["interrupted"],
        "new": ["not started"],
    }
    assert states["running"][0]["wall_seconds"] == 5.5
    assert "training diverged" in states["failed"][0]["error"]
    assert results_table.run_rows(running, NAMES, planned)[0]["status"] != "running"  # the lock released
    table = pd.DataFrame([r for rows in states.values() for r in rows], columns=results_table.COLUMNS)
    summary = results_table.counts(table)
    assert "4 runs:" in summary and "1 failed" in summary and "training diverged" in summary


@pytest.mark.parametrize(
    "sql, refused",
    [
        # a SELECT reaching past the table: DuckDB's locked connection refuses it
        ("SELECT * FROM read_csv('/etc/passwd')", "the query failed: .*file system operations are disabled"),
        ("SELECT * FROM glob('/etc/*')", "the query failed: .*file system operations are disabled"),
        # any other statement: refused before it reaches DuckDB
        ("COPY runs TO '{folder}/copy.csv'", "give one SELECT over runs .*not COPY"),
        ("ATTACH '{folder}/other.duckdb' AS other", "not ATTACH"),
        ("INSTALL httpfs", "not LOAD"),
        ("LOAD httpfs", "not LOAD"),
        ("SET enable_external_access = true", "not SET"),
        ("RESET lock_configuration", "not SET"),
        ("SELECT 1; DROP TABLE runs", "not SELECT, DROP"),
    ],
)
def test_the_sql_prompt_reads_the_table_and_nothing_else(tmp_path, sql, refused):
    table = tmp_path / "runs.parquet"
    pd.DataFrame({"value": [0.25, 0.5]}).to_parquet(table)
    assert results_table.query(table, "SELECT sum(value) AS s FROM runs")["s"].tolist() == [0.75]
    with pytest.raises(DmlbenchError, match=refused) as error:
        results_table.query(table, sql.format(folder=tmp_path))
    assert "Traceback" not in str(error.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.parquet"]


def test_a_damaged_table_is_named_with_what_to_do(tmp_path):
    table = tmp_path / "runs.parquet"
    table.write_bytes(b"PAR1 not really")
    with pytest.raises(DmlbenchError, match=r"runs.parquet cannot be read .*--forcerun results_table --config preset="):
        results_table.query(table, "SELECT 1")


@pytest.mark.parametrize(
    "change, said",
    [
        (
            {"run": {"experiment": "ms.t1", "dataset": "cars", "method": "ms", "seed": 0}},
            "it names the run ms.t1/cars/ms/seed0, not its folder's ms.t1/cub/ms/seed0",
        ),
        ({"metrics": {"recall@1": 1.5}}, "metrics outside [0, 1]: recall@1 1.5"),
        ({"metrics": {"recall@1": float("inf")}}, "metrics outside [0, 1]: recall@1 inf"),
    ],
)
def test_a_metrics_file_of_another_run_or_impossible_values_is_refused_naming_it(tmp_path, change, said):
    folder = tmp_path / "results" / "demo" / "ms.t1" / "cub" / "ms" / "seed0"
    folder.mkdir(parents=True)
    path = folder / "metrics.json"
    path.write_text(
        json.dumps(
            {
                "run": {"experiment": "ms.t1", "dataset": "cub", "method": "ms", "seed": 0},
                "metrics": {"recall@1": 0.5},
                "fingerprint": None,
                **change,
            }
        )
    )
    with pytest.raises(DmlbenchError, match=rf"{path} is not a metrics file of the suite .*{re.escape(said)}"):
        aggregate.collect([path])
    assert (folder / "metrics.json.corrupt").exists()  # set aside: the train job writes it again


def test_a_nan_metric_is_a_failed_seed_not_a_dropped_one(tmp_path):
    rows = []
    for seed, value in enumerate([0.60, float("nan"), 0.62, 0.61]):
        folder = tmp_path / "ms.t1" / "cub" / "ms" / f"seed{seed}"
        folder.mkdir(parents=True)
        (folder / "metrics.json").write_text(
            json.dumps(
                {
                    "run": {"experiment": "ms.t1", "dataset": "cub", "method": "ms", "seed": seed},
                    "metrics": {"recall@1": value},
                    "fingerprint": None,
                }
            )
        )
        rows.append(folder / "metrics.json")
    runs = aggregate.collect(rows)
    table = aggregate.summarise(runs, ["recall@1"], {"ms": {"cub": {"recall@1": "61.0"}}})
    assert table.loc[0, "verdict"] == "failed" and table.loc[0, "n"] == 3


def test_the_results_table_refuses_impossible_metrics_naming_the_file(trained, tmp_path):
    cfg, run_dir = trained
    folder = tmp_path / "seed0"
    folder.mkdir()
    result = json.loads((run_dir / "metrics.json").read_text())
    result["metrics"] = {**result["metrics"], "recall@1": 7.5, "nmi": -3}
    (folder / "metrics.json").write_text(json.dumps(result))
    with pytest.raises(
        DmlbenchError,
        match=r"seed0/metrics.json holds metrics outside \[0, 1\]: "
        r".*nmi -3.*recall@1 7.5",
    ):
        results_table.run_rows(folder, NAMES, run_folder.fingerprint(cfg))


def test_a_malformed_metrics_file_is_named_damaged_not_stale(tmp_path):
    folder = tmp_path / "ms.t1" / "cub" / "ms" / "seed0"
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps({"fingerprint": "x"}))
    with pytest.raises(DmlbenchError, match="is not a metrics file of the suite"):
        aggregate.collect([folder / "metrics.json"], {"cub/ms/seed0": "0" * 16})


def test_a_damaged_config_json_of_a_finished_run_is_named_with_what_to_do(tmp_path):
    from dmlbench.report import figures

    folder = tmp_path / "seed0"
    folder.mkdir()
    (folder / "config.json").write_text("{not json")
    (folder / "epochs.jsonl").write_text('{"epoch": 1, "loss": 0.5}\n')
    with pytest.raises(DmlbenchError, match=r"seed0/config.json is damaged .*--forcerun train"):
        figures.learning_curves([folder], {"experiment": "x", "title": "x"}, tmp_path / "curves.png")
