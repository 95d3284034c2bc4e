"""Training steps started warm on CPU presets: one server imports torch once and forks each job.

A training process spends about 5 s importing torch and, at its optimiser's creation, torch's
compiler stack, before a first step that on the demo's fixtures takes milliseconds (the table and
figure steps spend 2-4 s importing pandas, scipy and matplotlib); the demo and the smoke preset
start over a hundred of them. When Snakemake runs a preset whose every run is on the CPU on this
machine, the Snakefile starts `python -m dmlbench warm-start` (`start_for`, `stop_started`); jobs
find its socket in `DMLBENCH_WARM_START`, and `python -m dmlbench <step>` (`COMMANDS`: the
data, training, evaluation, reference, summary, table, analysis and report steps) hands the server its arguments,
working directory, environment and standard streams (`hand_off`). The server forks a child that
runs the step as a new process would, and the step exits with the child's status.

Nothing outlives the run: the server ends with Snakemake (the kernel's parent-death signal) and
on `stop`; a child ends when its job's process ends (the server kills it when the job's
connection closes) and a signal the job receives (SIGTERM, SIGINT, SIGHUP) is passed on to it.
The server forks from one thread and has run no torch operation, so no thread pool is copied
half-way. Set `DMLBENCH_WARM_START=off` to run every job cold.

Several Snakemake runs in turn (the test suite's) can share one server: started once, its socket
in `DMLBENCH_WARM_SERVER`, each run uses it rather than start its own when the server takes its
steps (`refused_by`). A server runs only the code it imported: a job of another interpreter,
checkout, import path or thread runtime, or one that comes after the server's dmlbench sources
changed, is refused and starts cold (`warm_identity`); a child takes its job's `sys.path`, so that
the user's modules are found as a new process finds them.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dmlbench import training
from dmlbench.orchestration.warm_identity import code

VARIABLE = "DMLBENCH_WARM_START"
SHARED = "DMLBENCH_WARM_SERVER"  # the socket of a server that several Snakemake runs share
PREFIX = "dmlbench-warm-"  # the server's socket is <temporary folder>/dmlbench-warm-*/socket
# the steps that start torch, pandas, scipy, PIL or matplotlib for seconds of work, and what they import
COMMANDS = (
    "train",
    "fair-round",
    "fair-final",
    "evaluate",
    "reference",
    "fair-summary",
    "aggregate",
    "analyse",
    "fair-aggregate",
    "knob-joined",
    "knob-aggregate",
    "verdict",
    "report",
    "results-table",
    "retrieved",
    "prepare",
    "cache",
    "store",
    "fair-splits",
    "fair-best",
    "ranking-vs-fair",
)
PRELOAD = (
    "torch",
    "dmlbench.training.train",
    "dmlbench.fair.rounds",
    "dmlbench.evaluation.evaluate_run",
    "dmlbench.knobs.concatenate",
    "dmlbench.report.knob_tables",
    "dmlbench.evaluation.reference",
    "dmlbench.fair.summary",
    "dmlbench.report.aggregate",
    "dmlbench.analysis",
    "dmlbench.report.fair_tables",
    "dmlbench.report.index",
    "dmlbench.report.retrieved",
    "dmlbench.verdicts.certificate",
    "dmlbench.data.prepare",
    "dmlbench.data.cache",
    "dmlbench.data.store",
    "dmlbench.data.folds",
    "dmlbench.fair.study",
    "dmlbench.report.ranking_vs_fair",
    *training.IMPORTS,
)
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def preload() -> None:
    """Import `PRELOAD`, then the optional extras that are installed (a step says what is missing
    when it needs it): the server's start, and the install's bytecode step (`bytecode`)."""
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    for module in training.OPTIONAL_IMPORTS:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)


# --- the workflow's side ----------------------------------------------------------------------


def wanted(plan) -> bool:
    """Whether every training of the plan runs on the CPU (a GPU job's start is small beside its
    work, and a CUDA context must not be forked), and warm starts are not switched off."""
    if os.environ.get(VARIABLE) == "off" or (plan.preset.get("overrides") or {}).get("device") != "cpu":
        return False
    return {plan.resolve(run)["device"] for run in plan.all_runs()} == {"cpu"}


_started: list[subprocess.Popen] = []


def start_for(plan) -> None:
    """The Snakefile's `onstart`: when the plan `wanted` a server, the shared one if it takes this
    run's steps (`refused_by`), or one for this run."""
    if not wanted(plan):
        if os.environ.get(VARIABLE) != "off":
            os.environ.pop(VARIABLE, None)  # this run's jobs start cold
        return
    shared = os.environ.get(SHARED)
    refused = shared and refused_by(shared)
    if shared and not refused:
        os.environ[VARIABLE] = shared
        print(f"dmlbench: training steps start warm, forked from the server at {shared} ({SHARED})", file=sys.stderr)
        return
    if refused:
        print(f"dmlbench: the warm-start server in {SHARED} does not take this run's steps: {refused}", file=sys.stderr)
    try:
        _started.append(start())
    except (OSError, RuntimeError) as error:  # the steps start cold, as without it
        print(f"dmlbench: warning: no warm starts ({error}); each step starts cold", file=sys.stderr)
        return
    atexit.register(stop_started)  # however Snakemake ends
    print(
        f"dmlbench: training steps start warm, forked from one process (pid {_started[-1].pid}) that has "
        f"imported torch; DMLBENCH_WARM_START=off starts each cold",
        file=sys.stderr,
    )


