"""The preflight's outputs: each group's probe (preflight.csv, .md) and the plan's projected
compute budget (budget.csv, .md)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dmlbench.config.plan import Plan
from dmlbench.core.io import atomic_path
from dmlbench.preflight import budget, disk
from dmlbench.preflight.grouping import Group
from dmlbench.preflight.probe import LIGHT_SIDE, LIGHT_TRUNK
from dmlbench.report import markdown
from dmlbench.run_config import RunConfig


PROJECTION_COLUMNS = ["experiment", "run", "group", "steps", "hours", "results_gb"]


def project_group(plan: Plan, group: Group, measured: pd.Series, image_side) -> list[dict]:
    """Seconds of every run of a probed group (see `budget`); none when its probe failed."""
    if measured["status"] != "passed":
        return []
    rows = []
    for run in group.runs:
        cfg = RunConfig.from_dict(plan.resolve(run))
        scale = (cfg.input.crop / image_side) ** 2 if image_side else 1.0
        seconds = budget.run_seconds(
            cfg, run.dataset, measured["seconds_per_step"] * scale, measured["eval_seconds_per_image"] * scale
        )
        rows.append(
            {
                "experiment": run.experiment,
                "run": run.path(plan.name),
                "group": group.key,
                "steps": cfg.epochs * budget.steps_per_epoch(cfg, run.dataset),
                "hours": seconds / 3600,
                "results_gb": disk.run_bytes(cfg, run.dataset) / 1e9,
            }
        )
    return rows


def _incomplete(left: int) -> list[str]:
    return (
        [f"**Incomplete**: {left} group(s) not probed yet (the preflight is running, or was stopped).", ""]
        if left
        else []
    )


def write_table(
    table: pd.DataFrame, output_dir: Path, preset: str, measured_on: str, image_side, left: int = 0
) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(output_dir / "preflight.csv") as tmp:
        table.drop(columns=["traceback"]).to_csv(tmp, index=False)
    lines = [
        f"# Preflight of preset `{preset}`",
        "",
        f"Measured on {measured_on}"
        + (f", image side {image_side} px (batch, method and network as planned)" if image_side else "")
        + ".",
        "",
        f"A group whose network shape (trunk, input, batch size, precision) an earlier group has "
        f"ran its code path on {LIGHT_TRUNK} at {LIGHT_SIDE} px; its s/step and peak memory are "
        f"those of the group that timed it.",
        "",
        *_incomplete(left),
        "| group | code path | runs | status | s/step | peak MB | timed by | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        timed = row.status == "passed" and pd.notna(row.seconds_per_step)
        step = f"{row.seconds_per_step:.3f}" if timed else ""
        peak = f"{row.peak_mb:.0f}" if timed else ""
        lines.append(
            markdown.row(
                [
                    row.group,
                    row.code_path,
                    row.runs,
                    row.status,
                    step,
                    peak,
                    "" if row.timed_by == row.group else row.timed_by,
                    row.error,
                ]
            )
        )
    with atomic_path(output_dir / "preflight.md") as tmp:
        tmp.write_text("\n".join(lines) + "\n")


def write_budget(
    projection: pd.DataFrame,
    output_dir: Path,
    measured_on: str,
    image_side,
    devices: int,
    preset: str,
    left: int = 0,
    jobs: list[dict] | None = None,
) -> None:
    with atomic_path(output_dir / "budget.csv") as tmp:
        projection.to_csv(tmp, index=False)
    scaled = f", times scaled from {image_side} px by the pixel ratio" if image_side else ""
    lines = [
        f"# Compute budget of preset `{preset}`",
        "",
        f"Projected from seconds per step measured on {measured_on}{scaled}; "
        f"formula in docs/preflight.md. Runs of failed groups are not counted. Results GB: what "
        f"the finished runs keep (models, test embeddings, records; dmlbench/preflight/disk.py).",
        "",
        *_incomplete(left),
        f"| experiment | runs | device-hours | wall hours on {devices} devices | results GB |",
        "|---|---|---|---|---|",
    ]
    for experiment, part in projection.groupby("experiment", sort=False):
        lines.append(
            markdown.row(
                [
                    experiment,
                    len(part),
                    f"{part['hours'].sum():.1f}",
                    f"{budget.wall_seconds(list(part['hours']), devices):.1f}",
                    f"{part['results_gb'].sum():.1f}",
                ]
            )
        )
    hours = list(projection["hours"])
    lines.append(
        f"| **all** | {len(hours)} | {sum(hours):.1f} | {budget.wall_seconds(hours, devices):.1f} | "
        f"{projection['results_gb'].sum():.1f} |"
    )
    lines += ["", budget.cluster_summary(jobs or [], dict(zip(projection["run"], projection["hours"])), devices)]
    with atomic_path(output_dir / "budget.md") as tmp:
        tmp.write_text("\n".join(lines) + "\n")
