"""The training loop of one run: checkpoint after every epoch, resume, per-epoch metrics.

Run folder layout: `config.json` (resolved config), `checkpoint.pt` (state and metrics after the
last finished epoch, and the fingerprint of the config it belongs to; removed once the run is done
unless `keep.checkpoint`), `epochs.jsonl` (one line of metrics per finished epoch, written from it),
`env.json`, `tensorboard/` (`tracking`), and when done `model.pt`, the final metrics and `cost.json`.
Every epoch starts by seeding from (seed, epoch), so a resumed run continues exactly as an
uninterrupted one would (on CPU; cuDNN may differ in the last bits on GPU). A checkpoint of other
settings is never resumed (`dmlbench.training.run_folder`).
"""

from __future__ import annotations

import faulthandler
import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

from dmlbench.core import environment
from dmlbench import models
from dmlbench.run_config import values
from dmlbench.data import batches, draws, folds, manifest
from dmlbench.evaluation import evaluate_run, final_metrics
from dmlbench.evaluation.model_eval import embed, evaluate_model, loader_options, split_loader
from dmlbench.core.io import atomic_path, write_json
from dmlbench.methods.criterion import Criterion
from dmlbench.run_config import RunConfig
from dmlbench.training import checkpoint, cost, early_stopping, optimisers, recording, run_folder, schemes
from dmlbench.training.step import DivergedError, UntrainableError, check_first_epoch, train_step
from dmlbench.training.tracking import STOP_TIMEOUT_S, Tracking

STOP_GRACE_S = 60  # a stop that has not ended by then is stuck: its stacks are printed, the process ends


@contextmanager
def stops_as_exit():
    """SIGTERM and SIGHUP (SLURM at a job's time limit, Snakemake stopping its jobs) end the training
    as an exit, so that its last finished epoch is written (`checkpoint.Writer.flush`) and its folder
    lock released; a repeat (SLURM signals each of the job's processes, which pass it on) does not cut
    that short. The handlers before are restored after. Only in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signums, stopping = (signal.SIGTERM, signal.SIGHUP), []
    before = {signum: signal.getsignal(signum) for signum in signums}

    def leave(signum, _frame):
        if stopping:
            return
        stopping.append(signum)
        # the stop writes the last finished epoch and ends; should it not have ended after STOP_GRACE_S
        # (a lock held where the exit landed), every thread's stack goes to stderr and the process ends
        faulthandler.dump_traceback_later(STOP_GRACE_S, exit=True)
        raise SystemExit(128 + signum)

    for signum in signums:
        signal.signal(signum, leave)
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def seed_epoch(seed: int, epoch: int) -> torch.Generator:
    """Seed torch/numpy globally for this epoch and return the sampler's generator."""
    torch.manual_seed(seed * 100_003 + epoch)
    np.random.seed((seed * 100_003 + epoch) % 2**32)
    return torch.Generator().manual_seed(seed * 1_000_003 + epoch)


def training_loader_options(cfg: RunConfig, device, scheme) -> dict:
    """The training loader's settings: the run's, except that a scheme which plans a batch from
    the steps before it (PROFS' HNCM) has its batches drawn in this process, one step at a time,
    since loader workers would draw them ahead, from an older state, as many as they prefetch."""
    options = loader_options(cfg, device)
    if scheme.plans_from_training:
        options.update(num_workers=0, persistent_workers=False)
    return options


def train(cfg: dict | RunConfig, run_dir: Path, log=print, final_evaluation: bool = True) -> Path:
    """Train the run described by the resolved config `cfg` in `run_dir`; return the final model path.

    Resumes from the checkpoint when it belongs to `cfg`; otherwise moves the old files aside and
    starts afresh. A failure before the first checkpoint leaves nothing behind. With
    `final_evaluation` the final model is evaluated (k-means included) and the result kept beside
    it (`final_metrics.json`, what `metrics.json` holds); a fair fold training, whose numbers are its
    per-epoch validation and its test embeddings, skips it.
    """
    config = cfg if isinstance(cfg, RunConfig) else RunConfig.from_dict(cfg)
    values.check_tracking_uri(config.tracking.mlflow, str(run_dir))  # before anything is written
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    with run_folder.exclusive(run_dir), stops_as_exit():
        state = checkpoint.load(run_dir, config.to_dict(), log)
        try:
            return _train(config, run_dir, log, state, final_evaluation)
        except BaseException as error:
            if not (run_dir / "checkpoint.pt").exists():
                run_folder.discard_unfinished(run_dir)
            if isinstance(error, (DivergedError, UntrainableError)):  # one line naming the run; no model.pt
                raise type(error)(f"{run_dir}: {error}") from None
            raise


