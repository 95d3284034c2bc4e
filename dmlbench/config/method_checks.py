"""The methods of the catalogue against their components (`dmlbench.methods.declared`): names,
parameters, a miner only where the loss takes one, and what a training scheme needs of the loss."""

from __future__ import annotations

from dmlbench.config import own_methods, search_checks
from dmlbench.core.errors import ConfigError
from dmlbench.methods import declared
from dmlbench.core.registry import did_you_mean
from dmlbench.run_config import RunConfig


def check_methods(plan, method_keys: set[str]) -> None:
    """Every method of methods.yaml: its keys, its loss, miner and sampler (registered names, the
    parameters their constructors take: `dmlbench.methods.declared`), and the loss and miner
    parameters its search space names, by type and limits (`search_checks`; its training settings:
    `validation.check_catalogue`)."""
    for name, method in plan.methods.items():
        where = f"{own_methods.source(plan, name)}: method {name}"
        unknown = set(method) - method_keys
        if unknown:
            raise ConfigError(f"{where}: unknown keys {sorted(unknown)}{did_you_mean(min(unknown), method_keys)}")
        if "loss" not in method:
            raise ConfigError(f"{where}: a method needs a loss (loss: {{name: …, <parameter>: …}})")
        declared.check_method(method, where)
        search_checks.check_method(plan, name, method)  # every value its search can ask


def check_scheme_needs(cfg: RunConfig, where: str) -> None:
    """The PROFS scheme's needs of the loss, from what the loss declares: pairs to restrict
    (`scheme.pairs` representative or anchored, image representatives) and class centres (HNCM
    without image representatives)."""
    scheme = cfg.scheme
    if scheme.name != "profs":
        return
    loss = declared.components("loss")[cfg.method.loss["name"]]
    with_images = scheme.representatives == "images"
    if with_images and scheme.pairs in ("representative", "anchored") and not loss.restricts_pairs:
        raise ConfigError(
            f"{where}: scheme.pairs: {scheme.pairs} needs a pair loss; {loss.name!r} has no "
            f"pairs to restrict ({loss.source}): set scheme.pairs: all"
        )
    if scheme.hncm and not with_images and not loss.class_vectors:
        raise ConfigError(
            f"{where}: scheme.hncm with representatives: none needs a loss with class centres "
            "(class_vectors(): "
            f"{', '.join(n for n, c in declared.components('loss').items() if c.class_vectors)}), "
            f"not {loss.name!r}"
        )
