"""The cost ledger of a preset: what every training spent (each run's `cost.json`, see
`dmlbench.training.cost`), per experiment and in total, beside the preflight's projection where
the preset has one (`reports/<preset>/preflight/budget.csv`: projected vs spent device-hours)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from dmlbench.report.html_templates import Cell, Markup, Row, render
from dmlbench.training.cost import RECORD

COLUMNS = [
    "experiment",
    "trainings",
    "device_hours",
    "gpu_hours",
    "energy_kwh",
    "wall_hours",
    "images_per_second",
    "projected_hours",
]


def _spent(experiment_dir: Path) -> list[dict]:
    rows = []
    for path in sorted(experiment_dir.rglob(RECORD)):
        if ".superseded-" in str(path):  # the files of replaced settings are not this result's cost
            continue
        try:
            rows.append(json.loads(path.read_text()))
        except ValueError:
            continue  # a damaged entry is left out, not guessed
    return rows


def collect(plan, results_dir: Path, budget_csv: Path | None = None) -> pd.DataFrame:
    """One row per experiment of the plan with at least one finished training: trainings (runs and
    fold trainings), device-, GPU- and wall-hours, kWh (where NVML gave every epoch's energy),
    the median images per second, and the preflight's projected device-hours when present."""
    projected = {}
    if budget_csv is not None and budget_csv.exists():
        budget = pd.read_csv(budget_csv)
        projected = budget.groupby("experiment")["hours"].sum().to_dict()
    rows = []
    for experiment in plan.experiment_ids:
        spent = _spent(results_dir / experiment)
        if not spent:
            continue
        energy = [entry.get("energy_kwh") for entry in spent]
        speeds = [entry["images_per_second"] for entry in spent if entry.get("images_per_second")]
        rows.append(
            {
                "experiment": experiment,
                "trainings": len(spent),
                "device_hours": sum(e["device_seconds"] for e in spent) / 3600,
                "gpu_hours": sum(e["gpu_hours"] for e in spent),
                "energy_kwh": sum(energy) if None not in energy else None,
                "wall_hours": sum(e["wall_seconds"] for e in spent) / 3600,
                "images_per_second": float(pd.Series(speeds).median()) if speeds else None,
                "projected_hours": projected.get(experiment),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def totals(ledger: pd.DataFrame) -> dict:
    energy = list(ledger["energy_kwh"])
    return {
        "trainings": int(ledger["trainings"].sum()),
        "device_hours": float(ledger["device_hours"].sum()),
        "gpu_hours": float(ledger["gpu_hours"].sum()),
        "energy_kwh": float(sum(energy)) if energy and None not in energy and not pd.isna(energy).any() else None,
    }


def headline(total: dict) -> str:
    """The landing page's line."""
    energy = f", {total['energy_kwh']:.2f} kWh" if total["energy_kwh"] is not None else ""
    return (
        f"cost: {total['trainings']} trainings, {total['gpu_hours']:.2f} GPU-hours, "
        f"{total['device_hours']:.2f} device-hours{energy}"
    )


def _cell(value, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "–"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def html_section(ledger: pd.DataFrame, preset: str) -> Markup:
    """The ledger's table on a preset's page (nothing without trainings)."""
    if ledger.empty:
        return Markup()
    total = totals(ledger)
    head = [
        "experiment",
        "trainings",
        "device-hours",
        "GPU-hours",
        "kWh",
        "wall hours",
        "images/s (median)",
        "projected device-hours (preflight)",
    ]
    body = [
        Row(tuple(Cell(_cell(row[c], 0 if c == "images_per_second" else 3)) for c in COLUMNS))
        for _, row in ledger.iterrows()
    ]
    spent = (total["trainings"], total["device_hours"], total["gpu_hours"], total["energy_kwh"])
    body.append(
        Row((Cell("all", header=True), *(Cell(_cell(v, 3), header=True) for v in spent), *[Cell(header=True)] * 3))
    )
    return render("ledger.html", preset=preset, head=head, body=body)
