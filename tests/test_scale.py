"""`full` at its own scale: the same trainings in fewer jobs, and reruns only where a number changes.

The regrouping (one job per fair search round and per final repetition, no evaluate jobs) must plan
exactly the trainings of before; a finished run must not be rerun for a setting that changes no
number (tracking, keep, loader), a moved checkout or working folder, or another interpreter."""

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError
from dmlbench.fair import rounds
from dmlbench.core.machine import check_paths
from dmlbench.training import run_folder

import processes
from conftest import CONFIG_DIR, REPO, full_plan, python_env, snakemake_command
from dmlbench.config.jobs import of as jobs_of
from trainings_digest import digest

DATA = Path(__file__).parent / "data"


@pytest.mark.slow
def test_full_plans_the_very_trainings_it_planned_before_the_jobs_were_regrouped():
    before = json.loads((DATA / "full_trainings.json").read_text())
    now = digest(CONFIG_DIR, "full")
    differ = {key: (before.get(key), now.get(key)) for key in set(before) | set(now) if before.get(key) != now.get(key)}
    assert not differ, differ


@pytest.mark.parametrize("preset", ["smoke", "full"])
def test_the_fair_jobs_train_every_fold_once_with_its_planned_settings(preset):
    plan = Plan.load(CONFIG_DIR, {"preset": preset})
    trained: dict[str, dict] = {}
    for dataset, method in plan.fair_pairs("suite.fair"):
        side = jobs_of(plan).fair_side("suite.fair", dataset, method)
        assert set(side) == set(run_folder.NOT_IN_FINGERPRINT)
        jobs = [
            rounds.search_round(jobs_of(plan).fair_round_job("suite.fair", dataset, method, r))["trials"]
            for r in range(plan.fair_rounds("suite.fair"))
        ]
        folds = [fold for trials in jobs for trial in trials for fold in trial["folds"]]
        folds += [
            fold
            for g in range(plan.fair_final_groups("suite.fair"))
            for rep in rounds.final_repetitions(jobs_of(plan).fair_group_spec("suite.fair", dataset, method, g))
            for fold in rep["folds"]
        ]
        for fold in folds:
            assert fold["run_dir"] not in trained, fold["run_dir"]  # once
            assert not set(fold["run"]) & set(run_folder.NOT_IN_FINGERPRINT)  # the trigger: numbers only
            trained[fold["run_dir"]] = {**fold["run"], **side}
    planned = {run.path(preset): run for run in plan.fair_runs()}
    assert set(trained) == set(planned)
    for path, run in list(planned.items())[:: max(1, len(planned) // 500)]:
        assert trained[path] == plan.resolve(run), path


def test_a_round_asks_its_slots_in_order_after_the_round_before_was_told():
    plan = full_plan()
    s = plan.fair_settings("suite.fair")
    n_rounds = plan.fair_rounds("suite.fair")
    assert n_rounds == -(-s["trials"] // s["parallel"])
    slots = [plan.fair_round_slots("suite.fair", r) for r in range(n_rounds)]
    assert [t for part in slots for t in part] == list(range(s["trials"]))
    for part in slots:
        assert len(part) <= s["parallel"]
        # the old sequencing: slot t asked after slot t - parallel was told, which a round before holds
        assert all(t - s["parallel"] < part[0] for t in part)
    with pytest.raises(ConfigError, match="no search round"):
        plan.fair_round_slots("suite.fair", n_rounds)
    # a GPU job runs one round, after the round before was told (tests/test_slurm_groups.py: under
    # SLURM up to `rounds_per_job` of them in turn go in one submission)
    for r in range(n_rounds):
        job = jobs_of(plan).fair_round_job("suite.fair", "cub", "ms", r)
        assert job["output"] == plan.fair_round_marker("suite.fair", "cub", "ms", r)
        assert rounds.search_round(job) == jobs_of(plan).fair_round_spec("suite.fair", "cub", "ms", r)
        inputs = jobs_of(plan).fair_round_inputs("suite.fair", "cub", "ms", r)
        assert (r > 0) == (plan.fair_round_marker("suite.fair", "cub", "ms", r - 1) in inputs)


def test_the_round_trigger_follows_the_settings_that_decide_the_numbers():
    base = jobs_of(Plan.load(CONFIG_DIR, {"preset": "smoke"}))
    quiet = jobs_of(
        Plan.load(
            CONFIG_DIR,
            {
                "preset": "smoke",
                "overrides": {
                    "tracking": {"tensorboard": False},
                    "keep": {"checkpoint": True},
                    "loader": {"workers": 3},
                },
            },
        )
    )
    louder = jobs_of(Plan.load(CONFIG_DIR, {"preset": "smoke", "overrides": {"optimizer": {"weight_decay": 0.001}}}))
    key = ("suite.fair", "cub", "ms")
    assert quiet.fair_round_trigger(*key, 0) == base.fair_round_trigger(*key, 0)
    assert louder.fair_round_trigger(*key, 0) != base.fair_round_trigger(*key, 0)
    assert quiet.fair_side(*key) != base.fair_side(*key)


def test_ids_the_rules_cannot_match_are_refused_when_the_plan_loads(tmp_path):
    config = tmp_path / "config"
    shutil.copytree(CONFIG_DIR, config)
    methods = (config / "methods.yaml").read_text()
    (config / "methods.yaml").write_text(methods + "\nméthode_ü:\n  loss: {name: contrastive}\n")
    with pytest.raises(ConfigError, match="method id 'méthode_ü' has characters"):
        Plan.load(config, {"preset": "smoke"})


def test_a_checkout_path_the_shell_cannot_carry_is_refused_before_any_job(tmp_path):
    with pytest.raises(ConfigError, match=r"checkout /x/it's holds \"'\""):
        check_paths(checkout="/x/it's", working_folder="/tmp")
    check_paths(checkout="/x/with space/ü", working_folder=str(tmp_path))  # quoted: fine
    not_utf8 = os.fsdecode(b"/tmp/w_\xff")  # as Python reads such a folder's name: a surrogate
    with pytest.raises(ConfigError, match=r"working folder /tmp/w_\\udcff holds a byte that is not UTF-8"):
        check_paths(checkout="/x", working_folder=not_utf8)
    folder = tmp_path / "it's here"
    folder.mkdir()
    result = processes.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "-s",
            str(REPO / "Snakefile"),
            "-d",
            str(folder),
            "--config",
            "preset=smoke",
        ],
        timeout=300,
        capture_output=True,
        text=True,
        env=python_env(),
    )
    assert result.returncode != 0
    assert f"dmlbench: error: the working folder {folder} holds" in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


# --- reruns on a finished run --------------------------------------------------------------------

NARROWED = ("preset=smoke", "experiments=[suite.baselines,suite.fair]", "datasets=[cub]")


def snakemake(snakefile: Path, workdir: Path, *config: str, python: str = sys.executable, env=None):
    command = snakemake_command(
        workdir, "--cores", "2", "--config", *NARROWED, *config, snakefile=snakefile, python=python
    )
    return processes.run(command, timeout=1800, capture_output=True, text=True, env=env or python_env())


def planned(result) -> dict[str, int]:
    if "Nothing to be done" in result.stdout + result.stderr:
        return {}
    table = result.stdout[result.stdout.index("Job stats:") :]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M) if m.group(1) != "total"}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    work = tmp_path_factory.mktemp("finished") / "work"
    result = snakemake(REPO / "Snakefile", work)
    assert result.returncode == 0, result.stderr[-4000:]
    return work


