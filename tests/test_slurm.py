"""The workflow through the project's SLURM profile on a real one-node SLURM cluster started here
(tests/slurm_cluster.py): a small chain with every rule kind. Skipped, saying why, where the machine
cannot install and start SLURM (not root, no apt-get). `make test-slurm` runs the whole smoke preset,
with and without accounting."""

import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import slurm_cluster

from conftest import CONFIG_DIR, REPO, python_env
from processes import start, stop

pytestmark = pytest.mark.xdist_group("test_slurm")  # one worker: one cluster (fixed ports)


def start_script():
    """`tests/slurm_cluster.py` with a long workflow (the smoke preset), started."""
    try:
        slurm_cluster.install(False)
    except slurm_cluster.Unavailable as reason:
        pytest.skip(f"no SLURM cluster here: {reason}")
    return start(
        [sys.executable, str(slurm_cluster.REPO / "tests" / "slurm_cluster.py"), "--config", "preset=smoke"],
        stdout=subprocess.PIPE,
        text=True,
        env=python_env(),
    )


def start_cluster_script():
    """`start_script`; returns once its cluster is up, with the pids it recorded and its folder."""
    process = start_script()
    deadline = time.monotonic() + 240
    for line in process.stdout:
        if line.startswith("cluster up") or time.monotonic() > deadline:
            break
    folder = Path(line.rsplit("(", 1)[1].rstrip(")\n"))
    pids = [int(line.split()[1]) for line in slurm_cluster.REGISTRY.read_text().splitlines()]
    assert len(pids) >= 2 and all(slurm_cluster._alive(pid) for pid in pids) and folder.is_dir()
    return process, pids, folder


@pytest.mark.slow
def test_sigterm_to_the_test_cluster_stops_every_daemon():
    process, pids, folder = start_cluster_script()
    time.sleep(2)  # the workflow has started in the cluster's folder
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=120)
    assert not [pid for pid in pids if slurm_cluster._alive(pid)]
    assert not slurm_cluster.REGISTRY.exists() and not slurm_cluster.SYSTEM_CONF.exists()
    assert not folder.exists()  # a stop asked for leaves no cluster or run folder behind


@pytest.mark.slow
def test_the_next_run_stops_what_a_killed_run_left():
    process, pids, folder = start_cluster_script()
    process.send_signal(signal.SIGKILL)  # nothing can clean up after this
    process.wait(timeout=60)
    assert any(slurm_cluster._alive(pid) for pid in pids) and folder.exists()
    with slurm_cluster.one_cluster_at_a_time():  # what the next cluster() does first
        stopped = slurm_cluster.stop_leftovers()
    assert stopped and not [pid for pid in pids if slurm_cluster._alive(pid)]
    assert not slurm_cluster.SYSTEM_CONF.is_symlink() and not folder.exists()
    stop(process)  # the killed script's Snakemake, still in its process group


def test_a_lock_file_replaced_by_a_link_is_replaced_and_its_target_left_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(slurm_cluster, "LOCK", tmp_path / "run" / "lock")  # the machine's own is left alone
    target = tmp_path / "precious"
    target.write_text("kept")
    slurm_cluster.LOCK.parent.mkdir()
    slurm_cluster.LOCK.symlink_to(target)
    with slurm_cluster._lock_file():  # what taking the lock opens
        assert not slurm_cluster.LOCK.is_symlink() and slurm_cluster.LOCK.is_file()
    assert target.read_text() == "kept"


def line_starting(process, prefixes: tuple[str, ...], seconds: float) -> str:
    """The first line `process` prints that starts with one of `prefixes`; "" if it ends first or
    says none within `seconds` (it is then killed)."""
    watchdog = threading.Timer(seconds, process.kill)
    watchdog.start()
    try:
        return next((line for line in process.stdout if line.startswith(prefixes)), "")
    finally:
        watchdog.cancel()


@pytest.mark.slow
def test_a_second_cluster_waits_until_the_first_has_stopped():
    with slurm_cluster.one_cluster_at_a_time():  # as a cluster of another worker or test run would
        process = start_script()
        said = line_starting(process, ("waiting for", "cluster up"), 120)
        assert said.startswith("waiting for the SLURM test cluster another run holds"), said
        time.sleep(2)
        assert process.poll() is None and not slurm_cluster.REGISTRY.exists()  # nothing started meanwhile
    try:
        assert line_starting(process, ("cluster up",), 240), "no cluster came up"  # once the first let go
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
    assert not slurm_cluster.REGISTRY.exists() and not slurm_cluster.SYSTEM_CONF.exists()


