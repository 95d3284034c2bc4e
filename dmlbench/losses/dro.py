"""The DRO framework (dro paper, "A simple and effective framework for pairwise deep metric learning").

A pairwise loss l_ij is computed for every ordered pair of the batch (self pairs excluded); pairs
with zero loss are dropped; a distribution p over the remaining pairs is chosen by maximising
Σ p_ij l_ij over an uncertainty set, and the model follows the gradient of Σ p*_ij l_ij with p*
held constant (the paper's Lemma 1).

Base pair losses (`base`), y = +1 for positive and -1 for negative pairs:
- `margin`:   l = [m + y(λ - S)]_+                       (defaults m 0.2, λ 0.5)
- `binomial`: l = log(1 + e^{α(λ - S)}) positive, log(1 + e^{β(S - λ)}) negative (α 2, β 50)
- `linear`:   l = m + y(λ - S), not clipped: the margin loss when no pair is clipped, used by the
              dro.eq identities.

K is either `K` (a number of pairs) or `k_per_anchor` × B (the paper's K = 2B in Figures 1, 3).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dmlbench.losses.base import LOSSES, PairLoss
from dmlbench.pairs import PairBatch

BASES = ("margin", "binomial", "linear")


class DROLoss(PairLoss):
    """Shared part: the base pair losses and the set of pairs the robust step sees."""

    def __init__(self, base: str = "margin", margin: float = 0.2, lam: float = 0.5,
                 alpha: float = 2.0, beta: float = 50.0):
        super().__init__()
        if base not in BASES:
            raise ValueError(f"base must be one of {BASES}, not {base!r}")
        self.base, self.margin, self.lam, self.alpha, self.beta = base, margin, lam, alpha, beta

    def pair_losses(self, batch: PairBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(l, pos, neg): the B×B base losses and the masks of the pairs kept (non-zero loss)."""
        s = batch.sim
        pos, neg = batch.pair_masks()
        y = pos.to(s.dtype) - neg.to(s.dtype)
        if self.base == "binomial":
            zero = torch.zeros((), dtype=s.dtype, device=s.device)
            l = torch.where(pos, torch.logaddexp(zero, self.alpha * (self.lam - s)),
                            torch.logaddexp(zero, self.beta * (s - self.lam)))
        else:
            l = self.margin + y * (self.lam - s)
            if self.base == "margin":
                l = F.relu(l)
        if self.base != "linear":
            pos, neg = pos & (l > 0), neg & (l > 0)
        return l, pos, neg

    @staticmethod
    def resolve_k(k: int | None, k_per_anchor: float | None, batch_size: int) -> int:
        if (k is None) == (k_per_anchor is None):
            raise ValueError("give exactly one of K and k_per_anchor")
        return int(k) if k is not None else int(round(k_per_anchor * batch_size))


class _TopKBase(DROLoss):
    """K as a number of pairs (`K`) or per anchor (`k_per_anchor` × B); `k_counting` paper or code."""

    def __init__(self, K: int | None = None, k_per_anchor: float | None = None,
                 k_counting: str = "paper", **base):
        super().__init__(**base)
        if k_counting not in ("paper", "code"):
            raise ValueError(f"k_counting must be 'paper' or 'code', not {k_counting!r}")
        self.K, self.k_per_anchor, self.k_counting = K, k_per_anchor, k_counting

    def k(self, batch_size: int) -> int:
        return self.resolve_k(self.K, self.k_per_anchor, batch_size)


@LOSSES.register("dro_topk")
class DROTopK(_TopKBase):
    """DRO-TopK: the mean of the K largest non-zero pair losses of the batch
    (U = {Σp = 1, 0 ≤ p ≤ 1/K}). `k_counting="code"` keeps 4K pairs, as the authors' released
    code does; the paper tables' K is the paper's count."""

    def compute(self, batch: PairBatch) -> torch.Tensor:
        l, pos, neg = self.pair_losses(batch)
        values = l[pos | neg]
        k = self.k(len(l)) * (4 if self.k_counting == "code" else 1)
        if len(values) == 0:
            return l.sum() * 0.0
        return values.topk(min(k, len(values))).values.mean()


