"""The final evaluation made in the process that trained the model, kept beside it.

The train step evaluates the model it has just written and records the result with the sha256 of
that `model.pt`; the workflow's train job writes it as the run's `metrics.json` (`reuse`). The
`dmlbench evaluate` command reuses the record when it belongs to the `model.pt` on disk, without
importing torch; otherwise (another model.pt, no record, a damaged one, `--fresh`) it evaluates
afresh.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from dmlbench.core.io import read_json, write_json

RECORD = "final_metrics.json"
CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def keep(run_dir: Path, result: dict) -> None:
    """Record `result` (what `metrics.json` holds) for the run's current model.pt."""
    write_json(Path(run_dir) / RECORD, {"model_sha256": file_sha256(Path(run_dir) / "model.pt"), "result": result})


def reuse(run_dir: Path, output: Path) -> bool:
    """Write the recorded result to `output` if it belongs to the model.pt on disk."""
    run_dir = Path(run_dir)
    record, model = run_dir / RECORD, run_dir / "model.pt"
    if not record.exists() or not model.exists():
        return False
    try:
        kept = read_json(record)
        result, digest = kept["result"], kept["model_sha256"]
        result["metrics"]
    except (ValueError, KeyError, TypeError):
        return False  # a damaged record: evaluate afresh
    if digest != file_sha256(model):
        return False
    write_json(output, result)
    shown = ", ".join(f"{k} {v:.4f}" for k, v in result["metrics"].items())
    print(f"{run_dir}: {shown} (evaluated by the train step)", file=sys.stderr)
    return True
