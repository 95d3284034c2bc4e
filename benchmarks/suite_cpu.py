"""CPU seconds per test: where the test suite's time goes on a machine whose cores it keeps busy.

Wall time per test (pytest's --durations) counts the waits for the other worker's processes; CPU
seconds do not. As a pytest plugin this module writes, per test, the CPU seconds of the test
process and of the processes it started and waited for (getrusage's self and children), one JSON
line per test in `--suite-cpu-dir`:

    python -m pytest -n 2 --dist loadgroup -p benchmarks.suite_cpu --suite-cpu-dir /tmp/cpu
    python -m benchmarks.suite_cpu /tmp/cpu        # the largest, by test and by file

Processes a test does not wait for (a SLURM job run by the cluster's daemons, a forkserver's
children) are not counted: their tests show more wall than CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections import Counter
from pathlib import Path

import pytest


def pytest_addoption(parser) -> None:
    parser.addoption("--suite-cpu-dir", help="write each test's CPU seconds here (benchmarks.suite_cpu)")


def _cpu_seconds() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    folder = item.config.getoption("--suite-cpu-dir")
    own, children = _cpu_seconds()
    started = time.monotonic()
    yield
    if folder:
        own_after, children_after = _cpu_seconds()
        record = {
            "test": item.nodeid,
            "own": own_after - own,
            "children": children_after - children,
            "wall": time.monotonic() - started,
        }
        Path(folder).mkdir(parents=True, exist_ok=True)
        with open(Path(folder) / f"cpu-{os.getpid()}.jsonl", "a") as out:
            out.write(json.dumps(record) + "\n")


def summary(folder: Path, top: int = 30) -> str:
    """The tests and files with the most CPU seconds, and the totals."""
    rows = [json.loads(line) for path in sorted(folder.glob("cpu-*.jsonl")) for line in path.read_text().splitlines()]
    if not rows:
        raise SystemExit(f"{folder}: no cpu-*.jsonl records (run pytest with -p benchmarks.suite_cpu --suite-cpu-dir)")
    for row in rows:
        row["cpu"] = row["own"] + row["children"]
    rows.sort(key=lambda row: -row["cpu"])
    lines = [
        f"{len(rows)} tests: {sum(r['cpu'] for r in rows):,.0f} CPU seconds, {sum(r['wall'] for r in rows):,.0f} s "
        "of wall time summed over the workers",
        *(f"{r['cpu']:7.1f} CPU s {r['wall']:7.1f} s wall  {r['test']}" for r in rows[:top]),
        "by file:",
    ]
    files = Counter()
    for row in rows:
        files[row["test"].split("::")[0]] += row["cpu"]
    lines += [f"{seconds:7.1f} CPU s  {name}" for name, seconds in files.most_common(top)]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="the --suite-cpu-dir of a test run")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    print(summary(args.folder, args.top))


if __name__ == "__main__":
    main()
