"""The preflight of a plan: probe each group, write the table and the budget, say what failed."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import pandas as pd
import torch

from dmlbench.core import environment
from dmlbench import training
from dmlbench.config.plan import Plan
from dmlbench.preflight import coverage, outputs, workers
from dmlbench.preflight.grouping import Group, group_runs, shape_owners, with_shape_timings
from dmlbench.preflight.probe import LIGHT_SIDE, LIGHT_TRUNK
from dmlbench.core.progress import Bar


# What the fork server imports once: the probe and what a training imports on its way (torch's
# compiler stack alone took about 3 s a probe); a module that is not installed is skipped.
PROBE_PRELOAD = ["dmlbench.preflight.workers", *training.IMPORTS, *training.OPTIONAL_IMPORTS]


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
        groups = coverage.bounded(groups)
    torch_device = environment.pick_device(device)
    jobs = jobs or parallel_probes(torch_device)
    warm_steps = default_warm_steps(torch_device) if warm_steps is None else warm_steps
    threads = max(1, (os.cpu_count() or 1) // jobs) if torch_device.type == "cpu" else None
    log(
        f"preflight of preset {plan.name}: {len(plan.trainings())} trainings in {total} code paths; probing "
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
                projected[group.key] = outputs.project_group(plan, group, by_group.loc[group.key], image_side)
        outputs.write_table(table, output_dir, plan.name, measured_on, image_side, len(groups) - len(done))
        rows = [row for group in groups for row in projected.get(group.key, [])]
        outputs.write_budget(
            pd.DataFrame(rows, columns=outputs.PROJECTION_COLUMNS),
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
