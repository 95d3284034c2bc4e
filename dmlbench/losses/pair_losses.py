"""Contrastive, triplet and multi-similarity losses in the similarity form of the ms paper.

S is the cosine similarity of L2-normalised embeddings; P_i / N_i are the positives / negatives of
anchor i (after mining, when a miner ran).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dmlbench.losses.base import LOSSES, PairLoss, masked_mean
from dmlbench.pairs import PairBatch


@LOSSES.register("contrastive")
class ContrastiveLoss(PairLoss):
    """Contrastive loss, ms eq. 5: positives pulled to S = 1, negatives pushed below the threshold λ.

    L = mean_{(i,j) positive} (1 - S_ij) + mean_{(i,j) negative} [S_ij - λ]_+

    The paper writes the positive term as -S_ij; 1 - S_ij differs by a constant (same gradient) and
    keeps the loss non-negative. Each pair type is averaged over its own pairs.
    """

    def __init__(self, margin: float = 0.5):
        super().__init__()
        self.margin = margin

    def compute(self, batch: PairBatch) -> torch.Tensor:
        s = batch.sim
        positive = masked_mean(1.0 - s, batch.pos)
        negative = masked_mean(F.relu(s - self.margin), batch.neg)
        return positive + negative


@LOSSES.register("triplet")
class TripletLoss(PairLoss):
    """Triplet loss with margin, ms eq. 7: L = mean_{(a,p,n)} [S_an - S_ap + λ]_+.

    Uses the triplets of a triplet miner when one ran, else every valid triplet of the batch.
    """

    def __init__(self, margin: float = 0.1):
        super().__init__()
        self.margin = margin

    def compute(self, batch: PairBatch) -> torch.Tensor:
        a, p, n = batch.triplets if batch.triplets is not None else batch.all_triplets()
        if len(a) == 0:
            return batch.sim.sum() * 0.0
        return F.relu(batch.sim[a, n] - batch.sim[a, p] + self.margin).mean()


@LOSSES.register("multi_similarity")
class MultiSimilarityLoss(PairLoss):
    """Multi-similarity loss (RAW), ms eq. 17, averaged over the m anchors of the batch:

    L = 1/m Σ_i { 1/α log[1 + Σ_{k∈P_i} exp(-α(S_ik - γ))] + 1/β log[1 + Σ_{k∈N_i} exp(β(S_ik - γ))] }

    Paper text: α = 2, β = 50, γ = 0.5. The authors' released code uses β = 40 (set `beta=40`).
    """

    def __init__(self, alpha: float = 2.0, beta: float = 50.0, gamma: float = 0.5):
        super().__init__()
        self.alpha, self.beta, self.gamma = alpha, beta, gamma

    def compute(self, batch: PairBatch) -> torch.Tensor:
        s = batch.sim
        positive = _log1p_sum_exp(-self.alpha * (s - self.gamma), batch.pos) / self.alpha
        negative = _log1p_sum_exp(self.beta * (s - self.gamma), batch.neg) / self.beta
        return (positive + negative).mean()


def _log1p_sum_exp(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Row-wise log(1 + Σ_{mask} exp(logits)), computed stably (an extra zero logit stands for the 1)."""
    masked = logits.masked_fill(~mask, float("-inf"))
    zero = torch.zeros(len(logits), 1, dtype=logits.dtype, device=logits.device)
    return torch.logsumexp(torch.cat([zero, masked], dim=1), dim=1)
