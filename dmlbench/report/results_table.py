"""Every run's results in one table: `results/<preset>/runs.parquet`, one row per run × split ×
metric, and SQL over it (`python -m dmlbench results "<SQL>"`, DuckDB; the table is `runs`).

Splits: `test` (the final model's metrics, `metrics.json`), `test_selected` (the epoch with the best
test Recall@1 where the run evaluated every epoch, as several papers report; `epoch` says which),
and for VehicleID each test list (`small`, `medium`, `large`). `value` is a fraction, `percent` the
same in % as the report prints it, `paper_percent` the paper's printed number for the row where
the catalogue has one. Each row also carries the run's
config fingerprint (`dmlbench.training.run_folder.fingerprint` of the settings its metrics were
computed with), the commit it was trained at (`env.json`), its cost (`cost.json`, see
`dmlbench.training.cost`), its `status` and wall seconds. A run that has no numbers with the plan's
settings yet (running, failed, interrupted, not started, or stale: see `run_status`) has one row
without a metric, so the table can be built while a sweep runs; a failed run's row has its error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from dmlbench.core.errors import DmlbenchError
from dmlbench.core.io import atomic_path
from dmlbench.report import run_status

COST_COLUMNS = [
    "device",
    "gpu_hours",
    "device_seconds",
    "train_seconds",
    "images_per_second",
    "peak_gpu_mb",
    "energy_kwh",
]
COLUMNS = [
    "preset",
    "experiment",
    "paper",
    "dataset",
    "method",
    "seed",
    "status",
    "split",
    "metric",
    "value",
    "percent",
    "paper_percent",
    "epoch",
    "fingerprint",
    "commit",
    "wall_seconds",
    *COST_COLUMNS,
    "error",
]


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text()) if path.exists() else {}
    except ValueError as error:
        raise DmlbenchError(f"{path} is not valid JSON ({error}): rerun the step that writes it") from None


def run_rows(run_dir: Path, names: dict, planned: str | list[str] | None = None, log: Path | None = None) -> list[dict]:
    """The rows of one run folder: one per metric when its metrics are the plan's (`planned`, the
    fingerprint(s) of the plan's settings; None: whatever settings they were computed with), else
    one row with its status."""
    from dmlbench.training import cost

    result = _read(run_dir / "metrics.json")
    if result and not isinstance(result.get("metrics"), dict):
        raise DmlbenchError(f"{run_dir / 'metrics.json'} has no metrics: rerun its train job (snakemake writes it)")
    fingerprint = run_status.metrics_fingerprint(run_dir, result) if result else None
    state, error = run_status.status(run_dir, result, planned or fingerprint, log or Path(os.devnull))
    spent = _read(run_dir / cost.RECORD)
    shared = {
        **names,
        "paper": names["experiment"].split(".")[0],
        "status": state,
        "fingerprint": fingerprint,
        "commit": _read(run_dir / "env.json").get("git_commit"),
        "wall_seconds": run_status.wall_seconds(run_dir, spent),
        **{key: spent.get(key) for key in COST_COLUMNS},
        "error": error,
    }
    if state != run_status.FINISHED:
        return [{**shared, "split": None, "metric": None, "value": None, "epoch": None}]
    trunk = result.get("trunk_feature") or {}
    values = list(result["metrics"].items()) + [
        (f"{k} (test-selected)", v) for k, v in (result.get("test_selected") or {}).items() if k != "epoch"
    ]
    values += [(f"{k} (trunk feature)", v) for k, v in trunk.items()]
    impossible = [(k, v) for k, v in values if not isinstance(v, (int, float)) or (v == v and not 0.0 <= v <= 1.0)]
    if impossible:  # NaN passes: a failed evaluation, judged as such
        raise DmlbenchError(
            f"{run_dir / 'metrics.json'} holds metrics outside [0, 1]: "
            f"{', '.join(f'{k} {v!r}' for k, v in impossible)}; rerun its train job"
        )
    rows = []
    for key, value in result["metrics"].items():
        split, metric = _split_of(key)
        rows.append({**shared, "split": split, "metric": metric, "value": value, "epoch": None})
    selected = result.get("test_selected") or {}
    rows += [
        {**shared, "split": "test_selected", "metric": key, "value": value, "epoch": selected["epoch"]}
        for key, value in selected.items()
        if key != "epoch"
    ]
    rows += [
        {**shared, "split": "trunk_feature", "metric": key, "value": value, "epoch": None}
        for key, value in trunk.items()
    ]
    return rows


VEHICLEID_LISTS = ("small", "medium", "large")


def _split_of(key: str) -> tuple[str, str]:
    """`large_recall@1` → (large, recall@1); `recall@1` → (test, recall@1)."""
    head, _, rest = key.partition("_")
    return (head, rest) if head in VEHICLEID_LISTS and rest else ("test", key)


def _paper_number(plan, experiment: str, method: str, dataset: str, split, metric) -> float | None:
    """The number the paper prints for this row (%), where the catalogue has one: the final
    model's, or the test-selected epoch's where the paper selects so (`table.test_selected`)."""
    exp = plan.experiments[experiment]
    selected = (exp.get("table") or {}).get("test_selected") or []
    if split == "test_selected" and metric not in selected or split == "test" and metric in selected:
        return None
    key = f"{split}_{metric}" if split in VEHICLEID_LISTS else metric
    value = ((exp.get("reported") or {}).get(method) or {}).get(dataset, {}).get(key)
    return None if value is None else float(value)


def build(plan, output: Path) -> pd.DataFrame:
    """The table of every run of the plan's experiments, written to `output` (parquet)."""

    rows = []
    for run in plan.runs():
        names = {
            "preset": plan.name,
            "experiment": run.experiment,
            "dataset": run.dataset,
            "method": run.method,
            "seed": run.seed,
        }
        rows += run_rows(
            Path(run.path(plan.name)),
            names,
            plan.accepted_fingerprints(run),
            Path(plan.trained_as(run).train_log(plan.name)),
        )
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["percent"] = 100.0 * table["value"].astype(float)  # as the report's tables print it
    table["paper_percent"] = [
        _paper_number(plan, r.experiment, r.method, r.dataset, r.split, r.metric) for r in table.itertuples()
    ]
    table["epoch"] = table["epoch"].astype("Int64")
    output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(output) as tmp:
        table.to_parquet(tmp, index=False)
    return table


