"""Tracking, the cost ledger, the results table and the disk estimate: a real MLflow server read
back through its client, a tracker that fails leaving the training as it would be without it, a
resumed run counting each epoch once, and the disk a run keeps against the files it wrote."""

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pandas as pd
import pytest
import torch

from dmlbench.config.plan import Plan
from dmlbench.data.prepare import prepare
from dmlbench.run_config import Model, RunConfig

import processes
from conftest import CONFIG_DIR

pytestmark = pytest.mark.xdist_group("tracking")


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    manifest = root / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", root, manifest, fixture_size={"n_classes": 8, "per_class": 6, "image_size": 40})
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    cfg = plan.resolve(plan.find_run("suite.baselines", "cub", "ms", 0))
    cfg["data"] = {"manifest": str(manifest)}
    cfg.update(epochs=3, batches_per_epoch=2)
    cfg["eval"]["every"] = 1
    return cfg


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """`mlflow server` with a SQLite store on 127.0.0.1, stopped with the tests."""
    folder = tmp_path_factory.mktemp("mlflow")
    port = _free_port()
    server = processes.start(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--backend-store-uri",
            f"sqlite:///{folder / 'mlflow.db'}",
            "--artifacts-destination",
            str(folder / "artifacts"),
            "--workers",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(folder / "server.log", "w"),
    )
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
                if answer.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            processes.stop(server)
            pytest.fail(f"the MLflow server did not start: {(folder / 'server.log').read_text()[-2000:]}")
        time.sleep(0.5)
    yield uri
    processes.stop(server)


def _epochs(run_dir):
    return [json.loads(line) for line in (run_dir / "epochs.jsonl").read_text().splitlines()]


def test_a_run_logs_its_settings_epochs_final_metrics_and_model_to_a_real_mlflow_server(
    small_run, mlflow_server, tmp_path
):
    from mlflow.tracking import MlflowClient

    from dmlbench.training.train import train

    cfg = dict(small_run, tracking={"tensorboard": False, "mlflow": mlflow_server})
    logs = []
    train(cfg, tmp_path / "run", log=logs.append)
    assert not any(line.startswith("tracking:") for line in logs), logs
    client = MlflowClient(tracking_uri=mlflow_server)
    experiment = client.get_experiment_by_name("suite.baselines")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.run_id == (tmp_path / "run" / "mlflow_run_id").read_text().strip()
    assert run.data.params["optimizer.lr"] == str(cfg["optimizer"]["lr"])
    assert run.data.params["batch.size"] == str(cfg["batch"]["size"])
    epochs = _epochs(tmp_path / "run")
    losses = client.get_metric_history(run.info.run_id, "loss")
    assert [(m.step, m.value) for m in sorted(losses, key=lambda m: m.step)] == [
        (row["epoch"], pytest.approx(row["loss"])) for row in epochs
    ]
    recalls = client.get_metric_history(run.info.run_id, "recall_at_1")
    assert sorted(m.value for m in recalls) == pytest.approx(sorted(row["recall@1"] for row in epochs))
    final = json.loads((tmp_path / "run" / "final_metrics.json").read_text())["result"]["metrics"]
    assert run.data.metrics["final_map_at_r"] == pytest.approx(final["map@r"])
    assert "model.pt" in {artifact.path for artifact in client.list_artifacts(run.info.run_id)}
    assert run.info.status == "FINISHED"


def test_a_tracker_that_cannot_reach_its_server_is_logged_and_the_training_is_unchanged(small_run, tmp_path):
    from dmlbench.training.train import train

    quiet = dict(small_run, tracking={"tensorboard": False, "mlflow": None})
    train(quiet, tmp_path / "quiet", log=lambda m: None)
    logs = []
    closed = f"http://127.0.0.1:{_free_port()}"
    train(dict(small_run, tracking={"tensorboard": True, "mlflow": closed}), tmp_path / "tracked", log=logs.append)
    said = [line for line in logs if line.startswith("tracking:")]
    assert len(said) == 1 and f"MLflow at {closed} failed" in said[0]
    strip = lambda rows: [{k: v for k, v in r.items() if "seconds" not in k} for r in rows]  # noqa: E731
    assert strip(_epochs(tmp_path / "tracked")) == strip(_epochs(tmp_path / "quiet"))
    assert list((tmp_path / "tracked" / "tensorboard").glob("events.out.tfevents.*"))  # the other tracker kept on


