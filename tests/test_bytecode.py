"""The install's bytecode step (`make`'s `.installed`): what the pipeline imports, compiled once."""

import subprocess
import sys

from conftest import python_env


def test_the_step_imports_snakemake_the_plan_and_every_warm_started_steps_modules(monkeypatch):
    from dmlbench.orchestration import bytecode
    from dmlbench.orchestration.warm_start import PRELOAD
    from dmlbench.training import OPTIONAL_IMPORTS

    asked = []
    monkeypatch.setattr(bytecode.importlib, "import_module", asked.append)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    bytecode.main()
    assert set(asked) == {"snakemake.cli", "dmlbench.config.plan", *bytecode.FIRST, *PRELOAD, *OPTIONAL_IMPORTS}
    assert sys.dont_write_bytecode is False


def test_bytecode_is_written_even_where_pythondontwritebytecode_is_set(tmp_path):
    """This machine sets the variable; the step writes the bytecode all the same (here one small
    module, into a cache folder of the test's own)."""
    script = (
        "import dmlbench.orchestration.bytecode as b, dmlbench.orchestration.warm_start as w, dmlbench.training as t;"
        "b.FIRST = ('json.tool',); w.PRELOAD = (); t.OPTIONAL_IMPORTS = (); b.main()"
    )
    env = python_env() | {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.rglob("json/tool.*.pyc")), sorted(p.name for p in tmp_path.rglob("*.pyc"))[:20]
    without = subprocess.run(
        [sys.executable, "-c", "import json.tool"], env=env | {"PYTHONPYCACHEPREFIX": str(tmp_path / "b")}, timeout=60
    )
    assert without.returncode == 0 and not list((tmp_path / "b").rglob("*.pyc"))  # the variable alone: none
