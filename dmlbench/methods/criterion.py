"""A method of the config = loss + optional miner (+ the batch sampler, chosen in training)."""

from __future__ import annotations

import torch
from torch import nn

from dmlbench.methods import declared, losses, miners, plugin_code
from dmlbench.methods.pairs import PairBatch
from dmlbench.run_config import MethodSpec


class Criterion(nn.Module):
    """Calls the loss on a batch, through the miner when the method has one.

    Losses with class proxies or per-class parameters receive `num_classes` and `embedding_dim`
    (those their class lists in `needs` and the method does not set); labels must then be
    0..num_classes-1.
    """

    def __init__(self, method: MethodSpec | dict, num_classes: int | None = None, embedding_dim: int | None = None):
        super().__init__()
        method = MethodSpec.of(method)
        params = dict(method.loss)
        plugin_code.check(method, f"method {method.name!r}")  # the files the plan read, unchanged
        known = declared.components("loss")  # read from source, nothing imported (unknown: `build` says so)
        needs = known[params["name"]].needs if params["name"] in known else ()
        for key, value in (("num_classes", num_classes), ("embedding_dim", embedding_dim)):
            if key in needs and key not in params and value is not None:
                params[key] = value
        self.loss = losses.build(**params)
        self.miner = miners.build(**method.miner) if method.miner else None
        if self.miner is not None and not getattr(self.loss, "takes_miner", False):
            raise ValueError(f"loss {params['name']!r} takes no miner; method {method.name!r} gives it one")

    def forward(
        self, embeddings: torch.Tensor, labels: torch.Tensor, pairs: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The loss of the batch; `pairs` (B×B bool) restricts a pair loss to those pairs."""
        if pairs is None:
            return self.loss(embeddings, labels, miner=self.miner)
        return self.loss(embeddings, labels, miner=self.miner, pairs=pairs)

    @property
    def restricts_pairs(self) -> bool:
        """Whether the loss accepts a restriction of its pairs (`pairs=`), as its class declares."""
        return getattr(self.loss, "restricts_pairs", False)

    @torch.no_grad()
    def triplets(self, embeddings: torch.Tensor, labels: torch.Tensor):
        """(anchor, positive, negative) index tensors the method trains on for this batch: the
        miner's triplets, or every valid triplet without a triplet miner."""
        batch = PairBatch.from_embeddings(embeddings, labels)
        if self.miner is not None:
            batch = self.miner(batch)
        return batch.triplets if batch.triplets is not None else batch.all_triplets()

    def take_stats(self) -> dict:
        """The miner's counts since the last call (anchors seen and skipped), if it keeps any."""
        take = getattr(self.miner, "take_stats", None)
        return take() if take else {}
