#!/usr/bin/env bash
# A fair search on a GPU, shrunk: suite.fair's recipe (BN-Inception at 227 px, batch 32) for ms on the
# gpu-smoke preset's cub fixture, 2 folds, 2 trials one round at a time, 2 final repetitions, 3 epochs
# of 10 steps: the round and repetition jobs through `snakemake --resources gpu=1`, then each fold's
# epochs (train seconds, warm seconds per step, evaluation seconds) and its checkpoint.
# Usage, from the checkout: OUT=folder [WHEELS=folder] bash benchmarks/gpu_fair.sh
set -uo pipefail
OUT=${OUT:-results/gpu-fair}
source "$(dirname "$0")/gpu_setup.sh"
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
started=$(date +%s)
timeout "${FAIR_S:-360}" $PY -m snakemake --cores "$(nproc)" --resources gpu=1 --scheduler greedy \
  --config preset=gpu-smoke 'experiments=[suite.fair]' \
  'subset={suite.fair: {datasets: [cub], methods: [ms], fair: {folds: 2, trials: 2, parallel: 1, repetitions: 2}, train: {epochs: 3, batches_per_epoch: 10}}}' \
  > "$OUT/fair.log" 2>&1
echo "fair search: exit $? after $(( $(date +%s) - started )) s" | tee "$OUT/summary.txt"
grep -A16 "^Job stats" "$OUT/fair.log" | head -16 | tee -a "$OUT/summary.txt"
grep -h "fair_round\|fair_final" "$OUT/fair.log" | grep -c "Finished" | sed 's/^/round and repetition jobs finished: /' | tee -a "$OUT/summary.txt"
$PY - <<'PY' | tee -a "$OUT/summary.txt"
import json, pathlib
base = pathlib.Path("results/gpu-smoke/suite.fair/cub/ms")
for path in sorted(base.glob("*/*/fold*/epochs.jsonl")):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    print(path.parent.relative_to(base), " ".join(
        f"e{r['epoch']}: {r['seconds']:.2f}s train (warm step {r.get('warm_seconds_per_step')}), eval {r.get('eval_seconds')}s"
        for r in rows))
print("trials:", (base / "search" / "trials.csv").read_text().splitlines()[:3])
PY
