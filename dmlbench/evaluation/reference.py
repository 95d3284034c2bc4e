"""Reference rows: the suite's evaluation of embeddings that no training step has touched.

A table's runs share one reference job per dataset × backbone × input size × embedding size
(and the first seed, which sets the head's initial weights). It evaluates, with the runs' own
protocol (query/gallery for In-Shop, VehicleID's three lists, self-retrieval otherwise):

- `initial`: the network exactly as the run of that seed starts training (`torch.manual_seed(seed)`
  then `models.build`: the ImageNet trunk where the preset loads one, the head at initialisation);
- `trunk`: the trunk's globally pooled features alone (no head);
- `pixels`, for datasets of equal-sized small images (`DatasetSpec.pixel_side`, the digits): the
  raw pixels of each image at its own size, flattened.

Retrieval and clustering compare L2-normalised embeddings, as for the runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path

from dmlbench.models import timm_trunks
from dmlbench.models.names import backbone_label
from dmlbench.run_config import RunConfig

KINDS = ("initial", "trunk", "pixels")
MODEL_KEYS = ("backbone", "pretrained", "weights", "embedding_dim", "pooling")


def key_of(cfg: RunConfig, pixel_side: int | None, raw_manifest: str) -> dict:
    """The settings a reference's numbers depend on, taken from a run's resolved config."""
    return {
        "dataset": cfg.run["dataset"],
        "data": cfg.data,
        "seed": cfg.seed,
        "model": {k: getattr(cfg.model, k) for k in MODEL_KEYS},
        "input": {"resize": cfg.input.resize, "crop": cfg.input.crop},
        "eval": {
            "ks": list(cfg.eval.ks),
            "vehicleid_protocol": cfg.eval.vehicleid_protocol,
            "kmeans_restarts": cfg.eval.kmeans_restarts,
        },
        "pixels": {"manifest": raw_manifest, "side": pixel_side} if pixel_side else None,
    }


def name_of(key: dict) -> str:
    """A folder name that reads: `digits-spatial_cnn-16px-512d-1a2b3c4d`."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:8]
    model = key["model"]
    return f"{key['dataset']}-{model['backbone']}-{key['input']['crop']}px-{model['embedding_dim']}d-{digest}"


def spec_of(cfg: RunConfig, key: dict) -> dict:
    """What the reference job reads: the key plus how to run it (device, loader, batch size)."""
    return {
        "key": key,
        "device": cfg.device,
        "loader": dataclasses.asdict(cfg.loader),
        "input": dataclasses.asdict(cfg.input),
        "batch_size": cfg.eval.batch_size,
        "tf32": cfg.performance.tf32,
    }


def _eval_config(spec: dict) -> RunConfig:
    """The settings `evaluate_model` reads (the rest at their defaults; no method)."""
    key = spec["key"]
    return RunConfig.from_dict(
        {
            "data": key["data"],
            "loader": spec["loader"],
            "input": {**spec["input"], **key["input"]},
            "eval": {**key["eval"], "batch_size": spec["batch_size"]},
            "model": dict(key["model"], frozen_bn=False),
        },
        "reference spec",
    )


def label(key: dict, kind: str) -> str:
    """How the row is named in the tables."""
    if kind == "pixels":
        return "no training: raw pixels"
    model = key["model"]
    timm_trunk = timm_trunks.TRUNKS.get(model["backbone"])
    if timm_trunk:  # its label names its pretraining
        trunk = (
            timm_trunk.label
            if model["pretrained"] or "random init" in timm_trunk.label
            else f"{timm_trunk.label} (random init.)"
        )
    else:
        trunk = backbone_label(model["backbone"])
        trunk += (
            " (ImageNet)"
            if model["pretrained"] and model["backbone"] not in ("small_cnn", "spatial_cnn")
            else " (random init.)"
        )
    if kind == "trunk":
        return f"no training: {trunk}, {'CLS token' if timm_trunk and timm_trunk.cls_token else 'pooled features'}"
    return f"no training: {trunk} + {model['embedding_dim']}-d head at initialisation"


class TrunkFeatures:
    """The trunk's globally pooled features of an `EmbeddingNet`, as a model `embed` accepts."""

    normalize = False  # `embed` L2-normalises

    def __init__(self, net):
        self.net = net

    def eval(self):
        self.net.eval()
        return self

    def __call__(self, images):
        maps = self.net.trunk(self.net._prepare_input(images))
        return maps.amax(dim=(2, 3)) if self.net.pooling == "max" else maps.mean(dim=(2, 3))


class RawPixels:
    """The images' pixel values, flattened, as a model `embed` accepts."""

    normalize = False

    def eval(self):
        return self

    def __call__(self, images):
        return images.flatten(1)


def compute(spec: dict) -> dict:
    """The metrics of every reference kind of `spec`."""
    import torch

    from dmlbench.core import environment
    from dmlbench import models
    from dmlbench.data import manifest
    from dmlbench.evaluation.model_eval import evaluate_model

    key, cfg = spec["key"], _eval_config(spec)
    device = environment.pick_device(spec["device"])
    environment.set_tf32(spec["tf32"])
    table = manifest.read(Path(key["data"]["manifest"]))
    base = Path(key["data"]["manifest"]).parent
    torch.manual_seed(key["seed"])  # as train does right before building the model
    net = models.build(cfg.model).to(device).eval()
    rows = {
        "initial": evaluate_model(net, table, base, cfg, device),
        "trunk": evaluate_model(TrunkFeatures(net), table, base, cfg, device),
    }
    if key["pixels"]:
        side, raw_manifest = key["pixels"]["side"], Path(key["pixels"]["manifest"])
        raw = dataclasses.replace(
            cfg, data={"manifest": str(raw_manifest)}, input=dataclasses.replace(cfg.input, resize=side, crop=side)
        )
        rows["pixels"] = evaluate_model(
            RawPixels(), manifest.read(raw_manifest), raw_manifest.parent, raw, torch.device("cpu")
        )
    return rows


def run(spec: dict, output: Path) -> dict:
    """The reference step: compute and write `metrics.json` (key, rows, seconds, device)."""
    from dmlbench.core.io import write_json

    started = time.perf_counter()
    rows = compute(spec)
    result = {
        "reference": spec["key"],
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 3),
        "device": spec["device"],
    }
    write_json(output, result)
    for kind, metrics in rows.items():
        shown = ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        print(f"{label(spec['key'], kind)}: {shown}", file=sys.stderr)
    return result
