"""Values of the SLURM profile (`workflow/profiles/slurm/config.yaml` reads them through YTE), so a
cluster is described by environment variables instead of edits of the profile:

| variable | meaning | default |
|---|---|---|
| `DMLBENCH_SLURM_GPU_PARTITION` | partition of the training and evaluation jobs | `gpu` |
| `DMLBENCH_SLURM_CPU_PARTITION` | partition of prepare, cache and store (empty: the cluster's default) | empty |
| `DMLBENCH_SLURM_ACCOUNT` | account charged (empty: none given) | empty |
| `DMLBENCH_SLURM_TRAIN_MINUTES` | run time limit of a training job | 2880 |
| `DMLBENCH_SLURM_TRAIN_MEM_MB` | memory of a training or evaluation job | 32000 |
| `DMLBENCH_SLURM_CPUS_PER_GPU` | CPUs of a training or evaluation job (its one GPU) | 8 |
| `DMLBENCH_SLURM_STATUS` | `sacct` or `squeue` (empty: sacct where accounting answers) | empty |
"""

from __future__ import annotations

import os
import shutil
import subprocess

DEFAULTS = {"GPU_PARTITION": "gpu", "CPU_PARTITION": "", "ACCOUNT": "", "TRAIN_MINUTES": "2880",
            "TRAIN_MEM_MB": "32000", "CPUS_PER_GPU": "8", "STATUS": ""}


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
        return subprocess.run(["sacct", "--noheader", "-X", "--starttime", "now"], capture_output=True,
                              timeout=20).returncode == 0
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


def gpu_job(minutes: int | None = None) -> dict:
    """Resources of a training (or, with `minutes`, evaluation) job: one GPU and its CPUs on the
    GPU partition. No `cpus_per_task`: the plugin would prefer it to `cpus_per_gpu`."""
    resources = {"slurm_partition": setting("GPU_PARTITION"), "gpu": 1,
                 "cpus_per_gpu": number("CPUS_PER_GPU"), "mem_mb": number("TRAIN_MEM_MB"),
                 "runtime": minutes or number("TRAIN_MINUTES")}
    return _with_account(resources)


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
