"""The preflight of a plan: probe each group, write the table and the budget, say what failed."""

from __future__ import annotations

import json
import os
import platform
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import torch

from dmlbench.core import environment
from dmlbench import training
from dmlbench.config.plan import Plan
from dmlbench.data import datasets
from dmlbench.core.io import atomic_path
from dmlbench.preflight import budget, disk, workers
from dmlbench.preflight.grouping import Group, group_runs, shape_owners, with_shape_timings
from dmlbench.preflight.probe import LIGHT_SIDE, LIGHT_TRUNK
from dmlbench.core.progress import Bar
from dmlbench.report import markdown
from dmlbench.run_config import RunConfig


def structure(value):
    """`value` with each number replaced by its sign class ("0", "+" or "-"): what tells code paths
    apart (names, switches, zero or not), without the numbers that only move results."""
    if isinstance(value, dict):
        return {key: structure(item) for key, item in value.items()}
    if isinstance(value, list):
        return [structure(item) for item in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "0" if value == 0 else "+" if value > 0 else "-"
    return value


def features(group: Group) -> set[str]:
    """What `bounded` covers: the group's paper, backbone, loss, miner and scheme (names and
    structure), sampler and evaluation layout."""
    cfg, run = group.typed, group.run
    method = cfg.method
    return {
        f"paper:{run.experiment.split('.')[0]}",
        f"backbone:{cfg.model.backbone}",
        "loss:" + json.dumps(structure(method.loss), sort_keys=True),
        "miner:" + json.dumps(structure(method.miner), sort_keys=True),
        f"sampler:{method.sampler}",
        "scheme:" + json.dumps(structure(asdict(cfg.scheme)), sort_keys=True),
        f"layout:{datasets.get(run.dataset).evaluation}",
    }


# What the fork server imports once: the probe and what a training imports on its way (torch's
# compiler stack alone took about 3 s a probe); a module that is not installed is skipped.
PROBE_PRELOAD = ["dmlbench.preflight.workers", *training.IMPORTS, *training.OPTIONAL_IMPORTS]

# A probe's fixed work (its process, model builds, checkpoints, three evaluations) costs about as
# much as 450 training images at 32 px on a CPU core (measured 2026-11-25): the cost of a group is
# that plus its two steps' images.
PROBE_OVERHEAD_IMAGES = 450


def probe_cost(group: Group) -> int:
    return PROBE_OVERHEAD_IMAGES + 2 * group.typed.batch.size


def bounded(groups: list[Group]) -> list[Group]:
    """The cheapest part of the groups found by the greedy set cover (most new features per unit
    of `probe_cost`, earliest group on ties) that still covers every feature of `features`;
    returned in the groups' order. The full preflight probes the rest (numbers included)."""
    wanted = [features(group) for group in groups]
    costs = [probe_cost(group) for group in groups]
    left = set().union(*wanted) if wanted else set()
    chosen: set[int] = set()
    while left:
        best = max(range(len(groups)), key=lambda i: (len(wanted[i] & left) / costs[i], -i))
        chosen.add(best)
        left -= wanted[best]
    return [group for i, group in enumerate(groups) if i in chosen]


def device_label(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA)"
    return (
        f"CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} threads"
    )


def run(
    plan: Plan,
    workdir: Path,
    output_dir: Path,
    image_side: int | None,
    device: str,
    devices: int,
    only_bounded: bool = False,
    jobs: int | None = None,
    warm_steps: int | None = None,
    log=print,
) -> bool:
    """Probe the plan's groups; write `preflight.csv/.md` and `budget.csv/.md` to `output_dir`
    after every group (marked incomplete until the last), so a preflight stopped part-way leaves
    what it probed. True when every group passed."""
    groups = group_runs(plan)
    total = len(groups)
    if only_bounded:
        groups = bounded(groups)
    torch_device = environment.pick_device(device)
    jobs = jobs or parallel_probes(torch_device)
    warm_steps = default_warm_steps(torch_device) if warm_steps is None else warm_steps
    threads = max(1, (os.cpu_count() or 1) // jobs) if torch_device.type == "cpu" else None
    log(
        f"preflight of preset {plan.name}: {len(plan.all_runs())} runs in {total} code paths; probing "
        f"{len(groups)}{' (bounded part)' if only_bounded else ''}"
        f"{f', image side {image_side} px' if image_side else ''}"
        f"{f', {jobs} probes at a time on {threads} thread(s) each' if jobs > 1 else ''}"
    )
    from dmlbench.config.verdict_spec import undecidable_line

    few_seeds = undecidable_line(plan)
    if few_seeds:
        log(few_seeds)
    measured_on = device_label(torch_device) + (
        f"; {jobs} probes at a time, {threads} thread(s) each" if jobs > 1 else ""
    )
    measured_on += (
        f"; seconds per step: the mean of {warm_steps} warm steps after a first one, in the epoch after a resume"
        if warm_steps
        else "; seconds per step: the one step of the epoch after a resume (a cold step: it "
        "includes the loader's start; `--warm-steps N` times N warm steps)"
    )

    projected: dict[str, list[dict]] = {}  # each group's runs projected once, when its probe ends

    def write(table: pd.DataFrame) -> None:
        done = set(table["group"])
        by_group = table.set_index("group")
        for group in groups:  # projected once its timings are known (a light group's: its shape's)
            if (
                group.key in done
                and group.key not in projected
                and (
                    by_group.loc[group.key, "status"] != "passed"
                    or pd.notna(by_group.loc[group.key, "seconds_per_step"])
                )
            ):
                projected[group.key] = project_group(plan, group, by_group.loc[group.key], image_side)
        _write_table(table, output_dir, plan.name, measured_on, image_side, len(groups) - len(done))
        rows = [row for group in groups for row in projected.get(group.key, [])]
        _write_budget(
            pd.DataFrame(rows, columns=PROJECTION_COLUMNS),
            output_dir,
            measured_on,
            image_side,
            devices,
            plan.name,
            len(groups) - len(done),
            plan.gpu_jobs(),
        )

    table = probe_all(groups, Path(workdir), image_side, device, plan.name, log, jobs, threads, write, warm_steps)
    failed = table[table["status"] != "passed"]
    for row in failed.itertuples():
        log(f"FAILED {row.group} {row.code_path}: {row.error}\n  runs: {row.run_list}")
    log(
        f"{len(table) - len(failed)} of {len(table)} groups passed; table: {output_dir / 'preflight.md'}; "
        f"budget: {output_dir / 'budget.md'}"
    )
    return failed.empty


def parallel_probes(device: torch.device) -> int:
    """Probes run at once: one on a GPU (its timing is the device's), on a CPU one per core,
    each on one thread (a probe is mostly single-threaded work: process start, fixture images,
    small batches)."""
    return 1 if device.type == "cuda" else max(1, os.cpu_count() or 1)


def default_warm_steps(device: torch.device) -> int:
    """Timed steps per probe: 5 warm steps on a GPU (what the budget needs, seconds there); none
    on a CPU, where the preflight checks code paths and each step of a large batch takes seconds."""
    return 5 if device.type == "cuda" else 0


def probe_all(
    groups: list[Group],
    workdir: Path,
    image_side,
    device: str,
    preset: str,
    log=print,
    jobs: int = 1,
    threads: int | None = None,
    after_each=None,
    warm_steps: int = 0,
) -> pd.DataFrame:
    """One row per group (in the groups' order): its runs, the probe's status, timings, peak
    memory, error and the group whose probe timed it (`timed_by`). `jobs` workers probe at once,
    each group after group (`workers`); `after_each(table)` is called with the rows so far
    whenever a probe ends."""
    rows: dict[str, dict] = {}
    order = {group.key: i for i, group in enumerate(groups)}
    owners = shape_owners(groups, image_side)
    waiting = longest_first(groups, owners)
    pool: list[workers.Worker] = []
    bar = Bar(len(groups), "preflight", unit="groups")
    try:
        while waiting or any(worker.group for worker in pool):
            pool = [worker for worker in pool if worker.alive() or worker.group]  # a crashed busy one: its row next
            while waiting and len(pool) < min(jobs, len(groups)):
                pool.append(workers.Worker(threads, PROBE_PRELOAD))
            for worker in pool:
                if worker.group is None and waiting:
                    group = waiting.pop(0)
                    light = owners[group.key] != group.key
                    worker.submit(
                        group,
                        cfg=group.cfg,
                        dataset=group.run.dataset,
                        workdir=workers.workdir_of(workdir, group.key),
                        image_side=LIGHT_SIDE if light else image_side,
                        device=device,
                        warm_steps=0 if light else warm_steps,
                        light=light,
                    )
            workers.wait(pool)
            for worker in pool:
                result = worker.result() if worker.group is not None else None
                if result is None:
                    continue
                group, worker.group = worker.group, None
                rows[group.key] = {
                    "group": group.key,
                    "code_path": group.label,
                    "runs": len(group.runs),
                    "run_list": " ".join(r.path(preset) for r in group.runs),
                    "timed_by": owners[group.key],
                    **result,
                }
                shown = (
                    f"{result['seconds_per_step']:.2f} s/step, {result['peak_mb']} MB"
                    if result["status"] == "passed"
                    else result["error"]
                )
                if owners[group.key] != group.key and result["status"] == "passed":
                    shown = f"code path on {LIGHT_TRUNK}; timed by {owners[group.key]}"
                log(f"[{len(rows)}/{len(groups)}] {result['status']}: {group.label} ({len(group.runs)} runs): {shown}")
                bar.update()
                if after_each:
                    after_each(_frame(with_shape_timings(rows, owners), order))
        for worker in pool:
            worker.stop()
    finally:  # stopped (Ctrl-C, SIGTERM) or failed: no worker outlives this call
        for worker in pool:
            if worker.alive():
                worker.stop(kill=True)
        bar.close()
    return _frame(with_shape_timings(rows, owners), order)


def longest_first(groups: list[Group], owners: dict[str, str]) -> list[Group]:
    """The order probes start in: the probes on real trunks, then the code paths on the small
    one, each by batch size, largest first (so the last probes to end are short ones and no
    core waits long on the last)."""
    return sorted(groups, key=lambda group: (owners[group.key] != group.key, -group.typed.batch.size))


def _frame(rows: dict[str, dict], order: dict[str, int]) -> pd.DataFrame:
    return pd.DataFrame(sorted(rows.values(), key=lambda row: order[row["group"]]))


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


def _write_table(
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


def _write_budget(
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
