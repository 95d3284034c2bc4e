"""The module that calls a pytorch-metric-learning loss as the suite calls its own (`dmlbench.methods.pml`
names and checks them; this one imports torch)."""

from __future__ import annotations

import torch
from torch import nn

from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean
from dmlbench.methods import pml


def _object(module, base, value, where: str):
    """A PML distance or reducer from its class name or `{name: …, parameters}`."""
    name, params = (value, {}) if isinstance(value, str) else (dict(value).pop("name", None), dict(value))
    params.pop("name", None)
    known = pml.classes(module, base)
    if name not in known:
        raise ConfigError(f"{where}: {name!r} is no pytorch-metric-learning class here{did_you_mean(str(name), known)}")
    try:
        return known[name](**params)
    except TypeError as error:
        raise ConfigError(f"{where}: {name}: {error}") from None


class PMLLoss(nn.Module):
    """A PML loss called as the suite calls a loss: `loss(embeddings, labels, miner=None)`; a suite
    miner's kept pairs (or triplets) become PML's `indices_tuple`."""

    restricts_pairs = False

    def __init__(self, name: str, **params):
        super().__init__()
        _, distances, reducers = pml.library(f"loss {name!r}")
        cls = pml.loss_class(name)
        self.takes_miner = "num_classes" not in pml.parameters(cls)
        given = {"embedding_size" if k == "embedding_dim" else k: v for k, v in params.items()}
        for key, module, base in (
            ("distance", distances, distances.BaseDistance),
            ("reducer", reducers, reducers.BaseReducer),
        ):
            if given.get(key) is not None:
                given[key] = _object(module, base, given[key], f"loss {name!r}.{key}")
        try:
            self.loss = cls(**given)
        except (AssertionError, TypeError, ValueError) as error:
            raise ConfigError(
                f"loss {name!r}: pytorch-metric-learning refuses {params}: {str(error) or 'an assertion of its own'}"
            ) from None
        self.name = name

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor, miner=None) -> torch.Tensor:
        if miner is None:
            return self.loss(embeddings, labels)
        if not self.takes_miner:
            raise ValueError(f"loss {self.name!r} takes no miner (it compares embeddings with class weights)")
        from dmlbench.methods.pairs import PairBatch

        return self.loss(
            embeddings, labels, indices_tuple=indices_tuple(miner(PairBatch.from_embeddings(embeddings, labels)))
        )


def indices_tuple(batch) -> tuple[torch.Tensor, ...]:
    """PML's `indices_tuple` of what a miner kept: (anchor, positive, negative) where it mined
    triplets, else (anchor, positive, anchor, negative) of the kept pair masks."""
    if batch.triplets is not None:
        return tuple(t.long() for t in batch.triplets)
    anchors_p, positives = batch.pos.nonzero(as_tuple=True)
    anchors_n, negatives = batch.neg.nonzero(as_tuple=True)
    return anchors_p, positives, anchors_n, negatives


def check_build(entry: dict, where: str, needs: tuple = ()) -> None:
    """Build the loss once with the entry's values (the training's `num_classes` and embedding
    size stood in for by 4 and 8), so that what PML refuses is named before any job."""
    params = {k: v for k, v in entry.items() if k != "name"}
    stand_ins = {"num_classes": 4, "embedding_dim": 8}
    for key in needs:  # the plan's Component's, read once
        params.setdefault(key, stand_ins[key])
    try:
        PMLLoss(entry["name"], **params)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None