@pytest.mark.xdist_group("test_scale_finished")  # one worker: the finished run once
@pytest.mark.slow
@pytest.mark.parametrize(
    "change",
    [
        "overrides={tracking: {tensorboard: false}}",
        "overrides={tracking: {mlflow: 'sqlite:///mlflow.db'}}",
        "overrides={keep: {checkpoint: true, fold_model: true}}",
        "overrides={loader: {workers: 3, persistent_workers: true}}",
        "subset={suite.fair: {fair: {rounds_per_job: 1}}}",  # the search regrouped: no output names it
    ],
)
def test_a_setting_that_changes_no_number_reruns_nothing(finished, change):
    result = snakemake(REPO / "Snakefile", finished, change, "--dry-run")
    assert result.returncode == 0, result.stderr[-3000:]
    assert planned(result) == {}, result.stdout[-3000:]


@pytest.mark.xdist_group("test_scale_finished")  # one worker: the finished run once
@pytest.mark.slow
def test_a_moved_checkout_working_folder_and_environment_rerun_nothing(finished, tmp_path):
    work = tmp_path / "moved work"
    shutil.copytree(finished, work, symlinks=True)  # as `mv` or `cp -a` moves it: the times kept
    checkout = tmp_path / "moved checkout"
    checkout.mkdir()
    for part in ("Snakefile", "workflow", "dmlbench"):
        (shutil.copytree if (REPO / part).is_dir() else shutil.copy2)(REPO / part, checkout / part)
    env = python_env()
    env["PYTHONPATH"] = str(checkout)
    venv = tmp_path / "other env"  # the same packages behind another interpreter path
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    (venv / "lib").symlink_to(Path(sys.prefix) / "lib")
    (venv / "pyvenv.cfg").write_text((Path(sys.prefix) / "pyvenv.cfg").read_text())
    result = snakemake(checkout / "Snakefile", work, "--dry-run", python=str(venv / "bin" / "python"), env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Base directory: {checkout}" in result.stdout + result.stderr  # it did read the moved checkout
    assert planned(result) == {}, result.stdout[-3000:]


@pytest.mark.xdist_group("test_scale_finished")  # one worker: the finished run once
@pytest.mark.slow
def test_regrouping_the_final_repetitions_reruns_no_training_job(finished):
    """A final job's output is its last repetition's record, which that repetition writes under any
    grouping: cut into jobs of one repetition, nothing trains; only the summaries, whose list of
    those records changed, are computed again (seconds, on the submitting machine)."""
    result = snakemake(REPO / "Snakefile", finished, "subset={suite.fair: {fair: {repetitions_per_job: 1}}}", "-n")
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(planned(result)) == {"fair_summary", "fair_aggregate", "report", "all"}, result.stdout[-3000:]


@pytest.mark.xdist_group("test_scale_finished")  # one worker: the finished run once
@pytest.mark.slow
def test_packing_trainings_for_slurm_reruns_nothing_finished(finished, tmp_path):
    """A budget appearing under the SLURM profile (every training projected short: what each asks
    changes, and unfinished ones would be packed, dmlbench/orchestration/slurm_packs.py): on a
    finished run, nothing to do."""
    work = tmp_path / "work"
    shutil.copytree(finished, work, symlinks=True)
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke", "experiments": ["suite.baselines"], "datasets": ["cub"]})
    rows = [f"{run.path('smoke')},{run.experiment},0.05" for run in plan.runs()]
    budget = work / "reports/smoke/preflight/budget.csv"
    budget.parent.mkdir(parents=True, exist_ok=True)
    budget.write_text("run,experiment,hours\n" + "\n".join(rows) + "\n")
    profile = str(REPO / "workflow/profiles/slurm")
    result = snakemake(REPO / "Snakefile", work, "--workflow-profile", profile, "--dry-run")
    assert result.returncode == 0, result.stderr[-3000:]
    assert planned(result) == {}, result.stdout[-3000:]


def numbers_on_disk(work: Path) -> dict:
    """Every number the runs wrote: each run's test metrics and each fair fold's validation curve
    and test metrics (what the tables are computed from), by file."""
    found = {}
    for path in sorted((work / "results").rglob("*.json")):
        record = json.loads(path.read_text())
        if isinstance(record, dict) and "metrics" in record:
            found[str(path.relative_to(work))] = record["metrics"]
    for path in sorted((work / "results").rglob("epochs.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        found[str(path.relative_to(work))] = [{k: v for k, v in row.items() if "seconds" not in k} for row in rows]
    return found


@pytest.mark.xdist_group("test_scale_finished")  # one worker: the finished run once
@pytest.mark.slow
def test_four_loader_workers_give_the_numbers_of_none_through_snakemake(finished, tmp_path):
    """`loader.workers` and `gpu_per_device` are number-free: the finished narrowed smoke run (0
    workers, one job at a time) trained again with 4 workers and two GPU jobs on each of one device's
    two places gives every metric and every epoch's loss identical, and neither reruns anything."""
    work = tmp_path / "work"
    shutil.copytree(finished, work, symlinks=True)
    result = snakemake(
        REPO / "Snakefile",
        work,
        "overrides={loader: {workers: 4}}",
        "gpu_per_device=2",
        "--resources",
        "gpu=2",
        "--forcerun",
        "train",
        "fair_round",
        "fair_final",
    )
    assert result.returncode == 0, result.stderr[-4000:]
    logs = [path.read_text() for path in work.glob("logs/smoke/train/**/*.log")]
    assert logs and all("[gpu-slot] device 0" in log and "[gpu-slot] device 1" not in log for log in logs)
    assert planned(snakemake(REPO / "Snakefile", work, "--dry-run")) == {}
    before, after = numbers_on_disk(finished), numbers_on_disk(work)
    assert len(before) > 10 and sorted(after) == sorted(before)
    assert after == before


@pytest.mark.xdist_group("test_scale_finished")  # one worker: the finished run once
@pytest.mark.slow
def test_a_changed_learning_rate_reruns_exactly_the_runs_it_changes(finished):
    change = "subset={suite.baselines: {methods: [ms], train: {optimizer: {lr: 3.0e-4}}}}"
    result = snakemake(REPO / "Snakefile", finished, change, "--dry-run")
    assert result.returncode == 0, result.stderr[-3000:]
    counts = planned(result)
    narrowed = {"preset": "smoke", "experiments": ["suite.baselines", "suite.fair"], "datasets": ["cub"]}
    before = Plan.load(CONFIG_DIR, narrowed)
    after = Plan.load(
        CONFIG_DIR,
        {**narrowed, "subset": {"suite.baselines": {"methods": ["ms"], "train": {"optimizer": {"lr": 3.0e-4}}}}},
    )
    changed = [
        run
        for run in after.runs()
        if run_folder.fingerprint(after.resolve(run)) != run_folder.fingerprint(before.resolve(run))
    ]
    assert len(changed) == 1 and changed[0].method == "ms"
    trained = re.findall(r"rule train:\n\s+input: .*\n\s+output: (\S+)/metrics\.json", result.stdout)
    assert trained == [changed[0].path("smoke")]
    assert counts["train"] == 1 and "fair_round" not in counts and "fair_final" not in counts


def test_the_budget_groups_runs_into_the_workflows_jobs_and_bounds_the_wall_clock_by_the_search_chain():
    from dmlbench.preflight import budget

    chain = ("suite.fair", "cub", "ms")
    jobs = [
        {"rule": "train", "runs": ["a"], "chain": None, "stage": None},
        {"rule": "fair_round", "runs": ["r0f0", "r0f1"], "chain": chain, "stage": "search"},
        {"rule": "fair_round", "runs": ["r1f0", "r1f1"], "chain": chain, "stage": "search"},
        {"rule": "fair_final", "runs": ["p0f0", "p0f1"], "chain": chain, "stage": "final"},
        {"rule": "fair_final", "runs": ["p1f0", "p1f1"], "chain": chain, "stage": "final"},
        {"rule": "train", "runs": ["unprojected"], "chain": None, "stage": None},
    ]
    hours = {
        "a": 1.0,
        "r0f0": 2.0,
        "r0f1": 2.0,
        "r1f0": 3.0,
        "r1f1": 1.0,
        "p0f0": 1.0,
        "p0f1": 1.0,
        "p1f0": 2.0,
        "p1f1": 3.0,
    }
    lengths, longest = budget.cluster_jobs(jobs, hours)
    assert lengths == [1.0, 4.0, 4.0, 2.0, 5.0]  # by hand: each job's runs summed
    assert longest == 4.0 + 4.0 + 5.0  # the rounds in turn, then the longest repetition
    assert budget.wall_lower_bound(lengths, longest, devices=8) == 13.0  # 16 device-hours / 8 < the chain
    assert budget.wall_lower_bound(lengths, longest, devices=1) == 16.0
    text = budget.cluster_summary(jobs, hours, 8)
    assert "5 of 6 projected" in text and "13.0 h" in text
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    jobs = plan.gpu_jobs()
    assert sorted(r for job in jobs if job["rule"] in ("train", "knob_joined") for r in job["runs"]) == sorted(
        run.path("smoke") for run in plan.trainings() if run in set(plan.runs())
    )  # a joined knob step's folds: one job
    assert sorted(run for job in jobs if job["chain"] for run in job["runs"]) == sorted(
        run.path("smoke") for run in plan.fair_runs()
    )


def test_a_gpu_jobs_spec_carries_the_shared_settings_once_and_stays_far_below_the_argument_limit():
    """Linux refuses a single argument over 128 KiB (MAX_ARG_STRLEN): the spec of a final job (5
    repetitions × 4 folds at full) and of a search job (2 slots × 4 folds) is the shared settings
    once and each fold's changes."""
    from dmlbench.run_config import delta

    plan = full_plan()
    search = jobs_of(plan).fair_round_job("suite.fair", "sop", "ms", 0)
    group = jobs_of(plan).fair_group_spec("suite.fair", "sop", "ms", 0)
    whole = [
        jobs_of(plan).fair_repetition_spec("suite.fair", "sop", "ms", r)
        for r in plan.fair_group_repetitions("suite.fair", 0)
    ]
    assert len(json.dumps(group)) * 4 < len(json.dumps(whole)) and len(json.dumps(group)) < 32 * 1024
    assert len(json.dumps(search)) < 32 * 1024
    folds = [f for t in search["trials"] for f in t["folds"]] + [f for r in group["repetitions"] for f in r["folds"]]
    assert all("changes" in f and "run" not in f for f in folds)
    base = {"a": {"b": 1, "c": [1, 2]}, "d": "x"}
    other = {"a": {"b": 2, "c": [1, 2]}, "d": "x"}
    assert delta.apply(base, delta.changes(base, other)) == other and base["a"]["b"] == 1
    assert delta.changes(base, {"a": {"b": 1}, "d": "x"}) is None  # other keys: kept whole
