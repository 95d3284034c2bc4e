"""The code keeps ruff's pycodestyle and pyflakes rules at its 120 characters and is written as
`ruff format` writes it (pyproject.toml): part of `make test`, so a new unused import, a line too
long or an unformatted module fails the tests (`make format` writes them)."""

import subprocess
import sys

import pytest

from conftest import REPO

FOLDERS = ["dmlbench", "tests", "benchmarks"]


def _ruff(*arguments: str) -> subprocess.CompletedProcess:
    pytest.importorskip("ruff", reason="the dev extra installs ruff")
    return subprocess.run(
        [sys.executable, "-m", "ruff", *arguments, *FOLDERS], capture_output=True, text=True, cwd=REPO
    )


def test_ruff_finds_nothing():
    result = _ruff("check")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_code_is_formatted():
    result = _ruff("format", "--check")
    assert result.returncode == 0, "run `make format`:\n" + result.stdout[-4000:] + result.stderr[-2000:]
