"""Losses over (anchor, positive, all negatives) tuples: N-pair and angular."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from dmlbench.methods.losses.base import LOSSES, PairLoss, refuse_miner
from dmlbench.methods.pairs import PairBatch


def _softplus_logsumexp(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log(1 + Σ_{mask} e^{logits}) per row."""
    masked = logits.masked_fill(~mask, float("-inf"))
    zero = torch.zeros(len(logits), 1, dtype=logits.dtype, device=logits.device)
    return torch.logsumexp(torch.cat([zero, masked], dim=1), dim=1)


@LOSSES.register("npair")
class NPairLoss(PairLoss):
    """Multi-class N-pair loss (Sohn 2016). From a batch of N classes, the first two images of each
    class form the pair (x_i, x_i⁺); the negatives of anchor i are the other pairs' x_j⁺:

    L = 1/N Σ_i log(1 + Σ_{j≠i} exp(f_iᵀ f_j⁺ - f_iᵀ f_i⁺)) + l2_reg · mean ‖f‖²

    f are the embeddings as given: unnormalised, as Sohn's, when the model has `normalize: false`
    (the catalogue's N-pair methods); on unit vectors the norm term would be constant. Batches of
    N classes × 2 images (`batch.per_class: 2`) are the paper's.
    Default l2_reg 0.002 (Sohn).
    """

    limits = {"l2_reg": ">= 0"}  # checked when the plan loads (methods/declared.py)
    about = {"l2_reg": "weight of the L2 regulariser on the embeddings (mean squared norm); Sohn 2016"}

    takes_miner = False  # builds its own tuples
    restricts_pairs = False

    def __init__(self, l2_reg: float = 0.002):
        super().__init__()
        self.l2_reg = l2_reg

    def forward(self, embeddings, labels, miner=None):
        refuse_miner(self, miner)
        anchors, positives = first_two_of_each_class(labels)
        if len(anchors) < 2:
            return embeddings.sum() * 0.0
        logits = embeddings[anchors] @ embeddings[positives].T
        target = torch.arange(len(anchors), device=embeddings.device)
        return F.cross_entropy(logits, target) + self.l2_reg * embeddings.pow(2).sum(dim=1).mean()


def first_two_of_each_class(labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices of the first and second image of every class that has two, in order of appearance."""
    anchors, positives, seen = [], [], {}
    for index, label in enumerate(labels.tolist()):
        if label not in seen:
            seen[label] = index
        elif seen[label] is not None:
            anchors.append(seen[label])
            positives.append(index)
            seen[label] = None
    device = labels.device
    return torch.tensor(anchors, device=device), torch.tensor(positives, device=device)


@LOSSES.register("angular")
class AngularLoss(PairLoss):
    """Angular loss (Wang et al. 2017), N-pair form, on L2-normalised embeddings x:

    f_apn = 4 tan²α (x_a + x_p)ᵀ x_n - 2 (1 + tan²α) x_aᵀ x_p
    L = mean_{(a,p)} log(1 + Σ_{n∈N_a} exp(f_apn)).       Default α = 40°.
    """

    limits = {"alpha_degrees": "(0, 90)"}  # checked when the plan loads (methods/declared.py)
    about = {"alpha_degrees": "angle bound α of the triangle at the negative, in degrees; Wang et al. 2017"}

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
