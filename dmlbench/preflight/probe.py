"""One group's code path executed for real on fixture data in its dataset's format: two optimiser
steps with a checkpoint and a resume between them, per-epoch evaluation where the run has it, the
final evaluation with the run's K values, and what the run records."""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import shutil
import time
import traceback
from dataclasses import replace
from pathlib import Path

import torch

from dmlbench.core import environment
from dmlbench.data import folds, store
from dmlbench.data import manifest as manifest_io
from dmlbench.data.prepare import prepare
from dmlbench.evaluation import final_metrics
from dmlbench.core.io import open_lock
from dmlbench.run_config import RunConfig
from dmlbench.training.train import train


class _Interrupted(Exception):
    """Raised after the first epoch's checkpoint: the preflight's kill."""


# The trunk of a code-path probe: a group whose network shape an earlier group measures runs its
# loss, miner, sampler, scheme and evaluation at its real batch on this small network instead.
LIGHT_TRUNK = "small_cnn"
LIGHT_SIDE = 32  # its image side (its timings are not used)


def probe_config(
    resolved: dict, manifest: Path, image_side: int | None, device: str, warm_steps: int = 0, light: bool = False
) -> RunConfig:
    """The group's config, shrunk only where the preflight must: two epochs of 1 + `warm_steps`
    batches, no pretrained weights to download, no loader workers, on a CPU no bf16; with `image_side`, the crop
    becomes that many pixels and the resize and padding scale with it (batch, method and network
    stay). Its data: the fixture `manifest` (with its fold view where the group has one). `light`:
    the trunk is `LIGHT_TRUNK` (same embedding size, pooling, BatchNorm and normalisation; no
    trunk-specific settings), everything else as above."""
    cfg = RunConfig.from_dict(resolved)
    if light:
        cfg = replace(
            cfg,
            model=replace(cfg.model, backbone=LIGHT_TRUNK, weights=None, frozen_patch_embed=False),
            optimizer=replace(cfg.optimizer, layer_decay=1.0),
        )
    data = {"manifest": str(manifest)}
    fold = cfg.data.get("fold")
    if fold:  # the fair protocol's fold view, over the fixture's own split file
        splits = Path(manifest).parent / f"fair_folds{fold['of']}.csv"
        with _only_one_writer(Path(manifest).parent):
            if not splits.exists():
                folds.write(Path(manifest), splits, fold["of"])
        data["fold"] = dict(fold, splits=str(splits))
    image = cfg.input
    if image_side:
        scale = image_side / image.crop
        image = replace(
            image,
            crop=image_side,
            resize=max(image_side, round(image.resize * scale)),
            padding=round(image.padding * scale),
        )
    record = cfg.record
    probe_record = replace(record.probe, epochs=(0,), steps=2) if record.probe.epochs else record.probe
    cpu = environment.pick_device(device).type == "cpu"  # bf16 autocast has no fast CPU kernels (minutes a step)
    return replace(
        cfg,
        epochs=2,
        batches_per_epoch=1 + warm_steps,
        device=device,
        data=data,
        input=image,
        model=replace(cfg.model, pretrained=False),
        loader=replace(cfg.loader, workers=0, persistent_workers=False),
        performance=replace(cfg.performance, bf16=False) if cpu else cfg.performance,
        eval=replace(cfg.eval, every=1 if cfg.eval.every else 0),
        record=replace(record, scatter_epochs=tuple(e for e in (0, 2) if record.scatter_epochs), probe=probe_record),
        schedule=replace(cfg.schedule, milestones=(1,) if cfg.schedule.milestones else ()),
    )


FIXTURE_GROUPS = 12  # at most this many categories (SOP's 12) or vehicle-model shares (1/6) in a fixture


def fixture_size(resolved: dict) -> dict:
    """A fixture large enough for one batch of the group's composition: classes for B / I, and
    for the category and vehicle-model samplers half a batch within every category; on a fold,
    within what the fold trains on."""
    cfg = RunConfig.from_dict(resolved)
    batch, per_class = cfg.batch.size, cfg.batch.per_class
    images = max(per_class + 1, 6)
    train_classes = math.ceil(batch / per_class) + 2
    fold = cfg.data.get("fold")
    if fold:  # a fold trains on (folds − 1) of `folds` parts of the training classes
        train_classes = max(math.ceil(train_classes * fold["of"] / (fold["of"] - 1)) + fold["of"], 2 * fold["of"])
    if cfg.method.sampler in ("category_pairs", "vehicleid", "hard"):
        per_group = math.ceil(batch / 2 / images) + 1  # classes of each category, one to spare
        if fold:  # a held-out fold takes a run of classes: up to one more than its share of each category
            per_group = math.ceil((per_group + 1) * fold["of"] / (fold["of"] - 1))
        train_classes = max(train_classes, FIXTURE_GROUPS * per_group)
    return {"n_classes": 2 * train_classes, "per_class": images}


