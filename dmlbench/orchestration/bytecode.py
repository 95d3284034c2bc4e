"""Bytecode of what the pipeline imports, written once after the install (`make`'s `.installed`).

The install compiles no bytecode (compiling all of torch costs about 42 s here), so Python compiles
a module on its first import and keeps the result. In a fresh checkout the first seconds of a run
start several processes at once (the warm-start server, Snakemake, the data steps, the first cold
jobs) and each compiled torch, pandas and the rest for itself: about 70 s of CPU more than the
same pipeline run a second time. `python -m dmlbench.orchestration.bytecode` imports them once, in
one process, before any run: only the modules the pipeline uses are compiled.
"""

from __future__ import annotations

import importlib
import sys
import time

# Snakemake's command line and the plan it loads; then every step's imports (the warm-start server's)
FIRST = ("snakemake.cli", "dmlbench.config.plan", "dmlbench.data.prepare", "dmlbench.data.store")


def main() -> None:
    sys.dont_write_bytecode = False  # whatever PYTHONDONTWRITEBYTECODE says: this is what it is for
    from dmlbench.orchestration import warm_start

    started = time.monotonic()
    for module in FIRST:
        importlib.import_module(module)
    warm_start.preload()
    print(f"bytecode: {len(sys.modules)} modules imported in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
