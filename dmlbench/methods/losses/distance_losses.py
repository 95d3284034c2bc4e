"""Losses on Euclidean distances of the L2-normalised embeddings (D = sqrt(2 - 2S), D² = 2 - 2S)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dmlbench.methods.losses.base import LOSSES, PairLoss
from dmlbench.methods.losses.pair_losses import TripletLoss
from dmlbench.methods.pairs import PairBatch


@LOSSES.register("contrastive_distance")
class ContrastiveDistanceLoss(PairLoss):
    """Contrastive loss on squared distances, profs eq. 3.2:

    L = mean over pairs ( y D_ij² + (1 - y) [m - D_ij]_+² ),  y = 1 for positive pairs.

    `halved: true` puts Hadsell et al. (2006)'s ½ on both terms (with PROFS's proximal term it
    halves the loss against λ). Defaults: margin m = 1, halved false (the profs paper's form).
    """

    limits = {"margin": "> 0"}  # checked when the plan loads (methods/declared.py)
    about = {
        "margin": "margin ε the negative distances D_ij should exceed; profs paper eq. 3.2",
        "halved": "put the factor 1/2 on both terms, as Hadsell et al. 2006 do; Hadsell et al. 2006",
    }

    def __init__(self, margin: float = 1.0, halved: bool = False):
        super().__init__()
        self.margin, self.factor = margin, 0.5 if halved else 1.0

    def compute(self, batch: PairBatch) -> torch.Tensor:
        d = batch.distances()
        pos, neg = batch.pair_masks()
        terms = self.factor * (d.pow(2) * pos + F.relu(self.margin - d).pow(2) * neg)
        return terms.sum() / (pos | neg).sum().clamp(min=1)


@LOSSES.register("triplet_distance")
class TripletDistanceLoss(TripletLoss):
    """Triplet loss on squared distances (Schroff et al. 2015): mean over triplets of
    [D_ap² - D_an² + m]_+ = [2(S_an - S_ap) + m]_+. Default m = 0.2. Uses the miner's triplets,
    else every valid one."""

    limits = {"margin": ">= 0"}  # checked when the plan loads (methods/declared.py)
    about = {"margin": "margin α by which D_an² should exceed D_ap²; Schroff et al. 2015"}

    scale = 2.0

    def __init__(self, margin: float = 0.2):
        super().__init__(margin)


@LOSSES.register("margin")
class MarginLoss(PairLoss):
    """Margin loss of Wu et al. (2017), "Sampling matters in deep embedding learning":

    L = Σ_pairs [α + y_ij (D_ij - β)]_+ / #(pairs with a positive term) + ν Σ β,
    y = +1 positive, -1 negative. β is learnable (`learn_beta`), one per class when
    `num_classes` is given, else one global β. Defaults α (`margin`) 0.2, β 1.2, ν 0. The
    pairs are the miner's (distance-weighted sampling in the paper: per positive pair (a, p) the
    pair and one drawn (a, n), a negative drawn twice counting twice) or all pairs. Wu et al.'s
    code adds ν·β for every triplet term instead of ν Σ β once; ν = 0 (the default) makes them
    equal.
    """

    # checked when the plan loads (methods/declared.py)
    limits = {"margin": ">= 0", "beta": ">= 0", "nu": ">= 0", "num_classes": ">= 1"}
    about = {
        "margin": "margin α on either side of the boundary β; Wu et al. 2017",
        "beta": "initial boundary β between positive and negative distances; Wu et al. 2017",
        "nu": "weight ν of the regulariser on β; Wu et al. 2017",
        "learn_beta": "whether β is trained with the network; Wu et al. 2017",
        "num_classes": "number of training classes (one β each), filled in by the training; the suite",
    }

    needs = ("num_classes",)  # one β per class, the training's number of classes

    def __init__(
        self,
        margin: float = 0.2,
        beta: float = 1.2,
        nu: float = 0.0,
        learn_beta: bool = True,
        num_classes: int | None = None,
    ):
        super().__init__()
        self.margin, self.nu = margin, nu
        shape = (num_classes,) if num_classes else (1,)
        self.beta = nn.Parameter(torch.full(shape, float(beta)), requires_grad=learn_beta)
        self.class_specific = bool(num_classes)

    def compute(self, batch: PairBatch) -> torch.Tensor:
        d = batch.distances()
        pos, neg = batch.pair_counts()
        if self.class_specific:
            beta = self.beta[batch.labels][:, None]
        else:
            beta = self.beta
        pos_terms, neg_terms = F.relu(self.margin + (d - beta)), F.relu(self.margin - (d - beta))
        active = ((pos_terms > 0) * pos + (neg_terms > 0) * neg).sum().clamp(min=1)
        return (pos_terms * pos + neg_terms * neg).sum() / active + self.nu * self.beta.sum()
