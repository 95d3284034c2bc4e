"""Proxy-based losses: each class has learnable proxies/centres, trained with the network
(`ProxyLoss`: they take `num_classes` and `embedding_dim`, filled in by training, labels 0..C-1,
and no miner)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from dmlbench.methods.losses.base import LOSSES, ProxyLoss


@LOSSES.register("proxy_nca")
class ProxyNCALoss(ProxyLoss):
    """Proxy-NCA (Movshovitz-Attias et al. 2017), one proxy p_c per class, x and p L2-normalised:

    L = mean_i -log( exp(-s·d(x_i, p_{y_i})) / Σ_{z≠y_i} exp(-s·d(x_i, p_z)) ),  d = ‖x - p‖²

    The paper has s = 1 (the default); many implementations scale distances (s = 3 or more).
    """

    # checked when the plan loads (methods/declared.py)
    limits = {"num_classes": ">= 2", "embedding_dim": ">= 1", "scale": "> 0"}
    about = {
        "num_classes": "number of training classes, one proxy each, filled in by the training; the suite",
        "embedding_dim": "embedding size, the proxies' dimension, filled in by the training; the suite",
        "scale": "scale s of the squared distances (1 in the paper, often 3+); Movshovitz-Attias et al. 2017",
    }

    def __init__(self, num_classes: int, embedding_dim: int, scale: float = 1.0):
        super().__init__()
        self.proxies = nn.Parameter(torch.randn(num_classes, embedding_dim) / math.sqrt(embedding_dim))
        self.scale = scale

    def forward(self, embeddings, labels, miner=None):
        x = F.normalize(embeddings, dim=1)
        p = F.normalize(self.proxies, dim=1)
        logits = -self.scale * (2.0 - 2.0 * x @ p.T)
        own = logits.gather(1, labels[:, None]).squeeze(1)
        others = logits.scatter(1, labels[:, None], float("-inf"))
        return (torch.logsumexp(others, dim=1) - own).mean()

    def class_vectors(self) -> torch.Tensor:
        """One unit vector per class (its proxy): what PROFS-HNCM ranks classes by."""
        return F.normalize(self.proxies, dim=1)


@LOSSES.register("softtriple")
class SoftTripleLoss(ProxyLoss):
    """SoftTriple (Qian et al. 2019): K centres w_c^k per class, x and w L2-normalised.

    S_{i,c} = Σ_k softmax_k(x_iᵀw_c^k / γ) x_iᵀw_c^k
    L = mean_i -log( e^{λ(S_{i,y}-δ)} / (e^{λ(S_{i,y}-δ)} + Σ_{j≠y} e^{λ S_{i,j}}) ) + τ R,
    R = Σ_c Σ_{k<k'} sqrt(2 + 1e-5 - 2 w_c^kᵀ w_c^k') / (C K (K-1))
    Defaults from the paper: λ 20, γ 0.1, τ 0.2, δ 0.01, K 10.
    """

    limits = {
        "num_classes": ">= 2",
        "embedding_dim": ">= 1",
        "centres_per_class": ">= 1",
        "la": "> 0",
        "gamma": "> 0",
        "tau": ">= 0",
        "margin": ">= 0",
    }  # checked when the plan loads (methods/declared.py)
    about = {
        "num_classes": "number of training classes C, filled in by the training; the suite",
        "embedding_dim": "embedding size, the centres' dimension, filled in by the training; the suite",
        "centres_per_class": "number of centres K per class; Qian et al. 2019",
        "la": "scale λ of the class similarities in the softmax; Qian et al. 2019",
        "gamma": "temperature γ of the soft assignment to a class's centres; Qian et al. 2019",
        "tau": "weight τ of the regulariser R that merges a class's centres; Qian et al. 2019",
        "margin": "margin δ taken off the own class's similarity; Qian et al. 2019",
    }

    def __init__(
        self,
        num_classes: int,
        embedding_dim: int,
        centres_per_class: int = 10,
        la: float = 20.0,
        gamma: float = 0.1,
        tau: float = 0.2,
        margin: float = 0.01,
    ):
        super().__init__()
        self.C, self.K = num_classes, centres_per_class
        self.la, self.gamma, self.tau, self.margin = la, gamma, tau, margin
        self.centres = nn.Parameter(
            torch.randn(num_classes * centres_per_class, embedding_dim) / math.sqrt(embedding_dim)
        )

    def forward(self, embeddings, labels, miner=None):
        x = F.normalize(embeddings, dim=1)
        w = F.normalize(self.centres, dim=1)
        sim = (x @ w.T).view(-1, self.C, self.K)
        soft = (F.softmax(sim / self.gamma, dim=2) * sim).sum(dim=2)
        logits = self.la * soft.scatter_add(1, labels[:, None], soft.new_full((len(labels), 1), -self.margin))
        loss = F.cross_entropy(logits, labels)
        if self.tau > 0 and self.K > 1:
            per_class = w.view(self.C, self.K, -1)
            within = per_class @ per_class.transpose(1, 2)  # C × K × K
            upper = torch.triu(torch.ones(self.K, self.K, device=x.device), 1)
            distance = torch.sqrt(torch.clamp(2.0 + 1e-5 - 2.0 * within, min=1e-8))
            loss = loss + self.tau * (distance * upper).sum() / (self.C * self.K * (self.K - 1))
        return loss

    def class_vectors(self) -> torch.Tensor:
        """One unit vector per class, the normalised mean of its normalised centres: what
        PROFS-HNCM ranks classes by ("cluster centres as representatives")."""
        w = F.normalize(self.centres, dim=1).view(self.C, self.K, -1)
        return F.normalize(w.mean(dim=1), dim=1)


@LOSSES.register("proxy_anchor")
class ProxyAnchorLoss(ProxyLoss):
    """Proxy-Anchor (Kim et al., CVPR 2020, eq. 4), one proxy p per class, x and p L2-normalised,
    s(x, p) their cosine:

    L = 1/|P⁺| Σ_{p∈P⁺} log(1 + Σ_{x∈X_p⁺} e^{−α(s(x,p)−δ)}) + 1/|P| Σ_{p∈P} log(1 + Σ_{x∈X_p⁻} e^{α(s(x,p)+δ)})

    P: every proxy; P⁺: the proxies of the batch's classes; X_p⁺ / X_p⁻: the batch's embeddings of /
    not of p's class. The paper's α 32 and δ 0.1; proxies drawn as the authors' code does (Kaiming
    normal, fan-out) and trained at 100× the trunk's rate (the catalogue's `optimizer.loss_lr_mult`).
    Each log(1 + Σ e^a) is computed as softplus(logsumexp a), stable at α = 32.
    """

    limits = {"num_classes": ">= 2", "embedding_dim": ">= 1", "alpha": "> 0", "delta": ">= 0"}
    about = {
        "num_classes": "number of training classes, one proxy each, filled in by the training; the suite",
        "embedding_dim": "embedding size, the proxies' dimension, filled in by the training; the suite",
        "alpha": "scale α of the proxy-embedding similarities; Kim et al. 2020 eq. 4",
        "delta": "margin δ; Kim et al. 2020 eq. 4",
    }

    def __init__(self, num_classes: int, embedding_dim: int, alpha: float = 32.0, delta: float = 0.1):
        super().__init__()
        self.proxies = nn.Parameter(nn.init.kaiming_normal_(torch.empty(num_classes, embedding_dim), mode="fan_out"))
        self.alpha, self.delta = alpha, delta

    def forward(self, embeddings, labels, miner=None):
        s = F.normalize(embeddings, dim=1) @ F.normalize(self.proxies, dim=1).T  # batch × classes
        own = F.one_hot(labels, self.proxies.shape[0]).bool()
        excluded = torch.tensor(float("-inf"), dtype=s.dtype, device=s.device)
        positive = F.softplus(torch.logsumexp(torch.where(own, -self.alpha * (s - self.delta), excluded), dim=0))
        negative = F.softplus(torch.logsumexp(torch.where(own, excluded, self.alpha * (s + self.delta)), dim=0))
        present = own.any(dim=0)
        return positive[present].sum() / present.sum() + negative.mean()

    def class_vectors(self) -> torch.Tensor:
        """One unit vector per class (its proxy)."""
        return F.normalize(self.proxies, dim=1)
