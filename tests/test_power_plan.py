"""`plan --power`: a paper number's power is the rate at which the real verdict code reproduces a
number the paper got right (simulated), the seeds for 80 % are the fewest, a claim's power is the
certificate's at the planned seeds, and the extra seeds cost the budget's hours."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from conftest import full_plan, python_env

from dmlbench.config import verdict_spec
from dmlbench.verdicts import claim_family, numbers, power, power_plan


@pytest.mark.parametrize("n, delta", [(3, 0.6), (5, 0.6), (4, 1.05)])
def test_a_numbers_power_is_the_rate_the_verdict_code_reproduces_a_right_paper_number(n, delta):
    """Through `numbers.decision`, the verdict `numbers.judge` gives any n ≥ 3 seeds without a failed
    one (judge's slow part, the seeds an inconclusive number needs, is not the verdict)."""
    rng = np.random.default_rng(n)
    trials = 3000
    draws = rng.normal(60.0, power.ASSUMED_SD, (trials, n))
    reproduced = sum(numbers.decision(x.mean() - 60.0, x.std(ddof=1), n, delta) == numbers.REPRODUCED for x in draws)
    assert numbers.judge(list(draws[0]), 60.0, delta).verdict == numbers.decision(
        draws[0].mean() - 60.0, draws[0].std(ddof=1), n, delta
    )
    assert reproduced / trials == pytest.approx(power_plan.number_power(n, delta), abs=0.03)


def test_two_seeds_have_no_power_and_the_seeds_for_80_percent_are_the_fewest():
    assert power_plan.number_power(2, 1.0) is None
    spec = {
        "paper": "made_up",
        "experiments": [
            {
                "id": "made_up.t1",
                "fingerprints": {f"cub/ms/seed{s}": "x" for s in range(3)},
                "reported": {"ms": {"cub": {"recall@1": "60.0"}}},
                "quoted": {},
                "margin": {"band": {}, "default": 0.3},
                "claims": [],
            }
        ],
    }
    (line,) = power_plan.lines(spec, lambda experiment, pair: 2.0)
    delta = 0.3 + 0.05
    n = line.seeds_for_target
    assert line.seeds == 3 and line.power == pytest.approx(power_plan.number_power(3, delta))
    assert power_plan.number_power(n, delta) >= 0.8 > power_plan.number_power(n - 1, delta)
    assert line.extra_hours == pytest.approx((n - 3) * 2.0)  # the budget's hours per extra seed


def test_a_claims_power_is_the_certificates_at_the_planned_seeds():
    plan = full_plan()
    spec = verdict_spec.certificate_spec(plan, "ms")
    claims = [claim_family.tested(exp, lambda row, dataset, metric: {}) for exp in spec["experiments"]]
    claim_family.decide(claims, spec["experiments"])
    certified = {c["id"]: c["power"] for per_exp in claims for c in per_exp}
    listed = {line.name: line.power for line in power_plan.lines(spec) if line.what == "claim"}
    assert listed.keys() == certified.keys() and len(listed) >= 5
    assert all(listed[k] == pytest.approx(certified[k]) for k in listed if certified[k] is not None)
    assert {k for k, v in listed.items() if v is None} == {k for k, v in certified.items() if v is None}


def test_plan_power_prints_every_papers_sums():
    done = subprocess.run(
        [sys.executable, "-m", "dmlbench", "plan", "--power", "--preset", "smoke"],
        capture_output=True,
        text=True,
        env=python_env(),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "σ = 0.40 points (prior: " in done.stdout  # each spread with its source
    for paper in ("ms", "dro", "ephn", "fastap", "profs"):
        assert f"\n{paper}: " in done.stdout and f"## {paper}: power before the data" in done.stdout
