"""The fair search's SLURM submissions (`dmlbench.orchestration.slurm_groups`): consecutive rounds
packed into Snakemake groups of at most `rounds_per_job` rounds whose asked minutes sum within the
cap; one round per submission without a projection; a group sent again asks the cap shared."""

from __future__ import annotations

import json
import math
import re

import pytest
from conftest import REPO

from dmlbench.orchestration import slurm_groups, slurm_profile
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


# --- short trainings packed into submissions (`dmlbench.orchestration.slurm_packs`) ------------


class PackPlan:
    """What the packing reads of a plan: its `train` runs, their projected hours, whether any exist."""

    name = "fake"

    def __init__(self, hours: dict, budget: bool = True):
        self.hours, self.budget = hours, budget  # Run → hours (None: no projection)

    def has_budget(self):
        return self.budget

    def train_job_runs(self):
        return list(reversed(list(self.hours)))  # not in order: the packing sorts them

    def projected_hours(self, folders):
        (folder,) = folders
        if not self.budget:
            return None  # as a plan's: no budget, no finished runs, no projection
        return next(h for run, h in self.hours.items() if run.path(self.name) == folder)


def runs_with(hours: list[float | None]) -> dict:
    """Runs in the packing's order (experiment, dataset, method, seed) with these hours; seed 10
    after seed 2 (a number, not a name)."""
    from dmlbench.config.run import Run

    seeds = [0, 1, 2, 10, 11, 12, 20, 21, 22]
    return {Run("e", "d", "m", seeds[i]) if i < 9 else Run("f", "d", "m", i): h for i, h in enumerate(hours)}


def packs_by_hand(minutes: list[int | None], floor: int, cap: int) -> list[list[int]]:
    """The rule as docs/slurm.md states it, on each run's asked minutes (None: no projection):
    only runs under the floor are packed, consecutive ones, a pack closed once its sum reaches the
    floor and never over the cap; a pack left with one run is no pack."""
    packs, current = [], []
    for i, m in enumerate(minutes):
        if m is None or m >= floor:
            continue
        if current and sum(minutes[j] for j in current) + m > cap:
            packs.append(current)
            current = []
        current.append(i)
        if sum(minutes[j] for j in current) >= floor:
            packs.append(current)
            current = []
    packs.append(current)
    return [p for p in packs if len(p) > 1]


