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
