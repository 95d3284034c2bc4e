"""Every process a test starts goes through here: it runs in a process group of its own, under a
time limit, and is stopped (its whole group: a Snakemake and its jobs, a browser and its helpers)
when it is done with, when the test run ends, and when the test run is stopped by SIGTERM, SIGINT
or SIGHUP.

`run` is `subprocess.run` with a mandatory `timeout`: past it the group is killed and the test
fails, naming the command and the limit. `start` is `subprocess.Popen` for a process the test
talks to while it runs; `stop` ends it. `install` (from conftest.py) sets the signal handlers.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time

import pytest

GRACE = 5.0  # seconds a group has to end on SIGTERM (Snakemake removes its lock) before SIGKILL
KILLED = 5.0  # seconds for the kernel to end a group after SIGKILL
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

_running: dict[int, subprocess.Popen] = {}  # process group id → its leader, started here
_owner: list[int] = []  # the pid of the test run that installed the handlers


def start(command: list[str], **popen_args) -> subprocess.Popen:
    """`subprocess.Popen(command, ...)` in a new process group, recorded until `stop`."""
    process = subprocess.Popen(command, start_new_session=True, **popen_args)
    _running[process.pid] = process
    return process


def stop(process: subprocess.Popen, grace: float = GRACE) -> None:
    """End `process` and everything left in its group: SIGTERM, then SIGKILL after `grace` s."""
    if _holds_its_group(process):
        _end_groups([process.pid], grace)
    process.wait()
    _running.pop(process.pid, None)


def _holds_its_group(process: subprocess.Popen) -> bool:
    """Whether the group `process` led is still its own: the leader is not reaped yet, or it is
    and no other process has its pid (a reused group id comes with a process of that pid)."""
    return process.returncode is None or not os.path.exists(f"/proc/{process.pid}")


def run(
    command: list[str], timeout: float, capture_output: bool = False, check: bool = False, **popen_args
) -> subprocess.CompletedProcess:
    """`subprocess.run` in a group of its own: the test fails if it runs past `timeout` s."""
    if capture_output:
        popen_args.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process = start(command, **popen_args)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(process, grace=0)
        pytest.fail(
            f"{shlex.join(map(str, command))} ran past its time limit of {timeout:g} s: its process "
            f"group was killed (a hang, or a limit too tight for this machine)",
            pytrace=False,
        )
    finally:
        if process.pid in _running:  # what the command left running in its group, at once
            stop(process, grace=0)
    result = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    if check:
        result.check_returncode()
    return result


def alive_in_group(pgid: int) -> list[int]:
    """The pids of the processes of group `pgid` that still run (zombies are done)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as handle:
                fields = handle.read()
        except OSError:  # ended meanwhile
            continue
        state, _parent, group = fields[fields.rindex(")") + 2 :].split()[:3]
        if int(group) == pgid and state != "Z":
            found.append(int(entry.name))
    return found


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass


def _end_groups(pgids: list[int], grace: float) -> None:
    """SIGTERM to each group; SIGKILL to all after `grace` s or once none runs; return once none
    runs (or after KILLED s: a process stuck in the kernel). Reaps no leader
    (waiting here could deadlock a signal handler), so no group id can be reused meanwhile."""
    for signum, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, KILLED)):
        for pgid in pgids:
            _signal_group(pgid, signum)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(alive_in_group(pgid) for pgid in pgids):
            time.sleep(0.05)


def _groups() -> list[int]:
    return [pid for pid, process in _running.items() if _holds_its_group(process)]


def stop_all() -> None:
    """Stop and reap every group started here and not stopped yet (the test run ends)."""
    _end_groups(_groups(), GRACE)
    for process in list(_running.values()):
        stop(process, grace=0)


def _on_signal(previous):
    def handler(signum, frame):
        if os.getpid() == _owner[0]:  # not in a forked worker of a test
            _end_groups(_groups(), GRACE)  # reaped later by `stop`, or with the test run
        if callable(previous):  # SIGINT: Python's KeyboardInterrupt; pytest ends the run
            return previous(signum, frame)
        signal.signal(signum, signal.SIG_DFL)  # die of the signal, as without this handler
        os.kill(os.getpid(), signum)

    return handler


def install() -> None:
    """Stop the recorded groups when this process gets SIGTERM, SIGINT or SIGHUP, then go on as
    the signal would have (a signal the test run ignores, as under nohup, stays ignored)."""
    _owner[:] = [os.getpid()]
    for signum in SIGNALS:
        previous = signal.getsignal(signum)
        if previous is not signal.SIG_IGN and previous is not None:
            signal.signal(signum, _on_signal(previous))


def pytest_configure(config) -> None:  # this module is a pytest plugin (conftest.py loads it)
    install()


def pytest_unconfigure(config) -> None:
    stop_all()
