"""A training cut at its SLURM time limit, on the one-node cluster of the tests (tests/slurm_cluster.py):
SIGTERM at the limit writes its last finished epoch, Snakemake submits the job again (the profile's
`restart-times`, the resubmission asking the cap) and it resumes there, ending with the metrics of
the same run trained uncut on this machine."""

import json
import re

import pytest
import slurm_cluster

from conftest import python_env, snakemake_command
from processes import run, start, stop

pytestmark = pytest.mark.xdist_group("test_slurm")  # one worker: one cluster (fixed ports)

RUN = "results/smoke/suite.baselines/digits/ms/seed0"
TARGET = f"{RUN}/metrics.json"
EPOCHS = 70  # about 2 minutes here (1.8 s an epoch and its evaluation): past the first submission's minute
# no checkpoint but the one SIGTERM writes (keep.checkpoint_minutes: an hour): a resume can come only from it
CONFIG = [
    "preset=smoke",
    "experiments=[suite.baselines]",
    "datasets=[digits]",
    f"subset={{suite.baselines: {{methods: [ms], train: {{epochs: {EPOCHS}, batches_per_epoch: 20, "
    "keep: {checkpoint_minutes: 60}}}}",
]
PROJECTED_HOURS = 0.01  # the preflight's projection for the run: under a minute
# the first submission asks the floor, SLURM's shortest limit; a resubmission the cap, time for the rest
LIMITS = {"DMLBENCH_SLURM_MIN_MINUTES": "1", "DMLBENCH_SLURM_TRAIN_MINUTES": "10"}


def numbers(record):
    """A metrics or epoch record without its timings."""
    if not isinstance(record, dict):
        return record
    return {key: numbers(value) for key, value in record.items() if "seconds" not in key}


def epochs(folder) -> list[dict]:
    return [numbers(json.loads(line)) for line in (folder / RUN / "epochs.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_training_cut_at_its_time_limit_resumes_to_the_uncut_runs_metrics(running, tmp_path, monkeypatch):
    from dmlbench.orchestration import slurm_limits, slurm_profile

    uncut, cut = tmp_path / "uncut", tmp_path / "cut"
    local = lambda folder, *more: snakemake_command(folder, "--cores", "1", "--config", *CONFIG, *more, "--", TARGET)  # noqa: E731
    with open(tmp_path / "uncut.log", "w") as told:  # side by side with the cluster's run, one core each
        uncut_run = start(local(uncut), stdout=told, stderr=told, env=python_env())
    try:
        # the data prepared here, as on a login node (docs/slurm.md): the cluster runs the training alone
        prepared = run(local(cut, "--until", "store"), timeout=300, capture_output=True, text=True, env=python_env())
        assert prepared.returncode == 0, prepared.stderr[-3000:]
        (cut / "reports/smoke/preflight").mkdir(parents=True)
        (cut / "reports/smoke/preflight/budget.csv").write_text(f"run,hours\n{RUN},{PROJECTED_HOURS}\n")
        command, env = slurm_cluster.workflow_command(running, cut, CONFIG, (TARGET,))
        result = run(command, timeout=900, capture_output=True, text=True, env=env | LIMITS)
        assert result.returncode == 0, result.stderr[-5000:] + "\n" + running.diagnostics()
        assert uncut_run.wait(timeout=600) == 0, (tmp_path / "uncut.log").read_text()[-3000:]
    finally:
        stop(uncut_run)

    jobs = sorted((int(job), state) for job, state in running.completed_jobs().items())
    states = [state for _, state in jobs]
    assert states[0] != "COMPLETED", f"the training ended within its first minute: raise EPOCHS ({jobs})"
    assert len(jobs) >= 2 and states[-1] == "COMPLETED" and set(states[:-1]) == {"TIMEOUT"}, jobs
    limits = {int(key.split()[0]): slurm_limits.minutes(limit) for key, limit in running.time_limits().items()}
    for name, value in LIMITS.items():
        monkeypatch.setenv(name, value)
    asked = [slurm_profile.job_minutes(PROJECTED_HOURS, attempt) for attempt in range(1, len(jobs) + 1)]
    assert [limits[job] for job, _ in jobs] == asked and asked[0] == 1, (limits, asked)

    # the plugin keeps a failed job's log: each cut submission's says SLURM cut it, the first
    # trained from scratch, each later one resumed after more epochs; the last one's is the train log
    logs = [next(cut.glob(f".snakemake/slurm_logs/rule_train/*/{job}.log")).read_text() for job, _ in jobs[:-1]]
    assert all("DUE TO TIME LIMIT" in log for log in logs)
    logs.append(next(cut.glob("logs/smoke/train/**/seed0.log")).read_text())
    resumed = [re.findall(rf"resuming {re.escape(RUN)} after epoch (\d+)", log) for log in logs]
    after = [int(epoch) for found in resumed[1:] for epoch in found]
    assert not resumed[0] and after and 0 < after[0] and after == sorted(set(after)) and after[-1] < EPOCHS, resumed

    for name in ("metrics.json", "final_metrics.json"):  # every metric, exactly
        assert numbers(json.loads((cut / RUN / name).read_text())) == numbers(
            json.loads((uncut / RUN / name).read_text())
        )
    assert epochs(cut) == epochs(uncut) and len(epochs(cut)) == EPOCHS
