"""The benchmark suite still runs (tiny sizes). No timing is asserted: benchmarks print figures."""

import json
import sys

import pytest

from conftest import REPO, python_env
from processes import run


@pytest.mark.slow
def test_tiny_benchmarks_write_their_report(tmp_path):
    run(
        [sys.executable, "-m", "benchmarks", "--tiny", "--out", str(tmp_path)],
        timeout=900,
        cwd=REPO,
        check=True,
        env=python_env(),
        capture_output=True,
    )
    text = (tmp_path / "benchmarks.md").read_text()
    for heading in (
        "## Loss side",
        "## DRO variants",
        "## Evaluation",
        "## Input pipeline",
        "## Workflow",
        "## Training step",
        "## Cache and store steps",
        "## Compute budget",
        "## The GPU fed",
        "## Preflight per group",
    ):
        assert heading in text
    results = json.loads((tmp_path / "benchmarks.json").read_text())
    assert results["tiny"] and results["workflow"]["jobs"] > 100
    contenders = {r["contender"] for r in results["evaluation"]["tiny"] if "seconds" in r}
    assert contenders == {"roofline", "suite_knn_only", "suite", "pml", "sklearn_knn"}
    feed = results["gpu_feed"]["rows"][0]  # on this CPU: the code path at 64 px, marked unmeasured
    assert feed["backbone"] == "bninception" and feed["end_to_end"] > 0 and feed["model_only"] > 0
    assert results["preflight"]["passed"] and results["preflight"]["groups"] >= 1
