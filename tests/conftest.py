import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASETS = REPO.parent / "shared" / "datasets"
CONFIG_DIR = REPO / "workflow" / "config"
pytest_plugins = ["processes"]  # every process a test starts: grouped, time-limited, stopped with the run


@pytest.fixture
def shared_datasets() -> Path:
    if not SHARED_DATASETS.exists():
        pytest.skip(f"{SHARED_DATASETS} is absent (only the developers' checkout has ../shared)")
    return SHARED_DATASETS


def python_env() -> dict:
    """Environment for subprocesses: this interpreter's scripts first on PATH."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env
