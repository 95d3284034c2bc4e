"""Base class of the losses that are functions of the batch similarity matrix."""

from __future__ import annotations

import torch
from torch import nn

from dmlbench.methods.pairs import PairBatch
from dmlbench.core.registry import Registry

LOSSES = Registry("loss", package="dmlbench.methods.losses", group="dmlbench.losses")  # every module registers its own


class PairLoss(nn.Module):
    """A loss written once against `PairBatch` (S and the masks), as the unified view suggests.
    It sees the pairs (or triplets) a miner keeps; a loss that builds its own tuples or works on
    proxies says `takes_miner = False`, and the plan refuses a method that gives it a miner.

    What a loss needs from the run is declared by class attributes, read by the plan from the
    source (`dmlbench.methods.declared`) and by the training: `takes_miner`, `restricts_pairs` (its
    `forward` takes `pairs=`, the PROFS scheme's restriction), `needs` (constructor arguments the
    training fills in: `num_classes`, `embedding_dim`) and a `class_vectors()` method for losses
    with class centres (PROFS-HNCM without image representatives)."""

    takes_miner = True
    restricts_pairs = True
    needs: tuple[str, ...] = ()

    def forward(
        self, embeddings: torch.Tensor, labels: torch.Tensor, miner=None, pairs: torch.Tensor | None = None
    ) -> torch.Tensor:
        """`pairs` (B×B bool), when given, restricts the pairs before any mining (a training
        scheme's choice, e.g. PROFS keeps the pairs that contain a class representative)."""
        batch = PairBatch.from_embeddings(embeddings, labels)
        if pairs is not None:
            batch = batch.with_pairs(batch.pos & pairs, batch.neg & pairs)
        if miner is not None:
            batch = miner(batch)
        return self.compute(batch)

    def compute(self, batch: PairBatch) -> torch.Tensor:
        raise NotImplementedError


class ProxyLoss(nn.Module):
    """A loss that compares each embedding with learnable class vectors (proxies, centres) rather
    than with the batch's other embeddings: the interface of Proxy-NCA, SoftTriple and
    Proxy-Anchor, and of a user's own.

    - The training fills in `num_classes` and `embedding_dim` (its constructor takes both; the
      labels arrive renumbered 0..C−1) and calls `forward(embeddings, labels, miner=None)` with
      the embeddings as the head gives them (not L2-normalised: normalise where the loss does).
    - Its `nn.Parameter`s (the proxies) are trained by the run's optimiser, at
      `optimizer.loss_lr_mult` times the trunk's rate (Proxy-Anchor's code: 100).
    - It takes no miner (`takes_miner = False`: a method giving it one is refused when the plan
      loads) and no pair restriction (`restricts_pairs = False`); a `class_vectors()` method, one
      unit vector per class, lets PROFS-HNCM rank classes by it."""

    takes_miner = False
    restricts_pairs = False
    needs: tuple[str, ...] = ("num_classes", "embedding_dim")
    limits = {"num_classes": ">= 2", "embedding_dim": ">= 1"}  # a subclass's own entries are added
    about = {
        "num_classes": "number of training classes C, one proxy each, filled in by the training; the suite",
        "embedding_dim": "embedding size, the proxies' dimension, filled in by the training; the suite",
    }

    def __call__(self, embeddings: torch.Tensor, labels: torch.Tensor, miner=None, **kwargs) -> torch.Tensor:
        refuse_miner(self, miner)
        return super().__call__(embeddings, labels, **kwargs)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor, miner=None) -> torch.Tensor:
        raise NotImplementedError


def refuse_miner(loss: nn.Module, miner) -> None:
    """A loss that builds its own comparisons (`takes_miner = False`) refuses a miner, in the
    pipeline (where the plan refuses it first) and in one's own training loop alike."""
    if miner is not None:
        raise ValueError(
            f"{type(loss).__name__} takes no miner (takes_miner = False: it builds its own comparisons); "
            f"call it without miner="
        )


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of `values` where `mask` holds; 0 (still attached to the graph) when nothing does."""
    count = mask.sum()
    total = (values * mask).sum()
    return total / count.clamp(min=1)


def masked_logsumexp(values: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Row-wise log Σ_{mask} exp(values) and which rows have any entry. Rows with none get a
    placeholder value (to be discarded by the caller) whose gradient is finite, not NaN."""
    empty = ~mask.any(dim=1, keepdim=True)
    filled = values.masked_fill(~mask, float("-inf")).masked_fill(empty, 0.0)
    return torch.logsumexp(filled, dim=1), ~empty.squeeze(1)
