"""Training steps forked from the warm-start server: handed off, streams and exit status passed
through, signals passed on, nothing left running (dmlbench/orchestration/warm_start.py)."""

import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dmlbench.orchestration import warm_identity, warm_start
from dmlbench.config.plan import Plan

from conftest import CONFIG_DIR, REPO, python_env, snakemake_command
from processes import run, start, stop


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def job_children(server: int, folder: Path) -> list[int]:
    """The server's forked children that run a job in `folder` (while it imports, the server may
    also have short-lived helpers of its own)."""
    found = []
    for pid in children_of(server):
        try:
            if Path(f"/proc/{pid}/cwd").resolve() == folder.resolve():
                found.append(pid)
        except OSError:  # ended meanwhile
            continue
    return found


def reading_the_fifo(pid: int) -> bool:
    """Whether the job's child waits in its open of the manifest (the FIFO of `blocked_train`,
    which nobody writes): past its start, inside the training."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text().strip() == "wait_for_partner"
    except OSError:
        return False


def wait_until(condition, seconds: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.05)


@pytest.fixture
def server(monkeypatch):
    monkeypatch.delenv(warm_start.VARIABLE, raising=False)
    started = warm_start.start()
    yield started
    if started.poll() is None:
        warm_start.stop(started)


def blocked_train(tmp_path: Path) -> list[str]:
    """A training step that waits, inside the child, on a manifest that is a FIFO nobody writes."""
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke", "experiments": ["suite.baselines"], "datasets": ["cub"]})
    cfg = plan.resolve(plan.runs()[0])
    fifo = tmp_path / "manifest.csv"
    os.mkfifo(fifo)
    cfg["data"] = {"manifest": str(fifo)}
    return [sys.executable, "-m", "dmlbench", "train", "--spec", json.dumps(cfg), "--run-dir", str(tmp_path / "run")]


def test_a_step_is_run_by_the_server_with_the_jobs_streams_folder_and_exit_status(server, tmp_path):
    result = run(
        [sys.executable, "-m", "dmlbench", "reference", "--spec", "{not json", "--output", "x.json"],
        timeout=120,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=python_env(),
    )
    assert result.returncode == 1
    assert "dmlbench reference: error: --spec is not valid JSON" in result.stderr
    job = start(blocked_train(tmp_path), cwd=tmp_path, env=python_env())
    try:
        wait_until(lambda: job_children(server.pid, tmp_path), what="a child of the server in the job's folder")
        child = job_children(server.pid, tmp_path)[0]
        assert Path(f"/proc/{child}/fd/1").resolve() == Path(f"/proc/{job.pid}/fd/1").resolve()
    finally:
        stop(job)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_job_is_passed_on_and_the_job_ends_as_its_child(server, tmp_path, signum):
    job = start(blocked_train(tmp_path), cwd=tmp_path, env=python_env(), stderr=subprocess.PIPE)
    try:
        wait_until(lambda: job_children(server.pid, tmp_path), what="a child of the server")
        child = job_children(server.pid, tmp_path)[0]
        wait_until(lambda: reading_the_fifo(child), what="the child inside the training")
        os.kill(job.pid, signum)
        job.wait(timeout=60)
        wait_until(lambda: child not in children_of(server.pid), what="the child ended")
        # as a job run in its own process ends: a training ends SIGTERM as an exit (status 128 + 15)
        # after writing its last finished epoch (dmlbench.training.train.stops_as_exit), Ctrl-C as the signal
        assert job.returncode == (128 + signum if signum == signal.SIGTERM else -signum)
    finally:
        stop(job)


def test_a_killed_job_takes_its_child_with_it_and_stop_leaves_nothing(server, tmp_path):
    job = start(blocked_train(tmp_path), cwd=tmp_path, env=python_env())
    wait_until(lambda: job_children(server.pid, tmp_path), what="a child of the server")
    child = job_children(server.pid, tmp_path)[0]
    os.kill(job.pid, signal.SIGKILL)
    job.wait(timeout=30)
    stop(job)
    wait_until(lambda: child not in children_of(server.pid), what="the killed job's child ended")
    folder = Path(os.environ[warm_start.VARIABLE]).parent
    warm_start.stop(server)
    assert server.returncode is not None and not folder.exists()
    assert warm_start.VARIABLE not in os.environ


def test_jobs_that_go_away_before_their_child_starts_cost_the_other_jobs_nothing(server, tmp_path):
    """A job killed between connecting and its child's start (or a stranger on the socket): the
    server goes on, and so does the child of a job that is running."""
    job = start(blocked_train(tmp_path), cwd=tmp_path, env=python_env())
    try:
        wait_until(lambda: job_children(server.pid, tmp_path), what="a child of the server")
        running = job_children(server.pid, tmp_path)
        request = json.dumps(
            {
                "argv": ["reference", "--spec", "{not json", "--output", "x.json"],
                "cwd": str(tmp_path),
                "env": python_env(),
            }
        ).encode()
        gone_at = {
            "before sending": (b"", False),
            "in the header": (b"\x00\x00", False),
            "in the request": ((100).to_bytes(8, "big"), True),
            "with a request that is not JSON": ((5).to_bytes(8, "big") + b"{not ", True),
            "before the reply": (len(request).to_bytes(8, "big") + request, True),
        }
        for when, (sent, with_streams) in gone_at.items():
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as gone:
                gone.connect(os.environ[warm_start.VARIABLE])
                if sent:
                    socket.send_fds(gone, [sent], [0, 1, 2] if with_streams else [])
            # the next job is accepted after that one: once it is served, that one was dealt with
            result = run(
                [sys.executable, "-m", "dmlbench", "reference", "--spec", "{not json", "--output", "x.json"],
                timeout=120,
                capture_output=True,
                text=True,
                cwd=tmp_path,
                env=python_env(),
            )
            assert result.returncode == 1 and "--spec is not valid JSON" in result.stderr
            assert server.poll() is None, f"the server ended with a job gone {when}"
            wait_until(
                lambda: job_children(server.pid, tmp_path) == running,
                what=f"only the running job's child, a job gone {when}",
            )
    finally:
        stop(job)


def test_the_server_ends_with_the_process_that_started_it_and_removes_its_socket(tmp_path):
    code = (
        "import os, sys, time; sys.path.insert(0, sys.argv[1]); from dmlbench.orchestration import warm_start;"
        "server = warm_start.start(); print(server.pid, os.environ[warm_start.VARIABLE], flush=True);"
        "time.sleep(600)"
    )
    owner = start([sys.executable, "-c", code, str(REPO)], stdout=subprocess.PIPE, text=True, env=python_env())
    try:
        pid, socket_path = owner.stdout.readline().split()
        assert Path(socket_path).exists()
        os.kill(owner.pid, signal.SIGKILL)  # as a killed Snakemake: no onerror, no stop
        owner.wait(timeout=30)
        wait_until(
            lambda: not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2],
            what="the server ended with its owner",
        )
        wait_until(lambda: not Path(socket_path).parent.exists(), what="the server removed its socket's folder")
    finally:
        stop(owner)


def test_a_new_server_removes_the_folders_of_killed_servers_and_keeps_those_of_living_ones(monkeypatch):
    monkeypatch.delenv(warm_start.VARIABLE, raising=False)
    living = warm_start.start()  # another run's, still serving
    living_socket = Path(os.environ.pop(warm_start.VARIABLE))
    killed = warm_start.start()
    killed_socket = Path(os.environ.pop(warm_start.VARIABLE))
    killed.kill()  # as SIGKILL to a run's process group: nobody tidies up
    killed.wait()
    newest = warm_start.start()
    try:
        assert not killed_socket.parent.exists()
        assert living_socket.exists() and living.poll() is None
        assert Path(os.environ[warm_start.VARIABLE]).exists()
    finally:
        warm_start.stop(newest)
        warm_start.stop(living, living_socket)
    assert not living_socket.parent.exists()


def test_warm_starts_are_for_cpu_presets_and_can_be_switched_off(monkeypatch):
    assert warm_start.wanted(Plan.load(CONFIG_DIR, {"preset": "smoke"}))
    assert not warm_start.wanted(Plan.load(CONFIG_DIR, {"preset": "gpu-smoke"}))
    assert not warm_start.wanted(Plan.load(CONFIG_DIR, {"preset": "smoke", "overrides": {"device": "auto"}}))
    monkeypatch.setenv(warm_start.VARIABLE, "off")
    assert not warm_start.wanted(Plan.load(CONFIG_DIR, {"preset": "smoke"}))
    assert warm_start.hand_off(["train", "--spec", "{}"]) is None  # the job runs itself


def test_a_server_that_cannot_start_leaves_the_steps_cold(monkeypatch, capsys, tmp_path):
    def fails():
        raise OSError("No space left on device")

    monkeypatch.setattr(warm_start, "start", fails)
    monkeypatch.delenv(warm_start.VARIABLE, raising=False)
    monkeypatch.setenv(warm_start.SHARED, str(tmp_path / "socket"))  # named, but nothing listens there
    warm_start.start_for(Plan.load(CONFIG_DIR, {"preset": "smoke"}))
    assert "no warm starts (No space left on device); each step starts cold" in capsys.readouterr().err
    assert not warm_start._started and warm_start.VARIABLE not in os.environ


def test_runs_use_the_shared_server_and_leave_it_serving_and_gpu_runs_start_cold(server, monkeypatch, capsys):
    shared = os.environ.pop(warm_start.VARIABLE)
    monkeypatch.setenv(warm_start.SHARED, shared)
    warm_start.start_for(Plan.load(CONFIG_DIR, {"preset": "smoke"}))
    assert os.environ[warm_start.VARIABLE] == shared and not warm_start._started  # none of its own
    assert f"forked from the server at {shared} ({warm_start.SHARED})" in capsys.readouterr().err
    warm_start.stop_started()  # the run's end
    assert server.poll() is None and Path(shared).exists()
    warm_start.start_for(Plan.load(CONFIG_DIR, {"preset": "gpu-smoke"}))
    assert warm_start.VARIABLE not in os.environ and not warm_start._started  # its jobs start cold
    other = {**warm_identity.code(), "dmlbench": "/elsewhere/dmlbench"}  # a run of another checkout
    monkeypatch.setattr(warm_start, "code", lambda run=False: other)
    own = subprocess.Popen(["true"])  # stands for the server of its own that the run starts
    own.wait()
    monkeypatch.setattr(warm_start, "start", lambda: own)
    monkeypatch.setattr(warm_start, "_started", [])
    monkeypatch.setattr(warm_start.atexit, "register", lambda function: None)
    warm_start.start_for(Plan.load(CONFIG_DIR, {"preset": "smoke"}))
    assert warm_start._started == [own]
    err = capsys.readouterr().err
    assert f"the warm-start server in {warm_start.SHARED} does not take this run's steps: its dmlbench is " in err
    os.environ[warm_start.VARIABLE] = shared  # for the fixture's stop


def reaped_cpu_seconds(pid: int) -> float:
    """The CPU time of the children `pid` has reaped (cutime + cstime of /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def test_a_snakemake_run_of_this_checkout_hands_its_steps_to_the_shared_server(server, tmp_path):
    """What the test run's shared server (tests/conftest.py) is for: a Snakemake run, whose jobs'
    import path names the checkout and their folder again, gives it its steps; none starts cold
    (a child's CPU time is its server's once reaped)."""
    shared = os.environ.pop(warm_start.VARIABLE)
    before = reaped_cpu_seconds(server.pid)
    command = snakemake_command(
        tmp_path, "--cores", "1", "--until", "prepare", "--config", "preset=smoke", "experiments=[suite.baselines]"
    )
    result = run(command, timeout=600, capture_output=True, text=True, env={**python_env(), warm_start.SHARED: shared})
    os.environ[warm_start.VARIABLE] = shared  # for the fixture's stop
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"forked from the server at {shared}" in result.stderr
    logs = [path.read_text() for path in tmp_path.glob("logs/smoke/prepare/*.log")]
    assert len(logs) == 5 and not any("starts cold" in log for log in logs), logs
    assert reaped_cpu_seconds(server.pid) > before


def test_a_job_of_another_checkout_import_path_or_thread_runtime_is_refused_and_starts_cold(
    server, monkeypatch, capsys, tmp_path
):
    """The server's children keep what it imported: a job that would import other code, or load
    torch's OpenMP under another setting, runs itself (`hand_off` gives None) and says why."""
    step = ["verdict", "--help"]
    real = warm_identity.code()
    others = {
        "dmlbench": {**real, "dmlbench": str(tmp_path / "dmlbench")},
        "path": {**real, "path": [str(tmp_path), *real["path"]]},
        "runtime": {**real, "runtime": {**real["runtime"], "OMP_WAIT_POLICY": "ACTIVE"}},
    }
    for key, other in others.items():
        monkeypatch.setattr(warm_start, "code", lambda other=other: other)
        assert warm_start.hand_off(step) is None
        assert f"dmlbench verdict: starts cold: its {key} is " in capsys.readouterr().err
    monkeypatch.setattr(warm_start, "code", warm_identity.code)
    assert warm_start.hand_off(step) == 0  # the same code: the server's child ran it


def test_a_dmlbench_source_changed_after_the_server_imported_it_is_a_refusal(tmp_path):
    module = tmp_path / "module.py"
    module.write_text("")
    imported = {str(module): module.stat().st_mtime_ns}
    request = {"argv": ["train"], "code": warm_identity.code()}  # a job's
    assert warm_identity.refusal(request, imported) is None
    os.utime(module, ns=(module.stat().st_atime_ns, module.stat().st_mtime_ns + 1))
    assert warm_identity.refusal(request, imported) == f"{module} changed after the warm-start server imported it"
    module.unlink()
    assert "changed after" in warm_identity.refusal(request, imported)
    assert str(Path(warm_identity.__file__)) in warm_identity.sources()  # what the server records


@pytest.mark.parametrize("what", ["the server", "the child"])
def test_a_job_whose_step_was_ended_from_outside_says_so(server, tmp_path, what):
    """Not a silent non-zero exit: a job whose server ended under it, or whose child was killed by
    a signal the job was not sent (the out-of-memory killer's SIGKILL), prints why."""
    job = start(blocked_train(tmp_path), cwd=tmp_path, env=python_env(), stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: job_children(server.pid, tmp_path), what="a child of the server")
        child = job_children(server.pid, tmp_path)[0]
        os.kill(server.pid if what == "the server" else child, signal.SIGKILL)
        _, err = job.communicate(timeout=60)
    finally:
        stop(job)
    if what == "the server":
        assert job.returncode == 1
        assert "dmlbench train: error: the warm-start server" in err and "ended while this step ran" in err
    else:
        assert job.returncode == -signal.SIGKILL, err
        assert "dmlbench train: error: the step was ended by SIGKILL (the out-of-memory killer" in err


def test_ctrl_c_to_the_whole_group_lets_each_step_say_where_it_resumes(server, tmp_path):
    """Ctrl-C in a terminal reaches the server and its children alike: the server ignores it (it
    would kill the children mid-word), the job's step ends with its own line."""
    job = start(blocked_train(tmp_path), cwd=tmp_path, env=python_env(), stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: job_children(server.pid, tmp_path), what="a child of the server")
        child = job_children(server.pid, tmp_path)[0]
        wait_until(lambda: reading_the_fifo(child), what="the child inside the training")
        for pid in (server.pid, child, job.pid):  # what the terminal's SIGINT reaches
            os.kill(pid, signal.SIGINT)
        _, err = job.communicate(timeout=60)
    finally:
        stop(job)
    assert server.poll() is None, "the server ended on Ctrl-C"
    assert job.returncode == -signal.SIGINT
    assert "dmlbench train: interrupted;" in err and "Traceback" not in err


def test_the_data_steps_run_warm_write_what_they_write_cold(server, tmp_path):
    """prepare and store handed to the server (`hand_off` gives their exit status) write the
    files a cold process writes, byte for byte."""

    def data_steps(folder: Path) -> list[list[str]]:
        spec = {"dataset": "cub", "source": "fixture", "root": str(folder), "fixture": {"n_classes": 6, "per_class": 3}}
        manifest = folder / "fixture/cub/manifest.csv"
        return [
            ["prepare", "--spec", json.dumps(spec), "--output", str(manifest)],
            [
                "store",
                "--manifest",
                str(manifest),
                "--side",
                "32",
                "--output",
                str(folder / "store32"),
                "--workers",
                "2",
            ],
        ]

    handlers = {signum: signal.getsignal(signum) for signum in warm_start.FORWARDED}
    for step in data_steps(tmp_path / "warm"):
        assert warm_start.hand_off(step) == 0, step[0]
    assert {signum: signal.getsignal(signum) for signum in warm_start.FORWARDED} == handlers  # given back
    cold_env = python_env() | {warm_start.VARIABLE: "off"}
    for step in data_steps(tmp_path / "cold"):
        cold = run([sys.executable, "-m", "dmlbench", *step], timeout=300, capture_output=True, text=True, env=cold_env)
        assert cold.returncode == 0, cold.stderr[-2000:]

    def content(path: Path, folder: str) -> bytes:  # an archive's gzip header holds its time; a record its folder
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".tgz" else path.read_bytes()
        return data.replace(str(tmp_path / folder).encode(), b"<folder>")

    written = {
        folder: {
            p.relative_to(tmp_path / folder): content(p, folder) for p in (tmp_path / folder).rglob("*") if p.is_file()
        }
        for folder in ("warm", "cold")
    }
    assert written["warm"].keys() == written["cold"].keys() and len(written["warm"]) > 3
    differing = [path for path in written["warm"] if written["warm"][path] != written["cold"][path]]
    assert not differing, differing
