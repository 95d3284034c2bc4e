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


# --- 11: a preset is a name in workflow/config/presets, or a file given by preset_file -----------

@pytest.mark.parametrize("preset", ["../presets/smoke", str(CONFIG_DIR / "presets" / "smoke.yaml"),
                                    str(CONFIG_DIR / "presets" / "smoke")])
def test_a_preset_given_as_a_path_is_refused_naming_the_known_presets(tmp_path, preset):
    result = snakemake(tmp_path, "-n", "--cores", "1", "--config", f"preset={preset}")
    assert result.returncode != 0
    said = result.stderr + result.stdout
    assert f"unknown preset {preset!r}" in said
    assert "demo, full, gpu-smoke, smoke" in said and "preset_file=PATH" in said
    assert "MissingInputException" not in said


def test_a_preset_file_elsewhere_is_read_with_preset_file_under_its_own_name(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text((CONFIG_DIR / "presets" / "smoke.yaml").read_text())
    result = snakemake(tmp_path / "work", "-n", "--cores", "1", "--config", f"preset_file={mine}",
                       "experiments=[suite.baselines]", "datasets=[cub]")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "reports/mine/index.html" in result.stdout and "results/mine/suite.baselines/cub/" in result.stdout
    (tmp_path / "smoke.yaml").write_text(mine.read_text())  # a built-in preset's name: its folders
    result = snakemake(tmp_path / "work", "-n", "--cores", "1", "--config", f"preset_file={tmp_path}/smoke.yaml")
    assert result.returncode != 0 and "rename the file" in result.stderr + result.stdout
