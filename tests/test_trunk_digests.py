"""A pretrained timm trunk with no published digest on record is planned only once its weights'
sha256 is recorded (the preset's `trunk_sha256`, or a run's `model.weights_sha256`)."""

from __future__ import annotations

import pytest
from conftest import CONFIG_DIR, REPO, python_env, snakemake_command
from processes import run

from dmlbench.config import trunk_digests
from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError
from dmlbench.models import timm_trunks

S16, S14 = "c" * 64, "d" * 64


def modern_plan(**config) -> Plan:
    return Plan.load(CONFIG_DIR, {"preset": "full", "experiments": ["suite.modern", "ms.t2"], **config})


def test_full_lacks_the_digests_of_its_two_modern_trunks_and_says_where_to_read_them():
    plan = modern_plan()
    assert trunk_digests.missing(plan) == {"vit_s16_dino": ["suite.modern"], "dinov2_s14": ["suite.modern"]}
    with pytest.raises(ConfigError) as refused:
        trunk_digests.check_planned(plan)
    message = str(refused.value)
    for backbone in ("vit_s16_dino", "dinov2_s14"):
        assert (
            f"https://huggingface.co/timm/{timm_trunks.TRUNKS[backbone].model}/blob/main/model.safetensors" in message
        )
    assert "trunk_sha256: {dinov2_s14: <sha256>, vit_s16_dino: <sha256>}" in message


def test_a_recorded_digest_reaches_every_pretrained_run_of_its_trunk_and_no_other():
    plan = modern_plan(trunk_sha256={"vit_s16_dino": S16, "dinov2_s14": S14})
    trunk_digests.check_planned(plan)
    seen = {}
    for run_ in plan.runs():
        model = plan.resolved(run_)["model"]
        seen.setdefault(model["backbone"], set()).add(model.get("weights_sha256"))
    assert seen["vit_s16_dino"] == {S16} and seen["dinov2_s14"] == {S14}
    assert seen["bninception"] == {None}  # ms.t2's runs: no timm trunk, nothing set


def test_one_recorded_digest_leaves_the_other_trunk_refused():
    plan = modern_plan(trunk_sha256={"vit_s16_dino": S16})
    assert trunk_digests.missing(plan) == {"dinov2_s14": ["suite.modern"]}


def test_an_untrained_trunk_needs_no_digest():
    plan = modern_plan(overrides={"model": {"pretrained": False}})
    assert trunk_digests.missing(plan) == {}


@pytest.mark.parametrize(
    "record, refusal",
    [
        ({"bninception": S16}, r"trunk_sha256.bninception: not a timm trunk"),
        ({"dinov2_b14": S16}, r"trunk_sha256.dinov2_b14: c{64} is not the published"),
        ({"vit_s16_dino": "ABC"}, r"key trunk_sha256.vit_s16_dino: 'ABC' does not match"),
    ],
)
def test_a_wrong_record_is_refused_naming_its_key(record, refusal):
    with pytest.raises(ConfigError, match=refusal):
        modern_plan(trunk_sha256=record)


def test_the_workflow_refuses_full_before_any_job_without_the_digests(tmp_path):
    command = snakemake_command(tmp_path, "-n", "--cores", "2", "--config", "experiments=[suite.modern]")
    refused = run(command, timeout=600, capture_output=True, text=True, env=python_env(), cwd=REPO)
    assert refused.returncode != 0
    assert "no sha256 of the weights is on record for dinov2_s14, vit_s16_dino" in refused.stderr
    assert not (tmp_path / "results").exists()
    recorded = "trunk_sha256={vit_s16_dino: " + S16 + ", dinov2_s14: " + S14 + "}"
    planned = run(command + [recorded], timeout=600, capture_output=True, text=True, env=python_env(), cwd=REPO)
    assert planned.returncode == 0, planned.stderr[-2000:]
