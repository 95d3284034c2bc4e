"""The second wave's simulation (`benchmarks.verdict_waves`) on a slice of smoke (ms.t1 on CUB, raw
and ms at five seeds; a cap of 20): wave 2's seeds go only to cells its first wave's certificate left
undecided at look 1 and a second look can decide, every such number's cell gets them, wave 2 trains
exactly those seeds and judges them at look 2, and the two waves' GPU-hours are wave 1's (the fixed
arm's) plus the projected cost of those trainings. The small first wave (ms.t1 on CUB with its
`claim_seeds`): wave 1 trains seeds 0-4 in every cell, the claims' seeds beyond come only from the
planner, and its GPU-hours are its own wave 1's plus wave 2's."""

from collections import Counter

import pytest

from benchmarks import verdict_waves
from dmlbench.run_config import RunConfig
from dmlbench.training import projection
from dmlbench.verdicts import claim_kinds, numbers
from dmlbench.verdicts import claims as claim_tests

SLICE = {
    "preset": "smoke",
    "experiments": ["ms.t1"],
    "subset": {"ms.t1": {"datasets": ["cub"], "methods": ["raw", "ms"], "seeds": [0, 1, 2, 3, 4]}},
}
CAP = 20
DESIGN = {"max_seeds": CAP, "spending": "obrien_fleming"}


@pytest.fixture(scope="module")
def arms():
    return verdict_waves.Arms(SLICE, {"two waves": DESIGN}, ["ms"])


def _cost(plan, runs) -> float:
    return sum(projection.gpu_hours(RunConfig.from_dict(plan.resolve(run)), run.dataset) for run in runs)


def test_wave_two_trains_only_the_cells_look_one_left_undecided_and_judges_them_at_look_two(arms):
    out = verdict_waves.replicate(arms, 0.4, {"ms": {}}, seed=1)
    waves = out["two waves"]
    spec, cert = waves["wave 1"]["ms"]
    assert "second_wave" not in out["fixed"]["ms"][1] and cert["second_wave"] == DESIGN
    decidable, asking = set(), set()
    for exp in cert["experiments"]:
        for x in exp["numbers"]:
            if x["verdict"] == numbers.INCONCLUSIVE and x.get("look") == 1 and (x["seeds_needed"] or CAP + 1) <= CAP:
                decidable.add((exp["id"], f"{x['dataset']}/{x['row']}"))
        for c in exp["claims"]:
            if c["verdict"] == claim_tests.UNDERPOWERED and c.get("look") == 1:
                asking |= {(exp["id"], f"{d}/{row}") for rows, d, _ in claim_kinds.part_rows(c) for row in rows}
    planned = {(key, cell) for key, cells in waves["cells"].items() for cell in cells}
    assert planned and decidable <= planned <= decidable | asking
    extra = sorted((run.experiment, f"{run.dataset}/{run.method}", run.seed) for run in waves["extra"]["ms"])
    assert extra == sorted(
        (k, cell, s) for k, cells in waves["cells"].items() for cell, e in cells.items() for s in e["seeds"]
    )
    first = {e["id"]: e["wave_one"] for e in spec["experiments"] if e["ran"]}
    assert all(s >= first[k][cell] for k, cell, s in extra)  # new seeds: none of wave 1's retrained
    _, after = waves["wave 2"]["ms"]
    for exp, before in zip(after["experiments"], cert["experiments"]):
        for x, was in zip(exp["numbers"], before["numbers"]):
            cell = f"{x['dataset']}/{x['row']}"
            if (exp["id"], cell) in planned:
                added = len(waves["cells"][exp["id"]][cell]["seeds"])
                assert (x["look"], x["n"]) == (2, first[exp["id"]][cell] + added) and x["n"] <= CAP
            elif x["verdict"] != numbers.NOT_RUN:
                assert (x["verdict"], x["mean"], x["look"]) == (was["verdict"], was["mean"], 1)  # left as it was


