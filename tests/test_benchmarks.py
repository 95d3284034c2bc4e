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


def test_the_suites_cpu_profile_counts_a_tests_own_and_its_processes_seconds(tmp_path):
    """benchmarks.suite_cpu as a pytest plugin: a test that spins in itself and one that waits for
    a spinning child each get their CPU seconds on the right side; the summary lists the larger first."""
    (tmp_path / "test_spin.py").write_text(
        "import subprocess, sys, time\n"
        "def spin(seconds):\n"
        "    end = time.process_time() + seconds\n"
        "    while time.process_time() < end:\n"
        "        pass\n"
        "def test_own():\n"
        "    spin(0.3)\n"
        "def test_child():\n"
        "    code = 'import time\\nend = time.process_time() + 0.6\\nwhile time.process_time() < end: pass'\n"
        "    subprocess.run([sys.executable, '-c', code], check=True)\n"
    )
    folder = tmp_path / "cpu"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "benchmarks.suite_cpu", "--suite-cpu-dir", str(folder)]
    done = run(
        [*command, "-p", "no:cacheprovider", str(tmp_path / "test_spin.py")],
        cwd=REPO,
        env=python_env(),
        timeout=120,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    records = {
        json.loads(line)["test"].split("::")[1]: json.loads(line)
        for line in next(folder.glob("cpu-*.jsonl")).read_text().splitlines()
    }
    assert records["test_own"]["own"] >= 0.3 and records["test_own"]["children"] < 0.1
    assert records["test_child"]["children"] >= 0.6
    from benchmarks import suite_cpu

    text = suite_cpu.summary(folder)
    assert text.startswith("2 tests: ") and text.index("test_child") < text.index("test_own")
