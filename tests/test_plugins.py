"""A researcher's own method from outside the checkout (docs/howto/compare-your-method.md): the
page's package, entry point and methods file, as written, are checked by the plan like the
catalogue's methods and run through the smoke preset's fair table beside the papers' methods."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO, python_env

PAGE = REPO / "docs" / "howto" / "compare-your-method.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), re.S)


@pytest.fixture
def installed(tmp_path):
    """The page's package in a folder on the path, with the metadata `pip install` writes for its
    entry point; the page's methods file beside it. Returns (environment, methods file)."""
    site = tmp_path / "site"
    (site / "my_dml").mkdir(parents=True)
    (site / "my_dml" / "__init__.py").write_text("")
    (site / "my_dml" / "losses.py").write_text(_blocks("python")[0])
    toml = _blocks("toml")[0]
    group, line = re.search(r'\[project\.entry-points\."([\w.]+)"\]\n(.+)', toml).groups()
    name, target = (part.strip().strip('"') for part in line.split("="))
    info = site / "my_dml-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-dml\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {target}\n")
    methods = tmp_path / "my_methods.yaml"
    methods.write_text(_blocks("yaml")[0])
    env = python_env()
    env["PYTHONPATH"] = str(site) + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env, methods


def _plan(env, methods: Path, preset: str = "smoke") -> subprocess.CompletedProcess:
    code = (
        "import json, sys\nfrom dmlbench.config.plan import Plan\nfrom dmlbench.methods import declared\n"
        f"plan = Plan.load({str(REPO / 'workflow' / 'config')!r}, {{'preset': {preset!r}, "
        f"'methods_file': {str(methods)!r}}})\n"
        "c = declared.components('loss')['hinge_pairs']\n"
        "print(json.dumps({'methods': plan.experiments['suite.fair']['methods'], 'params': c.params, "
        "'limits': c.limits, 'runs': [r.method for r in plan.fair_runs()]}))\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO)


def test_the_plan_reads_the_installed_loss_from_its_source_and_joins_it_to_the_fair_table(installed):
    env, methods = installed
    result = _plan(env, methods)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["methods"][-1] == "hinge_pairs" and seen["params"] == ["margin"]
    assert seen["limits"] == [["margin", "[-1, 1]"]]
    assert "hinge_pairs" in set(seen["runs"])  # the smoke preset's chosen methods take it in


@pytest.mark.parametrize(
    "old, new, said",
    [
        (
            "margin: 0.5}",
            "margin: 3}",
            "hinge_pairs.loss.margin: 3 is outside what it allows; loss 'hinge_pairs' takes margin: float, [-1, 1]",
        ),
        ("margin: 0.5}", "margn: 0.5}", "loss 'hinge_pairs' has no parameter 'margn' (did you mean 'margin'?)"),
        ("name: hinge_pairs,", "name: hinge_pair,", "unknown loss 'hinge_pair' (did you mean 'hinge_pairs'?)"),
        (
            "name: hinge_pairs,",
            "name: my_dml.losses:HingePair,",
            "defines no class 'HingePair' at its top level (did you mean 'HingePairs'?)",
        ),
        ("  hinge_pairs:\n", "  ms:\n", "method 'ms' is a name the catalogue has already"),
        (
            "join: [suite.fair]",
            "join: [suite.fiar]",
            "join: unknown experiment 'suite.fiar' (did you mean 'suite.fair'?)",
        ),
    ],
)
def test_a_mistake_in_the_users_methods_file_is_named_before_any_job(installed, old, new, said):
    env, methods = installed
    text = methods.read_text()
    assert old in text
    methods.write_text(text.replace(old, new, 1))
    result = _plan(env, methods)
    assert result.returncode != 0 and said in result.stderr, result.stderr[-2000:]
    assert "methods.yaml" not in result.stderr.replace(methods.name, "")  # the user's file, not the catalogue's


def test_a_module_that_is_not_on_the_path_is_named_with_what_to_do(installed):
    env, methods = installed
    methods.write_text(methods.read_text().replace("name: hinge_pairs,", "name: my_dmll.losses:HingePairs,"))
    result = _plan(env, methods)
    assert result.returncode != 0
    assert (
        f"{methods}: method hinge_pairs.loss: loss 'my_dmll.losses:HingePairs': module 'my_dmll.losses' cannot "
        f"be found (No module named 'my_dmll'); install the package or put its folder on PYTHONPATH"
    ) in result.stderr


def test_the_loss_named_by_module_and_class_needs_no_entry_point(installed):
    env, methods = installed
    methods.write_text(methods.read_text().replace("name: hinge_pairs,", "name: my_dml.losses:HingePairs,"))
    code = (
        f"from dmlbench.config.plan import Plan\nplan = Plan.load({str(REPO / 'workflow' / 'config')!r}, "
        f"{{'preset': 'smoke', 'methods_file': {str(methods)!r}}})\n"
        "from dmlbench.methods import losses\n"
        "import torch\nloss = losses.build('my_dml.losses:HingePairs', margin=0.2)\n"
        "x = torch.nn.functional.normalize(torch.eye(4, 8), dim=1)\n"
        "print(float(loss(x, torch.tensor([0, 0, 1, 1]))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO)
    assert result.returncode == 0, result.stderr
    # orthogonal embeddings: every S is 0; positives [0.2 − 0]_+ = 0.2, negatives [0 − 0.2]_+ = 0
    assert float(result.stdout) == pytest.approx(0.2)


@pytest.mark.slow
def test_the_users_loss_goes_through_the_smoke_fair_table_beside_the_papers_methods(installed, tmp_path):
    env, methods = installed
    work = tmp_path / "work"
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(REPO / "Snakefile"),
        "-d",
        str(work),
        "--cores",
        "2",
        "--config",
        "preset=smoke",
        f"methods_file={methods}",
        "experiments=[suite.fair]",
    ]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    assert result.returncode == 0, result.stderr[-4000:]
    table = pd.read_csv(work / "reports/smoke/suite.fair/fair_table.csv")
    assert {"ms", "dro_topk_m", "ephn_2nd", "hinge_pairs"} <= set(table["method"])
    pairs = pd.read_csv(work / "reports/smoke/suite.fair/fair_pairwise.csv")
    mine = pairs[(pairs["a"] == "hinge_pairs") | (pairs["b"] == "hinge_pairs")]
    assert len(mine) == 3 * len(set(pairs["metric"])) * len(set(pairs["mode"]))
    tested = mine["untested"].isna()  # tested pairs are paired; two repetitions equal in difference: "no spread"
    assert mine[tested]["paired"].all() and set(mine[~tested]["untested"]) <= {"no spread"} and tested.any()
    page = (work / "reports/smoke/index.html").read_text()
    assert page.count("<th class='row'>Hinge pairs (mine)</th>") == 2  # its rows: cub's table, paper vs fair
    assert "own method</th></tr>" in page  # a group of its own (no paper proposes it)
    assert "| Hinge pairs (mine) | own method |" in (work / "reports/smoke/suite.fair/fair_table.md").read_text()


def test_a_registry_takes_an_installed_packages_entry_points_and_refuses_a_built_in_name(tmp_path, monkeypatch):
    from dmlbench.core.registry import Registry

    (tmp_path / "their_pkg.py").write_text("SPEC = 'their spec'\nOTHER = 'other'\n")
    info = tmp_path / "their_pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: their-pkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[dmlbench.things]\ntheirs = their_pkg:SPEC\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    things = Registry("thing", group="dmlbench.things")
    things.register("ours")("our spec")
    assert things.names() == ["ours", "theirs"] and things.get("theirs") == "their spec"
    assert "their_pkg:OTHER" in things and things.get("their_pkg:OTHER") == "other"  # by module and name
    assert "their_pkg:" not in things and "no_such_module:X" not in things
    clash = Registry("thing", group="dmlbench.things")
    clash.register("theirs")("a built-in")
    with pytest.raises(KeyError, match="'theirs' of the installed package their-pkg .* is a built-in name too"):
        clash.names()


def test_a_plugins_name_whose_package_is_not_on_the_path_says_what_to_do(installed):
    env, methods = installed
    env = {**env, "PYTHONPATH": ""}  # the package and its entry point out of reach
    result = _plan(env, methods)
    assert result.returncode != 0
    assert "unknown loss 'hinge_pairs'" in result.stderr
    assert (
        "(a plugin's name: its package's entry point dmlbench.losses was not found; install the package, or put "
        "its folder, with its .dist-info, on PYTHONPATH)"
    ) in result.stderr