def test_two_waves_cost_the_first_waves_gpu_hours_plus_the_planned_trainings(arms):
    rows = verdict_waves.simulate(arms, 0.4, replicates=1, seed=0)
    assert {row["scenario"] for row in rows} == {"faithful", "one row 2 points low"}
    fixed_runs = arms.fixed.runs("ms.t1")
    assert fixed_runs == arms.plans["two waves"].runs("ms.t1")  # wave 1 trains what the fixed arm trains
    for scenario, shifts in verdict_waves.scenarios(arms).items():
        extra = verdict_waves.replicate(arms, 0.4, shifts, seed=0)["two waves"]["extra"]["ms"]  # replicate 0
        got = {(r["arm"], r["paper"]): r for r in rows if r["scenario"] == scenario}
        assert got["fixed", "ms"]["hours_wave1"] == pytest.approx(_cost(arms.fixed, fixed_runs), rel=1e-12)
        assert got["fixed", "ms"]["hours_wave2"] == 0
        assert got["two waves", "ms"]["hours_wave1"] == got["fixed", "ms"]["hours_wave1"]
        assert got["two waves", "ms"]["hours_wave2"] == pytest.approx(_cost(arms.fixed, extra), rel=1e-12)
        assert got["two waves", "ms"]["tally"].get("trainings wave 2", 0) == len(extra)
        assert got["two waves", "total"]["tally"] == got["two waves", "ms"]["tally"]
    assert any(row["hours_wave2"] > 0 for row in rows)


CLAIMED = {  # ms.t1 on CUB with the catalogue's claim_seeds (smoke's `seeds: [0]` replaced by none)
    "preset": "smoke",
    "seeds": None,
    "experiments": ["ms.t1"],
    "subset": {"ms.t1": {"datasets": ["cub"], "methods": ["binomial", "raw", "ms"]}},
}
SMALL = {"max_seeds": 14, "spending": "obrien_fleming", "wave_one_claim_seeds": 5}


def test_the_small_first_wave_trains_five_seeds_a_cell_and_leaves_the_claims_seeds_to_the_planner():
    arms = verdict_waves.Arms(CLAIMED, {"small wave 1": SMALL}, ["ms"])
    small, fixed = arms.plans["small wave 1"], arms.fixed
    assert verdict_waves.largest_claim_seeds(fixed, ["ms"]) == 14
    cells = {
        arm: Counter((r.dataset, r.method) for r in plan.runs("ms.t1"))
        for arm, plan in (("small", small), ("fixed", fixed))
    }
    assert {s.seed for s in small.runs("ms.t1")} == set(range(5)) and set(cells["small"].values()) == {5}
    assert len(cells["small"]) == 3 and max(cells["fixed"].values()) > 5  # the fixed plan: the claim_seeds
    assert arms.hours["small wave 1"]["ms"] == pytest.approx(_cost(fixed, small.runs("ms.t1")), rel=1e-12)
    assert arms.hours["small wave 1"]["ms"] < arms.hours["fixed"]["ms"]
    rows = verdict_waves.simulate(arms, 0.4, replicates=1, seed=0)
    for scenario, shifts in verdict_waves.scenarios(arms).items():
        waves = verdict_waves.replicate(arms, 0.4, shifts, seed=0)["small wave 1"]
        extra = waves["extra"]["ms"]
        assert sorted((r.dataset, r.method, r.seed) for r in extra) == sorted(
            (*cell.split("/"), s) for cell, e in waves["cells"].get("ms.t1", {}).items() for s in e["seeds"]
        )
        assert all(r.seed >= 5 for r in extra)  # nothing of wave 1 again
        after = Counter((r.dataset, r.method) for r in [*small.runs("ms.t1"), *extra])
        assert max(after.values()) <= SMALL["max_seeds"]
        _, cert = waves["wave 2"]["ms"]
        assert cert["second_wave"] == SMALL
        got = {r["arm"]: r for r in rows if r["scenario"] == scenario and r["paper"] == "ms"}
        assert got["small wave 1"]["hours_wave1"] == arms.hours["small wave 1"]["ms"]
        assert got["small wave 1"]["hours_wave2"] == pytest.approx(_cost(fixed, extra), rel=1e-12)
        assert got["small wave 1"]["tally"].get("trainings wave 2", 0) == len(extra)
    assert any(row["hours_wave2"] > 0 for row in rows if row["arm"] == "small wave 1")  # the planner gave seeds