def test_a_tracker_stuck_when_sigterm_lands_holds_the_stop_only_its_stop_timeout(small_run, tmp_path, monkeypatch):
    """SLURM's time limit while a tracker hangs (a slow disk, a server gone): the stop writes the
    last finished epoch and waits for the trackers STOP_TIMEOUT_S, not the finished run's
    CLOSE_TIMEOUT_S, which outlasts the stop's grace (then the process ends as stuck, code 1)."""
    import faulthandler
    import os
    import signal
    import threading

    from dmlbench.training import tracking, train

    assert tracking.STOP_TIMEOUT_S < train.STOP_GRACE_S < tracking.CLOSE_TIMEOUT_S
    stuck = threading.Event()

    class Hanging:  # the TensorBoard tracker, stuck on its first epoch after SIGTERM was sent
        def __init__(self, *_):
            pass

        def epoch(self, *_):
            os.kill(os.getpid(), signal.SIGTERM)
            stuck.wait()

        def close(self):
            pass

    monkeypatch.setattr(tracking, "_TensorBoard", Hanging)
    monkeypatch.setattr(train, "STOP_TIMEOUT_S", 0.5)
    logs = []
    cfg = dict(
        small_run, tracking={"tensorboard": True, "mlflow": None}, keep=dict(small_run["keep"], checkpoint_minutes=60)
    )
    try:
        with pytest.raises(SystemExit) as stopped:
            train.train(cfg, tmp_path / "run", log=logs.append)
    finally:
        faulthandler.cancel_dump_traceback_later()  # the stop's grace timer: this process goes on
        stuck.set()
    assert stopped.value.code == 128 + signal.SIGTERM
    assert "tracking: still busy after 0.5 s; the training ends without waiting" in logs
    assert torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)["epochs_done"] >= 1


def test_a_resumed_run_counts_each_epoch_once_in_its_cost_and_keeps_no_checkpoint(small_run, tmp_path):
    from dmlbench.training.train import train

    class Stop(Exception):
        pass

    def stop_after_two(message):
        if message.startswith("epoch 2/"):
            raise Stop

    with pytest.raises(Stop):
        train(small_run, tmp_path / "run", log=stop_after_two)
    assert (tmp_path / "run" / "checkpoint.pt").exists()
    train(small_run, tmp_path / "run", log=lambda m: None)
    epochs = _epochs(tmp_path / "run")
    spent = json.loads((tmp_path / "run" / "cost.json").read_text())
    assert spent["epochs"] == small_run["epochs"] == len(epochs)
    assert spent["images"] == small_run["epochs"] * small_run["batches_per_epoch"] * small_run["batch"]["size"]
    assert spent["train_seconds"] == pytest.approx(sum(r["seconds"] for r in epochs), abs=1e-3)
    final = json.loads((tmp_path / "run" / "final_metrics.json").read_text())["result"]
    assert spent["eval_seconds"] == pytest.approx(sum(r["eval_seconds"] for r in epochs) + final["seconds"], abs=1e-3)
    assert spent["wall_seconds"] >= spent["device_seconds"] - 1e-3
    assert spent["gpu_hours"] == 0.0 and spent["energy_kwh"] is None and spent["peak_gpu_mb"] is None  # a CPU run
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


def test_the_disk_a_run_keeps_is_the_estimate_of_its_model_and_records(small_run, tmp_path):
    from dmlbench.preflight import disk
    from dmlbench.training.train import train

    train(small_run, tmp_path / "run", log=lambda m: None)
    written = sum(p.stat().st_size for p in (tmp_path / "run").rglob("*") if p.is_file())
    model = (tmp_path / "run" / "model.pt").stat().st_size
    assert disk.model_bytes(json.dumps(small_run["model"], sort_keys=True)) == pytest.approx(model, rel=0.05)
    estimate = disk.run_bytes(RunConfig.from_dict(small_run), "cub")
    assert model < estimate and written <= estimate
    for backbone, dim in (("resnet18", 512), ("bninception", 64)):  # real networks: parameters and buffers
        from dmlbench import models

        cfg = dict(small_run["model"], backbone=backbone, embedding_dim=dim, pretrained=False)
        built = models.build(Model(**cfg))
        saved = tmp_path / f"{backbone}.pt"
        torch.save({"model": built.state_dict()}, saved)
        assert disk.model_bytes(json.dumps(cfg, sort_keys=True)) == pytest.approx(saved.stat().st_size, rel=0.01)


def test_the_results_table_splits_vehicleid_lists_and_the_test_selected_epoch(tmp_path):
    from dmlbench.report import results_table

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "metrics.json").write_text(
        json.dumps(
            {
                "metrics": {"large_recall@1": 0.5, "small_map@r": 0.25, "nmi": 0.75},
                "test_selected": {"epoch": 3, "recall@1": 0.625},
            }
        )
    )
    (run_dir / "cost.json").write_text(
        json.dumps(
            {
                "device": "cuda:0",
                "gpu_hours": 2.0,
                "device_seconds": 7200.0,
                "train_seconds": 7000.0,
                "images_per_second": 100.0,
                "peak_gpu_mb": 1000,
                "energy_kwh": 0.5,
            }
        )
    )
    rows = results_table.run_rows(
        run_dir, {"preset": "p", "experiment": "ms.t1", "dataset": "vehicleid", "method": "ms", "seed": 0}
    )
    got = {(r["split"], r["metric"], r["value"], r["epoch"]) for r in rows}
    assert got == {
        ("large", "recall@1", 0.5, None),
        ("small", "map@r", 0.25, None),
        ("test", "nmi", 0.75, None),
        ("test_selected", "recall@1", 0.625, 3),
    }
    assert {r["paper"] for r in rows} == {"ms"} and {r["gpu_hours"] for r in rows} == {2.0}
    path = tmp_path / "runs.parquet"
    pd.DataFrame(rows, columns=results_table.COLUMNS).to_parquet(path)
    answer = results_table.query(path, "SELECT sum(value) AS total FROM runs WHERE split <> 'test_selected'")
    assert answer["total"].tolist() == [pytest.approx(1.5)]
    from dmlbench.core.errors import DmlbenchError

    with pytest.raises(DmlbenchError, match="the query failed"):
        results_table.query(path, "SELECT nothing FROM runs")
    with pytest.raises(DmlbenchError, match="does not exist"):
        results_table.query(tmp_path / "none.parquet", "SELECT 1")


