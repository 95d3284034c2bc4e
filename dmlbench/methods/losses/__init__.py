"""Losses by name: `build("multi_similarity", alpha=2, beta=50, gamma=0.5)` (values checked).

Every loss is a `torch.nn.Module` called as `loss(embeddings, labels)` (embeddings not yet
normalised) or `loss(embeddings, labels, miner=miner)` to restrict the pairs/triplets it sees.
"""

from dmlbench.core.errors import ConfigError
from dmlbench.methods.losses.base import LOSSES, PairLoss


def build(name: str, **params):
    """Instantiate the loss registered as `name` with the paper-named parameters, each checked by
    type and range as the plan checks a methods file (ConfigError naming the parameter)."""
    from dmlbench.methods import declared, pml

    declared.check("loss", {"name": name, **params}, f"losses.build({name!r})")
    component = declared.components("loss")[name]
    missing = [p for p in component.required if p not in params]  # those the training fills in, too
    if missing:
        raise ConfigError(
            f"losses.build({name!r}) needs {', '.join(missing)} (the training fills them in from the data and "
            f"the model; in your own code give them: labels 0..num_classes-1) ({component.source})"
        )
    if pml.is_pml(name):  # pytorch-metric-learning's loss of that class
        from dmlbench.methods.pml_loss import PMLLoss

        return PMLLoss(name, **params)
    return LOSSES.build(name, **params)


def names() -> list[str]:
    return LOSSES.names()


__all__ = ["build", "names", "PairLoss", "LOSSES"]
