"""The warm-start server (`python -m dmlbench warm-start`, started by `warm_start.start`): it
imports what the jobs share once, then forks one child per job that hands it its arguments.

A child ends when its job's process ends (the server kills it when the job's connection closes),
and a signal the job receives is passed on to it. The server forks from one thread and has run
no torch operation, so no thread pool is copied half-way. A job that goes away before its child
has started (killed between connecting and sending its request, or before the reply) costs
nothing but that job: the server goes on serving the others.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import signal
import socket
import sys
from pathlib import Path

from dmlbench.orchestration.warm_identity import refusal, sources
from dmlbench.orchestration.warm_start import VARIABLE, preload, remove_socket

REQUEST_SECONDS = 30  # a job sends its request as soon as it has connected


class _Job:
    """A forked child, its pidfd (readable once it has ended) and its job's connection (None once
    the job has gone)."""

    def __init__(self, pid: int, connection: socket.socket):
        self.pid, self.pidfd, self.connection = pid, os.pidfd_open(pid), connection


def serve(path: Path, owner: int, command_line) -> None:
    """Import what the jobs share, then fork one child per request until SIGTERM or `owner` ends;
    each child runs `command_line(argv)` (the command line's `main`, handed in: this module does
    not import the command line that starts it)."""

    from dmlbench.core.children import die_with_parent

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # Ctrl-C reaches the whole process group: the children end their steps (each says where a
    # rerun resumes) and Snakemake then stops the server; ending it first would kill them mid-word
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(owner, signal.SIGTERM)  # a killed Snakemake: the server still tidies up below
    jobs: list[_Job] = []
    try:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path) + ".tmp")
        listener.listen(64)
        os.replace(str(path) + ".tmp", path)  # the socket appears once it accepts connections:
        preload()  # the run goes on meanwhile; a job arriving early waits for the imports
        imported = sources()
        while True:
            connections = {job.connection: job for job in jobs if job.connection}
            ended = {job.pidfd: job for job in jobs}
            for ready in select.select([listener, *connections, *ended], [], [])[0]:
                if ready is listener:
                    job = _fork(listener, jobs, command_line, imported)
                    if job:
                        jobs.append(job)
                elif ready in connections:
                    _message(connections[ready])
                else:
                    _ended(ended[ready])
                    jobs.remove(ended[ready])
    finally:
        for job in jobs:
            _kill(job.pid)
        remove_socket(path)


def _fork(listener: socket.socket, jobs: list[_Job], command_line, imported: dict) -> _Job | None:
    """Fork the child of the next job; None when the job went away before sending its request, or
    was refused (`refusal`: it then starts cold), or asked only whether it would be taken."""
    connection = listener.accept()[0]
    try:
        request, fds = _request(connection)
    except (OSError, ValueError):  # gone, silent past the time limit, or not a job of ours
        connection.close()
        return None
    refused = refusal(request, imported)
    if refused or "argv" not in request:  # refused, or a run asking whether its steps would be taken
        for fd in fds:
            os.close(fd)
        with contextlib.suppress(OSError):
            connection.sendall(f"cold {refused}\n".encode() if refused else b"accepted\n")
        connection.close()
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    server = os.getpid()
    pid = os.fork()
    if pid == 0:
        listener.close()
        for job in jobs:
            if job.connection:
                job.connection.close()
        connection.close()
        _run_child(request, fds, server, command_line)
    for fd in fds:
        os.close(fd)
    job = _Job(pid, connection)
    try:
        connection.sendall(b"started\n")
    except OSError:  # the job went away meanwhile: its child goes too (reaped in `_ended`)
        connection.close()
        job.connection = None
        _kill(pid)
    return job


def _request(connection: socket.socket) -> tuple[dict, list[int]]:
    """The job's request and its three standard streams, read whole; OSError or ValueError (its
    streams closed) for a job that closed its connection, stayed silent or sent something else."""
    connection.settimeout(REQUEST_SECONDS)
    header, fds, _, _ = socket.recv_fds(connection, 8, 3)
    try:
        if len(header) != 8 or len(fds) != 3:
            raise ValueError(f"a job sent {len(header)} bytes of its header and {len(fds)} streams")
        size, request = int.from_bytes(header, "big"), b""
        while len(request) < size:
            chunk = connection.recv(size - len(request))
            if not chunk:
                raise OSError("a job closed its connection before its request was read")
            request += chunk
        connection.settimeout(None)
        return json.loads(request), fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def _run_child(request: dict, fds: list[int], server: int, command_line) -> None:
    """In the forked child: the job's streams, folder, environment and threads, then its command."""
    code = 1
    try:
        from dmlbench.core.children import die_with_parent

        die_with_parent(server)
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a new Python process
        for fd, target in zip(fds, (0, 1, 2)):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        sys.path[:] = request["path"]  # where a new process would find the user's modules
        importlib.invalidate_caches()
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ.pop(VARIABLE, None)
        threads = os.environ.get("OMP_NUM_THREADS", "")
        if threads.isdigit():
            import torch

            torch.set_num_threads(int(threads))
        sys.argv = [sys.argv[0], *request["argv"]]
        command_line(request["argv"])
        code = 0
    except SystemExit as ended:
        code = ended.code if isinstance(ended.code, int) else (0 if ended.code is None else 1)
        if isinstance(ended.code, str):
            print(ended.code, file=sys.stderr)
    except KeyboardInterrupt:  # as a new Python process: the traceback, then the end by SIGINT
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _message(job: _Job) -> None:
    """A signal the job received, passed on to the child; or the job's end (its connection closed),
    which ends the child."""
    try:
        data = job.connection.recv(64)
    except OSError:  # reset by a job that ended
        data = b""
    if not data:
        job.connection.close()
        job.connection = None
        _kill(job.pid)
        return
    for line in data.decode(errors="replace").split():
        if line.isdigit():
            os.kill(job.pid, int(line))  # not reaped before its pidfd is read: the pid is still the child's


def _ended(job: _Job) -> None:
    os.close(job.pidfd)
    status = os.waitpid(job.pid, 0)[1]
    if job.connection:
        reply = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"
        try:
            job.connection.sendall(f"{reply}\n".encode())
        except OSError:
            pass
        job.connection.close()


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)  # an unreaped child: its pid cannot have been reused
