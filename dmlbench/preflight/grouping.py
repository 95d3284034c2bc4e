"""Runs that share a code path: what decides the code a run executes, without what only changes
numbers (seed, learning rate, the dataset among those of one layout)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from dmlbench.config.plan import Plan
from dmlbench.config.run import Run
from dmlbench.data import datasets


def code_path(cfg: dict, dataset: str) -> dict:
    """The settings of a resolved run that change the code it runs."""
    optimizer = cfg["optimizer"]
    return {
        "model": cfg["model"],
        "input": cfg["input"],
        "batch": cfg["batch"],
        "batches": "fixed" if cfg["batches_per_epoch"] else "from data",
        "method": {key: cfg["method"][key] for key in ("loss", "miner", "sampler")},
        "scheme": cfg["scheme"],
        "optimizer": {"name": optimizer["name"], "weight_decay": optimizer["weight_decay"] > 0,
                      "head_lr_mult": optimizer["head_lr_mult"] != 1,
                      "loss_lr_mult": optimizer["loss_lr_mult"] != 1,
                      "loss_params": optimizer["loss_params"]["optimizer"]},
        "schedule": bool(cfg["schedule"]["milestones"]),
        "eval": {"per_epoch": bool(cfg["eval"]["every"]),
                 "vehicleid_protocol": cfg["eval"]["vehicleid_protocol"],
                 "kmeans_restarts": cfg["eval"]["kmeans_restarts"]},
        "record": cfg["record"],
        "performance": cfg["performance"],
        "early_stopping": bool(cfg["early_stopping"]["patience"]),
        "fold": bool(cfg["data"].get("fold")),
        "layout": datasets.get(dataset).evaluation,
    }


@dataclass
class Group:
    """Runs of one code path; `cfg` and `run` are those of the first, which the preflight runs."""

    key: str
    run: Run
    cfg: dict
    runs: list[Run] = field(default_factory=list)

    @property
    def label(self) -> str:
        model, method = self.cfg["model"], self.cfg["method"]
        scheme = self.cfg["scheme"]["name"]
        return (f"{self.run.experiment}/{self.run.dataset}/{self.run.method} "
                f"[{model['backbone']}, d {model['embedding_dim']}, {self.cfg['input']['crop']} px, "
                f"B {self.cfg['batch']['size']}, {method['loss']['name']}"
                f"{' + ' + method['miner']['name'] if method.get('miner') else ''}"
                f"{', ' + scheme if scheme != 'plain' else ''}]")


def group_runs(plan: Plan, runs: list[Run] | None = None) -> list[Group]:
    """The plan's runs grouped by `code_path`, in the plan's order."""
    groups: dict[str, Group] = {}
    for run in plan.all_runs() if runs is None else runs:
        cfg = plan.resolve(run)
        text = json.dumps(code_path(cfg, run.dataset), sort_keys=True)
        key = hashlib.sha256(text.encode()).hexdigest()[:10]
        groups.setdefault(key, Group(key, run, cfg)).runs.append(run)
    return list(groups.values())
