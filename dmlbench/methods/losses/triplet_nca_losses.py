"""The first- and second-order triplet losses of the ephn paper ("Extreme triplet learning").

Both are functions of a triplet's two cosine similarities, averaged over the mined triplets
(one per anchor with the `ephn` miner). T is a temperature: the paper's equations have T = 1;
the authors' public EPHN code divides the similarities by T = 0.1.
"""

from __future__ import annotations

import torch

from dmlbench.methods.losses.base import LOSSES
from dmlbench.methods.losses.pair_losses import TripletFormLoss


def _softplus(x: torch.Tensor) -> torch.Tensor:
    """log(1 + e^x), exact for large x (F.softplus turns linear above a threshold)."""
    return torch.logaddexp(torch.zeros((), dtype=x.dtype, device=x.device), x)


@LOSSES.register("triplet_nca")
class TripletNCALoss(TripletFormLoss):
    """L1st, ephn eq. 1 (the NCA form of the triplet loss):

    L = -log( e^{S_ap/T} / (e^{S_ap/T} + e^{S_an/T}) ) = log(1 + e^{(S_an - S_ap)/T}).
    Default T = 1 (paper); the authors' code uses T = 0.1.
    """

    limits = {"temperature": "> 0"}  # checked when the plan loads (methods/declared.py)
    about = {"temperature": "temperature T dividing the similarities (paper 1, authors' code 0.1); ephn paper eq. 1"}

    def __init__(self, temperature: float = 1.0):
        super().__init__()
        self.temperature = temperature

    def triplet_terms(self, s_ap: torch.Tensor, s_an: torch.Tensor) -> torch.Tensor:
        return _softplus((s_an - s_ap) / self.temperature)


@LOSSES.register("triplet_2nd")
class SecondOrderTripletLoss(TripletFormLoss):
    """L2nd, ephn eq. 16 (the second-order triplet loss):

    L = -log( e^{(S_ap - S_ap²/2)/T} / (e^{(S_ap - S_ap²/2)/T} + e^{(S_an²/2)/T}) ).
    Its gradients are those of L1st with g_p weighted by w_ap = 1 - S_ap and g_n by w_an = S_an
    (eqs. 13-15). Default T = 1 (paper). The authors' later public code replaced this loss by
    another hard-triplet term; the suite implements eq. 16.
    """

    limits = {"temperature": "> 0"}  # checked when the plan loads (methods/declared.py)
    about = {"temperature": "temperature T dividing the exponents (eq. 16 has T = 1); the suite's choice"}

    def __init__(self, temperature: float = 1.0):
        super().__init__()
        self.temperature = temperature

    def triplet_terms(self, s_ap: torch.Tensor, s_an: torch.Tensor) -> torch.Tensor:
        return _softplus((0.5 * s_an.pow(2) - (s_ap - 0.5 * s_ap.pow(2))) / self.temperature)
