"""Probe workers: long-lived processes that probe group after group. A worker imports torch and
the training code once, and on a GPU makes its CUDA context once, so a group costs its own work
(the preflight of `full` is hundreds of groups). A worker that crashes (a segfault, the kernel's
out-of-memory kill) fails the group it was probing; the next group gets a fresh worker.

Workers are forked from a fork server that has imported the probe and run nothing (forking a
process whose torch thread pools have run deadlocks)."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
from pathlib import Path

import torch

from dmlbench.core import environment
from dmlbench.core.children import end_with
from dmlbench.preflight.probe import probe


def reset_peak_memory(device: str) -> None:
    """Start this process's peak memory afresh (what `probe.peak_memory_mb` reads): CUDA's
    allocator peak on a GPU; else the peak resident set (VmHWM, reset through clear_refs), which
    then starts at what the worker holds between groups."""
    torch_device = environment.pick_device(device)
    if torch_device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(torch_device)
        return
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:  # not Linux, or not allowed: the peak is then the worker's so far
        pass


def serve(connection, owner: int, threads: int | None) -> None:
    """A worker's loop: receive a probe's keyword arguments, send back its result; None ends it."""
    end_with(owner)  # a stopped or killed preflight leaves no worker running
    if threads:
        torch.set_num_threads(threads)
    while True:
        try:
            task = connection.recv()
        except EOFError:  # the preflight went away
            return
        if task is None:
            return
        reset_peak_memory(task["device"])
        connection.send(probe(**task))


class Worker:
    """One worker process and the group it is probing (None when idle)."""

    def __init__(self, threads: int | None, preload: list[str]):
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(preload)
        self.connection, theirs = context.Pipe()
        self.process = context.Process(target=serve, args=(theirs, os.getpid(), threads), daemon=True)
        self.process.start()
        theirs.close()
        self.group = None

    def submit(self, group, **task) -> None:
        self.group = group
        self.connection.send(task)

    def waitables(self) -> list:
        return [self.connection, self.process.sentinel]

    def result(self) -> dict | None:
        """The result of the group in hand, once one is there (None while it runs); a worker that
        ended instead gives a failure naming how it ended."""
        if self.connection.poll():
            try:
                return self.connection.recv()
            except (EOFError, OSError):
                pass
        elif self.process.is_alive():
            return None
        self.process.join()
        code = self.process.exitcode
        how = f"signal {-code}" if code is not None and code < 0 else f"status {code}"
        return {
            "status": "failed",
            "seconds_per_step": None,
            "eval_seconds_per_image": None,
            "peak_mb": None,
            "error": f"the probe process ended with {how} (see the log above)",
            "traceback": "",
            "seconds": None,
        }

    def alive(self) -> bool:
        return self.process.is_alive()

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.process.kill()
        else:
            try:
                self.connection.send(None)
            except OSError:
                self.process.kill()
        self.process.join()
        self.connection.close()


def wait(workers: list[Worker]) -> None:
    """Until one of the busy workers has a result or has ended."""
    multiprocessing.connection.wait(
        [item for worker in workers if worker.group is not None for item in worker.waitables()]
    )


def workdir_of(root: Path, key: str) -> Path:
    folder = root / "groups" / key
    folder.mkdir(parents=True, exist_ok=True)
    return folder
