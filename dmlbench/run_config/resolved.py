"""A resolved run (`RunConfig`): every training setting, and what the plan adds to them: the
method it trains (`MethodSpec`), its seed, its identity and its data."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional

from dmlbench.run_config.fields import from_mapping, plain
from dmlbench.run_config.sections import TrainingSettings


@dataclass(frozen=True)
class MethodSpec:
    """The method a run trains (methods.yaml, with a sweep variant's changes)."""

    name: str
    loss: dict
    miner: Optional[dict] = None
    sampler: str = "m_per_class"
    code: dict = field(default_factory=dict)  # a user's component: module → sha256 of its file (`plugin_code`)

    @classmethod
    def of(cls, method: "MethodSpec | dict") -> "MethodSpec":
        """The spec of a method entry (methods.yaml's keys `label`, `paper`, `train`, `search` aside)."""
        if isinstance(method, MethodSpec):
            return method
        return cls(
            name=method.get("name", "method"),
            loss=dict(method["loss"]),
            miner=method.get("miner"),
            sampler=method.get("sampler") or "m_per_class",
            code=dict(method.get("code") or {}),
        )


@dataclass(frozen=True)
class RunConfig(TrainingSettings):
    """A resolved run: its settings and what the plan adds (method, seed, its identity, its data).
    `data` and `run` stay mappings: their keys depend on the kind of run (a fair fold training
    adds `stage`, `index`, `fold` and `data.fold`). `method` is None for an evaluation without
    training (the reference rows)."""

    method: Optional[MethodSpec] = None
    seed: int = 0
    run: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, cfg: dict, where: str = "run config") -> "RunConfig":
        """The typed view of a resolved config (`Plan.resolve`, a run's config.json)."""
        values = from_mapping(TrainingSettings, {k: v for k, v in cfg.items() if k not in _PLAN_KEYS}, where)
        return cls(
            **{f.name: getattr(values, f.name) for f in dataclasses.fields(TrainingSettings)},
            method=MethodSpec.of(cfg["method"]) if cfg.get("method") else None,
            seed=int(cfg.get("seed", 0)),
            run=dict(cfg.get("run") or {}),
            data=dict(cfg.get("data") or {}),
        )

    def to_dict(self) -> dict:
        """The JSON form the rules pass on (lists for tuples); a built-in method has no `code` key,
        as the plan resolves it (its runs' fingerprints stay those of before plugins)."""
        form = plain(dataclasses.asdict(self))
        if form.get("method") and not form["method"]["code"]:
            del form["method"]["code"]
        return form


_PLAN_KEYS = ("method", "seed", "run", "data")
