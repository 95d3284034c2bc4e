"""Bytecode of what the pipeline imports, written once after the install (`make`'s `.installed`).

The install compiles no bytecode (compiling all of torch costs about 42 s here), so Python compiles
a module on its first import and keeps the result. In a fresh checkout the first seconds of a run
start several processes at once (the warm-start server, Snakemake, the data steps, the first cold
jobs) and each compiled torch, pandas and the rest for itself: about 70 s of CPU more than the
same pipeline run a second time. `python -m dmlbench.orchestration.bytecode` imports them once, in
one process, before any run: only the modules the pipeline uses are compiled.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess
import sys
import time

# two halves compiled side by side: Snakemake, the plan and the table/figure libraries in a second
# process; torch and every step's imports (the warm-start server's) here
LIBRARIES = ("snakemake.cli", "dmlbench.config.plan", "pandas", "scipy.stats", "sklearn.metrics", "matplotlib.pyplot")


def import_all(modules) -> None:
    for module in modules:
        importlib.import_module(module)


def main(argv=None) -> None:
    sys.dont_write_bytecode = False  # whatever PYTHONDONTWRITEBYTECODE says: this is what it is for
    if (argv if argv is not None else sys.argv[1:]) == ["--libraries"]:
        import_all(LIBRARIES)
        return
    from dmlbench.orchestration.warm_start import PRELOAD
    from dmlbench.training import OPTIONAL_IMPORTS

    started = time.monotonic()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    libraries = subprocess.Popen([sys.executable, "-m", "dmlbench.orchestration.bytecode", "--libraries"], env=env)
    try:
        import_all(PRELOAD)
        for module in OPTIONAL_IMPORTS:
            with contextlib.suppress(ImportError):
                importlib.import_module(module)
    finally:
        code = libraries.wait()
    if code:
        raise SystemExit(f"compiling {', '.join(LIBRARIES)} failed (exit status {code})")
    print(f"bytecode: what the pipeline imports, compiled in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
