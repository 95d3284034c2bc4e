"""What a plan asks of the machine it runs on, checked before any job where it can be: the data
root is a folder that can be written, and the devices the runs name exist."""

from __future__ import annotations

import os
from pathlib import Path

from dmlbench.core.errors import ConfigError

DEVICE_HINT = "use device: auto (the first GPU where there is one, else the CPU) or cpu"


OUTPUT_FOLDERS = ("results", "reports", "logs")  # the workflow's, in its working folder


def folder_problem(folder, key: str, fix: str) -> str | None:
    """Why `folder` cannot take a step's outputs (a file, a link that loops or leads nowhere, a
    folder this user cannot write), naming it as `key` with what to do (`fix`); None when it can
    (made if missing)."""
    path = Path(folder).expanduser()
    try:
        os.stat(path)
    except FileNotFoundError:
        if path.is_symlink():
            return (
                f"{key} is a symbolic link to {os.readlink(path)}, which does not exist: create that folder, or {fix}"
            )
    except OSError as error:  # ELOOP, ENOTDIR, EACCES on the way
        return f"{key} cannot be reached ({error.strerror}): {fix}, or repair the path"
    existing = next(p for p in [path, *path.absolute().parents] if p.exists())
    if not existing.is_dir():
        return (
            f"{key} is a file, not a folder: {fix}, or move the file away"
            if existing == path
            else f"{key}: {existing} on its way is a file, not a folder: {fix}"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{key}: this user cannot write in {existing}: make it writable, or {fix}"
    return None


def data_root_problem(root) -> str | None:
    """Why `data.root` cannot hold the datasets, with what to do; None when it can."""
    return folder_problem(root, f"data.root = {root}", "set data.root to a folder (e.g. --config 'data={root: data}')")


SHELL_UNSAFE = ("'", '"', "`", "$", "\\", "\n")  # what the jobs' shell command lines cannot hold unquoted


def check_paths(**paths: str) -> None:
    """Stop when a path the jobs' command lines carry (the checkout, the working folder, the
    interpreter) holds a character the shell would take apart (Snakemake writes some of them
    unquoted, so every job would fail) or a byte that is not UTF-8."""
    for what, path in paths.items():
        try:
            str(path).encode("utf-8")
        except UnicodeEncodeError:  # a byte that is no UTF-8 (Python keeps it as a surrogate)
            raise ConfigError(
                f"the {what.replace('_', ' ')} {str(path).encode('utf-8', 'backslashreplace').decode()} holds a "
                f"byte that is not UTF-8 text, which the results table and the logs cannot carry: rename "
                f"it or run the workflow in another folder (snakemake -d)"
            ) from None
        bad = sorted({c for c in SHELL_UNSAFE if c in str(path)})
        if bad:
            raise ConfigError(
                f"the {what.replace('_', ' ')} {path} holds {', '.join(map(repr, bad))}, which the "
                f"jobs' shell commands cannot carry: move it to a path without these characters"
            )


def check_folders(plan) -> None:
    """Stop, before any job, when the data root or an output folder of the workflow cannot take
    what the steps write."""
    outputs = [Path(name) / plan.name for name in OUTPUT_FOLDERS]
    problems = [data_root_problem(plan.preset["data"]["root"])] + [
        folder_problem(
            path,
            f"the output folder {path}",
            "make it a folder this user can write, or run the workflow in another folder (snakemake -d)",
        )
        for path in outputs
    ]
    problems = [p for p in problems if p]
    if problems:
        raise ConfigError(f"preset {plan.name}: " + "; ".join(problems))


def device_problem(requested: str, visible: int) -> str | None:
    """Why `device: requested` cannot be used on a machine where a job sees `visible` CUDA
    devices; None when it can."""
    if requested in ("auto", "cpu"):
        return None
    index = int(requested.partition(":")[2] or 0)
    if index < visible:
        return None
    seen = f"a job here sees {visible} CUDA device(s)" + (f" (cuda:0 to cuda:{visible - 1})" if visible else "")
    return f"device {requested}: {seen}; {DEVICE_HINT}, or a device that exists"


def check_devices(plan, gpu_slots: int = 0) -> None:
    """Stop, before any job, when a run names a device this machine lacks; with `--resources gpu=N`
    each job sees one device (its slot's)."""
    requested = {plan.resolve(run)["device"] for run in plan.all_runs()} - {"auto", "cpu"}
    if not requested:
        return
    import torch

    count = torch.cuda.device_count()
    visible = min(count, 1) if gpu_slots else count
    for device in sorted(requested):
        problem = device_problem(device, visible)
        if problem:
            raise ConfigError(
                f"preset {plan.name}: {problem} (the setting `device`, in the preset's overrides "
                f"or on the command line: --config 'overrides={{device: auto}}')"
            )
