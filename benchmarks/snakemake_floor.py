"""Snakemake's own cost per job in a dry run: `python -m benchmarks.snakemake_floor [JOBS]`.

Writes a workflow of JOBS trivial jobs shaped like dmlbench's rules (an input function, a
parameter, a log, a GPU resource, a shell command) into a temporary folder and times
`snakemake -n` of it: the time any workflow of that many jobs takes before its own functions run,
the floor under `python -m benchmarks.workflow`. A benchmark: it prints figures, it asserts nothing.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SNAKEFILE = """
COUNT = int(config["count"])
rule all:
    input: expand("out/{i}.done", i=range(COUNT))
rule job:
    input: lambda w: []
    output: "out/{i}.done"
    params: spec=lambda w: '{"run": ' + w.i + '}'
    resources: gpu=1
    log: "logs/{i}.log"
    shell: "echo {params.spec:q} > {output:q} 2> {log:q}"
"""


def run(jobs: int = 20_000) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "Snakefile").write_text(SNAKEFILE)
        started = time.perf_counter()
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "snakemake",
                "-n",
                "--cores",
                "all",
                "--resources",
                "gpu=8",
                "--config",
                f"count={jobs}",
            ],
            cwd=folder,
            capture_output=True,
            text=True,
            check=True,
        )
        seconds = time.perf_counter() - started
    match = re.search(r"^total\s+(\d+)$", out.stdout, re.M)
    listed = int(match.group(1)) if match else None
    row = {"jobs": listed, "seconds": seconds, "ms_per_job": 1000 * seconds / max(listed or 1, 1)}
    print(
        f"snakemake -n of {listed} trivial jobs: {seconds:.1f} s, {row['ms_per_job']:.2f} ms a job "
        f"(30 s holds about {int(30 / seconds * (listed or 0)):,} such jobs)",
        flush=True,
    )
    return row


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)
