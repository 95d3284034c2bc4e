"""What a job must share with the warm-start server that forks it (`warm_start`, `warm_server`).

A forked child keeps what its server imported: the interpreter, the dmlbench code as it was when
the server read it, the modules found on the server's import path, and the thread runtimes torch
loaded under the server's settings. A server that several Snakemake runs share (the test suite's)
may meet a job that differs in one of them; it then refuses the job, which starts cold.
"""

from __future__ import annotations

import contextlib
import os
import sys

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this dmlbench package
RUNTIME_PREFIXES = ("OMP_", "KMP_", "GOMP_", "MKL_")  # read once, when torch loads its thread runtimes


def code(run: bool = False) -> dict:
    """What a forked child takes from its server rather than from its job, and must therefore be
    the job's: the interpreter, the dmlbench package, the import path the server's modules were
    found on (less its first entry and the folder it runs in, which a job's PYTHONPATH ending in
    `:` names again, and the checkout that holds dmlbench, which the Snakefile's jobs put first)
    and the OpenMP and MKL settings read when torch loads (the thread counts aside: the child sets
    those). With `run`, what a Snakemake process can tell of its jobs: PYTHONPATH, not its own
    import path (to which Snakemake adds folders of its own)."""
    here = (os.path.dirname(PACKAGE), os.getcwd(), "")
    given = os.environ.get("PYTHONPATH", "").split(os.pathsep) if run else sys.path[1:]
    return {
        "python": sys.executable,
        "dmlbench": PACKAGE,
        "pythonpath" if run else "path": [entry for entry in given if entry not in here],
        "runtime": {
            name: value
            for name, value in sorted(os.environ.items())
            if name.startswith(RUNTIME_PREFIXES) and name not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
        },
    }


def sources() -> dict[str, int]:
    """The modification times of the dmlbench modules this process has imported."""
    package = PACKAGE + os.sep
    found = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if path.startswith(package):
            with contextlib.suppress(OSError):
                found[path] = os.stat(path).st_mtime_ns
    return found


def refusal(request: dict, imported: dict[str, int]) -> str | None:
    """Why the server (that imported `imported`, from `sources`) must not run this job (or, for a
    request without `argv`, this Snakemake run's jobs): another interpreter, checkout, import path
    or thread runtime, or its dmlbench sources changed since; None when it may."""
    ours, theirs = code(run="argv" not in request), request.get("code") or {}
    for key, value in ours.items():
        if theirs.get(key) != value:
            return f"its {key} is {theirs.get(key)!r}, the warm-start server's {value!r}"
    for path, mtime in imported.items():
        try:
            changed = os.stat(path).st_mtime_ns != mtime
        except OSError:
            changed = True
        if changed:
            return f"{path} changed after the warm-start server imported it"
    return None
