"""Lock files are opened without following links: a lock path that is not a regular file (a
link, a folder, a FIFO) is refused, named, and nothing is written through it."""

import json
import os
import sys

import pytest

from dmlbench.config.plan import Plan
from dmlbench.core.io import LockPathError, open_lock
from dmlbench.preflight import probe

from conftest import CONFIG_DIR, python_env
from processes import run

KINDS = ["link", "dangling link", "folder", "fifo"]


def plant(path, kind, victim):
    """Put a `kind` where the lock file `path` goes; `victim` is the file a link points to."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "link":
        path.symlink_to(victim)
    elif kind == "dangling link":
        path.symlink_to(victim.with_name("absent"))
    elif kind == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "precious.txt"
    path.write_text("keep me\n")
    return path


def untouched(victim, lock):
    assert victim.read_text() == "keep me\n"
    assert not victim.with_name("absent").exists()
    assert os.path.lexists(lock)  # what was there is left for the user to look at


@pytest.mark.parametrize("kind", KINDS)
def test_open_lock_refuses_a_path_that_is_not_a_regular_file(tmp_path, victim, kind):
    lock = tmp_path / "locks" / "x.lock"
    plant(lock, kind, victim)
    with pytest.raises(LockPathError) as caught:
        open_lock(lock)
    message = str(caught.value)
    assert str(lock) in message and "not a lock file" in message and "rerun" in message
    assert {"link": "symbolic link", "dangling link": "symbolic link", "folder": "a folder", "fifo": "a FIFO"}[
        kind
    ] in message
    untouched(victim, lock)


def test_open_lock_creates_and_reopens_a_regular_file(tmp_path):
    lock = tmp_path / "x.lock"
    with open_lock(lock) as handle:
        handle.write("1\n")
    with open_lock(lock) as handle:
        assert handle.read() == "1\n"


@pytest.mark.parametrize("kind", KINDS)
def test_gpu_slot_refuses_a_device_lock_that_is_not_a_file(tmp_path, victim, kind):
    lock = tmp_path / "locks" / "gpu0.lock"
    plant(lock, kind, victim)
    ran = tmp_path / "ran"
    result = run(
        [
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
            f"open({str(ran)!r}, 'w')",
        ],
        timeout=120,
        capture_output=True,
        text=True,
        env=python_env(),
    )
    assert result.returncode == 1
    assert f"dmlbench gpu-slot: error: {lock} is " in result.stderr and "Traceback" not in result.stderr
    assert not ran.exists()
    untouched(victim, lock)


@pytest.mark.parametrize("kind", KINDS)
def test_train_refuses_a_run_lock_that_is_not_a_file(tmp_path, victim, kind):
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    cfg = plan.resolve(plan.find_run("suite.baselines", "cub", "ms", 0))
    run_dir = tmp_path / "run"
    plant(run_dir / ".train.lock", kind, victim)
    result = run(
        [sys.executable, "-m", "dmlbench", "train", "--spec", json.dumps(cfg), "--run-dir", str(run_dir)],
        timeout=300,
        capture_output=True,
        text=True,
        env=python_env(),
    )
    assert result.returncode == 1
    assert f"dmlbench train: error: {run_dir / '.train.lock'} is " in result.stderr
    assert "Traceback" not in result.stderr
    untouched(victim, run_dir / ".train.lock")


@pytest.mark.parametrize("kind", KINDS)
def test_preflight_refuses_a_fixture_lock_that_is_not_a_file(tmp_path, victim, kind):
    size = {"n_classes": 4, "per_class": 2}
    lock = tmp_path / "cub-4x2-16" / ".preflight.lock"
    plant(lock, kind, victim)
    with pytest.raises(LockPathError, match="not a lock file"):
        probe.fixture_manifest("cub", size, 16, tmp_path)
    untouched(victim, lock)
    assert not (lock.parent / "fixture").exists()