def _train(cfg: RunConfig, run_dir: Path, log, state: dict | None, final_evaluation: bool = True) -> Path:
    attempt_started = time.perf_counter()
    wall_before = state.get("wall_seconds", 0.0) if state else 0.0  # earlier attempts of this run
    record_of_settings = cfg.to_dict()  # config.json, the checkpoint's fingerprint, model.pt
    write_json(run_dir / "config.json", record_of_settings)
    device = environment.pick_device(cfg.device)
    environment.set_tf32(cfg.performance.tf32)
    write_json(run_dir / "env.json", environment.describe(device))

    whole = manifest.read(Path(cfg.data["manifest"]))
    table, epoch_table = folds.view_of(whole, cfg.data), folds.epochs_view(whole, cfg.data)
    base = Path(cfg.data["manifest"]).parent
    # training labels as 0..C-1 (proxy losses index their proxies by label)
    is_train = table["split"] == "train"
    class_ids = table.loc[is_train, "label"].rank(method="dense").astype(int) - 1
    data = batches.split_images(
        table.assign(label=class_ids.reindex(table.index, fill_value=-1)), table.index[is_train], base, cfg, train=True
    )

    torch.manual_seed(cfg.seed)
    model = models.build(cfg.model).to(device)
    if cfg.performance.channels_last:
        model = model.to(memory_format=torch.channels_last)
    model.train()
    criterion = Criterion(cfg.method, num_classes=int(class_ids.max()) + 1, embedding_dim=cfg.model.embedding_dim).to(
        device
    )
    optimizer = optimisers.build_optimizer(model, criterion, cfg.optimizer)
    loss_optimizer = optimisers.build_loss_optimizer(criterion, cfg.optimizer)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, list(cfg.schedule.milestones), cfg.schedule.gamma)
    scheme = schemes.build(
        cfg, data.labels, data.supers, list(model.parameters()) + list(criterion.parameters()), criterion
    )
    parts = {"model": model, "criterion": criterion, "optimizer": optimizer, "scheduler": scheduler, "scheme": scheme}
    optimizers = [optimizer]
    if loss_optimizer is not None:
        parts["loss_optimizer"] = loss_optimizer
        optimizers.append(loss_optimizer)
    start, history = checkpoint.resume(state, run_dir, parts, log)
    selection = early_stopping.Selection.for_run(cfg, history, state)
    meter = cost.EpochMeter(device)
    tracking = Tracking(record_of_settings, run_dir, start, log)
    wall = lambda: wall_before + time.perf_counter() - attempt_started  # noqa: E731
    eval_loaders: dict = {}  # the per-epoch evaluation's loaders, made once (their workers kept)
    writer = checkpoint.Writer(run_dir, cfg.keep.checkpoint_minutes)

    def embed_train():
        return embed(model, split_loader(table, base, "train", cfg, device), device)

    def record(epochs_done: int) -> None:
        recording.after_epoch(epochs_done, run_dir, cfg, model, criterion, data, embed_train, device, log)
        model.train()

    try:
        record(start)
        for epoch in range(start, cfg.epochs):
            if selection.stop():
                break
            generator = seed_epoch(cfg.seed, epoch)
            loader = batches.loader(
                data,
                generator=generator,
                batch_sampler=draws.KeyedBatches(
                    scheme.batches(generator, cfg.batches_per_epoch), cfg.seed, draws.TRAINING + epoch
                ),
                **training_loader_options(cfg, device, scheme),
            )
            meter.start()
            row = _train_epoch(
                model,
                criterion,
                optimizers,
                scheme,
                loader,
                device,
                epoch,
                cfg.epochs,
                log,
                cfg.performance,
                cfg.optimizer.clip_grad_norm,
            )
            if epoch == 0:
                check_first_epoch(row["steps"], row["skipped_steps"])
            scheduler.step()
            every = cfg.eval.every
            if every and ((epoch + 1) % every == 0 or epoch + 1 == cfg.epochs):
                started = time.perf_counter()
                row.update(evaluate_model(model, epoch_table, base, cfg, device, clustering=False, kept=eval_loaders))
                row["eval_seconds"] = round(time.perf_counter() - started, 3)
                model.train()
            row.update(meter.stop())
            history.append(row)
            selection.after_epoch(row, model)
            writer.after_epoch(parts, history, record_of_settings, {**selection.state(), "wall_seconds": wall()})
            run_folder.write_history(run_dir, history)
            tracking.epoch(row, [group["lr"] for group in optimizer.param_groups])
            log(_format_row(row, cfg.epochs))
            record(epoch + 1)

        selection.restore_best(model, log)
        final = run_dir / "model.pt"
        with atomic_path(final) as tmp, open(tmp, "wb") as handle:  # a handle: no temporary name inside, so
            torch.save(
                {"model": model.state_dict(), "config": record_of_settings, **selection.summary()}, handle
            )  # the same weights give the same bytes (model_sha256)
        model.eval()
        result = {"metrics": {}, "seconds": 0.0}
        if final_evaluation:
            result = evaluate_run.result_of(model, cfg, run_dir, device)
            result["fingerprint"] = run_folder.fingerprint(record_of_settings)  # checked at aggregation
            final_metrics.keep(run_dir, result)
            log(f"final evaluation kept beside model.pt ({final_metrics.RECORD})")
        write_json(run_dir / cost.RECORD, cost.summary(history, result["seconds"], device, wall()))
        tracking.finished(result["metrics"], len(history), final)
        if cfg.keep.checkpoint:
            writer.flush()
        else:  # model.pt and the metrics are all a done run needs
            (run_dir / "checkpoint.pt").unlink(missing_ok=True)
        return final
    except BaseException:
        writer.flush()  # the last finished epoch, whatever stopped this one
        tracking.close(STOP_TIMEOUT_S)  # a slow tracker does not hold the stop past its grace
        raise
    finally:
        tracking.close()


