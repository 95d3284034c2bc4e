"""Which groups the bounded preflight probes: the fewest (by probe cost) that still cover every
paper, backbone, loss, miner, scheme, sampler and evaluation layout of the plan."""

from __future__ import annotations

import json
from dataclasses import asdict

from dmlbench.data import datasets
from dmlbench.preflight.grouping import Group


def structure(value):
    """`value` with each number replaced by its sign class ("0", "+" or "-"): what tells code paths
    apart (names, switches, zero or not), without the numbers that only move results."""
    if isinstance(value, dict):
        return {key: structure(item) for key, item in value.items()}
    if isinstance(value, list):
        return [structure(item) for item in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "0" if value == 0 else "+" if value > 0 else "-"
    return value


def features(group: Group) -> set[str]:
    """What `bounded` covers: the group's paper, backbone, loss, miner and scheme (names and
    structure), sampler and evaluation layout."""
    cfg, run = group.typed, group.run
    method = cfg.method
    return {
        f"paper:{run.experiment.split('.')[0]}",
        f"backbone:{cfg.model.backbone}",
        "loss:" + json.dumps(structure(method.loss), sort_keys=True),
        "miner:" + json.dumps(structure(method.miner), sort_keys=True),
        f"sampler:{method.sampler}",
        "scheme:" + json.dumps(structure(asdict(cfg.scheme)), sort_keys=True),
        f"layout:{datasets.get(run.dataset).evaluation}",
    }


# A probe's fixed work (its process, model builds, checkpoints, three evaluations) costs about as
# much as 450 training images at 32 px on a CPU core (measured 2026-11-25): the cost of a group is
# that plus its two steps' images.
PROBE_OVERHEAD_IMAGES = 450


def probe_cost(group: Group) -> int:
    return PROBE_OVERHEAD_IMAGES + 2 * group.typed.batch.size


def bounded(groups: list[Group]) -> list[Group]:
    """The cheapest part of the groups found by the greedy set cover (most new features per unit
    of `probe_cost`, earliest group on ties) that still covers every feature of `features`;
    returned in the groups' order. The full preflight probes the rest (numbers included)."""
    wanted = [features(group) for group in groups]
    costs = [probe_cost(group) for group in groups]
    left = set().union(*wanted) if wanted else set()
    chosen: set[int] = set()
    while left:
        best = max(range(len(groups)), key=lambda i: (len(wanted[i] & left) / costs[i], -i))
        chosen.add(best)
        left -= wanted[best]
    return [group for i, group in enumerate(groups) if i in chosen]
