"""The code keeps ruff's pycodestyle and pyflakes rules at its 120 characters (pyproject.toml):
part of `make test`, so a new unused import or a line too long fails the tests."""

import subprocess
import sys

import pytest

from conftest import REPO


def test_ruff_finds_nothing():
    pytest.importorskip("ruff", reason="the dev extra installs ruff")
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "dmlbench", "tests", "benchmarks"],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
