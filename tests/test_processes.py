"""A stopped test run leaves no process behind, and no test process runs past its time limit
(tests/processes.py)."""

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import python_env
from processes import alive_in_group, run, start, stop

TESTS = Path(__file__).resolve().parent

INNER_TEST = """
import os
from pathlib import Path

from processes import start


def test_starts_a_group_and_waits():
    child = start(["sh", "-c", "sleep 600 & sleep 600 & wait"])
    Path(os.environ["GROUP_FILE"]).write_text(str(child.pid))
    child.wait()
"""

# the inner test run as `python -m pytest` would run it from a terminal, with SIGINT and SIGHUP
# handled even where this run inherited them ignored (a background job of a non-interactive shell,
# a run under nohup)
INNER_PYTEST = (
    "import signal, sys, pytest; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "signal.signal(signal.SIGHUP, signal.SIG_DFL); sys.exit(pytest.main(sys.argv[1:]))"
)


def wait_for(condition, limit: float, what: str) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_to_the_test_run_stops_the_process_groups_its_tests_started(tmp_path, signum):
    (tmp_path / "test_inner.py").write_text(INNER_TEST)
    group_file = tmp_path / "group"
    env = dict(python_env(), GROUP_FILE=str(group_file), PYTHONPATH=str(TESTS))
    inner = start(
        [
            sys.executable,
            "-c",
            INNER_PYTEST,
            "-p",
            "processes",
            "-q",
            "-p",
            "no:cacheprovider",
            str(tmp_path / "test_inner.py"),
        ],
        cwd=tmp_path,
        env=env,
    )
    try:
        wait_for(lambda: group_file.exists() and group_file.read_text(), 120, "the inner test never started")
        group = int(group_file.read_text())
        wait_for(lambda: len(alive_in_group(group)) == 3, 60, "the inner test's group did not start")
        inner.send_signal(signum)
        inner.wait(timeout=60)
        assert inner.returncode != 0  # the run was stopped, not finished
        wait_for(lambda: not alive_in_group(group), 30, f"{alive_in_group(group)} of group {group} still run")
    finally:
        stop(inner)


def test_a_process_past_its_time_limit_fails_the_test_and_its_group_is_killed(tmp_path):
    marker = tmp_path / "group"
    with pytest.raises(pytest.fail.Exception, match=r"ran past its time limit of 2 s: its process group was killed"):
        run(["sh", "-c", f"echo $$ > {marker}; sleep 600 & sleep 600"], timeout=2)
    assert not alive_in_group(int(marker.read_text()))


def test_run_returns_what_the_command_gave_and_leaves_nothing_running(tmp_path):
    marker = tmp_path / "group"
    result = run(
        ["sh", "-c", f"echo $$ > {marker}; (sleep 600 >/dev/null 2>&1 &); echo out; echo err >&2; exit 3"],
        timeout=60,
        capture_output=True,
        text=True,
    )
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not alive_in_group(int(marker.read_text()))  # the command's left-behind child is gone


# --- the suite's own commands end the processes they start -------------------------------------

POOL = """
import os, sys, time
from pathlib import Path
from dmlbench.data import parallel

def block(start, items):
    Path(sys.argv[1], str(os.getpid())).touch()
    time.sleep(600)

parallel.map_blocks(block, [(0, [1]), (1, [2])], workers=2)
"""


def test_the_decoding_workers_of_a_killed_cache_or_store_step_end_with_it(tmp_path):
    """The cache and store steps decode on forked workers: SIGTERM (or kill -9) to the step ends them."""
    main = start([sys.executable, "-c", POOL, str(tmp_path)], env=python_env())
    try:
        wait_for(lambda: len(list(tmp_path.iterdir())) == 2, 120, "the workers did not start")
        workers = [int(p.name) for p in tmp_path.iterdir()]
        main.send_signal(signal.SIGTERM)  # the step alone, not its group
        main.wait(timeout=60)
        wait_for(
            lambda: not set(workers) & set(alive_in_group(main.pid)),
            30,
            f"workers {set(workers) & set(alive_in_group(main.pid))} outlived their step",
        )
    finally:
        stop(main)


@pytest.mark.slow
def test_the_probes_of_a_killed_preflight_end_with_it(tmp_path):
    """The preflight probes in worker processes of their own (forked by a fork server)."""
    temp = Path(tempfile.mkdtemp(prefix="dmlbench-pf-"))  # the fork server's folder (pymp-…) is made here:
    # a short path, as its socket's must be (AF_UNIX: 107 bytes at most; tmp_path's can be longer)
    main = start(
        [
            sys.executable,
            "-m",
            "dmlbench",
            "preflight",
            "--preset",
            "smoke",
            "--jobs",
            "2",
            "--warm-steps",
            "100000",  # probes that run until stopped
            "--workdir",
            str(tmp_path / "work"),
            "--output-dir",
            str(tmp_path / "out"),
        ],
        env=dict(python_env(), TMPDIR=str(temp)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:  # the preflight, its resource tracker and fork server, and two probes
        wait_for(lambda: len(alive_in_group(main.pid)) >= 5 or main.poll() is not None, 300, "the probes did not start")
        assert main.poll() is None, "the preflight ended before it was stopped"
        assert list(temp.glob("pymp-*"))
        main.send_signal(signal.SIGTERM)
        assert main.wait(timeout=60) == 128 + signal.SIGTERM
        wait_for(lambda: not alive_in_group(main.pid), 60, f"{alive_in_group(main.pid)} outlived the preflight")
        assert not list(temp.glob("pymp-*"))  # its exit handlers ran: nothing left in the temporary folder
    finally:
        stop(main)
        shutil.rmtree(temp, ignore_errors=True)
