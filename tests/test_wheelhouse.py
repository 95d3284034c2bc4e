"""`make wheelhouse` writes every wheel the project needs; a fresh virtual environment installs
the project from that folder alone (no index, no other wheel folder, no pip configuration)."""

import os
import sys
from pathlib import Path

import pytest

from processes import run

ROOT = Path(__file__).resolve().parent.parent


def without_pip_settings() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull  # no machine-wide index, wheel folder or constraints
    return env


@pytest.mark.slow
def test_a_fresh_environment_installs_the_project_from_the_wheelhouse_alone(tmp_path):
    house = tmp_path / "wheelhouse"
    made = run(["make", "-C", str(ROOT), "wheelhouse", f"WHEELHOUSE={house}"], timeout=3600,
               capture_output=True, text=True)
    assert made.returncode == 0, made.stderr[-3000:]
    names = {p.name.split("-")[0].lower() for p in house.glob("*.whl")}
    assert {"dmlbench", "torch", "torchvision", "faiss_cpu", "snakemake", "pandas"} <= names
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], timeout=300, check=True)
    installed = run([str(venv / "bin/python"), "-m", "pip", "install", "--quiet", "--no-index",
                     "--find-links", str(house), "dmlbench[dev]"], timeout=1800,
                    capture_output=True, text=True, env=without_pip_settings())
    assert installed.returncode == 0, installed.stderr[-3000:]
    used = run([str(venv / "bin/python"), "-c",
                "import dmlbench, torch, torchvision, faiss, sklearn, snakemake, matplotlib, "
                "pytorch_metric_learning; print(dmlbench.__file__)"], timeout=300,
               capture_output=True, text=True, cwd=tmp_path, env=without_pip_settings())
    assert used.returncode == 0, used.stderr[-3000:]
    assert str(venv) in used.stdout  # the installed package, not the checkout
    dry = run([str(venv / "bin/python"), "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d",
               str(tmp_path / "work"), "-n", "--cores", "2", "--config", "preset=smoke"], timeout=600,
              capture_output=True, text=True, env=dict(without_pip_settings(),
                                                       PATH=f"{venv / 'bin'}:{os.environ['PATH']}"))
    assert dry.returncode == 0, dry.stderr[-3000:]
