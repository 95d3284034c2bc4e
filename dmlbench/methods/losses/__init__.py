"""Losses by name: `build("multi_similarity", alpha=2, beta=50, gamma=0.5)`.

Every loss is a `torch.nn.Module` called as `loss(embeddings, labels)` (embeddings not yet
normalised) or `loss(embeddings, labels, miner=miner)` to restrict the pairs/triplets it sees.
"""

from dmlbench.methods.losses.base import LOSSES, PairLoss


def build(name: str, **params):
    """Instantiate the loss registered as `name` with the paper-named parameters."""
    return LOSSES.build(name, **params)


def names() -> list[str]:
    return LOSSES.names()


__all__ = ["build", "names", "PairLoss", "LOSSES"]
