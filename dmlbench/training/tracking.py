"""Where a run reports while it trains: TensorBoard event files beside the run
(`tracking.tensorboard`) and an MLflow tracking server (`tracking.mlflow`, its URI).

Every tracker call runs on one background thread, so a slow or failing tracker never stops or
slows a training: a tracker that fails is named in the log once and dropped for the rest of the
run. MLflow keys allow no `@`: `recall@1` is logged as `recall_at_1`, `map@r` as `map_at_r`.
A resumed run continues its MLflow run (its id is kept in `<run>/mlflow_run_id`) and its
TensorBoard events from the resumed epoch on.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from pathlib import Path

MLFLOW_RUN_ID = "mlflow_run_id"
CLOSE_TIMEOUT_S = 120  # the most a finished training waits for its trackers (the model's upload)
# the most a stopped one waits (an error, SIGTERM at SLURM's time limit): well under SLURM's default
# KillWait (30 s before SIGKILL) and the stop's own grace (`train.STOP_GRACE_S`)
STOP_TIMEOUT_S = 10


def mlflow_key(name: str) -> str:
    return name.replace("@", "_at_")


def flatten(settings: dict, prefix: str = "") -> dict[str, str]:
    """Dotted keys of a nested config, each value as text (lists as JSON)."""
    out = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = json.dumps(value) if isinstance(value, (list, type(None), bool)) else str(value)
    return out


def scalars(row: dict) -> dict[str, float]:
    """The numbers of an epoch row worth a curve (the epoch number is the step)."""
    return {
        key: float(value)
        for key, value in row.items()
        if key != "epoch" and isinstance(value, (int, float)) and not isinstance(value, bool)
    }


class _TensorBoard:
    def __init__(self, run_dir: Path, first_epoch: int):
        from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package

        # purge_step: events a killed attempt wrote after the checkpoint it resumes from are dropped
        self.writer = SummaryWriter(log_dir=str(run_dir / "tensorboard"), purge_step=first_epoch + 1)

    def epoch(self, row: dict, learning_rates: list[float]) -> None:
        step = row["epoch"]
        for key, value in scalars(row).items():
            self.writer.add_scalar(key if key == "loss" else f"epoch/{key}", value, step)
        for i, rate in enumerate(learning_rates):
            self.writer.add_scalar(f"lr/group{i}", rate, step)
        self.writer.flush()

    def finished(self, metrics: dict, step: int, model: Path) -> None:
        for key, value in metrics.items():
            self.writer.add_scalar(f"final/{key}", value, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class _MLflow:
    def __init__(self, uri: str, cfg: dict, run_dir: Path):
        # a server that does not answer costs seconds, not MLflow's default minutes of retries
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=uri)
        names = cfg["run"]
        experiment = names["experiment"]
        found = self.client.get_experiment_by_name(experiment)
        experiment_id = found.experiment_id if found else self.client.create_experiment(experiment)
        id_file = run_dir / MLFLOW_RUN_ID
        if id_file.exists():  # a resumed training continues its run
            self.run_id = id_file.read_text().strip()
            return
        run_name = "/".join(str(names[key]) for key in ("dataset", "method", "seed") if key in names)
        tags = {f"dmlbench.{key}": str(value) for key, value in names.items()}
        self.run_id = self.client.create_run(experiment_id, run_name=run_name, tags=tags).info.run_id
        id_file.write_text(self.run_id + "\n")
        params = [Param(key[:250], value[:6000]) for key, value in flatten(cfg).items()]
        for start in range(0, len(params), 100):  # the server takes at most 100 parameters a call
            self.client.log_batch(self.run_id, params=params[start : start + 100])

    def _metrics(self, values: dict, step: int, prefix: str = "") -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(prefix + mlflow_key(key), value, now, step) for key, value in values.items()]
        for start in range(0, len(metrics), 1000):
            self.client.log_batch(self.run_id, metrics=metrics[start : start + 1000])

    def epoch(self, row: dict, learning_rates: list[float]) -> None:
        self._metrics({**scalars(row), **{f"lr_group{i}": r for i, r in enumerate(learning_rates)}}, row["epoch"])

    def finished(self, metrics: dict, step: int, model: Path) -> None:
        self._metrics(metrics, step, prefix="final_")
        self.client.log_artifact(self.run_id, str(model))
        self.client.set_terminated(self.run_id)

    def close(self) -> None:
        pass


class Tracking:
    """The run's trackers, fed from a background thread. `epoch` and `finished` return at once;
    `close` waits for what is queued (at most `timeout`: CLOSE_TIMEOUT_S, or STOP_TIMEOUT_S for
    a training that stopped)."""

    def __init__(self, cfg: dict, run_dir: Path, first_epoch: int, log=print):
        self._log = log
        self._sinks: dict[str, object] = {}
        self._queue: queue.Queue = queue.Queue()
        settings = cfg.get("tracking") or {}
        wanted = []
        if settings.get("tensorboard"):
            wanted.append(("TensorBoard", lambda: _TensorBoard(Path(run_dir), first_epoch)))
        if settings.get("mlflow"):
            wanted.append((f"MLflow at {settings['mlflow']}", lambda: _MLflow(settings["mlflow"], cfg, Path(run_dir))))
        self._thread = None
        if wanted:
            self._queue.put(("open", wanted))
            self._thread = threading.Thread(target=self._work, name="dmlbench-tracking", daemon=True)
            self._thread.start()

    def epoch(self, row: dict, learning_rates: list[float]) -> None:
        if self._thread:
            self._queue.put(("epoch", (dict(row), list(learning_rates))))

    def finished(self, metrics: dict, step: int, model: Path) -> None:
        if self._thread:
            self._queue.put(("finished", (dict(metrics), step, Path(model))))

    def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        if not self._thread:
            return
        self._queue.put(("close", None))
        thread, self._thread = self._thread, None  # closed once: a later close returns at once
        thread.join(timeout)
        if thread.is_alive():
            self._log(f"tracking: still busy after {timeout} s; the training ends without waiting")

    def _work(self) -> None:
        while True:
            kind, payload = self._queue.get()
            if kind == "open":
                for name, make in payload:
                    self._call(name, make, opening=True)
                continue
            for name, sink in list(self._sinks.items()):
                if kind == "close":
                    self._call(name, sink.close)
                else:
                    self._call(name, lambda: getattr(sink, kind)(*payload))
            if kind == "close":
                return

    def _call(self, name: str, action, opening: bool = False) -> None:
        try:
            result = action()
            if opening:
                self._sinks[name] = result
        except Exception as error:  # a tracker never fails a training
            self._sinks.pop(name, None)
            hint = " (pip install tensorboard)" if isinstance(error, ImportError) and "TensorBoard" in name else ""
            self._log(
                f"tracking: {name} failed and is off for this run{hint}: "
                f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"
            )
