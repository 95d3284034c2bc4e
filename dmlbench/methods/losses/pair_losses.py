"""Contrastive, triplet and multi-similarity losses in the similarity form of the ms paper.

S is the cosine similarity of L2-normalised embeddings; P_i / N_i are the positives / negatives of
anchor i (after mining, when a miner ran).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dmlbench.methods.losses.base import LOSSES, PairLoss, masked_logsumexp, masked_mean
from dmlbench.methods.pairs import PairBatch


@LOSSES.register("contrastive")
class ContrastiveLoss(PairLoss):
    """Contrastive loss, ms eq. 5: positives pulled up to the similarity `pos_margin`, negatives
    pushed below `neg_margin` (the paper's threshold λ).

    L = mean_{(i,j) positive} [pos_margin - S_ij]_+ + mean_{(i,j) negative} [S_ij - neg_margin]_+

    The paper writes the positive term as -S_ij; with pos_margin = 1 (the default) [1 - S_ij]_+ =
    1 - S_ij, which differs from it by a constant (same gradient) and keeps the loss non-negative.
    The two margins are separate settings so the fair protocol can search them apart, as the reality
    check does. Each pair type is averaged over its own pairs.
    """

    limits = {"neg_margin": "[-1, 1]", "pos_margin": "[-1, 1]"}  # checked when the plan loads (methods/declared.py)
    about = {
        "neg_margin": "threshold λ: negatives are pushed below this similarity; ms paper eq. 5",
        "pos_margin": "similarity positives are pulled up to (1: eq. 5's -S up to a constant); the suite's choice",
    }

    def __init__(self, neg_margin: float = 0.5, pos_margin: float = 1.0):
        super().__init__()
        self.neg_margin, self.pos_margin = neg_margin, pos_margin

    def compute(self, batch: PairBatch) -> torch.Tensor:
        s = batch.sim
        pos, neg = batch.pair_masks()
        # the hinge's kink counts as active, so S = pos_margin = 1 keeps the paper's unit weight
        positive = masked_mean(torch.where(s <= self.pos_margin, self.pos_margin - s, torch.zeros_like(s)), pos)
        negative = masked_mean(F.relu(s - self.neg_margin), neg)
        return positive + negative


class TripletFormLoss(PairLoss):
    """A loss that is the mean over triplets (a, p, n) of a function ℓ(S_ap, S_an).

    Uses the triplets of a triplet miner when one ran, else every valid triplet of the batch.
    Subclasses define `triplet_terms`, which the ephn analysis also differentiates directly.
    """

    def triplet_terms(self, s_ap: torch.Tensor, s_an: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def compute(self, batch: PairBatch) -> torch.Tensor:
        a, p, n = batch.triplets if batch.triplets is not None else batch.all_triplets()
        if len(a) == 0:
            return batch.sim.sum() * 0.0
        return self.triplet_terms(batch.sim[a, p], batch.sim[a, n]).mean()


@LOSSES.register("triplet")
class TripletLoss(TripletFormLoss):
    """Triplet loss with margin, ms eq. 7: L = mean_{(a,p,n)} [S_an - S_ap + λ]_+."""

    limits = {"margin": ">= 0"}  # checked when the plan loads (methods/declared.py)
    about = {"margin": "margin λ by which S_ap should exceed S_an; ms paper eq. 7"}

    scale = 1.0  # the distance form is the same hinge on 2(S_an - S_ap), since D² = 2 - 2S

    def __init__(self, margin: float = 0.1):
        super().__init__()
        self.margin = margin

    def triplet_terms(self, s_ap: torch.Tensor, s_an: torch.Tensor) -> torch.Tensor:
        return F.relu(self.scale * (s_an - s_ap) + self.margin)


@LOSSES.register("multi_similarity")
class MultiSimilarityLoss(PairLoss):
    """Multi-similarity loss (RAW), ms eq. 17, averaged over the m anchors of the batch:

    L = 1/m Σ_i { 1/α log[1 + Σ_{k∈P_i} exp(-α(S_ik - γ))] + 1/β log[1 + Σ_{k∈N_i} exp(β(S_ik - γ))] }

    Paper text: α = 2, β = 50, γ = 0.5. The authors' released code uses β = 40 (set `beta=40`).
    """

    limits = {"alpha": "> 0", "beta": "> 0", "gamma": "[-1, 1]"}  # checked when the plan loads (methods/declared.py)
    about = {
        "alpha": "scale α of the positive pairs' term; ms paper eq. 17",
        "beta": "scale β of the negative pairs' term (the authors' code: 40); ms paper eq. 17",
        "gamma": "similarity threshold γ both terms are taken about; ms paper eq. 17",
    }

    def __init__(self, alpha: float = 2.0, beta: float = 50.0, gamma: float = 0.5):
        super().__init__()
        self.alpha, self.beta, self.gamma = alpha, beta, gamma

    def compute(self, batch: PairBatch) -> torch.Tensor:
        s = batch.sim
        pos, neg = batch.pair_masks()
        positive = _log1p_sum_exp(-self.alpha * (s - self.gamma), pos) / self.alpha
        negative = _log1p_sum_exp(self.beta * (s - self.gamma), neg) / self.beta
        return (positive + negative).mean()


@LOSSES.register("binomial")
class BinomialDevianceLoss(PairLoss):
    """Binomial deviance (Yi et al.), ms eq. 12, summed over the anchors as the paper writes it:

    L = Σ_i { 1/|P_i| Σ_{k∈P_i} log[1 + e^{α(γ - S_ik)}] + 1/|N_i| Σ_{k∈N_i} log[1 + e^{β(S_ik - γ)}] }

    Pair weights (eqs. 13-14): w = (1/|P_i|) α σ(α(γ - S)) for positives, (1/|N_i|) β σ(β(S - γ))
    for negatives. Defaults α = 2, β = 50, γ = 0.5 (ms section 6). `reduction="mean"` divides by m.
    """

    # checked when the plan loads (methods/declared.py)
    limits = {"alpha": "> 0", "beta": "> 0", "gamma": "[-1, 1]", "reduction": ("sum", "mean")}
    about = {
        "alpha": "sensitivity α of the positive pairs to the threshold γ; ms paper eq. 12",
        "beta": "sensitivity β of the negative pairs to the threshold γ; ms paper eq. 12",
        "gamma": "soft similarity threshold γ; ms paper eq. 12",
        "reduction": "sum over the anchors as eq. 12 writes it, or mean over the m anchors; the suite's choice",
    }

    def __init__(self, alpha: float = 2.0, beta: float = 50.0, gamma: float = 0.5, reduction: str = "sum"):
        super().__init__()
        if reduction not in ("sum", "mean"):
            raise ValueError(f"reduction must be 'sum' or 'mean', not {reduction!r}")
        self.alpha, self.beta, self.gamma, self.reduction = alpha, beta, gamma, reduction

    def compute(self, batch: PairBatch) -> torch.Tensor:
        s = batch.sim
        pos, neg = batch.pair_masks()
        # log(1 + e^x) as logaddexp(0, x): exact, where F.softplus turns linear above x = 20
        zero = torch.zeros((), dtype=s.dtype, device=s.device)
        positive = _row_mean(torch.logaddexp(zero, self.alpha * (self.gamma - s)), pos)
        negative = _row_mean(torch.logaddexp(zero, self.beta * (s - self.gamma)), neg)
        total = (positive + negative).sum()
        return total / len(s) if self.reduction == "mean" else total


@LOSSES.register("lifted")
class GeneralisedLiftedLoss(PairLoss):
    """Generalised lifted structure loss (Hermans et al.), ms eq. 9, in similarity form:

    L = 1/m Σ_i [ log Σ_{k∈P_i} e^{-S_ik} + log Σ_{k∈N_i} e^{λ + S_ik} ]_+

    The printed eq. 9 has "- log Σ e^{λ - S}"; the weights the paper derives from it (eqs. 10-11,
    w ∝ e^{S} for negatives) and Hermans et al.'s definition are those of the form above, which
    is implemented. Anchors without positives or negatives contribute 0. Default λ = 1.
    """

    limits = {"margin": ">= 0"}  # checked when the plan loads (methods/declared.py)
    about = {"margin": "margin λ added to the negative similarities; ms paper eq. 9"}

    def __init__(self, margin: float = 1.0):
        super().__init__()
        self.margin = margin

    def compute(self, batch: PairBatch) -> torch.Tensor:
        s = batch.sim
        pos, neg = batch.pair_masks()
        positive, has_pos = masked_logsumexp(-s, pos)
        negative, has_neg = masked_logsumexp(self.margin + s, neg)
        valid = has_pos & has_neg
        hinge = F.relu(torch.where(valid, positive + negative, torch.zeros_like(positive)))
        return hinge.mean()


@LOSSES.register("lifted_structure")
class LiftedStructureLoss(PairLoss):
    """Lifted structured embedding loss (Oh Song et al. 2016), on Euclidean distances D of the
    normalised embeddings, over the unordered positive pairs P̂ of the batch:

    J_ij = log( Σ_{k∈N_i} e^{α - D_ik} + Σ_{l∈N_j} e^{α - D_jl} ) + D_ij,
    L = 1/(2|P̂|) Σ_{(i,j)∈P̂} [J_ij]_+²        default α (`margin`) = 1
    """

    limits = {"margin": ">= 0"}  # checked when the plan loads (methods/declared.py)
    about = {"margin": "margin α the negative distances D_ik should exceed; Oh Song et al. 2016"}

    def __init__(self, margin: float = 1.0):
        super().__init__()
        self.margin = margin

    def compute(self, batch: PairBatch) -> torch.Tensor:
        d = batch.distances()
        pos, neg = batch.pair_masks()
        upper = torch.triu(pos, diagonal=1)
        i, j = upper.nonzero(as_tuple=True)
        if len(i) == 0:
            return batch.sim.sum() * 0.0
        terms = self.margin - d
        both, has_neg = masked_logsumexp(torch.cat([terms[i], terms[j]], dim=1), torch.cat([neg[i], neg[j]], dim=1))
        j_ij = torch.where(has_neg, both + d[i, j], torch.zeros_like(both))
        return F.relu(j_ij).pow(2).sum() / (2 * len(i))


@LOSSES.register("pair_sum")
class PairSumLoss(PairLoss):
    """Equal weights on every pair it sees (ms's "VTHM" ablation row, used with the VTHM miner):

    L = 1/m Σ_i ( Σ_{k∈N_i} S_ik - Σ_{k∈P_i} S_ik ),   so w = 1 for every kept pair (Theorem 3.1).
    """

    about = {}  # no parameters

    def compute(self, batch: PairBatch) -> torch.Tensor:
        s = batch.sim
        pos, neg = batch.pair_masks()
        return ((s * neg).sum() - (s * pos).sum()) / len(s)


def _row_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-row mean of `values` over `mask` (0 for rows with nothing selected)."""
    return (values * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)


def _log1p_sum_exp(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Row-wise log(1 + Σ_{mask} exp(logits)), computed stably (an extra zero logit stands for the 1)."""
    masked = logits.masked_fill(~mask, float("-inf"))
    zero = torch.zeros(len(logits), 1, dtype=logits.dtype, device=logits.device)
    return torch.logsumexp(torch.cat([zero, masked], dim=1), dim=1)
