"""Values of the SLURM profile (`workflow/profiles/slurm/config.yaml` reads them through YTE), so a
cluster is described by environment variables instead of edits of the profile:

| variable | meaning | default |
|---|---|---|
| `DMLBENCH_SLURM_GPU_PARTITION` | partition of the training and evaluation jobs | `gpu` |
| `DMLBENCH_SLURM_CPU_PARTITION` | partition of prepare, cache and store (empty: the cluster's default) | empty |
| `DMLBENCH_SLURM_ACCOUNT` | account charged (empty: none given) | empty |
| `DMLBENCH_SLURM_TRAIN_MINUTES` | the most run time a GPU job asks for (the cap; see `doctor --slurm`) | 1440 |
| `DMLBENCH_SLURM_MIN_MINUTES` | the least run time a GPU job asks for (the floor) | 30 |
| `DMLBENCH_SLURM_TIME_FACTOR` | a GPU job asks for this many times the preflight's projection | 1.5 |
| `DMLBENCH_SLURM_TRAIN_MEM_MB` | memory of a training or evaluation job | 32000 |
| `DMLBENCH_SLURM_CPUS_PER_GPU` | CPUs of a training or evaluation job (its one GPU) | 8 |
| `DMLBENCH_SLURM_STATUS` | `sacct` or `squeue` (empty: sacct where accounting answers) | empty |
| `DMLBENCH_SLURM_JOBS` | submissions queued or running at once (empty: two per GPU of the GPU partition) | empty |
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess

DEFAULTS = {
    "GPU_PARTITION": "gpu",
    "CPU_PARTITION": "",
    "ACCOUNT": "",
    "TRAIN_MINUTES": "1440",  # 24 h: what most sites allow; a longer run resumes in the next submission
    "MIN_MINUTES": "30",
    "TIME_FACTOR": "1.5",
    "TRAIN_MEM_MB": "32000",
    "CPUS_PER_GPU": "8",
    "STATUS": "",
    "JOBS": "",
}
UNREAD_PARTITION_JOBS = 64  # the profile's `jobs` where sinfo does not answer


def setting(name: str) -> str:
    return os.environ.get(f"DMLBENCH_SLURM_{name}", DEFAULTS[name]).strip()


def number(name: str) -> int:
    value = setting(name)
    if not value.isdigit():
        raise ValueError(f"DMLBENCH_SLURM_{name}={value!r} must be a whole number")
    return int(value)


def accounting_answers() -> bool:
    """Whether `sacct` works here: clusters without slurmdbd have the binary but no records."""
    if shutil.which("sacct") is None:
        return False
    try:
        return (
            subprocess.run(
                ["sacct", "--noheader", "-X", "--starttime", "now"], capture_output=True, timeout=20
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def status_command() -> str:
    """How the executor asks for job states: sacct with accounting, squeue without (the
    plugin's own default, sacct whenever the binary exists, loses every job there)."""
    chosen = setting("STATUS")
    if chosen:
        if chosen not in ("sacct", "squeue"):
            raise ValueError(f"DMLBENCH_SLURM_STATUS={chosen!r} must be sacct or squeue")
        return chosen
    return "sacct" if accounting_answers() else "squeue"


def queued_jobs() -> int:
    """The profile's `jobs`: DMLBENCH_SLURM_JOBS, else two per GPU of the GPU partition (its nodes ×
    GPUs per node, `sinfo`: each GPU busy and its next job queued), 64 where sinfo does not answer
    or the partition declares no GPU."""
    from dmlbench.orchestration.slurm_limits import read_partition

    if setting("JOBS"):
        if number("JOBS") < 1:
            raise ValueError(f"DMLBENCH_SLURM_JOBS={setting('JOBS')!r} must be 1 or more")
        return number("JOBS")
    partition = read_partition(setting("GPU_PARTITION"))
    if partition is None or partition.nodes * partition.gpus_per_node == 0:
        return UNREAD_PARTITION_JOBS
    return 2 * partition.nodes * partition.gpus_per_node


def gpu_job() -> dict:
    """Resources of a GPU job: one GPU and its CPUs on the GPU partition (its run time: the rule's
    `runtime`, `job_minutes`). No `cpus_per_task`: the plugin would prefer it to `cpus_per_gpu`."""
    resources = {
        "slurm_partition": setting("GPU_PARTITION"),
        "gpu": 1,
        "cpus_per_gpu": number("CPUS_PER_GPU"),
        "mem_mb": number("TRAIN_MEM_MB"),
    }
    return _with_account(resources)


def job_minutes(projected_hours: float | None, attempt: int = 1) -> int:
    """The run time a GPU job asks for: the projection × DMLBENCH_SLURM_TIME_FACTOR, within the
    floor DMLBENCH_SLURM_MIN_MINUTES and the cap DMLBENCH_SLURM_TRAIN_MINUTES; the cap without a
    projection (no preflight budget). A job cut at its limit is submitted again (the profile's
    `restart-times`) and resumes from its last finished epoch; that submission (`attempt` 2 on)
    asks the cap, since the projection proved short."""
    floor, cap = number("MIN_MINUTES"), number("TRAIN_MINUTES")
    if projected_hours is None or attempt > 1:
        return cap
    return max(floor, projected_minutes(projected_hours))


def projected_minutes(projected_hours: float) -> int:
    """The projection × DMLBENCH_SLURM_TIME_FACTOR in whole minutes, at least 1, at most the cap:
    what a training packed with others asks (`slurm_packs`), without the floor."""
    cap = number("TRAIN_MINUTES")
    try:
        factor = float(setting("TIME_FACTOR"))
    except ValueError:
        factor = -1.0
    if not factor > 0:
        raise ValueError(f"DMLBENCH_SLURM_TIME_FACTOR={setting('TIME_FACTOR')!r} must be a number above 0")
    return max(1, min(cap, math.ceil(projected_hours * 60 * factor)))


def cpu_job(minutes: int, mem_mb: int = 16000, cpus: int = 4) -> dict:
    """Resources of a CPU-only job (prepare, cache, store): the CPU partition when one is named."""
    resources = {"runtime": minutes, "mem_mb": mem_mb, "cpus_per_task": cpus}
    if setting("CPU_PARTITION"):
        resources["slurm_partition"] = setting("CPU_PARTITION")
    return _with_account(resources)


def _with_account(resources: dict) -> dict:
    if setting("ACCOUNT"):
        resources["slurm_account"] = setting("ACCOUNT")
    return resources