def test_the_ledger_adds_up_each_experiments_trainings_and_leaves_superseded_ones_out(tmp_path):
    from dmlbench.report import ledger

    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    entries = {
        "ms.t1/cub/ms/seed0": (3600.0, 1.0, 0.2),
        "ms.t1/cub/ms/seed1": (1800.0, 0.5, None),
        "dro.t1/cub/dro/seed0": (720.0, 0.2, 0.1),
        "dro.t1/cub/dro/seed0.superseded-abc": (9e9, 9.0, 9.0),
    }
    for folder, (seconds, gpu_hours, kwh) in entries.items():
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "cost.json").write_text(
            json.dumps(
                {
                    "device_seconds": seconds,
                    "gpu_hours": gpu_hours,
                    "energy_kwh": kwh,
                    "wall_seconds": seconds + 60,
                    "images_per_second": 10.0,
                }
            )
        )
    budget = tmp_path / "budget.csv"
    pd.DataFrame({"experiment": ["ms.t1", "ms.t1"], "hours": [1.0, 0.25]}).to_csv(budget, index=False)
    table = ledger.collect(plan, tmp_path, budget).set_index("experiment")
    assert table.loc["ms.t1", "trainings"] == 2 and table.loc["ms.t1", "device_hours"] == pytest.approx(1.5)
    assert table.loc["ms.t1", "gpu_hours"] == pytest.approx(1.5) and pd.isna(table.loc["ms.t1", "energy_kwh"])
    assert table.loc["ms.t1", "projected_hours"] == pytest.approx(1.25)
    assert table.loc["dro.t1", "trainings"] == 1 and table.loc["dro.t1", "energy_kwh"] == pytest.approx(0.1)
    total = ledger.totals(table.reset_index())
    assert total["gpu_hours"] == pytest.approx(1.7) and total["energy_kwh"] is None
    assert "1.70 GPU-hours" in ledger.headline(total)


def test_a_damaged_model_of_a_run_without_checkpoint_is_kept_aside_while_the_run_trains_again(small_run, tmp_path):
    from dmlbench.core.errors import DmlbenchError
    from dmlbench.evaluation.evaluate_run import evaluate
    from dmlbench.training.train import train

    run_dir = tmp_path / "run"
    train(small_run, run_dir, log=lambda m: None)
    expected = evaluate(run_dir, run_dir / "metrics.json")["metrics"]
    (run_dir / "model.pt").write_bytes((run_dir / "model.pt").read_bytes()[:1000])
    with pytest.raises(DmlbenchError, match="delete that file and rerun"):
        evaluate(run_dir, run_dir / "metrics.json")
    logs = []
    train(small_run, run_dir, log=logs.append)
    assert any("finished before and kept no checkpoint" in line for line in logs)
    assert (run_dir / "model.pt.corrupt").exists() and not (run_dir / "checkpoint.pt").exists()
    assert evaluate(run_dir, run_dir / "metrics.json")["metrics"] == expected  # trained again, the same


def test_a_tracking_uri_with_credentials_is_refused_before_anything_is_written(tmp_path):
    from dmlbench.config.plan import Plan
    from dmlbench.core.errors import ConfigError
    from dmlbench.training.train import train

    from conftest import CONFIG_DIR

    secret = "http://alice:s3cr3t-TOKEN@mlflow.example.org:5000/"
    with pytest.raises(ConfigError, match="tracking.mlflow holds credentials.*MLFLOW_TRACKING_USERNAME") as refused:
        Plan.load(CONFIG_DIR, {"preset": "smoke", "overrides": {"tracking": {"mlflow": secret}}})
    assert "s3cr3t" not in str(refused.value)
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    cfg = plan.resolve(plan.runs()[0])
    cfg["tracking"]["mlflow"] = secret  # a spec handed to the train step by hand
    with pytest.raises(ConfigError, match="holds credentials"):
        train(cfg, tmp_path / "run", log=lambda m: None)
    assert not (tmp_path / "run").exists()
    Plan.load(CONFIG_DIR, {"preset": "smoke", "overrides": {"tracking": {"mlflow": "http://mlflow.example.org:5000/"}}})
