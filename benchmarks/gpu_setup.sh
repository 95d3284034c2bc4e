# Sourced by the GPU benchmark scripts (gpu_figures.sh, gpu_scale.sh, gpu_fair.sh) after they set
# OUT's default: the output folder made, PY the interpreter, WHEELS (wheels the machine lacks)
# installed with --no-deps into /tmp/site and put on PYTHONPATH, unbuffered output, no progress bars.
mkdir -p "$OUT"
PY=${PYTHON:-python3}
if [ -n "${WHEELS:-}" ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$WHEELS"/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONUNBUFFERED=1 DMLBENCH_PROGRESS=off
