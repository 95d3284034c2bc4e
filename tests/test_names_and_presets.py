"""Names that become folders, and the preset files that name results/ and reports/ (issue 68,
items 7 and 8): a method id that is a folder of its own, two preset files of one name in one
working folder, superseded runs kept, and the messages of a reading from another folder."""

import pytest

from conftest import CONFIG_DIR
from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError


@pytest.mark.parametrize("name", ["..", ".", ".hidden", "-x"])
def test_a_method_id_that_is_a_folder_of_its_own_is_refused_naming_its_file(tmp_path, name):
    methods = tmp_path / "my_methods.yaml"
    methods.write_text(f"methods:\n  '{name}':\n    loss: {{name: contrastive}}\njoin: [suite.fair]\n")
    with pytest.raises(ConfigError, match=rf"my_methods.yaml.*method id '{name}'.*starting with a letter, digit"):
        Plan.load(CONFIG_DIR, {"preset": "smoke", "methods_file": str(methods)})
    methods.write_text("methods:\n  my.v2-b:\n    loss: {name: contrastive}\njoin: [suite.baselines]\n")
    assert "my.v2-b" in Plan.load(CONFIG_DIR, {"preset": "smoke", "methods_file": str(methods)}).methods


def test_a_run_superseded_twice_under_one_fingerprint_keeps_both_copies(tmp_path):
    """Two preset files of one name took turns in one folder: each switch moved the other's run
    aside, and the third deleted the first copy without a word."""
    from dmlbench.training import run_folder

    run = tmp_path / "seed0"
    moved = []
    for text in ("first", "second"):
        run.mkdir(exist_ok=True)
        (run / "metrics.json").write_text(text)
        moved.append(run_folder.supersede(run, "abcdef0123456789"))
    assert [p.name for p in moved] == ["seed0.superseded-abcdef012345", "seed0.superseded-abcdef012345-2"]
    assert [(p / "metrics.json").read_text() for p in moved] == ["first", "second"]


def test_a_preset_file_whose_name_another_files_finished_results_hold_is_refused_with_both_paths(tmp_path):
    from conftest import REPO, python_env, snakemake_command
    from processes import run as run_process

    from dmlbench.config import preset_owner

    first, second = tmp_path / "a" / "mine.yaml", tmp_path / "b" / "mine.yaml"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text((CONFIG_DIR / "presets" / "smoke.yaml").read_text())
    work = tmp_path / "work"
    config = {"experiments": ["suite.baselines"], "datasets": ["cub"]}
    ours = Plan.load(CONFIG_DIR, {**config, "preset_file": str(first)})
    assert ours.preset_file == first and Plan.load(CONFIG_DIR, {"preset": "smoke"}).preset_file is None
    preset_owner.record(ours, work)
    theirs = Plan.load(CONFIG_DIR, {**config, "preset_file": str(second)})
    preset_owner.check(theirs, work)  # nothing finished yet: the other file may take the name
    finished = work / ours.runs()[0].path("mine") / "metrics.json"
    finished.parent.mkdir(parents=True)
    finished.write_text("{}")
    preset_owner.check(ours, work)
    said = rf"preset_file={second}: .*results/mine holds the finished runs of another preset file .*, {first}; rename"
    with pytest.raises(ConfigError, match=said):
        preset_owner.check(theirs, work)
    result = run_process(  # the workflow checks it before any job
        snakemake_command(work, "-n", "--config", f"preset_file={second}", "experiments=[suite.baselines]"),
        timeout=300,
        capture_output=True,
        text=True,
        env=python_env(),
        cwd=REPO,
    )
    assert result.returncode != 0 and f"dmlbench: error: preset_file={second}: " in result.stderr
    assert "Traceback" not in result.stderr


def test_a_verdict_read_in_a_working_folder_of_snakemake_d_finds_the_checkouts_catalogue(tmp_path):
    """`snakemake -d work` writes reports/ there; the verdict read there once said "unknown preset
    'smoke' ()" (the catalogue was looked for in work/workflow/config)."""
    import sys

    from conftest import python_env
    from processes import run as run_process

    (tmp_path / "reports/smoke/ms.t1").mkdir(parents=True)
    (tmp_path / "reports/smoke/ms.t1/runs.csv").write_text("experiment,dataset,method,seed,recall@1\n")
    result = run_process(
        [sys.executable, "-m", "dmlbench", "verdict", "ms"],
        timeout=300,
        capture_output=True,
        text=True,
        env=python_env(),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "(preset smoke)" in result.stdout and "unknown preset" not in result.stderr


def test_a_plateau_starting_at_the_sweeps_last_setting_is_refused_when_the_plan_loads():
    """Nothing follows it to compare: the claim was accepted, then reported "not run"."""
    from dmlbench.verdicts import claim_checks

    exp = {"methods": ["m"], "sweep": {"1": {}, "2": {}, "3": {}}, "datasets": ["cub"]}
    claim = {"kind": "plateau", "method": "m", "variants": ["1", "2", "3"], "at": "3"}
    with pytest.raises(ConfigError, match=r"ms.f1.claims\[0\].at: '3' is the last of the claim's variants \(1, 2, 3\)"):
        claim_checks.check(claim, exp, "ms.f1.claims[0]")
    claim_checks.check({**claim, "at": "2"}, exp, "ms.f1.claims[0]")
