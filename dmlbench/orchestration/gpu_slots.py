"""Give each concurrent GPU job its own device: a pool of lock files, one per device.

Snakemake's `--resources gpu=N` only caps how many GPU jobs run at once; it names no device. A job
wrapped by `run_on_free_device` takes a non-blocking `flock` on the first free `gpu<i>.lock` and
holds it for the life of its child process, which sees `CUDA_VISIBLE_DEVICES=i`. The kernel
releases the lock when the holder exits, even when it is killed, so no stale lock survives; the
child dies with the wrapper (SIGTERM/SIGINT are passed on, and the kernel sends SIGKILL to the
child when the wrapper is killed outright), so a released device is never still in use.
With an inherited `CUDA_VISIBLE_DEVICES` (a shared machine where the user was given devices 4 and
5, say), slot i is the i-th device of that mask, and more slots than the mask lists are refused.
Under SLURM (`SLURM_JOB_ID` set) or with N = 0 the environment is left as it is.

Several trainings per device (`--per-device K`, the workflow's `--config gpu_per_device=K`): the N
slots are K places on each of N / K devices (`gpu<i>.lock`, `gpu<i>.1.lock`, …), filled one place
per device first, so `--resources gpu=16 --config gpu_per_device=2` runs 16 GPU jobs on 8 devices,
two each. What a training computes does not depend on its device or its neighbours.
"""

from __future__ import annotations

import fcntl
import functools
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from dmlbench.core.children import die_with_parent
from dmlbench.core.errors import DmlbenchError
from dmlbench.core.io import open_lock


class NoFreeDeviceError(DmlbenchError):
    """Every device stayed taken for longer than the wait allowed."""


def _lock_name(device: str, place: int = 0) -> str:
    return "gpu" + re.sub(r"[^A-Za-z0-9_.-]", "_", device) + (f".{place}" if place else "") + ".lock"


def places(devices: list[str], per_device: int, slots: int) -> list[tuple[str, int]]:
    """The first `slots` (device, place) pairs, one place on every device before a second on any."""
    return [(device, place) for place in range(per_device) for device in devices][:slots]


def _holders(lock_dir: Path, devices: list[str]) -> str:
    found = []
    for device in devices:
        try:
            found.append(f"gpu{device}: pid {(lock_dir / _lock_name(device)).read_text().strip() or '?'}")
        except OSError:
            found.append(f"gpu{device}: ?")
    return ", ".join(found)


def _listed(devices: list[str]) -> str:
    if devices == [str(i) for i in range(len(devices))]:
        return f"gpu0-gpu{len(devices) - 1}"
    return ", ".join(f"gpu{d}" for d in devices)


def visible_devices(slots: int, mask: str | None) -> list[str]:
    """The devices slots 0..slots-1 stand for: the first `slots` of an inherited mask, else 0..slots-1."""
    if mask is None:
        return [str(i) for i in range(slots)]
    listed = [d.strip() for d in mask.split(",") if d.strip()]
    if len(listed) < slots:
        raise DmlbenchError(
            f"gpu-slot --slots {slots}, but CUDA_VISIBLE_DEVICES={mask!r} gives this "
            f"job {len(listed)} device(s): use --resources gpu={len(listed)} (or fewer), "
            f"or unset CUDA_VISIBLE_DEVICES to use devices 0-{slots - 1}"
        )
    return listed[:slots]


@contextmanager
def claim_device(
    slots: int,
    lock_dir: Path,
    poll: float = 0.5,
    timeout: float | None = None,
    say=lambda message: print(message, file=sys.stderr, flush=True),
    devices: list[str] | None = None,
    per_device: int = 1,
):
    """Hold the lock of a free place among `per_device` places on each of `devices` (default
    0..slots-1), `slots` places in all, for the duration of the block; yield its device's name
    (the value for CUDA_VISIBLE_DEVICES).

    Says once that it waits (and for which devices, held by whom); gives up after `timeout` s.
    """
    devices = devices or [str(i) for i in range(slots)]
    lock_dir = Path(lock_dir)
    try:
        lock_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # a file in the way, a folder this user cannot make
        raise DmlbenchError(
            f"gpu-slot --lock-dir {lock_dir}: the folder of the device locks cannot be made "
            f"({error.strerror}); give a folder this user can write (default "
            f".dmlbench/gpu-locks)"
        ) from None
    started = time.monotonic()
    waiting = False
    while True:
        for device, place in places(devices, per_device, slots):
            handle = open_lock(lock_dir / _lock_name(device, place))
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            try:
                handle.seek(0)
                handle.truncate()
                handle.write(f"{os.getpid()}\n")
                handle.flush()
                yield device
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
            return
        if timeout is not None and time.monotonic() - started > timeout:
            raise NoFreeDeviceError(
                f"no free device among {_listed(devices)} after {timeout:g} s "
                f"({_holders(lock_dir, devices)}; locks in {lock_dir})"
            )
        if not waiting:
            waiting = True
            say(
                f"[gpu-slot] waiting for a free device among {_listed(devices)} "
                f"({_holders(lock_dir, devices)})" + (f", for at most {timeout:g} s" if timeout is not None else "")
            )
        time.sleep(poll)


def _call(command: list[str], env: dict | None = None) -> int:
    """Run `command`, passing SIGTERM/SIGINT/SIGHUP on to it; the child cannot outlive us."""
    try:
        child = subprocess.Popen(command, env=env, preexec_fn=functools.partial(die_with_parent, os.getpid()))
    except (FileNotFoundError, PermissionError) as error:
        raise DmlbenchError(
            f"gpu-slot cannot run {command[0]!r}: {error.strerror}; check the command after --"
        ) from None

    def forward(signum, _frame):
        child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        return child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_on_free_device(
    command: list[str], slots: int, lock_dir: Path, timeout: float | None = None, per_device: int = 1
) -> int:
    """Run `command` with CUDA_VISIBLE_DEVICES set to a device of which fewer than `per_device`
    other wrapped jobs hold a place."""
    if slots <= 0 or os.environ.get("SLURM_JOB_ID"):
        return _call(command)
    devices = visible_devices(-(-slots // per_device), os.environ.get("CUDA_VISIBLE_DEVICES"))
    with claim_device(slots, lock_dir, timeout=timeout, devices=devices, per_device=per_device) as device:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=device)
        print(f"[gpu-slot] device {device} → {' '.join(command[:4])} …", file=sys.stderr, flush=True)
        return _call(command, env=env)
