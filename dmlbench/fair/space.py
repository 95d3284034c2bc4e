"""A method's search space (`search` beside the method in methods.yaml) and the settings it moves.

Each entry names a setting of the run by a dotted path, `loss.<param>` and `miner.<param>` for the
method's own, any other for a training setting (`scheme.lam`; `optimizer.loss_lr_mult`, which sets
the loss parameters' rate, lr × loss_lr_mult), with
`{low, high}` and optionally `log: true` (searched on a log scale) and `int: true` (whole-number
ends); or `{same_as: <path>}` to follow another entry (a miner's margin that equals the loss's). The
paper's setting, the run's resolved value at each path, must lie inside the space: it is the
first trial of every search. Every value a search can ask is checked when the plan loads
(`dmlbench.config.search_checks`).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

from dmlbench.core.errors import ConfigError

RANGE_KEYS = {"low", "high", "log", "int"}


@dataclass(frozen=True)
class Dimension:
    path: str
    low: float
    high: float
    log: bool = False
    integer: bool = False

    def describe(self) -> str:
        kind = "integer" if self.integer else "real"
        return f"{self.path} ∈ [{self.low:g}, {self.high:g}] ({'log' if self.log else 'linear'}, {kind})"


@dataclass(frozen=True)
class Space:
    dimensions: tuple[Dimension, ...]
    tied: dict  # path → the path whose value it takes

    def describe(self) -> str:
        return "; ".join(
            [d.describe() for d in self.dimensions] + [f"{path} = {source}" for path, source in self.tied.items()]
        )


def parse(name: str, method: dict) -> Space:
    """The method's space; a method without one, or with a malformed one, is refused by name."""
    entries = method.get("search")
    if not entries or not isinstance(entries, dict):
        raise ConfigError(
            f"method {name} has no search space: the fair protocol tunes every method's own "
            f"parameters; add `search:` beside it in methods.yaml (docs/fair-table.md) "
            f"or leave it out of suite.fair"
        )
    dimensions, tied = [], {}
    for path, entry in entries.items():
        where = f"method {name}.search.{path}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: give {{low, high}} (and log, int) or {{same_as: <path>}}, not {entry!r}")
        if "same_as" in entry:
            if set(entry) != {"same_as"} or entry["same_as"] not in entries or "same_as" in entries[entry["same_as"]]:
                raise ConfigError(f"{where}: same_as must name another searched entry of the method, alone")
            tied[path] = entry["same_as"]
            continue
        unknown = set(entry) - RANGE_KEYS
        if unknown or not {"low", "high"} <= set(entry):
            raise ConfigError(f"{where}: keys are low, high, log, int; found {sorted(entry)}")
        low, high = entry["low"], entry["high"]
        if (
            not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (low, high))
            or not low < high
        ):
            raise ConfigError(f"{where}: low and high must be finite numbers with low < high, not {low!r}, {high!r}")
        if entry.get("log") and low <= 0:
            raise ConfigError(f"{where}: a log-scale range needs low > 0, not {low!r}")
        if entry.get("int") and not all(float(v).is_integer() for v in (low, high)):
            raise ConfigError(
                f"{where}: an integer range (int: true) needs whole-number ends, not {low!r}, {high!r}; "
                f"give the least and the greatest value to try"
            )
        dimensions.append(Dimension(path, low, high, bool(entry.get("log")), bool(entry.get("int"))))
    return Space(tuple(dimensions), tied)


def _container(cfg: dict, path: str) -> tuple[dict, str]:
    head, _, key = path.rpartition(".")
    node = cfg["method"] if head.split(".")[0] in ("loss", "miner") else cfg
    for part in head.split("."):
        node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            raise KeyError(path)
    return node, key


def value_at(cfg: dict, path: str):
    node, key = _container(cfg, path)
    if key not in node:
        raise KeyError(path)
    return node[key]


def paper_setting(space: Space, cfg: dict) -> dict:
    """The resolved run's values at the searched paths: the paper's setting, the first trial."""
    return {d.path: value_at(cfg, d.path) for d in space.dimensions}


def check(name: str, space: Space, cfg: dict, where: str, own: bool = False) -> None:
    """Every path names a setting the run has, and the paper's value (`own`: the user's, for a
    method of their methods file) lies inside its range."""
    whose = "your" if own else "the paper's"
    for path in [d.path for d in space.dimensions] + list(space.tied):
        try:
            value_at(cfg, path)
        except KeyError:
            raise ConfigError(
                f"{where}: method {name}.search.{path} names no setting of the run (loss.*, "
                f"miner.* or a training setting that exists)"
            ) from None
    for d in space.dimensions:
        value = value_at(cfg, d.path)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not d.low <= value <= d.high:
            raise ConfigError(
                f"{where}: {whose} {d.path} = {value!r} lies outside method {name}'s "
                f"search range [{d.low:g}, {d.high:g}]; widen the range ({whose} "
                f"setting is the first trial)"
            )
        if d.integer and value != int(value):
            raise ConfigError(f"{where}: {d.path} is searched as an integer but {whose} value is {value!r}")


def apply(cfg: dict, space: Space, values: dict) -> dict:
    """`cfg` with the searched values (and the tied ones) in place."""
    cfg = copy.deepcopy(cfg)
    for path, value in values.items():
        node, key = _container(cfg, path)
        node[key] = value
    for path, source in space.tied.items():
        node, key = _container(cfg, path)
        node[key] = values[source]
    return cfg


def to_json(space: Space) -> dict:
    return {"dimensions": [vars(d) for d in space.dimensions], "tied": space.tied}


def from_json(data: dict) -> Space:
    return Space(tuple(Dimension(**d) for d in data["dimensions"]), dict(data["tied"]))
