"""Concurrent GPU jobs get distinct devices; SLURM's assignment is left alone."""

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from conftest import python_env
from processes import run, start, stop

RECORD = (
    "import json, os, sys, time; start = time.time(); time.sleep(0.8); "
    "json.dump([os.environ.get('CUDA_VISIBLE_DEVICES'), start, time.time()], open(sys.argv[1], 'w'))"
)


def launch(tmp_path, name, slots, env=None, per_device=1):
    out = tmp_path / f"{name}.json"
    command = [
        sys.executable,
        "-m",
        "dmlbench",
        "gpu-slot",
        "--slots",
        str(slots),
        "--per-device",
        str(per_device),
        "--lock-dir",
        str(tmp_path / "locks"),
        "--",
        sys.executable,
        "-c",
        RECORD,
        str(out),
    ]
    return start(command, env=env or python_env()), out


def test_concurrent_jobs_never_share_a_device(tmp_path):
    jobs = [launch(tmp_path, f"job{i}", slots=2) for i in range(5)]
    for process, _ in jobs:
        assert process.wait(timeout=60) == 0
    records = [json.loads(out.read_text()) for _, out in jobs]
    assert {device for device, _, _ in records} <= {"0", "1"}
    for i, (dev_a, start_a, end_a) in enumerate(records):
        for dev_b, start_b, end_b in records[i + 1 :]:
            overlap = start_a < end_b and start_b < end_a
            assert not (overlap and dev_a == dev_b), records
    # five jobs on two devices cannot all have run at once
    starts = sorted(r[1] for r in records)
    ends = sorted(r[2] for r in records)
    assert starts[2] >= ends[0] - 0.05


def test_per_device_places_that_many_jobs_on_each_device_and_no_more(tmp_path):
    """Four slots at two per device: devices 0 and 1, two jobs each at most at any moment, and the
    first two jobs spread over both devices before either takes a second."""
    from dmlbench.orchestration.gpu_slots import places

    assert places(["0", "1"], 2, 4) == [("0", 0), ("1", 0), ("0", 1), ("1", 1)]
    assert places(["0", "1", "2"], 2, 5)[-1] == ("1", 1)
    jobs = [launch(tmp_path, f"job{i}", slots=4, per_device=2) for i in range(6)]
    for process, _ in jobs:
        assert process.wait(timeout=60) == 0
    records = [json.loads(out.read_text()) for _, out in jobs]
    assert {device for device, _, _ in records} == {"0", "1"}
    for device in ("0", "1"):
        spans = [(a, b) for d, a, b in records if d == device]
        for begun, _ in spans:  # jobs on this device running when each began, itself included
            assert sum(a <= begun < b for a, b in spans) <= 2, records
    starts = sorted(r[1] for r in records)
    assert starts[4] >= sorted(r[2] for r in records)[0] - 0.05  # six jobs, four places: two waited


def test_slurm_assignment_is_kept(tmp_path):
    env = dict(python_env(), SLURM_JOB_ID="123", CUDA_VISIBLE_DEVICES="5")
    process, out = launch(tmp_path, "slurm", slots=8, env=env)
    assert process.wait(timeout=60) == 0
    assert json.loads(out.read_text())[0] == "5"


def test_no_gpu_resource_leaves_the_environment(tmp_path):
    env = python_env()
    env.pop("CUDA_VISIBLE_DEVICES", None)
    process, out = launch(tmp_path, "none", slots=0, env=env)
    assert process.wait(timeout=60) == 0
    assert json.loads(out.read_text())[0] is None


def test_exit_code_of_the_job_is_passed_on(tmp_path):
    command = [
        sys.executable,
        "-m",
        "dmlbench",
        "gpu-slot",
        "--slots",
        "1",
        "--lock-dir",
        str(tmp_path),
        "--",
        sys.executable,
        "-c",
        "raise SystemExit(3)",
    ]
    assert run(command, timeout=60, env=python_env()).returncode == 3


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split()[2] == "Z")


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_child_dies_with_the_wrapper_so_the_device_is_not_shared(tmp_path, how):
    pid_file = tmp_path / "child.pid"
    child = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    command = [
        sys.executable,
        "-m",
        "dmlbench",
        "gpu-slot",
        "--slots",
        "1",
        "--lock-dir",
        str(tmp_path / "locks"),
        "--",
        sys.executable,
        "-c",
        child,
    ]
    wrapper = start(command, env=python_env())
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        child_pid = int(pid_file.read_text())
        wrapper.send_signal(how)  # the wrapper alone, not its group
        wrapper.wait(timeout=30)
    finally:
        stop(wrapper)
    deadline = time.monotonic() + 10
    while _alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child_pid), "the job outlived its wrapper while its device was released"


def test_waiting_job_says_so_and_gives_up_after_its_timeout(tmp_path):
    from dmlbench.orchestration.gpu_slots import claim_device

    with claim_device(1, tmp_path):
        command = [
            sys.executable,
            "-m",
            "dmlbench",
            "gpu-slot",
            "--slots",
            "1",
            "--lock-dir",
            str(tmp_path),
            "--timeout",
            "1",
            "--",
            sys.executable,
            "-c",
            "pass",
        ]
        result = run(command, timeout=60, env=python_env(), capture_output=True, text=True)
    assert result.returncode == 1
    assert f"waiting for a free device among gpu0-gpu0 (gpu0: pid {os.getpid()}), for at most 1 s" in result.stderr
    assert "no free device among gpu0-gpu0 after 1 s" in result.stderr


def test_slots_map_onto_an_inherited_device_mask(tmp_path):
    """A shared machine: the user was given devices 4 and 5; the jobs run there, never on 0."""
    env = dict(python_env(), CUDA_VISIBLE_DEVICES="4,5")
    env.pop("SLURM_JOB_ID", None)
    jobs = [launch(tmp_path, f"job{i}", slots=2, env=env) for i in range(3)]
    for process, _ in jobs:
        assert process.wait(timeout=60) == 0
    assert {json.loads(out.read_text())[0] for _, out in jobs} <= {"4", "5"}


def test_more_slots_than_the_inherited_mask_are_refused(tmp_path):
    env = dict(python_env(), CUDA_VISIBLE_DEVICES="4,5")
    env.pop("SLURM_JOB_ID", None)
    command = [
        sys.executable,
        "-m",
        "dmlbench",
        "gpu-slot",
        "--slots",
        "3",
        "--lock-dir",
        str(tmp_path),
        "--",
        sys.executable,
        "-c",
        "pass",
    ]
    result = run(command, timeout=60, env=env, capture_output=True, text=True)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "--slots 3, but CUDA_VISIBLE_DEVICES='4,5' gives this job 2 device(s)" in result.stderr


def test_a_command_that_does_not_exist_is_named_not_a_traceback(tmp_path):
    command = [
        sys.executable,
        "-m",
        "dmlbench",
        "gpu-slot",
        "--slots",
        "1",
        "--lock-dir",
        str(tmp_path),
        "--",
        "/nonexistent/cmd",
    ]
    result = run(command, timeout=60, env=python_env(), capture_output=True, text=True)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "gpu-slot cannot run '/nonexistent/cmd': No such file or directory" in result.stderr
