"""What was made from a lost file is made again (`dmlbench.orchestration.lost_files`): Snakemake
alone leaves a deleted run's metrics.json, or a table a failed step removed, lost behind an
existing report ("Nothing to be done")."""

import json

import pytest

import processes
from conftest import CONFIG_DIR, python_env, snakemake_command
from dmlbench.config.plan import Plan
from dmlbench.orchestration import lost_files

SETTINGS = ("preset=smoke", "experiments=[suite.baselines]", "datasets=[cub]")


def snakemake(workdir, *args):
    result = processes.run(
        snakemake_command(workdir, "--cores", "2", "--config", *SETTINGS, *args),
        timeout=900,
        capture_output=True,
        text=True,
        env=python_env(),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.mark.parametrize(
    "argv, dry",
    [
        (["snakemake", "-n"], True),
        (["snakemake", "-np", "--cores", "2"], True),
        (["snakemake", "--dry-run"], True),
        (["snakemake", "--cores", "2", "-p"], False),
        (["snakemake", "-d", "/tmp/n"], False),
    ],
)
def test_a_dry_run_is_read_from_the_command_line(argv, dry):
    assert lost_files.dry_run_asked(argv) == dry


def test_nothing_is_lost_in_a_fresh_folder_or_a_finished_one_with_every_file(tmp_path):
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke", "experiments": ["suite.baselines"], "datasets": ["cub"]})
    assert lost_files.lost(plan, tmp_path) == ([], [])


@pytest.mark.slow
def test_a_deleted_metrics_file_and_a_removed_table_are_made_again(tmp_path):
    snakemake(tmp_path)
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke", "experiments": ["suite.baselines"], "datasets": ["cub"]})
    run = tmp_path / plan.runs("suite.baselines")[0].path("smoke")
    table = tmp_path / "reports/smoke/suite.baselines/table.csv"
    metrics, before = run / "metrics.json", table.read_text()
    numbers = json.loads(metrics.read_text())["metrics"]
    metrics.unlink()
    dry = snakemake(tmp_path, "-n")
    assert "dry run: not removed" in dry.stderr and table.exists()  # a dry run removes nothing
    again = snakemake(tmp_path)
    assert "is missing" in again.stderr and "Nothing to be done" not in again.stdout + again.stderr
    assert json.loads(metrics.read_text())["metrics"] == numbers  # evaluated again from its model
    assert table.read_text() == before
    (tmp_path / "results/smoke/runs.parquet").unlink()  # what a failed or skewed step leaves
    table.unlink()
    snakemake(tmp_path)
    assert table.read_text() == before and (tmp_path / "results/smoke/runs.parquet").exists()
    assert (tmp_path / "reports/smoke/index.html").exists()
    epochs = run / "epochs.jsonl"
    epochs.write_text(epochs.read_text()[:150])  # a record cut short
    failed = processes.run(
        snakemake_command(tmp_path, "--cores", "2", "--config", *SETTINGS, "--forcerun", "aggregate"),
        timeout=900,
        capture_output=True,
        text=True,
        env=python_env(),
    )
    assert failed.returncode != 0 and "epochs.jsonl: line 1 is not a JSON record" in failed.stderr
    assert "Traceback" not in failed.stderr and not (table.parent / "quoted.csv").exists()  # nothing partial
