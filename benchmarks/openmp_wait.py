"""OpenMP's wait policy against CPU seconds: `python -m benchmarks.openmp_wait [--steps N]`.

Times N training steps of the demo's small CNN (batch 16, 32-px images, torch at 2 threads) in a
fresh process under the runtime's default policy and under PASSIVE (what dmlbench sets), on a
quiet machine and beside one busy process per core (as jobs and test workers run side by side).
Prints CPU seconds and wall seconds of each. A benchmark: it prints figures, it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

STEPS = """
import json, sys, time
import torch  # before dmlbench: the runtime reads the policy the parent left (or its default)
from dmlbench.models.embedding import EmbeddingNet
torch.set_num_threads(2)
torch.manual_seed(0)
net, images = EmbeddingNet("small_cnn", 16, pretrained=False), torch.rand(16, 3, 32, 32)
cpu, wall = time.process_time(), time.perf_counter()
for _ in range(int(sys.argv[1])):
    net(images).sum().backward()
print(json.dumps({"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall}))
"""
SPIN = "while True: pass"


def measure(policy: str | None, steps: int, busy: int) -> dict:
    """CPU and wall seconds of `steps` steps under `policy` (None: the runtime's default) beside
    `busy` spinning processes."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(busy)]
    try:
        done = subprocess.run(
            [sys.executable, "-c", STEPS, str(steps)], env=env, capture_output=True, text=True, check=True
        )
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    return {"policy": policy or "default", "busy": busy, **json.loads(done.stdout)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    print(f"{args.steps} steps, torch at 2 threads, {cores} cores")
    print("policy    busy processes   CPU s   wall s")
    for busy in (0, cores):
        for policy in (None, "PASSIVE"):
            row = measure(policy, args.steps, busy)
            print(f"{row['policy']:<9} {row['busy']:>14} {row['cpu_s']:>7.2f} {row['wall_s']:>8.2f}")


if __name__ == "__main__":
    main()
