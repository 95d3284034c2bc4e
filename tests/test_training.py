"""Training: resume after a killed run, determinism, samplers."""

import dataclasses
import json
import signal
import subprocess
import sys
import time

import pytest
import torch

from dmlbench.config.plan import Plan
from dmlbench.data.prepare import prepare
from dmlbench.methods import samplers
from dmlbench.run_config import LossParams, Optimizer, RunConfig

from conftest import CONFIG_DIR, full_plan, python_env
from processes import run, start, stop

pytestmark = pytest.mark.xdist_group("test_training")  # one worker: its module fixture once


@pytest.fixture(scope="module")
def run_config(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    manifest = root / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", root, manifest, fixture_size={"n_classes": 8, "per_class": 6, "image_size": 40})
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    cfg = plan.resolve(plan.find_run("suite.baselines", "cub", "ms", 0))
    cfg["data"] = {"manifest": str(manifest)}  # files decoded per image (no store)
    cfg.update(epochs=4, batches_per_epoch=10)
    return cfg


def train_cmd(cfg, run_dir):
    return [sys.executable, "-m", "dmlbench", "train", "--spec", json.dumps(cfg), "--run-dir", str(run_dir)]


def evaluate(run_dir):
    run(
        [
            sys.executable,
            "-m",
            "dmlbench",
            "evaluate",
            "--run-dir",
            str(run_dir),
            "--output",
            str(run_dir / "metrics.json"),
        ],
        timeout=600,
        check=True,
        env=python_env(),
    )
    return json.loads((run_dir / "metrics.json").read_text())["metrics"]


def losses(run_dir) -> list[float]:
    return [json.loads(line)["loss"] for line in (run_dir / "epochs.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def uninterrupted(run_config, tmp_path_factory):
    """The run of `run_config` trained without a stop, once for the module: (epoch losses, metrics)."""
    whole = tmp_path_factory.mktemp("whole")
    run(train_cmd(run_config, whole), timeout=900, check=True, env=python_env())
    return losses(whole), evaluate(whole)


def epochs_done(run_dir):
    path = run_dir / "checkpoint.pt"
    if not path.exists():
        return 0
    try:
        return torch.load(path, weights_only=True)["epochs_done"]
    except Exception:  # being replaced right now
        return 0


def test_resume_after_kill_gives_the_same_result(run_config, uninterrupted, tmp_path):
    killed = tmp_path / "killed"
    process = start(train_cmd(run_config, killed), env=python_env())
    try:
        deadline = time.monotonic() + 120
        while epochs_done(killed) < 1 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
    finally:
        stop(process)
    done = epochs_done(killed)
    assert 1 <= done < run_config["epochs"], "the kill should land mid-run"
    assert not (killed / "model.pt").exists()

    resumed = run(
        train_cmd(run_config, killed), timeout=900, check=True, env=python_env(), capture_output=True, text=True
    )
    assert f"after epoch {done}" in resumed.stderr
    assert (losses(killed), evaluate(killed)) == uninterrupted


def test_same_seed_same_numbers_other_seed_differs(run_config, tmp_path):
    from dmlbench.training.train import train

    cfg = dict(run_config, epochs=1, batches_per_epoch=3)
    logs = []
    train(cfg, tmp_path / "a", log=logs.append)
    train(cfg, tmp_path / "b", log=logs.append)
    train(dict(cfg, seed=1), tmp_path / "c", log=logs.append)
    loss = lambda d: json.loads((d / "epochs.jsonl").read_text())["loss"]
    assert loss(tmp_path / "a") == loss(tmp_path / "b")
    assert loss(tmp_path / "a") != loss(tmp_path / "c")


def test_m_per_class_batches_topped_up_with_repeats_on_request():
    labels = torch.arange(10).repeat_interleave(7).tolist() + [10, 10]  # class 10 has 2 images
    sampler = samplers.build(
        "m_per_class",
        labels,
        batch_size=20,
        per_class=4,
        generator=torch.Generator().manual_seed(0),
        batches=50,
        small_classes="repeat",
    )
    seen = set()
    for batch in sampler:
        assert len(batch) == 20
        groups = [batch[i : i + 4] for i in range(0, 20, 4)]
        classes = [{labels[j] for j in g} for g in groups]
        assert all(len(c) == 1 for c in classes)
        assert len({next(iter(c)) for c in classes}) == 5
        for group, c in zip(groups, classes):
            if c != {10}:
                assert len(set(group)) == 4  # without replacement when the class is big enough
        seen |= set(batch)
    assert {10} <= {labels[i] for i in seen}
    again = samplers.build(
        "m_per_class",
        labels,
        batch_size=20,
        per_class=4,
        generator=torch.Generator().manual_seed(0),
        batches=50,
        small_classes="repeat",
    )
    assert list(again) == list(
        samplers.build("m_per_class", labels, 20, 4, torch.Generator().manual_seed(0), 50, "repeat")
    )


def test_m_per_class_never_repeats_an_image_and_small_classes_give_all_they_have():
    sizes = [2, 3, 1, 9, 9, 9, 9, 9, 5, 2]  # SOP-like: several classes smaller than per_class
    labels = [c for c, n in enumerate(sizes) for _ in range(n)]
    sampler = samplers.build(
        "m_per_class", labels, batch_size=16, per_class=4, generator=torch.Generator().manual_seed(1), batches=300
    )
    small_seen = False
    for batch in sampler:
        assert len(batch) == 16 and len(set(batch)) == 16
        counts = {}
        for index in batch:
            counts[labels[index]] = counts.get(labels[index], 0) + 1
        assert max(counts.values()) <= 4
        # every class but the last one drawn contributes min(per_class, its size)
        order = list(dict.fromkeys(labels[i] for i in batch))
        for c in order[:-1]:
            assert counts[c] == min(4, sizes[c])
        small_seen |= any(sizes[c] < 4 for c in order[:-1])
    assert small_seen


def test_fill_and_repeat_agree_when_every_class_is_large_enough():
    labels = torch.arange(8).repeat_interleave(6).tolist()
    fill = samplers.build("m_per_class", labels, 16, 4, torch.Generator().manual_seed(3), 20)
    repeat = samplers.build("m_per_class", labels, 16, 4, torch.Generator().manual_seed(3), 20, "repeat")
    assert list(fill) == list(repeat)


def test_m_per_class_refuses_impossible_batches():
    from dmlbench.core.errors import ConfigError

    with pytest.raises(ConfigError, match="needs 10 classes but the training split has 3"):
        samplers.build("m_per_class", [0, 0, 1, 1, 2, 2], 20, 2, torch.Generator())
    with pytest.raises(
        ConfigError, match="the training split offers 5: use a smaller batch or batch.small_classes: repeat"
    ):
        samplers.build("m_per_class", [0, 0, 1, 2, 3], 8, 2, torch.Generator())
    with pytest.raises(ConfigError, match="not a multiple"):
        samplers.build("m_per_class", [0, 0, 1, 1], 5, 2, torch.Generator())


def test_shuffled_batches_cover_the_data_without_repeats():
    labels = list(range(50))
    sampler = samplers.build(
        "shuffle", labels, batch_size=10, per_class=None, generator=torch.Generator().manual_seed(0)
    )
    batches = list(sampler)
    assert len(batches) == 5 and all(len(b) == 10 for b in batches)
    assert sorted(i for b in batches for i in b) == labels
    again = samplers.build("shuffle", labels, 10, None, torch.Generator().manual_seed(0))
    assert list(again) == batches


def test_evaluate_without_a_trained_model_says_so(tmp_path):
    result = run(
        [
            sys.executable,
            "-m",
            "dmlbench",
            "evaluate",
            "--run-dir",
            str(tmp_path),
            "--output",
            str(tmp_path / "metrics.json"),
        ],
        timeout=300,
        capture_output=True,
        text=True,
        env=python_env(),
    )
    assert result.returncode == 1
    assert "model.pt does not exist: train the run first" in result.stderr
    assert not (tmp_path / "metrics.json").exists()


def test_bad_spec_json_is_named():
    result = run(
        [sys.executable, "-m", "dmlbench", "train", "--run-dir", "x", "--spec", "{oops"],
        timeout=300,
        capture_output=True,
        text=True,
        env=python_env(),
    )
    assert result.returncode == 1 and "--spec is not valid JSON" in result.stderr


def test_diverging_loss_stops_the_run(run_config, tmp_path, monkeypatch):
    from dmlbench.methods.criterion import Criterion
    from dmlbench.training import train as training

    class Diverged(Criterion):
        def forward(self, embeddings, labels, pairs=None):
            return super().forward(embeddings, labels, pairs) * float("nan")

    monkeypatch.setattr(training, "Criterion", Diverged)
    cfg = dict(run_config, epochs=1, batches_per_epoch=2)
    with pytest.raises(training.DivergedError, match="epoch 1, step 1: loss is nan; lower optimizer.lr"):
        training.train(cfg, tmp_path / "run", log=lambda message: None)
    assert not (tmp_path / "run").exists(), "no half-made run folder is left"


def test_diverging_loss_is_one_line_on_the_command_line(run_config, tmp_path, monkeypatch, capsys):
    from dmlbench import cli
    from dmlbench.methods.criterion import Criterion
    from dmlbench.training import train as training

    class Diverged(Criterion):
        def forward(self, embeddings, labels, pairs=None):
            return super().forward(embeddings, labels, pairs) * float("inf")

    monkeypatch.setattr(training, "Criterion", Diverged)
    cfg = dict(run_config, epochs=1, batches_per_epoch=2)
    with pytest.raises(SystemExit) as stop:
        cli.main(["train", "--spec", json.dumps(cfg), "--run-dir", str(tmp_path / "run")])
    assert stop.value.code == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines == [
        f"dmlbench train: error: {tmp_path / 'run'}: training diverged: epoch 1, step 1: "
        f"loss is inf; lower optimizer.lr (now 0.001)"
    ]
    assert not (tmp_path / "run").exists()


def test_a_run_whose_weights_blow_up_stops_and_writes_no_model(run_config, tmp_path):
    """The probe's scenario: SGD at lr 1e30, no per-epoch evaluation. The loss can stay finite
    while the weights become infinite; the step's check stops the run, naming it, and no
    model.pt is written."""
    from dmlbench.training import train as training

    cfg = json.loads(json.dumps(run_config))
    cfg.update(epochs=2, batches_per_epoch=3)
    cfg["optimizer"].update(name="sgd", lr=1e30)
    cfg["eval"]["every"] = 0
    with pytest.raises(training.DivergedError, match=r"run: training diverged: epoch 1, step \d: .*non-finite"):
        training.train(cfg, tmp_path / "run", log=lambda message: None)
    assert not (tmp_path / "run" / "model.pt").exists()


@pytest.mark.parametrize("key, value", [("optimizer.lr", "nan"), ("schedule.gamma", "nan"), ("optimizer.lr", "inf")])
def test_non_finite_settings_are_refused_before_any_job(key, value):
    from dmlbench.core.errors import ConfigError

    section, name = key.split(".")
    with pytest.raises(ConfigError, match=rf"setting {key}: {value} is not a finite number"):
        Plan.load(CONFIG_DIR, {"preset": "smoke", "overrides": {section: {name: float(value)}}})


@pytest.mark.parametrize("keep_checkpoint", [True, False])
def test_changed_setting_trains_afresh_instead_of_resuming(run_config, tmp_path, keep_checkpoint):
    """With the checkpoint kept, a finished run resumes (trains nothing); without it (the
    default), it trains again; changed settings move the old files aside either way."""
    from dmlbench.training.train import train

    cfg = dict(run_config, epochs=2, batches_per_epoch=2, keep={"checkpoint": keep_checkpoint, "fold_model": False})
    logs = []
    train(cfg, tmp_path / "run", log=logs.append)
    (tmp_path / "run" / "model.pt").unlink()  # as Snakemake does before rerunning a job
    changed = json.loads(json.dumps(cfg))
    changed["optimizer"]["lr"] = cfg["optimizer"]["lr"] * 10
    logs.clear()
    train(changed, tmp_path / "run", log=logs.append)
    assert not any("resuming" in line for line in logs)
    said = [line for line in logs if line.startswith("settings changed")]
    assert said and "optimizer.lr: 0.001 → 0.01" in said[0]
    assert len((tmp_path / "run" / "epochs.jsonl").read_text().splitlines()) == 2
    fresh = []
    train(changed, tmp_path / "fresh", log=fresh.append)
    assert losses(tmp_path / "run") == losses(tmp_path / "fresh")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["optimizer"]["lr"] == changed["optimizer"]["lr"]
    old = list(tmp_path.glob("run.superseded-*"))
    assert len(old) == 1 and (old[0] / "checkpoint.pt").exists() == cfg["keep"]["checkpoint"]
    assert json.loads((old[0] / "config.json").read_text())["optimizer"]["lr"] == cfg["optimizer"]["lr"]
    logs.clear()
    (tmp_path / "run" / "model.pt").unlink()
    train(changed, tmp_path / "run", log=logs.append)  # same settings again
    assert any("resuming" in line for line in logs) == cfg["keep"]["checkpoint"]
    assert losses(tmp_path / "run") == losses(tmp_path / "fresh")


def test_a_refused_trainer_leaves_the_holders_lock(tmp_path):
    """Three processes: the first holds the lock before writing any file; the second is refused;
    the third must be refused too (the refused one once removed the holder's lock and folder)."""
    folder = tmp_path / "run"
    folder.mkdir()
    code = (
        "import sys, time; from pathlib import Path; from dmlbench.training import run_folder\n"
        "try:\n"
        "    with run_folder.exclusive(Path(sys.argv[1])):\n"
        "        print('held', flush=True); time.sleep(float(sys.argv[2]))\n"
        "except run_folder.RunBusyError:\n"
        "    print('refused', flush=True)\n"
    )
    holder = start([sys.executable, "-c", code, str(folder), "20"], stdout=subprocess.PIPE, text=True, env=python_env())
    try:
        assert holder.stdout.readline().strip() == "held"
        for _ in range(2):  # the second, then the third
            other = run(
                [sys.executable, "-c", code, str(folder), "0"],
                timeout=60,
                capture_output=True,
                text=True,
                env=python_env(),
            )
            assert other.stdout.strip() == "refused"
            assert (folder / ".train.lock").exists()
    finally:
        stop(holder, grace=0)


def test_two_trainings_of_one_run_folder_cannot_run_at_once(run_config, tmp_path):
    from dmlbench.training import run_folder
    from dmlbench.training.train import train

    folder = tmp_path / "run"
    folder.mkdir()
    with run_folder.exclusive(folder):
        with pytest.raises(run_folder.RunBusyError, match="is being trained by another process"):
            train(dict(run_config, epochs=1, batches_per_epoch=1), folder, log=lambda m: None)
    assert not folder.exists(), "the lock alone is no run"


@pytest.mark.parametrize("method", ["margin_hard", "m_profs", "margin_dws_r50", "m_profs_hncm_r50"])
def test_margin_beta_learns_at_its_own_rate_as_in_wu_et_al(method):
    """Wu et al.'s code trains β with its own SGD (lr 0.1, momentum 0.9): over 30 steps it moves
    by more than 0.05, where the network's optimizer (Adam at the paper's lr) moves it by at most
    30 × lr (Adam's steps are bounded by its rate)."""
    from dmlbench.methods.criterion import Criterion
    from dmlbench.models.embedding import EmbeddingNet
    from dmlbench.training.optimisers import build_loss_optimizer, build_optimizer

    plan = full_plan()
    run = next(r for e in plan.experiment_ids if not plan.is_analysis(e) for r in plan.runs(e) if r.method == method)
    cfg = plan.resolve(run)
    assert cfg["optimizer"]["loss_params"] == {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9}
    moved = {}
    for share in (False, True):
        settings = RunConfig.from_dict(cfg).optimizer
        if share:
            settings = dataclasses.replace(settings, loss_params=LossParams(optimizer="shared"))
        torch.manual_seed(0)
        model = EmbeddingNet("small_cnn", 16, pretrained=False)
        criterion = Criterion(cfg["method"], num_classes=4, embedding_dim=16)
        optimizers = [build_optimizer(model, criterion, settings), build_loss_optimizer(criterion, settings)]
        optimizers = [o for o in optimizers if o is not None]
        assert len(optimizers) == (1 if share else 2)
        images, labels = torch.rand(16, 3, 32, 32), torch.arange(4).repeat_interleave(4)
        for _ in range(30):
            loss = criterion(model(images), labels)
            for o in optimizers:
                o.zero_grad()
            loss.backward()
            for o in optimizers:
                o.step()
        moved[share] = (criterion.loss.beta.detach() - 1.2).abs().max().item()
    assert moved[False] > 0.05 and moved[True] <= 30 * cfg["optimizer"]["lr"] * 1.01


def test_a_time_bounded_checkpoint_is_written_at_sigterm_and_resumes_exactly(run_config, uninterrupted, tmp_path):
    """keep.checkpoint_minutes: no checkpoint while the minutes have not passed; SIGTERM (SLURM's
    time limit) writes the last finished epoch's state and ends the step; the resumed run gives the
    uninterrupted run's numbers."""
    bounded = dict(run_config, keep=dict(run_config["keep"], checkpoint_minutes=60))
    stopped = tmp_path / "stopped"
    process = start(train_cmd(bounded, stopped), env=python_env(), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (stopped / "epochs.jsonl").exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        assert epochs_done(stopped) == 0  # an epoch finished, its state held in memory only
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
        assert process.returncode == 128 + signal.SIGTERM, err[-3000:]
    finally:
        stop(process)
    done = epochs_done(stopped)
    assert 1 <= done < run_config["epochs"], "SIGTERM should land mid-run"
    assert f"dmlbench train: stopped by SIGTERM; rerun resumes {stopped} after epoch {done}" in err
    assert not (stopped / "model.pt").exists()
    resumed = run(
        train_cmd(bounded, stopped), timeout=900, check=True, env=python_env(), capture_output=True, text=True
    )
    assert f"after epoch {done}" in resumed.stderr
    assert (losses(stopped), evaluate(stopped)) == uninterrupted


def test_a_second_sigterm_does_not_cut_the_stops_cleanup_short():
    """SLURM's time limit signals each process of the job, and the gpu-slot wrapper passes its own on:
    a SIGTERM that lands while the first one's cleanup writes the checkpoint lets it finish."""
    script = (
        "import os, signal, time\n"
        "from dmlbench.training import train\n"
        "try:\n"
        "    with train.stops_as_exit():\n"
        "        try:\n"
        "            os.kill(os.getpid(), signal.SIGTERM)\n"
        "            time.sleep(60)\n"
        "        finally:  # the checkpoint's write\n"
        "            os.kill(os.getpid(), signal.SIGTERM)\n"
        "            time.sleep(0.5)\n"
        "            print('written')\n"
        "except SystemExit as stop:\n"
        "    print('exit', stop.code)\n"
    )
    done = run([sys.executable, "-c", script], timeout=60, env=python_env(), capture_output=True, text=True)
    assert done.stdout.split() == ["written", "exit", str(128 + signal.SIGTERM)], done.stdout + done.stderr


def test_a_stop_whose_cleanup_hangs_prints_every_stack_and_ends():
    """SIGTERM ends a training through its cleanup (the last epoch written, the lock released); a
    cleanup that never ends (a lock held where the exit landed) is ended after the grace, every
    thread's stack on stderr, instead of hanging until a SIGKILL."""
    script = (
        "import os, signal, threading, time\n"
        "from dmlbench.training import train\n"
        "train.STOP_GRACE_S = 1\n"
        "held = threading.Lock()\n"
        "held.acquire()\n"
        "try:\n"
        "    with train.stops_as_exit():\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(60)\n"
        "finally:\n"
        "    held.acquire()  # a cleanup that never ends\n"
    )
    began = time.monotonic()
    done = run([sys.executable, "-c", script], timeout=60, env=python_env(), capture_output=True, text=True)
    assert time.monotonic() - began < 30 and done.returncode != 0
    assert "most recent call first" in done.stderr and "line 11 in <module>" in done.stderr  # where it hung


def test_ctrl_c_ends_a_training_with_one_line_saying_where_a_rerun_resumes(run_config, tmp_path):
    """Ctrl-C mid-run: no traceback, one line naming the epoch a rerun resumes after, and the end
    by SIGINT that a shell expects of an interrupted program."""
    stopped = tmp_path / "stopped"
    long_run = dict(run_config, epochs=200)  # still training when the Ctrl-C lands, however fast the machine
    # as from a terminal: a pytest-xdist worker ignores SIGINT, and a child would inherit that
    as_in_a_terminal = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    process = start(
        train_cmd(long_run, stopped), env=python_env(), stderr=subprocess.PIPE, text=True, preexec_fn=as_in_a_terminal
    )
    try:
        deadline = time.monotonic() + 120
        while not (stopped / "epochs.jsonl").exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        stop(process)
    assert process.returncode == -signal.SIGINT
    done = epochs_done(stopped)
    assert 1 <= done < long_run["epochs"], "Ctrl-C should land mid-run"
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip().splitlines()[-1] == f"dmlbench train: interrupted; rerun resumes {stopped} after epoch {done}"


def test_the_evaluate_step_reuses_the_train_steps_evaluation_of_the_same_model(run_config, tmp_path):
    """Train evaluates the model it wrote; evaluate writes that result without starting torch, the
    same numbers as evaluating model.pt afresh; for any other model.pt it evaluates afresh."""
    from dmlbench.training.train import train

    run_dir = tmp_path / "run"
    train(dict(run_config, epochs=1, batches_per_epoch=2), run_dir, log=lambda m: None)
    assert (run_dir / "final_metrics.json").exists()
    code = (
        "import sys; from dmlbench.cli import main; main(sys.argv[1:]); "
        "print('torch imported' if 'torch' in sys.modules else 'no torch')"
    )
    reused = run(
        [sys.executable, "-c", code, "evaluate", "--run-dir", str(run_dir), "--output", str(tmp_path / "reused.json")],
        timeout=300,
        capture_output=True,
        text=True,
        env=python_env(),
    )
    assert reused.returncode == 0 and reused.stdout.strip() == "no torch", reused.stderr
    assert "evaluated by the train step" in reused.stderr
    fresh = run(
        [
            sys.executable,
            "-m",
            "dmlbench",
            "evaluate",
            "--fresh",
            "--run-dir",
            str(run_dir),
            "--output",
            str(tmp_path / "fresh.json"),
        ],
        timeout=600,
        capture_output=True,
        text=True,
        env=python_env(),
    )
    assert fresh.returncode == 0, fresh.stderr
    ours, theirs = (json.loads((tmp_path / name).read_text()) for name in ("reused.json", "fresh.json"))
    assert ours["metrics"] == theirs["metrics"] and ours["run"] == theirs["run"]
    # another model.pt (retrained, changed by hand): the record no longer belongs to it
    state = torch.load(run_dir / "model.pt", weights_only=True)
    next(iter(state["model"].values())).add_(1.0)
    torch.save(state, run_dir / "model.pt")
    again = run(
        [
            sys.executable,
            "-m",
            "dmlbench",
            "evaluate",
            "--run-dir",
            str(run_dir),
            "--output",
            str(tmp_path / "again.json"),
        ],
        timeout=600,
        capture_output=True,
        text=True,
        env=python_env(),
    )
    assert again.returncode == 0 and "evaluated by the train step" not in again.stderr


def test_warm_step_time_leaves_out_the_first_step(run_config, tmp_path, monkeypatch):
    from dmlbench.methods import criterion
    from dmlbench.training import train as training

    calls = []
    forward = criterion.Criterion.forward

    def slow_first(self, *args, **kwargs):  # a first step a second longer than the others
        calls.append(1)
        if len(calls) == 1:
            time.sleep(1.0)
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(criterion.Criterion, "forward", slow_first)
    cfg = dict(run_config, epochs=1, batches_per_epoch=4)
    cfg["eval"] = dict(cfg["eval"], every=0)
    training.train(cfg, tmp_path / "run", log=lambda m: None)
    row = json.loads((tmp_path / "run" / "epochs.jsonl").read_text().splitlines()[0])
    assert row["seconds"] >= 1.0 and row["steps"] == 4
    # the 3 warm steps end the epoch and leave out the first step's second (no absolute times:
    # the machine may be busy): with the first step in, these would be 0 and `seconds` / 4
    assert row["seconds"] - 3 * row["warm_seconds_per_step"] >= 1.0 - 1e-3
    assert row["warm_seconds_per_step"] < row["seconds"] / 4


@pytest.mark.parametrize("tf32", [False, True])
def test_tf32_follows_the_setting_and_env_json_records_it(run_config, tmp_path, tf32):
    """TF32 is process-wide in PyTorch (and cuDNN's defaults to on): each run sets both flags
    from `performance.tf32` rather than inherit them."""
    from dmlbench.training import train as training

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = not tf32
    cfg = dict(run_config, epochs=1, batches_per_epoch=1)
    cfg["eval"] = dict(cfg["eval"], every=0)
    cfg["performance"] = dict(cfg["performance"], tf32=tf32)
    try:
        training.train(cfg, tmp_path / "run", log=lambda m: None)
        assert torch.backends.cuda.matmul.allow_tf32 is tf32 and torch.backends.cudnn.allow_tf32 is tf32
        env = json.loads((tmp_path / "run" / "env.json").read_text())
        assert env["tf32"] == {"matmul": tf32, "cudnn": tf32}
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = False, True


@pytest.mark.parametrize("name", ["adam", "adamw", "rmsprop", "sgd"])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_each_optimiser_keeps_the_state_the_disk_estimate_counts(name, momentum):
    """Every registered optimiser builds from the run's settings, and after one step keeps as many
    tensors per parameter as `state_tensors` (the preflight's checkpoint estimate) says."""
    from dmlbench.training import optimisers

    assert set(optimisers.OPTIMISERS.names()) == {"adam", "adamw", "rmsprop", "sgd"}
    weight = torch.nn.Parameter(torch.ones(3))
    cfg = Optimizer(name=name, lr=0.1, betas=(0.9, 0.999), weight_decay=0.01, momentum=momentum)
    optimizer = optimisers.build([{"params": [weight]}], cfg)
    (weight**2).sum().backward()
    optimizer.step()
    kept = [v for v in optimizer.state[weight].values() if torch.is_tensor(v) and v.shape == weight.shape]
    assert len(kept) == optimisers.state_tensors(cfg)
    expected = {
        "adam": torch.optim.Adam,
        "adamw": torch.optim.AdamW,
        "rmsprop": torch.optim.RMSprop,
        "sgd": torch.optim.SGD,
    }[name]
    assert type(optimizer) is expected and optimizer.defaults["weight_decay"] == 0.01


def test_the_same_weights_give_the_same_model_file(run_config, tmp_path):
    """model.pt records no temporary file name: two trainings of one run give the same bytes
    (model_sha256 in final_metrics.json too)."""
    from dmlbench.evaluation.final_metrics import file_sha256
    from dmlbench.training.train import train

    short = dict(run_config, epochs=1, batches_per_epoch=2)
    train(short, tmp_path / "a", log=lambda m: None)
    train(short, tmp_path / "b", log=lambda m: None)
    assert file_sha256(tmp_path / "a" / "model.pt") == file_sha256(tmp_path / "b" / "model.pt")
    kept = [json.loads((tmp_path / d / "final_metrics.json").read_text())["model_sha256"] for d in "ab"]
    assert kept[0] == kept[1]