@pytest.mark.slow
def test_a_job_still_running_when_the_cluster_stops_leaves_no_process():
    """slurmstepd and the job's processes outlive slurmd: the cluster's stop ends them too. (Runs
    before the module's cluster is up: one process holds one cluster at a time.)"""
    try:
        with slurm_cluster.cluster() as cluster:
            marker = f"dmlbench-step-test-{os.getpid()}"
            submitted = subprocess.run(
                [
                    "sbatch",
                    "-p",
                    "cpu",
                    "--chdir",
                    str(cluster.folder),
                    "--output",
                    "/dev/null",
                    "--wrap",
                    f"bash -c 'exec -a {marker} sleep 600'",
                ],
                capture_output=True,
                text=True,
                env=cluster.env,
                timeout=60,
            )
            assert submitted.returncode == 0, submitted.stderr
            deadline = time.monotonic() + 60
            while not running_with(marker):
                assert time.monotonic() < deadline, "the job did not start:\n" + cluster.diagnostics()
                time.sleep(0.5)
            steps = [pid for pid, name in slurm_cluster._processes() if name == "slurmstepd"]
            assert steps
    except slurm_cluster.Unavailable as reason:
        pytest.skip(f"no SLURM cluster here: {reason}")
    assert not running_with(marker)
    assert not [pid for pid in steps if slurm_cluster._alive(pid)]


