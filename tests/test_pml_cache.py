"""The plan's checks of `pml:` names kept between processes (`dmlbench.methods.pml_cache`): a plan
loads without torch once its checks have passed, a kept result equals the check's own, a refusal is
never kept, and a change in PML's sources runs the check again."""

import json
import subprocess
import sys

import pytest

from conftest import CONFIG_DIR, python_env
from dmlbench.core.errors import ConfigError
from dmlbench.methods import pml, pml_cache

LOAD = f"""
import sys
from dmlbench.config.plan import Plan
Plan.load({str(CONFIG_DIR)!r}, {{"preset": "smoke"}})
print(json.dumps(sorted(m for m in ("torch", "pytorch_metric_learning") if m in sys.modules)))
"""


def test_a_plan_naming_pml_loads_without_torch_once_its_checks_have_passed(tmp_path):
    env = python_env() | {"DMLBENCH_CACHE": str(tmp_path)}
    imported = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", "import json" + LOAD], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        imported.append(json.loads(done.stdout.splitlines()[-1]))
    assert imported == [["pytorch_metric_learning", "torch"], []]
    assert list((tmp_path / "pml-checks").glob("*.json")) and not list((tmp_path / "pml-checks").glob("*.part"))


def test_a_kept_component_equals_the_checks_own(tmp_path, monkeypatch):
    monkeypatch.setenv("DMLBENCH_CACHE", str(tmp_path))
    fresh = pml.component("pml:CircleLoss", "loss")
    first = pml_cache.remembered("component", ["pml:CircleLoss", "loss"], lambda: pml.component("pml:CircleLoss"))
    kept = pml_cache.remembered("component", ["pml:CircleLoss", "loss"], lambda: pytest.fail("the check ran again"))
    assert first == fresh and kept == fresh  # tuples and all, as the Component dataclass takes them


def test_a_refusal_is_never_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("DMLBENCH_CACHE", str(tmp_path))
    runs = []

    def refuse():
        runs.append(1)
        raise ConfigError("refused")

    for _ in range(2):
        with pytest.raises(ConfigError, match="refused"):
            pml_cache.remembered("build", [{"name": "pml:CircleLoss", "m": 2}], refuse)
    assert len(runs) == 2 and not list(tmp_path.rglob("*.json"))


def test_a_change_in_pmls_sources_runs_the_check_again(tmp_path, monkeypatch):
    """A stand-in `pytorch_metric_learning` first on the path: touching one of its files is a new key."""
    package = tmp_path / "lib" / "pytorch_metric_learning"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "losses.py").write_text("A = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    monkeypatch.delitem(sys.modules, "pytorch_metric_learning", raising=False)  # else found as imported
    monkeypatch.setenv("DMLBENCH_CACHE", str(tmp_path / "cache"))
    runs = []
    check = lambda: runs.append(1) or {"params": ("m",)}  # noqa: E731
    assert pml_cache.remembered("component", ["x"], check) == {"params": ("m",)}
    assert pml_cache.remembered("component", ["x"], check) == {"params": ("m",)}
    assert len(runs) == 1  # kept, and read back as the check returned it
    (package / "losses.py").write_text("A = 22\n")  # another size: PML edited in place
    pml_cache.remembered("component", ["x"], check)
    pml_cache.remembered("component", ["y"], check)  # another entry
    assert len(runs) == 3


@pytest.mark.parametrize("garbled", ["", '{"kind": "component", "res', "true", '{"kind": "build", "result": null}'])
def test_a_kept_file_cut_short_emptied_or_of_another_check_is_checked_again_and_replaced(
    tmp_path, monkeypatch, garbled
):
    monkeypatch.setenv("DMLBENCH_CACHE", str(tmp_path))
    runs = []
    check = lambda: runs.append(1) or {"params": ("m",)}  # noqa: E731
    pml_cache.remembered("component", ["x"], check)
    (kept,) = (tmp_path / "pml-checks").glob("*.json")
    kept.write_text(garbled)
    assert pml_cache.remembered("component", ["x"], check) == {"params": ("m",)} and len(runs) == 2
    assert pml_cache.remembered("component", ["x"], check) == {"params": ("m",)} and len(runs) == 2  # healed
