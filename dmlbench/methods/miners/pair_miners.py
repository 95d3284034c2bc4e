"""Semi-hard triplet mining (Schroff et al.) and multi-similarity / VTHM pair mining (ms paper)."""

from __future__ import annotations

import torch

from dmlbench.methods.miners.base import MINERS, Miner
from dmlbench.methods.pairs import PairBatch


@MINERS.register("semihard")
class SemiHardMiner(Miner):
    """For every positive pair (a, p), the most similar negative n that is still less similar than p
    by less than the margin: S_ap - λ < S_an < S_ap. Pairs with no such negative give no triplet."""

    limits = {"margin": ">= 0"}  # checked when the plan loads (methods/declared.py)
    about = {"margin": "margin α: negatives with S_ap - α < S_an < S_ap are kept; Schroff et al. 2015"}

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
class MultiSimilarityMiner(Miner):
    """VTHM (ms paper, section 5.1), also called multi-similarity mining. For anchor i:
    keep negative j if S_ij > min_{k∈P_i} S_ik - λ; keep positive j if S_ij < max_{k∈N_i} S_ik + λ.
    Paper default λ = 0.1. `duplicate_threshold`: positives with S ≥ this are dropped before
    mining (the authors' released code keeps only S < 1 - 1e-5; the paper does not, default None)."""

    limits = {"epsilon": ">= 0", "duplicate_threshold": "[-1, 1]"}  # checked when the plan loads (methods/declared.py)
    about = {
        "epsilon": "margin λ against the hardest positive and negative; ms paper section 5.1",
        "duplicate_threshold": "positives with S at or above it are dropped (code: 1 - 1e-5); the authors' code",
    }

    def __init__(self, epsilon: float = 0.1, duplicate_threshold: float | None = None):
        self.epsilon, self.duplicate_threshold = epsilon, duplicate_threshold

    @torch.no_grad()
    def __call__(self, batch: PairBatch) -> PairBatch:
        s = batch.sim.detach()
        positives = batch.pos
        if self.duplicate_threshold is not None:
            positives = positives & (s < self.duplicate_threshold)
        hardest_pos = s.masked_fill(~positives, float("inf")).min(dim=1, keepdim=True).values
        hardest_neg = s.masked_fill(~batch.neg, float("-inf")).max(dim=1, keepdim=True).values
        neg = batch.neg & (s > hardest_pos - self.epsilon)
        pos = positives & (s < hardest_neg + self.epsilon)
        return batch.with_pairs(pos, neg)


@MINERS.register("hardest")
class HardestMiner(Miner):
    """Hard mining per anchor.

    `negatives: per_anchor` (default; Hermans et al. 2017's batch-hard): the least similar
    positive and the most similar negative, one triplet per anchor.
    `negatives: per_positive` (profs §5.3: "one negative pair for each positive pair", as many hard
    negative pairs as the anchor has positive pairs): every positive pair of the anchor is kept,
    and the k-th least similar positive is matched with the k-th most similar negative, for
    k = 1 … min(#positives, #negatives).
    Anchors lacking a positive or a negative are skipped."""

    NEGATIVES = ("per_anchor", "per_positive")
    limits = {"negatives": NEGATIVES}  # checked when the plan loads (methods/declared.py)
    about = {
        "negatives": "per_anchor: batch-hard, per_positive: a negative per positive pair; "
        "Hermans et al. 2017, profs paper 5.3"
    }

    def __init__(self, negatives: str = "per_anchor"):
        if negatives not in self.NEGATIVES:
            raise ValueError(f"negatives must be one of {self.NEGATIVES}, not {negatives!r}")
        self.negatives = negatives

    @torch.no_grad()
    def __call__(self, batch: PairBatch) -> PairBatch:
        s = batch.sim.detach()
        if self.negatives == "per_anchor":
            valid = batch.pos.any(dim=1) & batch.neg.any(dim=1)
            hardest_pos = s.masked_fill(~batch.pos, float("inf")).argmin(dim=1)
            hardest_neg = s.masked_fill(~batch.neg, float("-inf")).argmax(dim=1)
            anchors = valid.nonzero(as_tuple=True)[0]
            return batch.with_triplets(anchors, hardest_pos[anchors], hardest_neg[anchors])
        positives = s.masked_fill(~batch.pos, float("inf")).argsort(dim=1, stable=True)
        negatives = s.masked_fill(~batch.neg, float("-inf")).argsort(dim=1, descending=True, stable=True)
        count = torch.minimum(batch.pos.sum(dim=1), batch.neg.sum(dim=1))
        ranks = torch.arange(len(s), device=s.device)
        anchors, k = (ranks[None, :] < count[:, None]).nonzero(as_tuple=True)
        return batch.with_triplets(anchors, positives[anchors, k], negatives[anchors, k])


