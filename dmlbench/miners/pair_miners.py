"""Semi-hard triplet mining (Schroff et al.) and multi-similarity / VTHM pair mining (ms paper)."""

from __future__ import annotations

import torch

from dmlbench.miners import MINERS
from dmlbench.pairs import PairBatch


@MINERS.register("semihard")
class SemiHardMiner:
    """For every positive pair (a, p), the most similar negative n that is still less similar than p
    by less than the margin: S_ap - λ < S_an < S_ap. Pairs with no such negative give no triplet."""

    def __init__(self, margin: float = 0.1):
        self.margin = margin

    @torch.no_grad()
    def __call__(self, batch: PairBatch) -> PairBatch:
        s = batch.sim.detach()
        anchors, positives = batch.pos.nonzero(as_tuple=True)
        s_ap = s[anchors, positives][:, None]
        s_an = s[anchors]
        candidate = batch.neg[anchors] & (s_an < s_ap) & (s_an > s_ap - self.margin)
        best = s_an.masked_fill(~candidate, float("-inf")).argmax(dim=1)
        keep = candidate.any(dim=1)
        return batch.with_triplets(anchors[keep], positives[keep], best[keep])


@MINERS.register("multi_similarity")
class MultiSimilarityMiner:
    """VTHM (ms paper, section 5.1), also called multi-similarity mining. For anchor i:
    keep negative j if S_ij > min_{k∈P_i} S_ik - λ; keep positive j if S_ij < max_{k∈N_i} S_ik + λ.
    Paper default λ = 0.1."""

    def __init__(self, epsilon: float = 0.1):
        self.epsilon = epsilon

    @torch.no_grad()
    def __call__(self, batch: PairBatch) -> PairBatch:
        s = batch.sim.detach()
        hardest_pos = s.masked_fill(~batch.pos, float("inf")).min(dim=1, keepdim=True).values
        hardest_neg = s.masked_fill(~batch.neg, float("-inf")).max(dim=1, keepdim=True).values
        neg = batch.neg & (s > hardest_pos - self.epsilon)
        pos = batch.pos & (s < hardest_neg + self.epsilon)
        return batch.with_pairs(pos, neg)
