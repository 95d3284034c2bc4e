"""Every run's results in one table: `results/<preset>/runs.parquet`, one row per run × split ×
metric, and SQL over it (`python -m dmlbench results "<SQL>"`, DuckDB; the table is `runs`).

Splits: `test` (the final model's metrics, `metrics.json`), `test_selected` (the epoch with the best
test Recall@1 where the run evaluated every epoch, as several papers report; `epoch` says which),
and for VehicleID each test list (`small`, `medium`, `large`). Each row also carries the run's
config fingerprint (`dmlbench.training.run_folder.fingerprint` of its `config.json`), the commit it
was trained at (`env.json`) and its cost (`cost.json`, see `dmlbench.training.cost`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from dmlbench.errors import DmlbenchError
from dmlbench.io import atomic_path

COST_COLUMNS = ["device", "gpu_hours", "device_seconds", "train_seconds", "images_per_second",
                "peak_gpu_mb", "energy_kwh"]
COLUMNS = ["preset", "experiment", "paper", "dataset", "method", "seed", "split", "metric", "value", "epoch",
           "fingerprint", "commit", *COST_COLUMNS]


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text()) if path.exists() else {}
    except ValueError as error:
        raise DmlbenchError(f"{path} is not valid JSON ({error}): rerun the step that writes it") from None


def run_rows(run_dir: Path, names: dict) -> list[dict]:
    """The rows of one run folder (its `metrics.json` must exist)."""
    from dmlbench.training import cost, run_folder

    result = _read(run_dir / "metrics.json")
    if "metrics" not in result:
        raise DmlbenchError(f"{run_dir / 'metrics.json'} is missing or has no metrics: rerun its train job (snakemake writes both)")
    config = _read(run_dir / "config.json")
    spent = _read(run_dir / cost.RECORD)
    shared = {**names, "paper": names["experiment"].split(".")[0],
              "fingerprint": run_folder.fingerprint(config) if config else None,
              "commit": _read(run_dir / "env.json").get("git_commit"),
              **{key: spent.get(key) for key in COST_COLUMNS}}
    rows = []
    for key, value in result["metrics"].items():
        split, metric = _split_of(key)
        rows.append({**shared, "split": split, "metric": metric, "value": value, "epoch": None})
    selected = result.get("test_selected") or {}
    rows += [{**shared, "split": "test_selected", "metric": key, "value": value, "epoch": selected["epoch"]}
             for key, value in selected.items() if key != "epoch"]
    return rows


VEHICLEID_LISTS = ("small", "medium", "large")


def _split_of(key: str) -> tuple[str, str]:
    """`large_recall@1` → (large, recall@1); `recall@1` → (test, recall@1)."""
    head, _, rest = key.partition("_")
    return (head, rest) if head in VEHICLEID_LISTS and rest else ("test", key)


def build(plan, output: Path) -> pd.DataFrame:
    """The table of every run of the plan's experiments, written to `output` (parquet)."""
    rows = []
    for run in plan.runs():
        names = {"preset": plan.name, "experiment": run.experiment, "dataset": run.dataset,
                 "method": run.method, "seed": run.seed}
        rows += run_rows(Path(run.path(plan.name)), names)
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["epoch"] = table["epoch"].astype("Int64")
    output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(output) as tmp:
        table.to_parquet(tmp, index=False)
    return table


def query(table: Path, sql: str) -> pd.DataFrame:
    """The result of `sql` over the table, which it names `runs`."""
    import duckdb

    if not table.exists():
        raise DmlbenchError(f"{table} does not exist: run the workflow (its results_table step writes it)")
    with duckdb.connect() as connection:
        connection.execute(f"CREATE VIEW runs AS SELECT * FROM read_parquet('{_quoted(table)}')")
        try:
            return connection.execute(sql).df()
        except duckdb.Error as error:
            raise DmlbenchError(f"the query failed: {' '.join(str(error).split())}") from None


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")
