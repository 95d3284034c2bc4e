"""A run's training steps per epoch on the real dataset and, before any preflight, its GPU-hours
projected from them: epochs × steps × batch images at the training throughput measured on one
H100 (docs/benchmarks.md, "GPU fed": BN-Inception at 227 pixels 1,279 images/s, ResNet-50 at 256
pixels 628 images/s), scaled by pixels to the run's crop. Unmeasured trunks take BN-Inception's
rate (GoogLeNet) or ResNet-50's (every other: ResNet-18 and the ViTs, an upper bound for the
former). Training steps only: the evaluations come on top (the preflight's budget has them)."""

from __future__ import annotations

import math

from dmlbench.data import datasets
from dmlbench.run_config import RunConfig

MEASURED = {"bninception": (1279.0, 227), "resnet50": (628.0, 256)}  # images/s at a crop
STAND_IN = {"googlenet": "bninception"}  # an unmeasured trunk's measured neighbour; else resnet50


def steps_per_epoch(cfg: RunConfig, dataset: str) -> int:
    if cfg.batches_per_epoch:
        return cfg.batches_per_epoch
    spec = datasets.get(dataset)
    train = spec.expected.images["train"]
    fold = cfg.data.get("fold")
    if fold:  # a run on folds trains on all folds but its held-out one
        train = train * (fold["of"] - 1) // fold["of"]
    batch, sampler = cfg.batch.size, cfg.method.sampler
    if sampler in ("category_pairs", "hard") and spec.supers == "categories":
        return math.comb(spec.super_categories, 2) * cfg.batch.per_pair
    if sampler in ("vehicleid", "hard") and spec.supers == "vehicle_models":
        return max(1, round(2 * train / batch))
    return max(1, train // batch)


def images_per_second(backbone: str, crop: int) -> float:
    rate, side = MEASURED.get(backbone) or MEASURED[STAND_IN.get(backbone, "resnet50")]
    return rate * (side / crop) ** 2


def gpu_hours(cfg: RunConfig, dataset: str, epochs: float | None = None) -> float:
    """The training steps' GPU-hours of a run (of `epochs`, default all of them)."""
    images = steps_per_epoch(cfg, dataset) * cfg.batch.size * (cfg.epochs if epochs is None else epochs)
    return images / images_per_second(cfg.model.backbone, cfg.input.crop) / 3600
