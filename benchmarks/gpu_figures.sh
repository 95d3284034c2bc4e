#!/usr/bin/env bash
# The GPU figures of docs/benchmarks.md, in one call on a GPU machine:
#   1. `python -m benchmarks.gpu_feed`: the GPU fed per paper configuration (target >= 0.9x);
#   2. the gpu-smoke preset through `snakemake --resources gpu=1` (wall time, every rule);
#   3. the bounded preflight of `full` at the real input sizes (seconds per group; `--bounded`
#      keeps one group per distinct code path, so the whole preflight is projected from it).
# Each step has its own time limit (FEED_S, SMOKE_S, PREFLIGHT_S seconds), so a slow one leaves
# the others their turn; every log line is stamped with the epoch second it was printed at.
# At most 8 files land in OUT (the tool that returns them takes no more).
# Usage, from the checkout: OUT=folder [WHEELS=folder] bash benchmarks/gpu_figures.sh
# WHEELS: wheels the machine lacks (installed with --no-deps into /tmp/site, put on PYTHONPATH).
set -uo pipefail
OUT=${OUT:-results/gpu-figures}
source "$(dirname "$0")/gpu_setup.sh"

stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date +%s)" "$line"; done; }
step() {  # step NAME LIMIT COMMAND...: run it, stamped into $OUT/NAME.log, its status and seconds in summary.txt
  local name=$1 limit=$2; shift 2
  local started; started=$(date +%s)
  timeout "$limit" "$@" 2>&1 | stamp > "$OUT/$name.log"
  local status=${PIPESTATUS[0]}
  echo "$name: exit $status after $(( $(date +%s) - started )) s (limit $limit s)" | tee -a "$OUT/summary.txt"
}

{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  nproc; date -u; } > "$OUT/device.txt" 2>&1
cat "$OUT/device.txt"

step gpu_feed "${FEED_S:-120}" $PY -m benchmarks.gpu_feed
step gpu_smoke "${SMOKE_S:-200}" $PY -m snakemake --cores "$(nproc)" --resources gpu=1 --keep-going \
  --config preset=gpu-smoke
step preflight "${PREFLIGHT_S:-150}" $PY -m dmlbench preflight --bounded --devices 1 \
  --output-dir /tmp/gpu-figures-preflight
tar czf "$OUT/preflight.tgz" -C /tmp gpu-figures-preflight 2>/dev/null
tar czf "$OUT/gpu-smoke.tgz" reports/gpu-smoke results/gpu-smoke/runs.parquet 2>/dev/null
grep -h "GPU feed\|groups passed\|Finished\|Error\|error" "$OUT"/*.log | tail -20