def running_with(marker: str) -> list[int]:
    """The pids of the processes whose command line starts with `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(marker.encode()):
                found.append(int(entry.name))
        except OSError:
            continue
    return [pid for pid in found if slurm_cluster._alive(pid)]


@pytest.mark.slow
def test_small_chain_through_the_slurm_profile(running, tmp_path):
    # digits: prepare, cache, store (CPU partition), train (writes metrics.json), reference (one GPU
    # each), aggregate, analyse, report (local rules). A made-up budget projects two of the three
    # trainings short (14 and 18 minutes asked): packed, one submission asking 32 minutes, running
    # them in turn (dmlbench/orchestration/slurm_packs.py); the third has no projection: the cap.
    config = ["preset=smoke", "experiments=[suite.baselines,ms.f1]", "datasets=[digits]"]
    base = "results/smoke/suite.baselines/digits"
    packed = [f"{base}/contrastive/seed0", f"{base}/triplet_semihard/seed0"]
    budget = tmp_path / "reports/smoke/preflight/budget.csv"
    budget.parent.mkdir(parents=True)
    budget.write_text(f"run,experiment,hours\n{packed[0]},suite.baselines,0.15\n{packed[1]},suite.baselines,0.2\n")
    planned = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "-s",
            str(REPO / "Snakefile"),
            "-d",
            str(tmp_path),
            "--cores",
            "2",
            "--config",
            *config,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    table = planned.stdout[planned.stdout.index("Job stats:") :]
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}
    submitted = {rule: n for rule, n in counts.items() if rule in ("prepare", "cache", "store", "train", "reference")}
    assert submitted == {"prepare": 1, "cache": 1, "store": 1, "train": 3, "reference": 1}, counts
    try:
        result = slurm_cluster.run_workflow(running, tmp_path, config, timeout=900)
    except subprocess.TimeoutExpired as hung:  # about 150 s here under a test run's load
        told = hung.stderr.decode(errors="replace") if isinstance(hung.stderr, bytes) else hung.stderr or ""
        pytest.fail(f"the chain ran past 900 s; its last words:\n{told[-3000:]}\n{running.diagnostics()}")
    assert result.returncode == 0, result.stderr[-5000:] + "\n" + running.diagnostics()
    jobs = running.completed_jobs()
    assert len(jobs) == sum(submitted.values()) - 1, (jobs, submitted)  # no evaluate jobs; two trainings one job
    assert set(jobs.values()) == {"COMPLETED"}, jobs
    limits = running.time_limits()  # a training without a projection asks for the cap, a reference the floor
    alone = [limit for name, limit in limits.items() if "rule_train_wildcards" in name]
    packs = [limit for name, limit in limits.items() if "rule_train_pack." in name]  # the group job's comment
    references = [limit for name, limit in limits.items() if "rule_reference" in name]
    assert alone == ["1-00:00:00"] and packs == ["00:32:00"] and references == ["00:30:00"], limits
    recorded = running.jobs()
    gpus = {
        name: {key: value for key, value in fields.items() if key.startswith("Tres") or key == "TRES"}
        for name, fields in recorded.items()
        if "rule_train_pack." in name
    }
    assert gpus and all(re.search(r"gres[:/]gpu[:=]1\b", " ".join(f.values())) for f in gpus.values()), gpus
    # the pack asked one GPU (TresPerJob=gres:gpu:1: --gpus=1)
    gpu_jobs = [f for name, f in recorded.items() if re.search(r"rule_(train|reference)", name)]
    assert any(a["SubmitTime"] < b["EndTime"] for a in gpu_jobs for b in gpu_jobs if a is not b), gpu_jobs
    # queued side by side (the one GPU of this node runs them in turn): gpu=1 holds per submission only
    assert (tmp_path / "reports/smoke/index.html").exists()
    logs = "\n".join(p.read_text() for p in tmp_path.glob("logs/smoke/train/**/*.log"))
    assert "[gpu-slot]" not in logs  # under SLURM the wrapper keeps SLURM's device assignment
    env = {
        str(p.parent.relative_to(tmp_path)): json.loads(p.read_text())
        for p in tmp_path.glob("results/smoke/**/env.json")
    }
    assert len(env) == 3 and all(e["slurm_job_id"] for e in env.values())
    assert env[packed[0]]["slurm_job_id"] == env[packed[1]]["slurm_job_id"] != env[f"{base}/ms/seed0"]["slurm_job_id"]
    first, second = sorted(packed, key=lambda run: (tmp_path / run / "env.json").stat().st_mtime)
    assert (tmp_path / first / "cost.json").stat().st_mtime <= (tmp_path / second / "env.json").stat().st_mtime
    # in turn: the second began (its env.json) once the first had ended (its cost.json; not metrics.json,
    # which the submitting Snakemake touches once the submission is done)
    assert all((tmp_path / run / "metrics.json").exists() for run in env)


def test_status_command_follows_accounting(running):
    from dmlbench.orchestration import slurm_profile

    assert slurm_profile.status_command() == ("sacct" if running.accounting else "squeue")


def test_profile_values_come_from_the_environment(monkeypatch):
    from dmlbench.orchestration import slurm_profile

    monkeypatch.setenv("DMLBENCH_SLURM_GPU_PARTITION", "a100")
    monkeypatch.setenv("DMLBENCH_SLURM_ACCOUNT", "lab42")
    monkeypatch.setenv("DMLBENCH_SLURM_CPUS_PER_GPU", "6")
    job = slurm_profile.gpu_job()
    assert job == {
        "slurm_partition": "a100",
        "gpu": 1,
        "cpus_per_gpu": 6,
        "mem_mb": 32000,
        "slurm_account": "lab42",
    }  # its run time: the rule's, from the budget (job_minutes)
    assert "cpus_per_task" not in job  # the plugin would prefer it to cpus_per_gpu
    assert "slurm_partition" not in slurm_profile.cpu_job(720)  # the cluster's default partition
    monkeypatch.setenv("DMLBENCH_SLURM_CPU_PARTITION", "cpu")
    assert slurm_profile.cpu_job(720)["slurm_partition"] == "cpu"
    monkeypatch.setenv("DMLBENCH_SLURM_STATUS", "squeue")
    assert slurm_profile.status_command() == "squeue"
    assert slurm_profile.job_minutes(None) == 1440  # no projection: the cap, 24 h
    assert slurm_profile.job_minutes(2.0) == 180 and slurm_profile.job_minutes(0.01) == 30  # × 1.5, the floor
    assert slurm_profile.job_minutes(100.0) == 1440
    assert slurm_profile.job_minutes(2.0, attempt=2) == 1440  # submitted again (cut at its limit): the cap
    monkeypatch.setenv("DMLBENCH_SLURM_TIME_FACTOR", "2")
    monkeypatch.setenv("DMLBENCH_SLURM_MIN_MINUTES", "10")
    assert slurm_profile.job_minutes(1.0) == 120 and slurm_profile.job_minutes(0.0) == 10
    monkeypatch.setenv("DMLBENCH_SLURM_TIME_FACTOR", "-1")
    with pytest.raises(ValueError, match="DMLBENCH_SLURM_TIME_FACTOR='-1' must be a number above 0"):
        slurm_profile.job_minutes(1.0)
    monkeypatch.setenv("DMLBENCH_SLURM_TRAIN_MINUTES", "two days")
    with pytest.raises(ValueError, match="DMLBENCH_SLURM_TRAIN_MINUTES='two days' must be a whole number"):
        slurm_profile.job_minutes(1.0)


def test_the_profiles_jobs_follow_the_gpu_partition(monkeypatch):
    """`jobs`: two per GPU of the partition sinfo reads (a made-up one here), 64 where it reads
    none or no GPU, DMLBENCH_SLURM_JOBS where set, checked."""
    from dmlbench.orchestration import slurm_limits, slurm_profile

    read = {"a100": slurm_limits.Partition("a100", 720, 4, 8), "cpu": slurm_limits.Partition("cpu", None, 9, 0)}
    monkeypatch.setattr(slurm_limits, "read_partition", read.get)
    monkeypatch.setenv("DMLBENCH_SLURM_GPU_PARTITION", "a100")
    assert slurm_profile.queued_jobs() == 64  # 4 nodes × 8 GPUs, two each
    monkeypatch.setenv("DMLBENCH_SLURM_GPU_PARTITION", "cpu")
    assert slurm_profile.queued_jobs() == slurm_profile.UNREAD_PARTITION_JOBS  # no GPU declared
    monkeypatch.setenv("DMLBENCH_SLURM_GPU_PARTITION", "absent")
    assert slurm_profile.queued_jobs() == slurm_profile.UNREAD_PARTITION_JOBS
    read["h100"] = slurm_limits.Partition("h100", 2880, 2, 4)
    monkeypatch.setenv("DMLBENCH_SLURM_GPU_PARTITION", "h100")
    assert slurm_profile.queued_jobs() == 16
    monkeypatch.setenv("DMLBENCH_SLURM_JOBS", "12")
    assert slurm_profile.queued_jobs() == 12
    for wrong in ("0", "many"):
        monkeypatch.setenv("DMLBENCH_SLURM_JOBS", wrong)
        with pytest.raises(ValueError, match=f"DMLBENCH_SLURM_JOBS='{wrong}' must be"):
            slurm_profile.queued_jobs()


@pytest.mark.parametrize(
    "text, minutes",
    [
        ("1-00:00:00", 1440),
        ("2:00:00", 120),
        ("30:00", 30),
        ("45", 45),
        ("1-12", 2160),
        ("0:30:01", 31),
        ("INFINITE", None),
    ],
)
def test_slurm_time_limits_read_in_minutes(text, minutes):
    from dmlbench.orchestration import slurm_limits

    assert slurm_limits.minutes(text) == minutes


def test_a_time_limit_slurm_would_not_write_is_refused_naming_it():
    from dmlbench.orchestration import slurm_limits

    with pytest.raises(ValueError, match="'two days' is no SLURM time limit"):
        slurm_limits.minutes("two days")
    assert slurm_limits.gpus("gpu:a100:4(S:0-1)") == 4 and slurm_limits.gpus("(null)") == 0


@pytest.mark.slow
def test_doctor_reads_the_test_clusters_partition_and_qos(running, monkeypatch):
    """On the real one-node cluster: its gpu partition (no MaxTime, 1 node, 1 fake GPU) and a cap that
    a partition with a MaxTime would refuse."""
    from dmlbench.doctor.checks import ACTION, OK
    from dmlbench.doctor.slurm_checks import slurm_checks
    from dmlbench.orchestration import slurm_limits

    for key, value in running.env.items():
        monkeypatch.setenv(key, value)
    checks = {c.item: c for c in slurm_checks()}
    assert checks["partition gpu"].status == OK, checks
    assert "no MaxTime, 1 node(s), 1 GPU(s) per node; a GPU job asks at most 1440 min" in checks["partition gpu"].detail
    from dmlbench.orchestration.slurm_profile import queued_jobs

    assert queued_jobs() == 2  # the profile's `jobs`: two per GPU of the partition sinfo reads
    monkeypatch.setattr(slurm_limits, "read_partition", lambda name: slurm_limits.Partition(name, 720, 4, 8))
    short = {c.item: c for c in slurm_checks()}["partition gpu"]
    assert short.status == ACTION and "export DMLBENCH_SLURM_TRAIN_MINUTES=720" in short.detail


def test_finished_runs_give_the_time_their_kind_asks_for_before_the_budget(tmp_path, monkeypatch):
    """Made-up finished trainings of one kind (three seeds of a method on a dataset, and fair folds):
    another seed asks for the 90 % quantile of their wall hours; a kind without any keeps the budget's
    projection; a record without metrics.json (not finished) counts for nothing."""
    import numpy as np

    from dmlbench.config.plan import Plan
    from dmlbench.orchestration import slurm_profile
    from dmlbench.config import measured

    monkeypatch.chdir(tmp_path)
    base = "results/smoke/suite.baselines/digits/ms"
    walls = {f"{base}/seed0": 3600.0, f"{base}/seed1": 5400.0, f"{base}/seed2": 7200.0, f"{base}/seed3": 1e9}
    walls |= {"results/smoke/suite.fair/digits/ms/search/trial0/fold1": 900.0}
    for run, seconds in walls.items():
        folder = tmp_path / run
        folder.mkdir(parents=True)
        (folder / "cost.json").write_text(json.dumps({"wall_seconds": seconds, "epochs": 3}))
        if not run.endswith("seed3"):  # seed 3 still training
            (folder / "metrics.json").write_text("{}")
    budget = tmp_path / "reports/smoke/preflight/budget.csv"
    budget.parent.mkdir(parents=True)
    budget.write_text(f"run,hours\n{base}/seed4,0.25\nresults/smoke/suite.baselines/digits/contrastive/seed0,0.25\n")
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    expected = float(np.quantile([1.0, 1.5, 2.0], measured.QUANTILE))  # seeds 0-2, in hours
    assert plan.projected_hours([f"{base}/seed4"]) == pytest.approx(expected)
    assert plan.projected_hours(["results/smoke/suite.baselines/digits/contrastive/seed0"]) == 0.25
    assert plan.projected_hours(["results/smoke/suite.fair/digits/ms/search/trial7/fold0"]) == pytest.approx(0.25)
    assert plan.projected_hours(["results/smoke/suite.baselines/cub/ms/seed0"]) is None  # neither
    assert slurm_profile.job_minutes(plan.projected_hours([f"{base}/seed4"])) == math.ceil(expected * 60 * 1.5)
    budget.unlink()
    for run in walls:
        (tmp_path / run / "metrics.json").unlink(missing_ok=True)
    assert not Plan.load(CONFIG_DIR, {"preset": "smoke"}).has_budget()  # neither: every job asks the cap, 24 h


@pytest.mark.slow
def test_slurm_jobs_lists_and_cancels_the_suites_jobs_of_this_folder_only(running, tmp_path):
    """After a killed Snakemake: a job with the executor's comment for a rule of the workflow, in this
    folder, is listed and cancelled; one of another folder or without such a comment is left alone."""
    env = dict(running.env, PYTHONPATH=str(REPO))
    (tmp_path / "here").mkdir()
    (tmp_path / "there").mkdir()

    def submit(comment: str, folder: Path) -> str:
        done = subprocess.run(
            ["sbatch", "--parsable", "--comment", comment, "--chdir", str(folder), "--wrap", "sleep 300"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().split(";")[0]

    ours = submit("rule_train_wildcards_experiment=ms.t1", tmp_path / "here")
    elsewhere = submit("rule_train_wildcards_experiment=ms.t1", tmp_path / "there")
    foreign = submit("my_own_job", tmp_path / "here")
    try:
        command = [sys.executable, "-m", "dmlbench", "slurm-jobs", "--folder", str(tmp_path / "here")]
        listed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
        assert listed.returncode == 0, listed.stderr
        assert ours in listed.stdout and elsewhere not in listed.stdout and foreign not in listed.stdout
        assert "1 job(s) queued or running" in listed.stdout
        cancelled = subprocess.run([*command, "--cancel"], capture_output=True, text=True, env=env, timeout=120)
        assert cancelled.returncode == 0 and "1 job(s) cancelled" in cancelled.stdout, cancelled.stderr
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            queue = subprocess.run(["squeue", "--noheader", "--format", "%i"], capture_output=True, text=True, env=env)
            if ours not in queue.stdout.split():
                break
            time.sleep(1)
        left = queue.stdout.split()
        assert ours not in left and elsewhere in left and foreign in left, left
    finally:
        subprocess.run(["scancel", ours, elsewhere, foreign], env=env, capture_output=True, timeout=60)
