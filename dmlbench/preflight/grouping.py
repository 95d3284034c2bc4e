"""Runs that share a code path: what decides the code a run executes, without what only changes
numbers (seed, learning rate, the dataset among those of one layout)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

from dmlbench.config.plan import Plan
from dmlbench.config.run import Run
from dmlbench.data import datasets
from dmlbench.run_config import RunConfig


def code_path(resolved: dict, dataset: str) -> dict:
    """The settings of a resolved run that change the code it runs."""
    cfg = RunConfig.from_dict(resolved)
    optimizer = cfg.optimizer
    return {
        "model": asdict(cfg.model),
        "input": asdict(cfg.input),
        "batch": asdict(cfg.batch),
        "batches": "fixed" if cfg.batches_per_epoch else "from data",
        "method": {"loss": cfg.method.loss, "miner": cfg.method.miner, "sampler": cfg.method.sampler},
        "scheme": asdict(cfg.scheme),
        "optimizer": {
            "name": optimizer.name,
            "weight_decay": optimizer.weight_decay > 0,
            "head_lr_mult": optimizer.head_lr_mult != 1,
            "loss_lr_mult": optimizer.loss_lr_mult != 1,
            "loss_params": optimizer.loss_params.optimizer,
        },
        "schedule": bool(cfg.schedule.milestones),
        "eval": {
            "per_epoch": bool(cfg.eval.every),
            "vehicleid_protocol": cfg.eval.vehicleid_protocol,
            "kmeans_restarts": cfg.eval.kmeans_restarts,
        },
        "record": asdict(cfg.record),
        "performance": asdict(cfg.performance),
        "early_stopping": bool(cfg.early_stopping.patience),
        "fold": bool(cfg.data.get("fold")),
        "layout": datasets.get(dataset).evaluation,
    }


def network_shape(resolved: dict, image_side: int | None = None) -> str:
    """What decides the time and memory of a training step: the trunk and what changes its work
    (frozen BatchNorm, a frozen patch embedding, layer decay), the batch size, the numeric
    settings, and the input size, unless the preflight gives every group the same `image_side`.
    Groups of one shape differ only in code the trunk does not see (loss, miner, sampler,
    scheme, evaluation) or in a few parameters after it (embedding size, pooling, normalisation)."""
    cfg = RunConfig.from_dict(resolved)
    model = cfg.model
    shape = {
        "backbone": model.backbone,
        "frozen_bn": model.frozen_bn,
        "frozen_patch_embed": model.frozen_patch_embed,
        "layer_decay": cfg.optimizer.layer_decay != 1,
        "batch": cfg.batch.size,
        "performance": asdict(cfg.performance),
    }
    if image_side is None:
        shape["input"] = {"crop": cfg.input.crop, "resize": cfg.input.resize}
    return json.dumps(shape, sort_keys=True)


@dataclass
class Group:
    """Runs of one code path; `cfg` and `run` are those of the first, which the preflight runs."""

    key: str
    run: Run
    cfg: dict
    runs: list[Run] = field(default_factory=list)

    @property
    def typed(self) -> RunConfig:
        """The typed view of `cfg` (the resolved mapping the probe shrinks and trains)."""
        return RunConfig.from_dict(self.cfg)

    @property
    def label(self) -> str:
        cfg = self.typed
        model, method, scheme = cfg.model, cfg.method, cfg.scheme.name
        return (
            f"{self.run.experiment}/{self.run.dataset}/{self.run.method} "
            f"[{model.backbone}, d {model.embedding_dim}, {cfg.input.crop} px, "
            f"B {cfg.batch.size}, {method.loss['name']}"
            f"{' + ' + method.miner['name'] if method.miner else ''}"
            f"{', ' + scheme if scheme != 'plain' else ''}]"
        )


def group_runs(plan: Plan, runs: list[Run] | None = None) -> list[Group]:
    """The plan's runs grouped by `code_path`, in the plan's order."""
    groups: dict[str, Group] = {}
    for run in plan.trainings() if runs is None else runs:
        cfg = plan.resolve(run)
        text = json.dumps(code_path(cfg, run.dataset), sort_keys=True)
        key = hashlib.sha256(text.encode()).hexdigest()[:10]
        groups.setdefault(key, Group(key, run, cfg)).runs.append(run)
    return list(groups.values())


def shape_owners(groups: list[Group], image_side: int | None = None) -> dict[str, str]:
    """Each group's key → the key of the first group of its network shape (`network_shape` at
    `image_side`), which the preflight probes on the real trunk; the others run their code path
    on the small trunk (`probe.LIGHT_TRUNK`) and take that group's seconds per step, evaluation
    seconds and peak memory."""
    first: dict[str, str] = {}
    return {group.key: first.setdefault(network_shape(group.cfg, image_side), group.key) for group in groups}


TIMINGS = ("seconds_per_step", "eval_seconds_per_image", "peak_mb")


def with_shape_timings(rows: dict[str, dict], owners: dict[str, str]) -> dict[str, dict]:
    """The rows with each light group's timings and memory taken from its shape's probe (none
    while that probe runs, or when it failed)."""
    out = {}
    for key, row in rows.items():
        owner = rows.get(owners[key])
        if owners[key] != key and row["status"] == "passed":
            measured = owner if owner is not None and owner["status"] == "passed" else {}
            row = {**row, **{name: measured.get(name) for name in TIMINGS}}
        out[key] = row
    return out
