"""The fair search's SLURM submissions (`dmlbench.orchestration.slurm_groups`): consecutive rounds
packed into Snakemake groups of at most `rounds_per_job` rounds whose asked minutes sum within the
cap; one round per submission without a projection; a group sent again asks the cap shared."""

from __future__ import annotations

import pytest

from dmlbench.orchestration import slurm_groups
from dmlbench.orchestration.slurm_profile import job_minutes


class FakePlan:
    """The three things the packing reads of a plan: rounds, their runs' projected hours, the setting."""

    name = "fake"

    def __init__(self, hours: list[float | None], rounds_per_job: int):
        self.hours, self.size = hours, rounds_per_job

    def fair_rounds(self, experiment):
        return len(self.hours)

    def fair_round_runs(self, experiment, dataset, method, round_index):
        return [f"round{round_index}"]

    def projected_hours(self, runs):
        return self.hours[int(runs[0].removeprefix("round"))]

    def fair_settings(self, experiment):
        return {"rounds_per_job": self.size}


def by_hand(hours, size, cap):
    """The packing as the docs state it: a round joins the group before while that group holds
    fewer than `size` rounds and the asked minutes, its own added, stay within the cap."""
    groups, asked = [], []
    for r, h in enumerate(hours):
        minutes = job_minutes(h)
        if groups and len(groups[-1]) < size and sum(asked[-1]) + minutes <= cap:
            groups[-1].append(r)
            asked[-1].append(minutes)
        else:
            groups.append([r])
            asked.append([minutes])
    return groups


@pytest.mark.parametrize(
    "hours, size", [([1.0] * 25, 5), ([3.0, 3.0, 3.0, 10.0, 0.1, 0.1, 20.0], 4), ([0.2] * 7, 3), ([30.0, 1.0], 5)]
)
def test_rounds_are_packed_within_rounds_per_job_and_the_cap(monkeypatch, hours, size):
    monkeypatch.setenv("DMLBENCH_SLURM_TRAIN_MINUTES", "1440")
    plan = FakePlan(hours, size)
    groups = slurm_groups.search_groups(plan, "e", "d", "m")
    assert groups == by_hand(hours, size, 1440)
    assert [r for g in groups for r in g] == list(range(len(hours)))  # in order, each once
    for g in groups:
        assert len(g) <= size
        asked = [slurm_groups.round_minutes(plan, "e", "d", "m", r) for r in g]
        assert sum(asked) <= 1440 or len(g) == 1  # a round alone asks at most the cap
        assert all(slurm_groups.round_minutes(plan, "e", "d", "m", r, attempt=2) * len(g) <= 1440 for r in g)
        ids = {slurm_groups.group_id(plan, "e", "d", "m", r) for r in g}
        assert len(ids) == 1 and (None in ids) == (len(g) == 1)
    if hours == [1.0] * 25:  # 1.5 h asked per round (× the time factor): five fit in 24 h
        assert [len(g) for g in groups] == [5] * 5


def test_without_a_projection_each_round_is_a_submission_asking_the_cap(monkeypatch):
    monkeypatch.setenv("DMLBENCH_SLURM_TRAIN_MINUTES", "600")
    plan = FakePlan([1.0, None, 1.0], 5)
    assert slurm_groups.search_groups(plan, "e", "d", "m") == [[0], [1], [2]]
    assert slurm_groups.group_id(plan, "e", "d", "m", 1) is None
    assert slurm_groups.round_minutes(plan, "e", "d", "m", 1) == 600
