"""What a methods file can make the suite run (docs/security.md): only a class that is a dmlbench
component, read from source with nothing imported, parent packages included; a plugin's `limits`
and inherited constructor read as written; its files' digests in its runs' settings."""

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CONFIG_DIR, REPO, python_env, snakemake_command
from dmlbench.core.errors import ConfigError
from dmlbench.methods import declared

LOSS = """
import pathlib
from dmlbench.methods.losses.base import PairLoss

pathlib.Path({marker!r}).touch()  # import-time code: the plan must not run it


class Mine(PairLoss):
    limits = {limits}

    def __init__(self, margin: float = 0.5):
        super().__init__()
        self.margin = margin

    def compute(self, batch):
        return (batch.sim - self.margin).clamp(min=0).mean()
"""


def _package(site: Path, marker: Path, limits: str = '{"margin": "[0, 1]"}') -> None:
    """A user's package `spy` on the path: its `__init__.py` and its loss module each touch `marker`
    when imported."""
    (site / "spy").mkdir(parents=True, exist_ok=True)
    (site / "spy" / "__init__.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n")
    (site / "spy" / "losses.py").write_text(LOSS.format(marker=str(marker), limits=limits))


def _plan(tmp_path: Path, loss: str, site: Path | None = None) -> subprocess.CompletedProcess:
    """The real plan loader on the smoke preset with a methods file whose one method has `loss`."""
    methods = tmp_path / "mine.yaml"
    methods.write_text(f"methods:\n  mine:\n    label: Mine\n    loss: {loss}\n")
    env = python_env()
    env["PYTHONPATH"] = f"{site or tmp_path}:{env.get('PYTHONPATH', '')}"
    code = (
        "from dmlbench.config.plan import Plan\n"
        f"Plan.load({str(CONFIG_DIR)!r}, {{'preset': 'smoke', 'methods_file': {str(methods)!r}}})\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)


def test_a_methods_file_that_names_a_shell_command_is_refused_by_the_plan_with_nothing_run(tmp_path):
    touched = tmp_path / "touched"
    result = _plan(tmp_path, f'{{name: "subprocess:getoutput", cmd: "touch {touched}"}}')
    assert result.returncode != 0 and not touched.exists()
    said = result.stderr.strip().splitlines()[-1]
    assert "method mine.loss: loss 'subprocess:getoutput': getoutput (" in said
    assert (
        "subprocess.py:" in said and ") is a function; a loss is a class, a subclass of PairLoss or ProxyLoss" in said
    )


@pytest.mark.slow
def test_snakemake_dry_run_refuses_the_shell_command_with_nothing_run(tmp_path):
    touched = tmp_path / "touched"
    methods = tmp_path / "mine.yaml"
    methods.write_text(
        f'methods:\n  mine:\n    label: Mine\n    loss: {{name: "subprocess:getoutput", cmd: "touch {touched}"}}\n'
    )
    command = snakemake_command(tmp_path / "work", "-n", "--config", "preset=smoke", f"methods_file={methods}")
    result = subprocess.run(command, capture_output=True, text=True, env=python_env(), timeout=600)
    assert result.returncode != 0 and not touched.exists()
    assert "loss 'subprocess:getoutput': getoutput (" in result.stderr and "is a function" in result.stderr


def test_the_build_functions_refuse_what_is_no_component_before_importing_it(tmp_path, monkeypatch):
    marker = tmp_path / "imported"
    (tmp_path / "spy_sampler.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n\n\ndef batches(labels, batch_size):\n    return []\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from dmlbench.methods import losses, samplers

    with pytest.raises(ConfigError, match=r"loss 'subprocess:getoutput': getoutput \(.*\) is a function"):
        losses.build("subprocess:getoutput", cmd=f"touch {marker}")
    with pytest.raises(ConfigError, match=r"sampler 'spy_sampler:batches': batches \(.*\) is a function; a sampler"):
        samplers.build("spy_sampler:batches", [0, 0, 1, 1], 4, 2, None)
    assert not marker.exists()


def test_a_class_that_is_no_component_is_refused_naming_the_bases(tmp_path, monkeypatch):
    (tmp_path / "plain.py").write_text("class Loss:\n    def __init__(self, margin: float = 0.5):\n        pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as error:
        declared.check("loss", {"name": "plain:Loss"}, "mine.yaml: method mine.loss")
    assert str(error.value) == (
        f"mine.yaml: method mine.loss: loss 'plain:Loss': class Loss ({tmp_path / 'plain.py'}:1) is no dmlbench "
        "loss: a loss subclasses PairLoss or ProxyLoss (from dmlbench.methods.losses.base import PairLoss, "
        "ProxyLoss) (docs/howto/compare-your-method.md)"
    )


def test_checking_a_name_imports_no_package_of_it_not_even_the_parent(tmp_path):
    marker = tmp_path / "imported"
    _package(tmp_path / "site", marker)
    result = _plan(tmp_path, "{name: spy.nothing:Nothing}", tmp_path / "site")
    assert "module 'spy.nothing' cannot be found (No module named 'spy.nothing')" in result.stderr
    assert not marker.exists()
    result = _plan(tmp_path, "{name: spy.losses:Mine, margin: 0.2}", tmp_path / "site")
    assert result.returncode == 0, result.stderr[-2000:]
    assert not marker.exists()  # read from source: neither spy/__init__.py nor spy/losses.py ran


def test_a_package_named_as_the_checkouts_own_benchmarks_is_refused(tmp_path, monkeypatch):
    """The checkout is first on every job's path: a user's `benchmarks` would never be imported."""
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "__init__.py").write_text("")
    (tmp_path / "benchmarks" / "losses.py").write_text(LOSS.format(marker=str(tmp_path / "m"), limits="{}"))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as error:
        declared.check("loss", {"name": "benchmarks.losses:Mine"}, "mine.yaml: method mine.loss")
    assert str(error.value) == (
        "mine.yaml: method mine.loss: loss 'benchmarks.losses:Mine': 'benchmarks' is the name of the dmlbench "
        f"checkout's own {REPO / 'benchmarks' / '__init__.py'}, first on every job's path: a package of yours of "
        "that name would not be the one imported; rename your package"
    )


def test_a_class_a_package_re_exports_is_named_with_where_it_is_defined(tmp_path, monkeypatch):
    (tmp_path / "spy").mkdir()
    (tmp_path / "spy" / "__init__.py").write_text("from spy.losses import Mine\n")
    (tmp_path / "spy" / "losses.py").write_text(LOSS.format(marker=str(tmp_path / "m"), limits="{}"))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as error:
        declared.check("loss", {"name": "spy:Mine"}, "mine.yaml: method mine.loss")
    assert str(error.value) == (
        "mine.yaml: method mine.loss: loss 'spy:Mine': spy does not define 'Mine', it imports it: the class is "
        f"defined in spy.losses ({tmp_path / 'spy' / 'losses.py'}:8); name it spy.losses:Mine"
    )
    assert declared.components("loss")["spy.losses:Mine"].params == ("margin",)


@pytest.mark.parametrize(
    "limits, said",
    [
        (
            '{"margin": "0 <= margin <= 1"}',
            "Mine.py:8: limits['margin'] = '0 <= margin <= 1' is not a limit the plan reads; write '> a', '>= a', "
            "'< a', '<= a', an interval '[a, b]' (brackets: ends included, parentheses: not) or a tuple of the values "
            "allowed",
        ),
        (
            'dict(margin="[0, 1]")',
            "Mine.py:8: Mine.limits is not a literal the plan can read without running the module (dict is not a "
            "literal constant of the methods' files); write a dict of strings, numbers and tuples, "
            "e.g. limits = {'margin': '[0, 1]'}",
        ),
        (
            '{"margn": "[0, 1]"}',
            "Mine.py:8: limits names 'margn', which the constructor does not take (did you mean 'margin'?); its "
            "parameters: margin",
        ),
    ],
)
def test_a_plugins_limits_that_the_plan_cannot_read_are_named_in_one_line(tmp_path, limits, said):
    site = tmp_path / "site"
    _package(site, tmp_path / "imported", limits)
    (site / "spy" / "Mine.py").write_text((site / "spy" / "losses.py").read_text())
    result = _plan(tmp_path, "{name: spy.Mine:Mine, margin: 7.5}", site)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.endswith(said) and str(site / "spy" / "Mine.py") in last, result.stderr[-2000:]


def test_a_constructor_inherited_from_a_base_in_another_module_of_the_package_is_read_from_it(tmp_path):
    site = tmp_path / "site"
    (site / "spy").mkdir(parents=True)
    (site / "spy" / "__init__.py").write_text("")
    (site / "spy" / "base.py").write_text(
        "from dmlbench.methods.losses import base\n\n\nclass MarginBase(base.PairLoss):\n"
        '    limits = {"margin": "[0, 1]"}\n\n'
        "    def __init__(self, margin: float = 0.5, scale: int = 2):\n        super().__init__()\n"
    )
    (site / "spy" / "losses.py").write_text(
        "from .base import MarginBase\n\n\nclass Mine(MarginBase):\n"
        "    def compute(self, batch):\n        return batch.sim.mean()\n"
    )
    assert _plan(tmp_path, "{name: spy.losses:Mine, margin: 0.3, scale: 4}", site).returncode == 0
    result = _plan(tmp_path, "{name: spy.losses:Mine, margin: 7.5}", site)
    assert "mine.loss.margin: 7.5 is outside what it allows; loss 'spy.losses:Mine' takes margin: float, [0, 1]" in (
        result.stderr
    )


def test_a_runs_settings_hold_its_plugins_digests_and_a_changed_plugin_reruns_it(tmp_path, monkeypatch):
    """The digest of each of the plugin's files is in the run's settings (its fingerprint, the
    workflow's rerun trigger); a file changed after the plan is refused by the training."""
    import hashlib

    from dmlbench.config.plan import Plan
    from dmlbench.methods import plugin_code
    from dmlbench.training import run_folder

    site = tmp_path / "site"
    _package(site, tmp_path / "imported")
    monkeypatch.syspath_prepend(str(site))
    methods = tmp_path / "mine.yaml"
    methods.write_text(
        "methods:\n  mine:\n    label: Mine\n    loss: {name: spy.losses:Mine, margin: 0.5}\n"
        "    search: {loss.margin: {low: 0.1, high: 0.9}}\njoin: [suite.fair]\n"
    )

    def settings():
        declared.components.cache_clear()
        plan = Plan.load(CONFIG_DIR, {"preset": "smoke", "methods_file": str(methods)})
        return plan.resolve(next(run for run in plan.fair_runs() if run.method == "mine"))

    before = settings()
    source = site / "spy" / "losses.py"
    assert before["method"]["code"] == {"spy.losses": hashlib.sha256(source.read_bytes()).hexdigest()}
    source.write_text(source.read_text().replace("clamp(min=0)", "clamp(min=0.0)"))
    with pytest.raises(
        ConfigError, match=r"the file of spy.losses is not the one the plan read .* run snakemake again"
    ):
        plugin_code.check(before["method"], "method 'mine'")
    after = settings()
    assert run_folder.fingerprint(after) != run_folder.fingerprint(before)
    plain = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    assert all("code" not in plain.resolve(run)["method"] for run in plain.runs())  # the suite's own: no key


def test_a_run_records_the_checkouts_commit_whatever_the_working_folder(tmp_path, monkeypatch):
    import torch

    from dmlbench.core import environment

    other = tmp_path / "other"
    other.mkdir()
    for command in (
        ["init", "-q"],
        ["-c", "user.name=x", "-c", "user.email=x@y", "commit", "-q", "--allow-empty", "-m", "x"],
    ):
        subprocess.run(["git", *command], cwd=other, check=True, capture_output=True)
    checkout = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    monkeypatch.chdir(other)
    assert environment.describe(torch.device("cpu"))["git_commit"] == checkout.strip()
    assert environment.checkout_commit(other / "sub") is None  # a folder inside another repository