def _train_epoch(
    model, criterion, optimizers, scheme, loader, device, epoch, epochs, log, perf, clip_grad_norm: float | None = None
) -> dict:
    """One epoch of iterations; the logged loss is the method's loss (without the scheme's term).
    `optimizers`: the run's optimizer first, then the loss parameters' own, if any."""
    optimizer = optimizers[0]
    started = time.perf_counter()
    total, steps, skipped, images = 0.0, 0, 0, 0
    first_done = None  # when the first step ended: the later steps are the warm ones
    memory = torch.channels_last if perf.channels_last else torch.contiguous_format
    for step, loaded in enumerate(loader, 1):
        plan = scheme.begin_step()
        batch, labels = loader.dataset.device_batch(loaded, device, memory)
        pairs = None if plan.pairs is None else plan.pairs.to(device)
        loss, embeddings, stepped = train_step(
            model,
            criterion,
            optimizers,
            batch,
            labels.to(device, non_blocking=True),
            pairs,
            scheme.penalty,
            perf.bf16,
            f"epoch {epoch + 1}, step {step}",
            clip_grad_norm,
        )
        skipped += not stepped
        scheme.end_step(plan, embeddings)
        total += loss.item()  # waits for the device: each step's time is its own
        steps += 1
        images += len(labels)
        if steps == 1:
            first_done = time.perf_counter()
        if step % 50 == 0:
            log(f"  epoch {epoch + 1}/{epochs} step {step}/{len(loader)} loss {total / steps:.4f}")
    ended = time.perf_counter()
    warm = {"warm_seconds_per_step": round((ended - first_done) / (steps - 1), 5)} if steps > 1 else {}
    return {
        "epoch": epoch + 1,
        "loss": total / max(steps, 1),
        "steps": steps,
        "images": images,
        "skipped_steps": skipped,
        "seconds": round(ended - started, 3),
        **warm,
        "lr": optimizer.param_groups[0]["lr"],
        **criterion.take_stats(),
    }


def _format_row(row: dict, epochs: int) -> str:
    extra = "".join(f" {k} {v:.4f}" for k, v in row.items() if k.startswith("recall@1"))
    return f"epoch {row['epoch']}/{epochs} loss {row['loss']:.4f}{extra} ({row['seconds']:.1f} s)"


def log_stderr(message: str) -> None:
    """One write per line: a Ctrl-C between `print`'s text and its newline would glue the
    interrupt's own line onto this one."""
    sys.stderr.write(f"{message}\n")
    sys.stderr.flush()
