"""Give each concurrent GPU job its own device: a pool of lock files, one per device.

Snakemake's `--resources gpu=N` only caps how many GPU jobs run at once; it names no device. A job
wrapped by `run_on_free_device` takes a non-blocking `flock` on the first free `gpu<i>.lock` and
holds it for the life of its child process, which sees `CUDA_VISIBLE_DEVICES=i`. The kernel
releases the lock when the holder exits, even when it is killed, so no stale lock survives.
Under SLURM (`SLURM_JOB_ID` set) or with N = 0 the environment is left as it is.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def claim_device(slots: int, lock_dir: Path, poll: float = 0.5, timeout: float | None = None):
    """Hold the lock of a free device in 0..slots-1 for the duration of the block; yield its index."""
    lock_dir = Path(lock_dir)
    lock_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    while True:
        for index in range(slots):
            handle = open(lock_dir / f"gpu{index}.lock", "a+")
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
                yield index
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
            return
        if timeout is not None and time.monotonic() - started > timeout:
            raise TimeoutError(f"no free device among {slots} in {lock_dir} after {timeout} s")
        time.sleep(poll)


def run_on_free_device(command: list[str], slots: int, lock_dir: Path) -> int:
    """Run `command` with CUDA_VISIBLE_DEVICES set to a device no other wrapped job holds."""
    if slots <= 0 or os.environ.get("SLURM_JOB_ID"):
        return subprocess.call(command)
    with claim_device(slots, lock_dir) as index:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(index))
        print(f"[gpu-slot] device {index} → {' '.join(command[:4])} …", file=sys.stderr, flush=True)
        return subprocess.call(command, env=env)
