"""The modules that call pytorch-metric-learning's losses and miners as the suite calls its own
(`dmlbench.methods.pml` names and checks them; this one imports torch)."""

from __future__ import annotations

import torch
from torch import nn

from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean
from dmlbench.methods import pml
from dmlbench.methods.miners.base import Miner
from dmlbench.methods.pairs import PairBatch

STAND_INS = {"num_classes": 4, "embedding_dim": 8}  # the training's values, when the plan builds one to check it


def _object(kind: str, value, where: str, embedding_dim=None):
    """A PML distance, reducer, loss or miner (`pml.OBJECTS`) from its class name or `{name: …,
    parameters}`; a loss or miner of it is built as the top-level one is (its own objects too)."""
    name, params = (value, {}) if isinstance(value, str) else (dict(value).get("name"), dict(value))
    params.pop("name", None)
    if kind in ("loss", "miner"):
        cls = pml.component_class(kind, f"{pml.PREFIX}{name}")
        return cls(**_given(cls, kind, params, where, embedding_dim))
    library = pml.library(where)
    module = getattr(library, pml.OBJECTS[kind])
    known = pml.classes(module, getattr(module, "BaseDistance" if kind == "distance" else "BaseReducer"))
    if name not in known:
        raise ConfigError(f"{where}: {name!r} is no pytorch-metric-learning class here{did_you_mean(str(name), known)}")
    try:
        return known[name](**params)
    except TypeError as error:
        raise ConfigError(f"{where}: {name}: {error}") from None


def _given(cls: type, family: str, params: dict, where: str, embedding_dim=None) -> dict:
    """The constructor's keywords: `embedding_dim` as PML's `embedding_size`, object parameters built."""
    given = {"embedding_size" if k == "embedding_dim" else k: v for k, v in params.items()}
    if embedding_dim is not None and "embedding_dim" in pml.parameters(cls, family):
        given.setdefault("embedding_size", embedding_dim)
    for key in pml.OBJECTS:
        if given.get(key) is not None:
            given[key] = _object(key, given[key], f"{where}.{key}", given.get("embedding_size"))
    return given


def _build(cls: type, family: str, name: str, params: dict):
    try:
        return cls(**_given(cls, family, params, f"{family} {name!r}"))
    except ConfigError:
        raise
    except Exception as error:  # PML's own refusals: assertions, TypeErrors, plain Exceptions
        raise ConfigError(
            f"{family} {name!r}: pytorch-metric-learning refuses {params}: {str(error) or 'an assertion of its own'}"
        ) from None


class PMLLoss(nn.Module):
    """A PML loss called as the suite calls a loss: `loss(embeddings, labels, miner=None)`; a suite
    miner's kept pairs (or triplets) become PML's `indices_tuple`, a PML miner's are handed on as
    they are. A loss with a memory (CrossBatchMemory) keeps its queue's position in the checkpoint."""

    restricts_pairs = False

    def __init__(self, name: str, **params):
        super().__init__()
        cls = pml.component_class("loss", name)
        self.takes_miner = pml.takes_miner(cls)
        self.loss = _build(cls, "loss", name, params)
        self.name = name

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor, miner=None) -> torch.Tensor:
        if miner is None:
            return self.loss(embeddings, labels)
        if not self.takes_miner:
            raise ValueError(f"loss {self.name!r} takes no miner (it compares embeddings with class weights)")
        if isinstance(miner, PMLMiner):
            return self.loss(embeddings, labels, indices_tuple=miner.miner(embeddings, labels))
        return self.loss(
            embeddings, labels, indices_tuple=indices_tuple(miner(PairBatch.from_embeddings(embeddings, labels)))
        )

    def get_extra_state(self) -> dict:
        return {k: getattr(self.loss, k) for k in ("queue_idx", "has_been_filled") if hasattr(self.loss, k)}

    def set_extra_state(self, state: dict) -> None:
        for key, value in state.items():
            setattr(self.loss, key, value)


class PMLMiner(Miner):
    """A PML miner as a suite miner: its `indices_tuple` of the batch's embeddings becomes the
    batch's triplets (anchor, positive, negative) or pair masks (a1, p, a2, n), within the pairs the
    batch still allows (a training scheme's restriction)."""

    def __init__(self, name: str, **params):
        self.miner = _build(pml.component_class("miner", name), "miner", name, params)
        self.name = name

    @torch.no_grad()
    def __call__(self, batch: PairBatch) -> PairBatch:
        if batch.embeddings is None:
            raise ValueError(
                f"miner {self.name!r} needs the embeddings: build the batch with PairBatch.from_embeddings"
            )
        mined = self.miner(batch.embeddings, batch.labels)
        if len(mined) == 3:
            a, p, n = mined
            keep = batch.pos[a, p] & batch.neg[a, n]
            return batch.with_triplets(a[keep], p[keep], n[keep])
        a1, p, a2, n = mined
        pos, neg = torch.zeros_like(batch.pos), torch.zeros_like(batch.neg)
        pos[a1, p] = True
        neg[a2, n] = True
        return batch.with_pairs(batch.pos & pos, batch.neg & neg)


def indices_tuple(batch) -> tuple[torch.Tensor, ...]:
    """PML's `indices_tuple` of what a miner kept: (anchor, positive, negative) where it mined
    triplets, else (anchor, positive, anchor, negative) of the kept pair masks."""
    if batch.triplets is not None:
        return tuple(t.long() for t in batch.triplets)
    anchors_p, positives = batch.pos.nonzero(as_tuple=True)
    anchors_n, negatives = batch.neg.nonzero(as_tuple=True)
    return anchors_p, positives, anchors_n, negatives


def check_build(entry: dict, where: str, needs: tuple = (), family: str = "loss") -> None:
    """Build the loss or miner once with the entry's values (the training's `num_classes` and
    embedding size stood in for by `STAND_INS`), so that what PML refuses is named before any job."""
    params = {k: v for k, v in entry.items() if k != "name"}
    for key in needs:  # the plan's Component's, read once
        params.setdefault(key, STAND_INS[key])
    try:
        (PMLLoss if family == "loss" else PMLMiner)(entry["name"], **params)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None
