"""The README's first command from a fresh clone, timed: `python -m benchmarks.demo_time`.

Clones this checkout's HEAD into a temporary folder, runs `make demo` there as a new user would
(the install, `make .venv/.installed`, timed apart from the pipeline), and prints the install
time, the pipeline time, the number of jobs, the job time per rule (from Snakemake's log) and
the size of what the demo keeps in `results/`.
`--reuse-venv PATH` links an existing environment instead of installing (to time the pipeline
alone). A benchmark: it prints figures, it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")


def rule_times(log: Path) -> tuple[int, dict[str, float]]:
    """(jobs, seconds of job time per rule) from a Snakemake log: each job from its start line to
    its 'Finished jobid' line."""
    started, rule_of, totals, jobs = {}, {}, defaultdict(float), 0
    stamp, rule = None, None
    for line in log.read_text().splitlines():
        found = STAMP.match(line.strip())
        if found:
            stamp = datetime.strptime(found.group(1), "%a %b %d %H:%M:%S %Y")
            continue
        match = re.match(r"^(?:local)?rule (\w+):", line.strip())
        if match:
            rule = match.group(1)
        match = re.match(r"^jobid: (\d+)", line.strip())
        if match and rule:
            started[match.group(1)], rule_of[match.group(1)] = stamp, rule
            rule = None
        match = re.match(r"^Finished jobid: (\d+)", line.strip())
        if match and match.group(1) in started:
            job = match.group(1)
            totals[rule_of[job]] += (stamp - started[job]).total_seconds()
            jobs += 1
    return jobs, dict(totals)


def run(cores: int, reuse_venv: Path | None) -> dict:
    work = Path(tempfile.mkdtemp(prefix="dmlbench-demo-"))
    clone = work / "dmlbench"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    started = time.monotonic()
    if reuse_venv:
        (clone / ".venv").symlink_to(reuse_venv.resolve())
        (clone / ".venv" / ".installed").touch()
    else:
        subprocess.run(["make", ".venv/.installed"], cwd=clone, env=env, check=True)
    install = time.monotonic() - started
    started = time.monotonic()
    result = subprocess.run(["make", "demo", f"CORES={cores}"], cwd=clone, env=env, capture_output=True, text=True)
    pipeline = time.monotonic() - started
    if result.returncode:
        print(result.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"make demo failed in {clone}")
    log = max((clone / ".snakemake" / "log").glob("*.snakemake.log"), key=lambda p: p.stat().st_mtime)
    jobs, per_rule = rule_times(log)
    results_mb = sum(f.stat().st_size for f in (clone / "results").rglob("*") if f.is_file()) / 1e6
    shutil.rmtree(work, ignore_errors=True)
    return {
        "install_s": install,
        "pipeline_s": pipeline,
        "jobs": jobs,
        "per_rule_s": per_rule,
        "cores": os.cpu_count(),
        "reused_venv": bool(reuse_venv),
        "results_mb": results_mb,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--reuse-venv", type=Path, help="an installed environment to link instead of installing")
    args = parser.parse_args(argv)
    figures = run(args.cores, args.reuse_venv)
    total = figures["install_s"] + figures["pipeline_s"]
    print(f"machine: {figures['cores']} cores; date {datetime.now():%Y-%m-%d}")
    print(f"install: {figures['install_s']:.0f} s{' (linked, not installed)' if figures['reused_venv'] else ''}")
    print(f"pipeline: {figures['pipeline_s']:.0f} s, {figures['jobs']} jobs")
    print(f"fresh clone to report: {total:.0f} s (target ≤ 600 s, goal ≤ 420 s)")
    print(f"results/: {figures['results_mb']:.0f} MB")
    for rule, seconds in sorted(figures["per_rule_s"].items(), key=lambda item: -item[1]):
        print(f"  {rule:10s} {seconds:7.0f} s of job time")


if __name__ == "__main__":
    main()