def refused_by(path: str) -> str | None:
    """Why the server at `path` would not run this process's steps (nothing listens there, or its
    `warm_identity.refusal`, as for another checkout's run); None when it would."""
    try:
        connection, reply = _ask(path, {"code": code(run=True)})  # no argv: a question, nothing forked
    except OSError as error:
        return f"no server at {path} ({error})"
    connection.close()
    if reply.startswith("accepted"):
        return None
    return reply.removeprefix("cold").strip() or f"the server at {path} did not say"


def stop_started() -> None:
    """The Snakefile's `onsuccess` and `onerror`."""
    while _started:
        stop(_started.pop())


def start() -> subprocess.Popen:
    """Start the server for this Snakemake process; its socket is put in this process's
    environment, which every job inherits."""
    remove_abandoned()
    path = Path(tempfile.mkdtemp(prefix=PREFIX)) / "socket"
    server = subprocess.Popen(
        [sys.executable, "-m", "dmlbench", "warm-start", "--socket", str(path), "--owner", str(os.getpid())],
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not path.exists():  # it appears once the server accepts connections
        if server.poll() is not None or time.monotonic() > deadline:
            stop(server, path)
            raise RuntimeError(f"the warm-start server did not start (exit status {server.poll()})")
        time.sleep(0.05)
    os.environ[VARIABLE] = str(path)
    return server


def remove_abandoned() -> None:
    """Remove this user's socket folders whose server is gone without tidying up (killed outright
    with its Snakemake: SIGKILL to the run's process group). /proc/net/unix lists the sockets that
    processes hold, by the name they were bound to (`socket.tmp`, renamed once listening): a folder
    holding one is a live server's. Folders without a socket yet (a server starting) are left too."""
    try:
        held = {
            Path(fields[7]).parent
            for line in Path("/proc/net/unix").read_text().splitlines()[1:]
            if len(fields := line.split(None, 7)) == 8
        }
    except OSError:  # not Linux: nothing can be told apart
        return
    for path in Path(tempfile.gettempdir()).glob(f"{PREFIX}*/socket"):
        with contextlib.suppress(OSError):
            if path.lstat().st_uid == os.getuid() and path.parent not in held:
                remove_socket(path)


def stop(server: subprocess.Popen, path: Path | None = None) -> None:
    """End the server (its children have ended with their jobs) and remove its socket's folder."""
    path = path or Path(os.environ.pop(VARIABLE, ""))
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    remove_socket(path)


def remove_socket(path: Path) -> None:
    """Remove the server's socket and its folder (by the workflow's `stop`, or by the server
    itself when its owner ended without stopping it)."""
    if path.name == "socket":
        path.unlink(missing_ok=True)
        Path(str(path) + ".tmp").unlink(missing_ok=True)
        try:
            path.parent.rmdir()
        except FileNotFoundError:  # the other side removed it first
            pass


def _ask(path: str, request: dict) -> tuple[socket.socket, str]:
    """Send the server `request` with this process's standard streams; the open connection and
    the server's first reply line."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
        message = json.dumps(request).encode()
        socket.send_fds(connection, [len(message).to_bytes(8, "big")], [0, 1, 2])
        connection.sendall(message)
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = connection.recv(1)
            if not chunk:
                break
            reply += chunk
    except OSError:
        connection.close()
        raise
    return connection, reply.decode(errors="replace")


# --- the job's side -----------------------------------------------------------------------------


def hand_off(argv: list[str]) -> int | None:
    """Run `python -m dmlbench <argv>` in the warm server; its exit status, or None when there is
    no server to take it (the caller then runs the command itself)."""
    path = os.environ.get(VARIABLE)
    if not path or path == "off" or not argv or argv[0] not in COMMANDS:
        return None
    request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "path": sys.path, "code": code()}
    try:
        connection, reply = _ask(path, request)
    except OSError:
        return None
    if not reply.startswith("started"):
        connection.close()
        if reply.startswith("cold"):
            print(f"dmlbench {argv[0]}: starts cold: {reply.removeprefix('cold').strip()}", file=sys.stderr)
        return None
    replies = connection.makefile("r")
    forward = lambda received, frame: connection.sendall(f"{received}\n".encode())  # noqa: E731
    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}  # the child decides how to end
    try:
        status = replies.readline().split()
    finally:  # the caller's own handlers again once the child has ended
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if not status:  # the server ended first: the child was ended with it
        print(
            f"dmlbench {argv[0]}: error: the warm-start server ({path}) ended while this step ran, and the "
            f"step with it: rerun it (`{VARIABLE}=off` runs steps in processes of their own)",
            file=sys.stderr,
        )
        return 1
    if status[0] == "signal":
        signum = int(status[1])
        if signum not in FORWARDED:  # not one this job was sent: say what ended it
            print(
                f"dmlbench {argv[0]}: error: the step was ended by {signal.Signals(signum).name}"
                f"{' (the out-of-memory killer, or a kill -9)' if signum == signal.SIGKILL else ''}",
                file=sys.stderr,
            )
        if signum not in (signal.SIGKILL, signal.SIGSTOP):  # those two have no handler to reset
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)  # end as the child ended
    return int(status[1])
