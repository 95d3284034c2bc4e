"""Searches checked whole when the plan loads (issue 68, item 5): every value a method's `search:`
can ask passes the checks its run would meet, so that no search job dies mid-study on a value the
plan let through (and again on every rerun, the trial being in the journal)."""

import pytest

from conftest import CONFIG_DIR
from dmlbench.config import run_checks, search_checks
from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError
from dmlbench.fair import space as spaces

CONTRASTIVE = "{name: contrastive, pos_margin: 0, neg_margin: 0.5}"


def _load(tmp_path, method: str, join: str = "suite.fair", config: dict | None = None) -> Plan:
    """The smoke plan with a methods file of one method `mine` (its YAML lines after `label`)."""
    methods = tmp_path / "mine.yaml"
    methods.write_text(f"methods:\n  mine:\n    label: Mine\n{method}join: [{join}]\n")
    return Plan.load(CONFIG_DIR, {"preset": "smoke", "methods_file": str(methods), **(config or {})})


@pytest.mark.parametrize(
    "method, said",
    [
        (  # an int parameter searched over real values: the job would ask centres_per_class 17.85
            "    loss: {name: softtriple, centres_per_class: 10}\n"
            "    search: {loss.centres_per_class: {low: 2, high: 20}}\n",
            "mine.yaml: method mine.search.loss.centres_per_class: {low: 2, high: 20} asks real values (such as 11), "
            "but loss 'softtriple' takes centres_per_class: int",
        ),
        (
            "    loss: {name: softtriple, centres_per_class: 10}\n"
            "    search: {loss.centres_per_class: {low: 2.5, high: 20, int: true}}\n",
            "an integer range (int: true) needs whole-number ends, not 2.5, 20",
        ),
        (  # the miner follows the loss below its own limit
            f"    loss: {CONTRASTIVE}\n    miner: {{name: semihard, margin: 0.1}}\n"
            "    search: {loss.neg_margin: {low: -0.5, high: 1}, miner.margin: {same_as: loss.neg_margin}}\n",
            "mine.yaml: method mine.search.miner.margin: -0.5 is outside what it allows; miner 'semihard' takes "
            "margin: float, >= 0",
        ),
        (
            f"    loss: {CONTRASTIVE}\n"
            "    search: {loss.neg_margin: {low: 0, high: 1}, optimizer.lr: {low: 0.00001, high: 0.001, log: true}}\n",
            "mine.yaml: method mine.search.optimizer.lr: optimizer.lr is a setting the fair protocol (suite.fair) "
            "holds equal for every method",
        ),
        (
            f"    loss: {CONTRASTIVE}\n    search: {{loss.neg_margin: {{low: 0, high: 1}}, model.embedding_dim: "
            "{low: 64, high: 512, int: true}}\n",
            "model.embedding_dim is a setting the fair protocol (suite.fair) holds equal for every method",
        ),
    ],
)
def test_a_search_the_job_would_die_on_is_refused_when_the_plan_loads(tmp_path, method, said):
    with pytest.raises(ConfigError) as error:
        _load(tmp_path, method)
    assert said in str(error.value)
    assert "\n" not in str(error.value)


def test_a_search_within_every_limit_is_accepted(tmp_path):
    plan = _load(
        tmp_path,
        f"    loss: {CONTRASTIVE}\n    miner: {{name: semihard, margin: 0.1}}\n"
        "    search: {loss.neg_margin: {low: 0, high: 1}, miner.margin: {same_as: loss.neg_margin}}\n",
    )
    assert any(run.method == "mine" for run in plan.fair_runs())


def test_every_value_of_a_searched_training_setting_is_checked_as_its_run_is():
    """batch.per_class from 2 to 9 under a batch of 16 (smoke): 3 does not divide it; the job that
    asks it would fail, so the plan names it."""
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    run = next(r for r in plan.fair_runs() if r.stage == "search")
    cfg = plan.resolved(run)
    method = dict(plan.methods[run.method])
    method["search"] = {**method["search"], "batch.per_class": {"low": 2, "high": 9, "int": True}}
    space = spaces.parse(run.method, method)
    size = cfg["batch"]["size"]
    assert size % 3, "the test needs a batch size that 3 does not divide"

    def check(asked, where):
        return run_checks.check_settings(plan, asked, run.dataset, where)

    with pytest.raises(ConfigError, match=rf"search.batch.per_class asks 3 .*batch.size {size} is not a multiple of"):
        search_checks.check_asked(plan, run, space, cfg, check)


def test_a_job_spec_over_the_os_argument_limit_is_refused_with_the_largest_setting_that_fits():
    config = {"preset": "smoke", "subset": {"suite.fair": {"fair": {"parallel": 10**9, "trials": 1000}}}}
    with pytest.raises(ConfigError) as error:
        Plan.load(CONFIG_DIR, config)
    said = str(error.value)
    assert said.startswith("preset smoke.subset.suite.fair.fair.parallel: 1000000000: a job of suite.fair")
    assert "'Argument list too long'); set it to at most " in said
    fits = int(said.rsplit(" ", 1)[1])
    config["subset"]["suite.fair"]["fair"]["parallel"] = fits
    Plan.load(CONFIG_DIR, config)  # the largest that fits is accepted
    config["subset"]["suite.fair"]["fair"]["parallel"] = fits + 1
    with pytest.raises(ConfigError, match=f"parallel: {fits + 1}: .* set it to at most {fits}$"):
        Plan.load(CONFIG_DIR, config)  # and one more is not


def test_joining_an_experiment_without_methods_is_named(tmp_path):
    with pytest.raises(
        ConfigError, match=r"mine.yaml: join: suite.knobs \(suite.yaml, kind: knobs\) has no `methods:`"
    ):
        _load(tmp_path, f"    loss: {CONTRASTIVE}\n", join="suite.knobs")