def counts(table: pd.DataFrame) -> str:
    """`12 finished, 3 running, 1 failed` over the table's runs, and the failed ones named."""
    runs = table.drop_duplicates(["experiment", "dataset", "method", "seed"])
    shown = ", ".join(f"{n} {state}" for state, n in runs["status"].value_counts().items())
    failed = runs[runs["status"] == run_status.FAILED]
    named = "".join(
        f"\n  failed: {r.experiment}/{r.dataset}/{r.method}/seed{r.seed}: {r.error}" for r in failed.itertuples()
    )
    return f"{len(runs)} runs: {shown}{named}"


def query(table: Path, sql: str, max_rows: int | None = None) -> pd.DataFrame:
    """The result of `sql` over the table, which it names `runs` (at most `max_rows` + 1 rows read:
    one more tells the caller there were more). The query runs on a locked connection: the table is
    loaded first, then file access, extensions and changes of settings are switched off (no
    reading or writing other files, no ATTACH, no INSTALL or LOAD), within `MEMORY_LIMIT`."""
    import duckdb

    if not table.exists():
        raise DmlbenchError(f"{table} does not exist: run the workflow (its results_table step writes it)")
    _check_select(sql)
    with duckdb.connect(
        config={
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "memory_limit": MEMORY_LIMIT,
            "threads": 2,
        }
    ) as connection:
        try:
            connection.execute(f"CREATE TABLE runs AS SELECT * FROM read_parquet('{_quoted(table)}')")
        except duckdb.Error as error:
            raise DmlbenchError(
                f"{table} cannot be read ({' '.join(str(error).split())[:200]}): "
                f"write it again (`snakemake --forcerun results_table --config preset={table.parent.name}` "
                f"with the settings it was made with)"
            ) from None
        for setting in LOCKED:
            connection.execute(setting)
        try:
            relation = connection.sql(sql)
            return (relation if max_rows is None else relation.limit(max_rows + 1)).df()
        except duckdb.Error as error:
            raise DmlbenchError(f"the query failed: {' '.join(str(error).split())}") from None


def _check_select(sql: str) -> None:
    """One statement that reads (SELECT, WITH, DESCRIBE, SUMMARIZE), else the statement named."""
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as error:
        raise DmlbenchError(f"the query failed: {' '.join(str(error).split())}") from None
    kinds = [statement.type.name for statement in statements]
    if kinds != ["SELECT"]:
        said = ", ".join(kinds) or "nothing"
        raise DmlbenchError(f"give one SELECT over runs (a query that reads), not {said}: {sql.strip()[:80]!r}")


MEMORY_LIMIT = "2GB"  # a query's working memory (DuckDB spills or refuses beyond it)
# what a query cannot do (the last one: nor undo the others)
LOCKED = (
    "SET enable_external_access = false",
    "SET allow_community_extensions = false",
    "SET lock_configuration = true",
)


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")