@pytest.mark.parametrize(
    "hours, floor, cap, expected",
    [
        # minutes × 1.5: 9, 18, 5 | 36 alone | 18, None alone, 18 | 9, 5 (the last: 14, padded to 30)
        ([0.1, 0.2, 0.05, 0.4, 0.2, None, 0.2, 0.1, 0.05], 30, 1440, [[0, 1, 2], [4, 6], [7, 8]]),
        ([0.1, 0.2, 0.05, 0.4, 0.2, None, 0.2, 0.1], 30, 1440, [[0, 1, 2], [4, 6]]),  # 9 alone: the floor
        ([0.3] * 7, 30, 1440, [[0, 1], [2, 3], [4, 5]]),  # 27 each: two reach the floor
        ([0.01] * 10, 30, 1440, [list(range(10))]),  # 1 minute each: one pack, padded to 30
        ([0.3, 0.3, 0.3], 30, 40, []),  # 27 + 27 would pass a 40-minute cap: each alone
        ([0.1, 0.3, 0.1, 0.1], 30, 40, [[0, 1], [2, 3]]),  # 9 + 27 = 36 within 40; 9 + 9, padded
        ([0.3, 0.1, 0.3, 0.3], 30, 40, [[0, 1]]),  # 27 + 9 = 36; 27 + 27 = 54 passes 40: each alone
        ([0.5, 1.0, None], 30, 1440, []),  # at or over the floor: alone
        ([0.1, 0.2, 0.1, 0.1], 18, 1440, [[0, 2]]),  # a floor of 18: 18 alone; 9 + 9 reaches it; 9 alone
    ],
)
def test_short_trainings_are_packed_as_the_rule_states(monkeypatch, hours, floor, cap, expected):
    from dmlbench.orchestration import slurm_packs

    monkeypatch.setenv("DMLBENCH_SLURM_MIN_MINUTES", str(floor))
    monkeypatch.setenv("DMLBENCH_SLURM_TRAIN_MINUTES", str(cap))
    plan = PackPlan(runs_with(hours))
    folders = [run.path("fake") for run in plan.hours]
    minutes = [None if h is None else math.ceil(h * 60 * 1.5) for h in hours]
    assert packs_by_hand(minutes, floor, cap) == expected
    packs = slurm_packs.packs(plan)
    assert packs == [[folders[i] for i in pack] for pack in expected]
    packed = [f for pack in packs for f in pack]
    assert len(packed) == len(set(packed))  # each in one pack
    assert set(packed) <= {folders[i] for i, m in enumerate(minutes) if m is not None and m < floor}  # short only
    for i, folder in enumerate(folders):
        found = slurm_packs.pack_of(plan, folder)
        if minutes[i] is None or minutes[i] >= floor:
            assert found is None  # alone, as before
        if found is None:
            assert slurm_packs.group_id(plan, folder) is None
            assert slurm_packs.minutes(plan, folder) == slurm_profile.job_minutes(hours[i])
    for k, pack in enumerate(packs):
        asked = [slurm_packs.minutes(plan, folder) for folder in pack]
        assert floor <= sum(asked) <= cap, (pack, asked)
        own = [minutes[folders.index(folder)] for folder in pack]
        assert asked[1:] == own[1:] and asked[0] == own[0] + max(0, floor - sum(own))  # no floor each
        assert {slurm_packs.group_id(plan, folder) for folder in pack} == {f"train_pack.{k}"}
        again = [slurm_packs.minutes(plan, folder, attempt=2) for folder in pack]
        assert again == [cap // len(pack)] * len(pack)  # sent again: the cap shared


def test_no_packs_without_a_projection_and_none_of_finished_runs(monkeypatch, tmp_path):
    from dmlbench.orchestration import slurm_packs

    monkeypatch.setenv("DMLBENCH_SLURM_TRAIN_MINUTES", "1440")
    plan = PackPlan(runs_with([0.1] * 6), budget=False)
    assert slurm_packs.packs(plan) == []
    folder = next(iter(plan.hours)).path("fake")
    assert slurm_packs.group_id(plan, folder) is None and slurm_packs.minutes(plan, folder) == 1440
    monkeypatch.chdir(tmp_path)
    plan = PackPlan(runs_with([0.1] * 6))
    folders = [run.path("fake") for run in plan.hours]
    for done in folders[:2]:  # finished: not packed again (a run taken up again packs what is left)
        (tmp_path / done).mkdir(parents=True)
        (tmp_path / done / "metrics.json").write_text("{}")
    assert slurm_packs.packs(plan) == [folders[2:6]]  # 9 × 4 = 36


def test_a_group_id_names_its_parent_for_the_profiles_group_components():
    from dmlbench.orchestration import slurm_packs

    class Workflow:
        parent_groupids: dict = {}

    plan = PackPlan(runs_with([0.1] * 4))
    folder = next(iter(plan.hours)).path("fake")
    assert slurm_packs.group_id(plan, folder, Workflow) == "train_pack.0"
    assert Workflow.parent_groupids == {"train_pack.0": "train_pack"}
    profile = (REPO / "workflow/profiles/slurm/config.yaml").read_text()
    assert 'group-components: ["train_pack=1000000"]' in profile


# what Snakemake's own dry run forms: each group job of the DAG with its members' outputs and the
# resources it would be submitted with (GroupJob.resources, what the SLURM executor reads)
GROUP_PROBE = """
import json, sys
from snakemake.cli import main  # first: the package imports its modules in its own order
import snakemake.dag
formed = snakemake.dag.DAG._update_group_components
def printed(dag):
    formed(dag)
    for group in set(dag._group.values()):
        outputs = sorted(str(f) for job in group.jobs for f in job.output)
        asked = {"gpu": group.resources.get("gpu"), "runtime": group.resources.get("runtime")}
        print("GROUP " + json.dumps({"id": group.groupid, "outputs": outputs, **asked}), flush=True)
snakemake.dag.DAG._update_group_components = printed
main(sys.argv[1:])
"""


def dry_run_groups(workdir, *config: str) -> tuple[list[dict], str]:
    import subprocess
    import sys

    from conftest import python_env

    command = [sys.executable, "-c", GROUP_PROBE, "-n", "-s", str(REPO / "Snakefile"), "-d", str(workdir)]
    command += ["--workflow-profile", str(REPO / "workflow/profiles/slurm"), "--config", "preset=smoke", *config]
    command += ["--cores", "1000"]  # a dry run's default, 1, would lay a group's jobs in series by itself (the
    # SLURM executor's main process counts no cores): only the profile's gpu=1 may do it here
    env = dict(python_env(), PYTHONPATH=str(REPO), DMLBENCH_SLURM_STATUS="squeue")  # no sacct asked
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    groups = [json.loads(line[6:]) for line in done.stdout.splitlines() if line.startswith("GROUP ")]
    return groups, done.stdout


@pytest.mark.slow
def test_a_dry_run_with_a_budget_forms_the_packs_each_asking_one_gpu_and_their_summed_time(tmp_path, monkeypatch):
    """The smoke preset's baselines (15 trainings on 5 datasets) through the SLURM profile with a
    made-up budget: Snakemake forms one group job per pack, the plan's packs exactly, each asking one
    GPU and the sum of its trainings' minutes, at least the floor; without the budget, no group."""
    from dmlbench.config.plan import Plan
    from dmlbench.orchestration import slurm_packs

    config = ["experiments=[suite.baselines]"]
    plan = Plan.load(REPO / "workflow/config", {"preset": "smoke", "experiments": ["suite.baselines"]})
    runs = [run.path("smoke") for run in sorted(plan.train_job_runs())]
    hours = [0.1, 0.2, 0.05, 0.4, 0.02]  # 9, 18, 5, 36 (alone), 2 minutes asked; every fifth run not in the budget
    budget = tmp_path / "reports/smoke/preflight/budget.csv"
    budget.parent.mkdir(parents=True)
    budget.write_text("run,hours\n" + "".join(f"{run},{hours[i % 5]}\n" for i, run in enumerate(runs) if i % 5 != 4))
    groups, out = dry_run_groups(tmp_path, *config)
    monkeypatch.chdir(tmp_path)
    packs = slurm_packs.packs(
        Plan.load(REPO / "workflow/config", {"preset": "smoke", "experiments": ["suite.baselines"]})
    )
    assert len(packs) >= 3 and out.count("Group job train_pack.") == len(packs), out[-3000:]
    assert sorted(g["outputs"] for g in groups) == sorted(sorted(f"{r}/metrics.json" for r in p) for p in packs)
    minutes = {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"output: (\S+)/metrics.json\n(?:.*\n)*?\s+resources: .*runtime=(\d+)", out)
    }
    for group in groups:
        asked = [minutes[o.removesuffix("/metrics.json")] for o in group["outputs"]]
        assert group["gpu"] == 1 and group["runtime"] == sum(asked) >= 30, (group, asked)
    alone = [r for r in runs if not any(r in p for p in packs)]
    assert [minutes[r] for r in alone] and all(minutes[r] >= 30 for r in alone)  # the floor, or the cap unbudgeted
    budget.unlink()
    groups, out = dry_run_groups(tmp_path, *config)
    assert groups == [] and "Group job" not in out and set(re.findall(r"runtime=(\d+)", out)) >= {"1440"}
