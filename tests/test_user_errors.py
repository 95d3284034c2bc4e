"""Errors a user can cause by a value, a file or the machine: each is a message naming the file, key
or value and what to do, through the real commands (Snakemake, `python -m dmlbench`), never a
traceback; and nothing a failed step leaves behind is a partial output."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CONFIG_DIR, REPO, python_env
from dmlbench.config.plan import Plan

VENV_BIN = Path(sys.executable).parent


def snakemake(workdir: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    command = [str(VENV_BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env or python_env(), timeout=300)


def dmlbench(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dmlbench", *args], capture_output=True, text=True,
                          cwd=cwd, env=dict(python_env(), PYTHONPATH=str(REPO)), timeout=300)


def no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr + result.stdout, result.stderr


# --- 12: jobs run with Snakemake's own interpreter ----------------------------------------------

def test_jobs_run_with_snakemakes_interpreter_when_the_environment_is_not_activated(tmp_path):
    """`.venv/bin/snakemake` with a PATH whose `python` is another one: the job still runs."""
    other = tmp_path / "other-bin"
    other.mkdir()
    for name in ("python", "python3"):
        (other / name).write_text("#!/bin/sh\necho 'the python on PATH ran' >&2\nexit 3\n")
        (other / name).chmod(0o755)
    path = os.pathsep.join([str(other)] + [p for p in os.environ["PATH"].split(os.pathsep)
                                           if Path(p).resolve() != VENV_BIN.resolve()])
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    target = f"{Plan.load(CONFIG_DIR, {'preset': 'smoke'}).data_dir}/digits/manifest.csv"
    result = snakemake(tmp_path / "work", "--cores", "1", "--config", "preset=smoke", "--", target,
                       env=dict(env, PATH=path))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "the python on PATH ran" not in result.stderr
    assert (tmp_path / "work" / target).exists()
