"""Wall time of `snakemake -n` on the full catalogue, with its job count."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(repeats: int = 3) -> dict:
    times, jobs = [], None
    with tempfile.TemporaryDirectory() as workdir:
        for _ in range(repeats):
            start = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-s", str(REPO / "Snakefile"),
                                  "-d", workdir, "--cores", "all", "--resources", "gpu=8"],
                                 capture_output=True, text=True, check=True)
            times.append(time.perf_counter() - start)
            match = re.search(r"^total\s+(\d+)$", out.stdout, re.M)
            jobs = int(match.group(1)) if match else None
    times.sort()
    row = {"median_s": times[len(times) // 2], "min_s": times[0], "max_s": times[-1], "jobs": jobs}
    print(f"snakemake -n (full preset): {row['median_s']:.1f} s median for {jobs} jobs", flush=True)
    return row


if __name__ == "__main__":
    run()
