#!/usr/bin/env bash
# The GPU figures of `full` at its own scale (docs/benchmarks.md), in one call on a GPU machine:
#   1. `python -m benchmarks.checkpoint_cost --device cuda`: the per-epoch checkpoint of the fair
#      recipe's network (size, seconds to write it from the device);
#   2. the gpu-smoke preset through `snakemake --resources gpu=1` (train writes metrics.json: no
#      evaluate jobs), then its runs' per-epoch cost (epochs.jsonl: seconds, warm seconds per step);
#   3. the same preset once more with tracking off and keep.checkpoint on: nothing to do.
# Usage, from the checkout: OUT=folder [WHEELS=folder] bash benchmarks/gpu_scale.sh
set -uo pipefail
OUT=${OUT:-results/gpu-scale}
source "$(dirname "$0")/gpu_setup.sh"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  nproc; date -u; } > "$OUT/device.txt" 2>&1
cat "$OUT/device.txt"
timeout "${CHECKPOINT_S:-120}" $PY -m benchmarks.checkpoint_cost --device cuda --folder "$PWD" 2>&1 | tee "$OUT/checkpoint.txt"
started=$(date +%s)
timeout "${SMOKE_S:-300}" $PY -m snakemake --cores "$(nproc)" --resources gpu=1 --scheduler greedy \
  --config preset=gpu-smoke > "$OUT/gpu_smoke.log" 2>&1
echo "gpu-smoke: exit $? after $(( $(date +%s) - started )) s" | tee "$OUT/summary.txt"
grep -A30 "^Job stats" "$OUT/gpu_smoke.log" | head -25 | tee -a "$OUT/summary.txt"
$PY - <<'PY' | tee -a "$OUT/summary.txt"
import json, pathlib
for path in sorted(pathlib.Path("results/gpu-smoke").glob("**/epochs.jsonl")):
    for row in map(json.loads, path.read_text().splitlines()):
        warm = row.get("warm_seconds_per_step")
        first = row["seconds"] - (row["steps"] - 1) * warm if warm else None
        print(f"{path.parent}: epoch {row['epoch']} {row['steps']} steps {row['seconds']:.2f} s, warm step "
              f"{warm} s, first step (loader start, cuDNN warm-up) {first if first is None else round(first, 2)} s")
PY
$PY -m snakemake -n --cores "$(nproc)" --resources gpu=1 --config preset=gpu-smoke \
  'overrides={tracking: {tensorboard: false}, keep: {checkpoint: true}}' 2>&1 | tail -3 | tee -a "$OUT/summary.txt"
