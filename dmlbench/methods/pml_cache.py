"""The plan's checks of `pml:` names, kept between processes, so that a plan naming PML's losses
loads without importing PML and torch (about 6 s of CPU in each Snakemake process, dry runs and
SLURM jobs included) once the same check has passed here before.

A result is kept under a key of everything the check reads: the entry, pytorch-metric-learning's
and torch's versions, the size and modification time of every source file of PML, and the source
of the suite's checking modules; any change there is a new key, so the check runs again. Only a
check that passed is kept: a refusal is raised afresh each time. The folder is $DMLBENCH_CACHE, or
$XDG_CACHE_HOME/dmlbench (~/.cache/dmlbench), under `pml-checks/`; where it cannot be written,
nothing is kept and every check runs."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import tempfile
from pathlib import Path

CHECKING_CODE = ("pml.py", "pml_loss.py")  # the modules whose code decides a check (this folder)


def folder() -> Path:
    base = os.environ.get("DMLBENCH_CACHE") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "dmlbench"
    )
    return Path(base) / "pml-checks"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def library_state() -> list:
    """PML's and torch's versions and the (path, size, mtime) of PML's source files, read without
    importing either."""
    spec = importlib.util.find_spec("pytorch_metric_learning")
    files = []
    for root in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted(Path(root).rglob("*.py")):
            stat = path.stat()
            files.append((str(path.relative_to(root)), stat.st_size, stat.st_mtime_ns))
    return [_version("pytorch-metric-learning"), _version("torch"), files]


def _key(kind: str, payload) -> str:
    here = Path(__file__).parent
    code = [hashlib.sha256((here / name).read_bytes()).hexdigest() for name in CHECKING_CODE]
    text = json.dumps([kind, payload, library_state(), code], sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _tuples(value):
    """JSON's lists back into the tuples the check returned."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def remembered(kind: str, payload, check):
    """`check()`'s result (a dict of JSON values and tuples, or None), from the cache when this check
    (`kind`, `payload`) has passed here before with the same library and code; else run, and kept
    when it returns."""
    path = folder() / f"{_key(kind, payload)}.json"
    try:
        kept = json.loads(path.read_text())
        if isinstance(kept, dict) and kept.get("kind") == kind and isinstance(kept.get("result"), (dict, type(None))):
            return None if kept["result"] is None else {k: _tuples(v) for k, v in kept["result"].items()}
    except (OSError, ValueError):
        pass  # not kept, cut short or garbled: the check runs and its result replaces the file
    result = check()
    text = json.dumps({"kind": kind, "result": result})
    part = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".part", delete=False) as handle:
            part = Path(handle.name)
            handle.write(text)
        os.replace(part, path)
    except OSError:  # a read-only home: nothing kept, the check runs each time
        if part is not None:
            part.unlink(missing_ok=True)
    return result
