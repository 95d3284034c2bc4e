"""Losses over (anchor, positive, all negatives) tuples: N-pair and angular."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from dmlbench.losses.base import LOSSES, PairLoss
from dmlbench.pairs import PairBatch


def _softplus_logsumexp(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log(1 + Σ_{mask} e^{logits}) per row."""
    masked = logits.masked_fill(~mask, float("-inf"))
    zero = torch.zeros(len(logits), 1, dtype=logits.dtype, device=logits.device)
    return torch.logsumexp(torch.cat([zero, masked], dim=1), dim=1)


@LOSSES.register("npair")
class NPairLoss(PairLoss):
    """Multi-class N-pair loss (Sohn 2016), for every (anchor a, positive p) of the batch:

    L = mean_{(a,p)} log(1 + Σ_{n∈N_a} exp(S_an - S_ap)) + l2_reg · mean ‖f‖²

    S are inner products of the embeddings as given (the suite's networks output unit vectors, so
    these are cosines and the norm term is constant). With the paper's batches of N classes × 2
    images each anchor has exactly one positive. Default l2_reg 0.002 (Sohn).
    """

    def __init__(self, l2_reg: float = 0.002):
        super().__init__()
        self.l2_reg = l2_reg

    def forward(self, embeddings, labels, miner=None):
        batch = PairBatch.from_similarity(embeddings @ embeddings.T, labels)
        if miner is not None:
            batch = miner(batch)
        return self.compute(batch) + self.l2_reg * embeddings.pow(2).sum(dim=1).mean()

    def compute(self, batch: PairBatch) -> torch.Tensor:
        pos, neg = batch.pair_masks()
        a, p = pos.nonzero(as_tuple=True)
        if len(a) == 0:
            return batch.sim.sum() * 0.0
        logits = batch.sim[a] - batch.sim[a, p][:, None]
        return _softplus_logsumexp(logits, neg[a]).mean()


@LOSSES.register("angular")
class AngularLoss(PairLoss):
    """Angular loss (Wang et al. 2017), N-pair form, on L2-normalised embeddings x:

    f_apn = 4 tan²α (x_a + x_p)ᵀ x_n - 2 (1 + tan²α) x_aᵀ x_p
    L = mean_{(a,p)} log(1 + Σ_{n∈N_a} exp(f_apn)).       Default α = 40°.
    """

    def __init__(self, alpha_degrees: float = 40.0):
        super().__init__()
        self.tan2 = math.tan(math.radians(alpha_degrees)) ** 2

    def compute(self, batch: PairBatch) -> torch.Tensor:
        s = batch.sim
        pos, neg = batch.pair_masks()
        a, p = pos.nonzero(as_tuple=True)
        if len(a) == 0:
            return s.sum() * 0.0
        # (x_a + x_p)ᵀ x_n = S_an + S_pn
        logits = 4 * self.tan2 * (s[a] + s[p]) - 2 * (1 + self.tan2) * s[a, p][:, None]
        return _softplus_logsumexp(logits, neg[a]).mean()
