"""What a run ran on: versions, device, host, the checkout's commit; the process's peak memory."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import torch

from dmlbench.core.errors import ConfigError
from dmlbench.core.machine import device_problem

CHECKOUT = Path(__file__).resolve().parents[2]  # the folder holding the dmlbench package


def pick_device(requested: str) -> torch.device:
    """The device `requested` (auto: CUDA where there is one); one this machine lacks is refused."""
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    problem = device_problem(requested, torch.cuda.device_count())
    if problem:
        raise ConfigError(problem)
    return torch.device(requested)


def set_tf32(enabled: bool) -> None:
    """TensorFloat-32 for CUDA matrix products and cuDNN convolutions (`performance.tf32`). Off by
    default: the papers' numbers are fp32 (PyTorch itself leaves cuDNN's TF32 on); on Ampere and
    later GPUs TF32 is several times faster and changes the last bits. No effect on a CPU."""
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled


def peak_resident_mib() -> float:
    """This process's peak resident set (VmHWM, MiB). Unlike getrusage's ru_maxrss it starts
    afresh in a new program: a child started from a large parent does not report the parent's."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise OSError("/proc/self/status has no VmHWM line (peak memory is measured on Linux only)")


def describe(device: torch.device) -> dict:
    from importlib.metadata import version

    import faiss
    import numpy

    info = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "torchvision": version("torchvision"),
        "faiss": faiss.__version__,
        "numpy": numpy.__version__,
        "platform": platform.platform(),
        "host": platform.node(),
        "device": str(device),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "torch_threads": torch.get_num_threads(),
        "tf32": {"matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32},
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    info["git_commit"] = checkout_commit()
    return info


def checkout_commit(checkout: Path = CHECKOUT) -> str | None:
    """The commit of the checkout the dmlbench package runs from, read there (not in the working
    folder, which may be another repository or none); None where the package is no checkout's own
    (an installed copy) or git is missing."""
    try:
        answer = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    if len(answer) != 2 or Path(answer[0]).resolve() != checkout.resolve():
        return None  # the package's folder is inside some other repository (a venv in a checkout)
    return answer[1]
