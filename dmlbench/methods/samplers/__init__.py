"""Batch samplers by name. Each yields lists of dataset indices, one list per batch, and is
deterministic given its `torch.Generator`.

- `m_per_class`: batch.size / batch.per_class classes × batch.per_class images (most papers);
- `shuffle`: a plain permutation cut into batches (proxy losses);
- `random`, `category_pairs`, `vehicleid`: the fastap supplement's samplers (section A), which keep
  every sampled class whole ("a minibatch will include all images from a class once that class
  gets sampled") and build batches from super-categories; `hard` picks category_pairs, or
  vehicleid on a dataset with unlabelled vehicles.
"""

from __future__ import annotations

import inspect

from dmlbench.methods.samplers.fastap import CategoryPairBatches, RandomClassBatches, VehicleIDBatches, hard_batches
from dmlbench.methods.samplers.per_class import MPerClassBatches, ShuffledBatches
from dmlbench.core.errors import ConfigError
from dmlbench.methods.samplers.base import SAMPLERS, BatchSampler
from dmlbench.run_config import RunConfig


def build(
    name: str,
    labels,
    batch_size: int | None = None,
    per_class: int | None = None,
    generator=None,
    batches=None,
    small_classes: str = "fill",
    supers=None,
    per_pair: int = 5,
):
    """The sampler `name`, given the settings it takes (the others are not its own). Without a
    `generator` its batches follow torch's global seed (`torch.manual_seed`)."""
    offered = {
        "labels": labels,
        "batch_size": batch_size,
        "per_class": per_class,
        "generator": generator,
        "batches": batches,
        "small_classes": small_classes,
        "supers": supers,
        "per_pair": per_pair,
    }
    from dmlbench.methods import declared

    declared.check("sampler", name, f"samplers.build({name!r})")  # a component, read before it is imported
    wanted = inspect.signature(SAMPLERS.get(name)).parameters
    lacking = [key for key in ("batch_size", "per_class") if key in wanted and offered[key] is None]
    if lacking:
        raise ConfigError(f"samplers.build({name!r}) needs {' and '.join(lacking)}")
    return SAMPLERS.build(name, **{k: v for k, v in offered.items() if k in wanted})


def names() -> list[str]:
    return SAMPLERS.names()


def from_config(cfg: RunConfig, labels, supers, generator, batches=None):
    """The batch sampler of a resolved run config: its method's sampler with the run's `batch`
    settings, over the training `labels` (and `supers`), `batches` batches."""
    batch = cfg.batch
    return build(
        cfg.method.sampler,
        labels,
        batch.size,
        batch.per_class,
        generator,
        batches,
        batch.small_classes,
        supers,
        batch.per_pair,
    )


__all__ = [
    "SAMPLERS",
    "BatchSampler",
    "build",
    "names",
    "from_config",
    "MPerClassBatches",
    "ShuffledBatches",
    "RandomClassBatches",
    "CategoryPairBatches",
    "VehicleIDBatches",
    "hard_batches",
]