@LOSSES.register("dro_topk_pn")
class DROTopKPN(_TopKBase):
    """DRO-TopK-PN: the K/2 largest non-zero positive and the K/2 largest non-zero negative pair
    losses, averaged over the selected pairs. `k_counting="code"` keeps 2K per side (released code)."""

    def compute(self, batch: PairBatch) -> torch.Tensor:
        l, pos, neg = self.pair_losses(batch)
        k = self.k(len(l))
        per_side = 2 * k if self.k_counting == "code" else k // 2
        chosen = [v.topk(min(per_side, len(v))).values for v in (l[pos], l[neg]) if len(v)]
        if not chosen:
            return l.sum() * 0.0
        return torch.cat(chosen).mean()


@LOSSES.register("dro_kl")
class DROKL(DROLoss):
    """DRO-KL: p* = argmax Σ p l - γ KL(p ‖ uniform) over the non-zero pairs, i.e.
    p* ∝ exp(l/γ) (held constant); L = Σ p* l. With `samples` = n, n pairs are drawn from p*
    (with replacement) and L is their mean loss instead. `code_weights=True` uses
    p ∝ exp(l/γ) - 1, as the released code does."""

    def __init__(self, gamma: float = 0.1, samples: int | None = None, code_weights: bool = False,
                 **base):
        super().__init__(**base)
        self.gamma, self.samples, self.code_weights = gamma, samples, code_weights

    def weights(self, values: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            if self.code_weights:
                w = torch.expm1(values / self.gamma)
                return w / w.sum()
            return torch.softmax(values / self.gamma, dim=0)

    def compute(self, batch: PairBatch) -> torch.Tensor:
        l, pos, neg = self.pair_losses(batch)
        values = l[pos | neg]
        if len(values) == 0:
            return l.sum() * 0.0
        p = self.weights(values)
        if self.samples:
            drawn = torch.multinomial(p, self.samples, replacement=True)
            return values[drawn].mean()
        return (p * values).sum()


@LOSSES.register("dro_kl_g")
class DROKLGrouped(DROLoss):
    """DRO-KL-G (eq. 7): per anchor i, the positive group and the negative group each get
    p ∝ exp(l/γ) (γ_pos, γ_neg); L = Σ_i (Σ_{P_i} p l + Σ_{N_i} p l), p held constant.
    `pseudo_pair=True` adds one zero-loss pair to each group (supplement 6.1.2, the MS case).
    With γ = 1 and the margin loss (no pair clipped) the gradient is the lifted-structure one;
    with pseudo pairs, γ_pos = 1/α, γ_neg = 1/β it is MS's with thresholds c± = λ ± m."""

    def __init__(self, gamma: float = 1.0, gamma_pos: float | None = None,
                 gamma_neg: float | None = None, pseudo_pair: bool = False, **base):
        super().__init__(**base)
        self.gamma_pos = gamma if gamma_pos is None else gamma_pos
        self.gamma_neg = gamma if gamma_neg is None else gamma_neg
        self.pseudo_pair = pseudo_pair

    def _group_weights(self, l: torch.Tensor, mask: torch.Tensor, gamma: float) -> torch.Tensor:
        with torch.no_grad():
            logits = (l / gamma).masked_fill(~mask, float("-inf"))
            if self.pseudo_pair:
                zero = torch.zeros(len(l), 1, dtype=l.dtype, device=l.device)
                return torch.softmax(torch.cat([zero, logits], dim=1), dim=1)[:, 1:]
            empty = ~mask.any(dim=1, keepdim=True)
            return torch.softmax(logits.masked_fill(empty, 0.0), dim=1) * mask

    def compute(self, batch: PairBatch) -> torch.Tensor:
        l, pos, neg = self.pair_losses(batch)
        p = self._group_weights(l, pos, self.gamma_pos) + self._group_weights(l, neg, self.gamma_neg)
        return (p * l * (pos | neg)).sum()


@LOSSES.register("pair_margin")
class PairMarginAverage(DROLoss):
    """The base margin loss averaged over the pairs a miner kept (non-zero losses only): the
    semi-hard (SH) and distance-weighted (DWS) baselines of the dro paper."""

    def compute(self, batch: PairBatch) -> torch.Tensor:
        l, pos, neg = self.pair_losses(batch)
        kept = pos | neg
        return (l * kept).sum() / kept.sum().clamp(min=1)
