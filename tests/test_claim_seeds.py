"""Seeds per experiment cell (`claim_seeds`, docs/experiments.md): the cells a claim reads train
its seeds, the others the experiment's; a preset's `seeds` replaces both; bad values are refused
when the catalogue loads; full's extra seeds stay within its `claim_budget`."""

import shutil
from collections import Counter

import pytest
from conftest import CONFIG_DIR, full_plan

from dmlbench.config import claim_seeds, verdict_spec
from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError
from dmlbench.verdicts import claims


@pytest.fixture(scope="module")
def full():
    return full_plan()


def _seeds(plan, key):
    return Counter((run.method, run.dataset) for run in plan.runs(key))


def test_at_full_no_claim_reads_a_cell_with_too_few_seeds_to_test(full):
    assert verdict_spec.untestable_claims(full) == {}
    for key in full.experiment_ids:
        exp, seeds = full.experiments[key], _seeds(full, key)
        for claim in exp.get("claims") or []:
            trend = claim.get("kind") in ("increasing", "decreasing")
            counts = [seeds[cell] for cell in claim_seeds.reads(exp, claim) if cell in seeds]
            assert not counts or min(counts) >= (2 if trend else claims.MIN_SEEDS), (key, claim["id"], counts)


def test_the_extra_seeds_go_to_the_claims_cells_alone(full):
    seeds = _seeds(full, "profs.f3")
    assert {seeds["m_profs@lam1e-5", d] for d in ("sop", "cars", "cub")} == {1}  # no claim reads λ = 1e-5
    assert {seeds["m_profs@lam1e-3", d] for d in ("sop", "cars", "cub")} == {13}
    ephn = _seeds(full, "ephn.f4")
    assert ephn["epshn_1st@n8", "cub"] == 1 and ephn["ephn_1st@n8", "sop"] == 1  # SOP is left out of the gap
    assert ephn["ephn_2nd@n8", "sop"] == 10 and ephn["ephn_1st@n8", "cub"] == 12
    found = sorted(run.seed for run in full.runs("profs.f3") if (run.method, run.dataset) == ("m_profs@lam0", "cub"))
    assert found == list(range(13))


def test_a_presets_seeds_replace_the_claim_seeds_everywhere():
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    assert {run.seed for run in plan.runs() if run.experiment != "suite.knobs"} == {0}


def test_full_states_the_budget_its_claim_seeds_fit(full):
    hours = sum(claim_seeds.extra_hours(full).values())
    assert 0 < hours <= full.preset["claim_budget"]["gpu_hours"]
    assert "claim_budget" in claim_seeds.budget_line(full)


@pytest.mark.parametrize(
    "value, message",
    [
        ("[1, 2, 3]", r"\[1, 2, 3\] lacks the experiment's seeds \[0\].*list them first, e.g. \[0, 1, 2, 3\]"),
        ("[0, 1, 1]", r"\[1\] given twice in \[0, 1, 1\]"),
        ("[0, -1]", r"a list of whole numbers from 0 to 4294967295, not \[0, -1\]"),
        ("3", "a list of whole numbers"),
    ],
)
def test_a_bad_claim_seeds_value_is_refused_naming_file_key_and_value(tmp_path, value, message):
    config = shutil.copytree(CONFIG_DIR, tmp_path / "config")
    path = config / "experiments" / "profs.yaml"
    text = path.read_text()
    line = "    lambda-plateau: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]"
    assert line in text
    path.write_text(text.replace(line, f"    lambda-plateau: {value}"))
    with pytest.raises(ConfigError, match=rf"profs.yaml: experiment profs.f3.claim_seeds.lambda-plateau: {message}"):
        Plan.load(config, {"preset": "demo"})


def test_a_claim_seeds_key_that_is_no_claim_is_refused(tmp_path):
    config = shutil.copytree(CONFIG_DIR, tmp_path / "config")
    path = config / "experiments" / "profs.yaml"
    path.write_text(path.read_text().replace("    lambda-plateau: [0,", "    lambda-plateu: [0,"))
    with pytest.raises(
        ConfigError, match=r"claim_seeds.lambda-plateu: no claim 'lambda-plateu'.*did you mean 'lambda-plateau'"
    ):
        Plan.load(config, {"preset": "demo"})