@MINERS.register("distance_weighted")
class DistanceWeightedMiner(Miner):
    """Distance-weighted sampling (Wu et al. 2017). For every positive pair (a, p), one negative n
    drawn with probability ∝ 1/q(D_an), where q(d) ∝ d^{n-2} (1 - d²/4)^{(n-3)/2} is the density of
    distances between uniform points on the unit sphere in n = embedding-size dimensions; D is
    clipped below at `cutoff` (0.5) and negatives with D ≥ `nonzero_loss_cutoff` (1.4) get weight
    0. An anchor whose negatives all have weight 0 draws uniformly among them. Uses torch's global
    generator (seeded per epoch by training)."""

    limits = {"cutoff": "[0, 2)", "nonzero_loss_cutoff": "(0, 2]"}  # checked when the plan loads (methods/declared.py)
    about = {
        "cutoff": "distances D are clipped below at this before weighting; Wu et al. 2017",
        "nonzero_loss_cutoff": "negatives with D at or above this get weight 0; Wu et al. 2017's code",
    }

    def __init__(self, cutoff: float = 0.5, nonzero_loss_cutoff: float = 1.4):
        self.cutoff, self.nonzero_loss_cutoff = cutoff, nonzero_loss_cutoff

    @torch.no_grad()
    def __call__(self, batch: PairBatch) -> PairBatch:
        if batch.dim is None:
            raise ValueError(
                "distance-weighted sampling needs the embedding size (build the batch with PairBatch.from_embeddings)"
            )
        n_dim = batch.dim
        d = batch.distances().detach().clamp(min=self.cutoff)
        log_q = (n_dim - 2) * torch.log(d) + (n_dim - 3) / 2 * torch.log(torch.clamp(1.0 - d.pow(2) / 4.0, min=1e-8))
        log_w = -log_q
        allowed = batch.neg & (d < self.nonzero_loss_cutoff)
        log_w = log_w.masked_fill(~allowed, float("-inf"))
        weights = torch.exp(log_w - log_w.max(dim=1, keepdim=True).values.clamp(min=-1e30))
        weights = torch.nan_to_num(weights, nan=0.0)
        none_allowed = ~allowed.any(dim=1, keepdim=True)
        weights = torch.where(none_allowed, batch.neg.to(weights.dtype), weights)
        anchors, positives = batch.pos.nonzero(as_tuple=True)
        has_neg = batch.neg[anchors].any(dim=1)
        anchors, positives = anchors[has_neg], positives[has_neg]
        negatives = torch.multinomial(weights[anchors], 1).squeeze(1)
        return batch.with_triplets(anchors, positives, negatives)


@MINERS.register("semihard_threshold")
class SemiHardThresholdMiner(Miner):
    """Semi-hard pair mining for pair losses (the dro paper's SH baseline): with no positive to
    compare against, λ stands in for S_ap: negatives with λ - m < S < λ are kept, and every
    positive pair. Defaults λ 0.5, m 0.2."""

    limits = {"lam": "[-1, 1]", "margin": ">= 0"}  # checked when the plan loads (methods/declared.py)
    about = {
        "lam": "threshold λ standing in for S_ap (the base loss's λ); dro paper section 4.2.2 (SH)",
        "margin": "margin m: negatives with λ - m < S < λ are kept; dro paper section 4.2.2 (SH)",
    }

    def __init__(self, lam: float = 0.5, margin: float = 0.2):
        self.lam, self.margin = lam, margin

    @torch.no_grad()
    def __call__(self, batch: PairBatch) -> PairBatch:
        s = batch.sim.detach()
        return batch.with_pairs(batch.pos, batch.neg & (s > self.lam - self.margin) & (s < self.lam))
