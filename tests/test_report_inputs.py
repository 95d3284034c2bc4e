"""Reports follow what decides them (issue 68, item 6): the certificate reruns when a claim or a
margin changes, the verdict command judges only numbers of the settings asked and agrees with the
pipeline's certificate however it was narrowed, and a preset's page keeps what is on disk."""

import io
import json
import shutil
from contextlib import redirect_stdout

import pytest

from conftest import CONFIG_DIR
from dmlbench.config import verdict_spec
from dmlbench.config.jobs import of as jobs_of
from dmlbench.config.plan import Plan
from dmlbench.core.errors import DmlbenchError
from dmlbench.training.run_folder import fingerprint


def finished(root, plan, experiment: str, value: float = 0.6) -> None:
    """`experiment`'s runs of `plan` with metrics made under the plan's settings, aggregated."""
    from test_report import fake_run

    from dmlbench.report import aggregate

    files = []
    for run in plan.runs(experiment):
        path = fake_run(root / plan.name, run, {"recall@1": value + 0.01 * run.seed, "map@r": value / 2})
        result = json.loads(path.read_text())
        path.write_text(json.dumps({**result, "fingerprint": fingerprint(plan.resolve(run))}))
        files.append(path)
    aggregate.aggregate(jobs_of(plan).aggregate_spec(experiment), files, root / f"reports/{plan.name}/{experiment}")


def verdict(*args: str) -> str:
    from dmlbench import cli

    out = io.StringIO()
    with redirect_stdout(out):
        cli.main(["verdict", "ms", "--config-dir", str(CONFIG_DIR), "--all", *args])
    return out.getvalue()


def test_a_verdict_refuses_numbers_of_other_settings_than_those_asked(tmp_path, monkeypatch):
    from dmlbench.verdicts import certificate

    plan = Plan.load(CONFIG_DIR, {"preset": "demo"})
    finished(tmp_path, plan, "ms.t1")
    monkeypatch.chdir(tmp_path)
    runs = (tmp_path / "reports/demo/ms.t1/runs.csv").read_text()
    assert fingerprint(plan.resolve(plan.runs("ms.t1")[0])) in runs  # runs.csv says what made each row
    certificate.build(verdict_spec.certificate_spec(plan, "ms"), "abc")
    other = Plan.load(CONFIG_DIR, {"preset": "demo", "overrides": {"optimizer": {"weight_decay": 0.001}}})
    with pytest.raises(DmlbenchError, match=r"runs.csv: 6 of its runs were trained with other settings than those"):
        certificate.build(verdict_spec.certificate_spec(other, "ms"), "abc")
    fewer = Plan.load(
        CONFIG_DIR, {"preset": "demo", "subset": {"ms.t1": {"seeds": [0]}}}
    )  # a part of the runs: theirs judged
    cert = certificate.build(verdict_spec.certificate_spec(fewer, "ms"), "abc")
    assert {x["n"] for e in cert["experiments"] for x in e["numbers"] if e["id"] == "ms.t1" and x["n"]} == {1}


def test_the_verdict_and_the_page_agree_with_the_pipeline_however_it_was_narrowed(tmp_path, monkeypatch):
    """ms.t2 is not in the demo's list: run by `experiments=[ms.t2]`, after the demo's ms.t1."""
    from dmlbench.report import contents

    demo = Plan.load(CONFIG_DIR, {"preset": "demo"})
    narrowed = Plan.load(CONFIG_DIR, {"preset": "demo", "experiments": ["ms.t2"]})
    finished(tmp_path, demo, "ms.t1")
    finished(tmp_path, narrowed, "ms.t2", 0.5)
    monkeypatch.chdir(tmp_path)
    pipeline = verdict("--config", json.dumps({"preset": "demo", "experiments": ["ms.t2"]}), "--output-dir", "out")
    assert verdict("--preset", "demo") == pipeline == (tmp_path / "out/certificate.md").read_text()
    cert = json.loads((tmp_path / "out/certificate.json").read_text())
    assert {e["id"]: e["ran"] for e in cert["experiments"]}["ms.t2"]
    statuses = {
        e["id"]: e["status"]
        for p in contents.contents(demo, tmp_path / "reports/demo")["papers"]
        for e in p["experiments"]
    }
    assert statuses["ms.t2"] == statuses["ms.t1"] == "ran" and statuses["ms.t3"] == "quoted only"


def test_the_certificates_trigger_follows_its_claims_and_margins_and_nothing_else(tmp_path):
    """A claim or a margin edited after a finished run reruns the certificate (its rule's tracked
    param): the terminal's verdict and the report's certificate never disagree."""

    def trigger(edit=None, **config) -> str:
        folder = tmp_path / f"config{len(list(tmp_path.iterdir()))}"  # a folder each: margins are read once per folder
        shutil.copytree(CONFIG_DIR, folder)
        if edit:
            path, old, new = folder / edit[0], edit[1], edit[2]
            assert old in path.read_text()
            path.write_text(path.read_text().replace(old, new, 1))
        return verdict_spec.certificate_trigger(Plan.load(folder, {"preset": "smoke", **config}), "ms")

    before = trigger()
    assert trigger(overrides={"loader": {"workers": 3}}) == before  # a setting that changes no number
    assert trigger(("experiments/ms.yaml", "text: 'VTHM leads", "text: 'Edited: VTHM leads")) != before
    assert trigger(("margins.yaml", "band: 1.0", "band: 1.5")) != before
    assert trigger(("seed_spread.yaml", "sd: 0.4", "sd: 0.6")) != before  # the power before the data's prior
    rule = (CONFIG_DIR.parent / "rules/report.smk").read_text().split("rule certificate:")[1].split("\nrule ")[0]
    assert "verdict_spec.certificate_trigger(PLAN, w.paper)" in rule and "Untracked(verdict_spec" not in rule
