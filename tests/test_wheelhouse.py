"""`make wheelhouse` writes every wheel the project needs: pip resolves the project and all its needs
from that folder alone (no index, no other wheel folder, no pip configuration)."""

import json
import os
import shutil
import sys
from importlib import metadata
from pathlib import Path

import pytest

from processes import run

ROOT = Path(__file__).resolve().parent.parent


def without_pip_settings() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull  # no machine-wide index, wheel folder or constraints
    return env


@pytest.mark.slow
def test_the_wheelhouse_alone_installs_what_this_environment_runs(tmp_path):
    """Resolved from the folder alone (pip's dry run: no index, no pip settings), the wheelhouse
    installs every package at the version this tested environment runs; the project's own wheel,
    installed without its needs, runs the workflow. (Installing the whole set again would write
    another 5.5 GB for what the test environment already proves.)"""
    house = tmp_path / "wheelhouse"
    made = run(
        ["make", "-C", str(ROOT), "wheelhouse", f"WHEELHOUSE={house}"], timeout=3600, capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr[-3000:]
    try:
        names = {p.name.split("-")[0].lower() for p in house.glob("*.whl")}
        assert {"dmlbench", "torch", "torchvision", "faiss_cpu", "snakemake", "pandas"} <= names
        report = tmp_path / "report.json"
        resolved = run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--dry-run",
                "--quiet",
                "--no-index",
                "--ignore-installed",
                "--find-links",
                str(house),
                "--report",
                str(report),
                "dmlbench[dev]",
            ],
            timeout=1800,
            capture_output=True,
            text=True,
            env=without_pip_settings(),
        )
        assert resolved.returncode == 0, resolved.stderr[-3000:]
        planned = {
            item["metadata"]["name"]: item["metadata"]["version"] for item in json.loads(report.read_text())["install"]
        }
        assert "torch" in planned and "snakemake" in planned
        differ = {
            name: (version, metadata.version(name))
            for name, version in planned.items()
            if metadata.version(name) != version
        }
        assert not differ, f"wheelhouse version vs this environment's: {differ}"
        site = tmp_path / "site"
        wheel = next(house.glob("dmlbench-*.whl"))
        run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--no-index",
                "--target",
                str(site),
                str(wheel),
            ],
            timeout=300,
            check=True,
            env=without_pip_settings(),
        )
        env = dict(without_pip_settings(), PYTHONPATH=str(site))
        used = run(
            [sys.executable, "-c", "import dmlbench; print(dmlbench.__file__)"],
            timeout=300,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
        )
        assert used.returncode == 0, used.stderr[-3000:]
        assert str(site) in used.stdout  # the installed wheel, not the checkout
        dry = run(
            [
                sys.executable,
                "-m",
                "snakemake",
                "-s",
                str(ROOT / "Snakefile"),
                "-d",
                str(tmp_path / "work"),
                "-n",
                "--cores",
                "2",
                "--config",
                "preset=smoke",
            ],
            timeout=600,
            capture_output=True,
            text=True,
            env=env,
        )
        assert dry.returncode == 0, dry.stderr[-3000:]
    finally:
        shutil.rmtree(house, ignore_errors=True)  # 3.5 GB: not left for pytest's kept temporary folders
