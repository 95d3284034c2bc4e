"""The machine: Python, torch, faiss, Snakemake (and the SLURM plugin), the data root, the devices."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform

from dmlbench.core import machine
from dmlbench.doctor.checks import ACTION, INFO, OK, Check


def environment(slurm: bool, needs_gpu: bool) -> list[Check]:
    import torch

    checks = [
        Check("machine", "python", OK, platform.python_version()),
        Check("machine", "torch", OK, f"{torch.__version__} (CUDA build {torch.version.cuda})"),
    ]
    if torch.cuda.is_available():
        names = [
            f"{i}: {torch.cuda.get_device_name(i)}, {torch.cuda.get_device_properties(i).total_memory / 2**30:.0f} GiB"
            for i in range(torch.cuda.device_count())
        ]
        checks.append(Check("machine", "CUDA devices", OK, "; ".join(names)))
    else:
        checks.append(
            Check(
                "machine",
                "CUDA devices",
                ACTION if needs_gpu else INFO,
                "none visible"
                + (
                    ": this plan trains on GPUs (the CPU presets are demo and smoke)"
                    if needs_gpu
                    else "; this plan runs on CPU"
                ),
            )
        )
    checks.append(_faiss())
    checks.append(_package("snakemake", "snakemake", required=True))
    if slurm:
        checks.append(
            _package(
                "snakemake-executor-plugin-slurm",
                "snakemake_executor_plugin_slurm",
                required=True,
                hint="pip install -e '.[slurm]'",
            )
        )
    return checks


def _faiss() -> Check:
    try:
        import faiss
    except ImportError:
        return Check("machine", "faiss", ACTION, "not installed: pip install faiss-cpu (or faiss-gpu)")
    gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    build = f"GPU build, {gpus} device(s)" if gpus else "CPU build (search and k-means on CPU)"
    return Check("machine", "faiss", OK, f"{faiss.__version__}, {build}")


def _package(distribution: str, module: str, required: bool, hint: str = "") -> Check:
    if importlib.util.find_spec(module) is None:
        return Check(
            "machine", distribution, ACTION if required else INFO, f"not installed{': ' + hint if hint else ''}"
        )
    return Check("machine", distribution, OK, importlib.metadata.version(distribution))


def data_root_check(plan) -> Check:
    root = plan.preset["data"]["root"]
    problem = machine.data_root_problem(root)
    return Check("data", "data.root", ACTION if problem else OK, problem or f"{root}: a folder this user can write")


def device_checks(plan) -> list[Check]:
    """The devices the runs name, as a job on this machine without GPU slots sees them."""
    import torch

    named = sorted({plan.resolve(run)["device"] for run in plan.all_runs()} - {"auto", "cpu"})
    wrong = [p for p in (machine.device_problem(d, torch.cuda.device_count()) for d in named) if p]
    return [Check("machine", "device setting", ACTION, "; ".join(wrong))] if wrong else []