@contextlib.contextmanager
def _only_one_writer(folder: Path):
    """Probes running at once that need the same fixture: one writes it, the others wait."""
    folder.mkdir(parents=True, exist_ok=True)
    with open_lock(folder / ".preflight.lock") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def fixture_manifest(dataset: str, size: dict, image_size: int, root: Path) -> Path:
    """The fixture of `dataset` at `size`, made once per size under `root`."""
    folder = root / f"{dataset}-{size['n_classes']}x{size['per_class']}-{image_size}"
    out = folder / "fixture" / dataset / "manifest.csv"
    with _only_one_writer(folder):
        if not out.exists():
            prepare(dataset, "fixture", folder, out, fixture_size=dict(size, image_size=image_size))
    return out


def fixture_store(manifest: Path, side: int) -> str:
    """The decoded-image store of a fixture manifest at `side`, built once."""
    folder = manifest.parent / f"store{side}"
    with _only_one_writer(manifest.parent):
        if not (folder / "store.json").exists():
            store.build(manifest, folder, side, log=lambda m: None)
    return str(folder)


def peak_memory_mb(device: torch.device) -> int:
    """Peak memory of this process since its worker started the group (`workers.reset_peak_memory`):
    CUDA's allocator peak on a GPU, else the peak resident set (VmHWM)."""
    if device.type == "cuda":
        return round(torch.cuda.max_memory_allocated(device) / 2**20)
    return round(environment.peak_resident_mib())


def probe(
    cfg: dict,
    dataset: str,
    workdir: Path,
    image_side: int | None = None,
    device: str = "auto",
    warm_steps: int = 0,
    light: bool = False,
) -> dict:
    """Run the group's code path; return status, seconds per step (with `warm_steps`, the mean of
    that many steps after a first one in the epoch after the resume; else that epoch's one step),
    evaluation seconds per image, peak memory and the error (the last line, and the traceback)
    of a failure. `light` (see `probe_config`): the code path on a small trunk; its timings and
    memory are the small trunk's, which the runner replaces by its shape's measured ones."""
    started = time.perf_counter()
    result = {
        "status": "failed",
        "seconds_per_step": None,
        "eval_seconds_per_image": None,
        "peak_mb": None,
        "error": "",
        "traceback": "",
    }
    run_dir = workdir / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    try:
        image_size = (image_side or RunConfig.from_dict(cfg).input.crop) + 8
        manifest = fixture_manifest(dataset, fixture_size(cfg), image_size, workdir.parent / "fixtures")
        shrunk = probe_config(cfg, manifest, image_side, device, warm_steps, light)
        if cfg["data"].get("store"):  # the decoded-image store path, as the preset runs it
            shrunk = replace(shrunk, data={**shrunk.data, "store": fixture_store(manifest, shrunk.input.resize)})
        cfg = shrunk
        torch_device = environment.pick_device(device)
        _train_with_a_kill(cfg, run_dir)
        eval_seconds, images = _final_evaluation(run_dir, cfg)
        last = _history(run_dir)[-1]
        result.update(
            status="passed",
            seconds_per_step=last.get("warm_seconds_per_step", last["seconds"]),
            peak_mb=peak_memory_mb(torch_device),
            eval_seconds_per_image=eval_seconds / images,
        )
    except Exception as error:  # every failure is reported with its group, never raised
        lines = traceback.format_exception_only(type(error), error)
        result.update(error=lines[-1].strip(), traceback=traceback.format_exc())
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def _train_with_a_kill(cfg: RunConfig, run_dir: Path) -> None:
    def stop_after_first_epoch(message: str) -> None:
        if message.startswith("epoch 1/"):
            raise _Interrupted

    try:
        train(cfg, run_dir, log=stop_after_first_epoch)
        raise RuntimeError("training did not reach the end of its first epoch")
    except _Interrupted:
        pass
    resumed = []
    train(cfg, run_dir, log=resumed.append)
    if not any(line.startswith("resuming") for line in resumed):
        raise RuntimeError("the second start did not resume from the checkpoint")


def _final_evaluation(run_dir: Path, cfg: RunConfig) -> tuple[float, int]:
    """The train step's own final evaluation (what the train job writes as metrics.json), checked: finite
    parameters and metrics, and the seconds it took."""
    state = torch.load(run_dir / "model.pt", map_location="cpu", weights_only=True)
    bad = [
        name for name, value in state["model"].items() if value.is_floating_point() and not torch.isfinite(value).all()
    ]
    if bad:
        raise FloatingPointError(f"non-finite parameters after two steps (a non-finite gradient): {', '.join(bad[:3])}")
    kept = json.loads((run_dir / final_metrics.RECORD).read_text())["result"]
    if not all(math.isfinite(v) for v in kept["metrics"].values()):
        raise FloatingPointError(f"non-finite metrics: {kept['metrics']}")
    table = folds.view_of(manifest_io.read(Path(cfg.data["manifest"])), cfg.data)
    return kept["seconds"], int((table["split"] != "train").sum())


def _history(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "epochs.jsonl").read_text().splitlines()]
