"""Training schemes: which batches the iterations see, what they add to the loss, and the state
that goes into the checkpoint. `plain` is the usual loop; `profs` is Algorithm 1 of the
alternating-projections paper (dmlbench/training/schemes/profs.py)."""

from __future__ import annotations

from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import Registry
from dmlbench.run_config import RunConfig
from dmlbench.training.schemes.base import PlainScheme, Step, TrainingScheme
from dmlbench.training.schemes.profs import ProfsScheme

SCHEMES = Registry("scheme", error=ConfigError)
SCHEMES.register("plain")(PlainScheme)
SCHEMES.register("profs")(ProfsScheme)


def build(cfg: RunConfig, labels, supers, parameters, criterion) -> TrainingScheme:
    """The scheme of the resolved run config `cfg` over the training labels."""
    SCHEMES.check(cfg.scheme.name, "scheme.name")
    return SCHEMES.get(cfg.scheme.name)(cfg, labels, supers, parameters, criterion)


__all__ = ["build", "Step", "TrainingScheme", "SCHEMES"]
