"""The DRO framework (dro paper, "A simple and effective framework for pairwise deep metric learning").

A pairwise loss l_ij is computed for every pair of the batch (self pairs excluded); pairs with
zero loss are dropped; a distribution p over the remaining pairs is chosen by maximising
Σ p_ij l_ij over an uncertainty set, and the model follows the gradient of Σ p*_ij l_ij with p*
held constant (the paper's Lemma 1).

Pairs are counted as the paper counts them (section 4.2.3: B = 640 and M = 5 give |P| = 1280,
i.e. 128 × C(5, 2) distinct pairs): {i, j} is one pair, not two, since l_ij = l_ji. The robust
step of the `paper` variant runs over the distinct pairs (i < j), so K is a number of distinct
pairs, and K = 2B keeps 2B of them.

Base pair losses (`base`), y = +1 for positive and -1 for negative pairs:
- `margin`:   l = [m + y(λ - S)]_+                       (defaults m 0.2, λ 0.5)
- `binomial`: l = log(1 + e^{α(λ - S)}) positive, log(1 + e^{β(S - λ)}) negative (α 2, β 50)
- `linear`:   l = m + y(λ - S), not clipped: the margin loss when no pair is clipped, used by the
              dro.eq identities.

K is either `K` (a number of distinct pairs) or `k_per_anchor` × B (the paper's K = 2B in
Figures 1, 3).

`variant: code` reproduces the authors' released code (`DRO/DRO_TOPK.py`, `DRO/DRO.py`,
`DRO/LOSSES.py`) instead of the text. It works on the ordered B × B matrix, where each distinct
pair appears twice, and its K is half the paper's, K_code = K/2; zero-loss pairs are kept; TopK
averages the 4·K_code = 2K largest ordered entries, i.e. the K largest distinct pairs (all pairs
when there are fewer); TopK-PN averages the 2·K_code largest of each side over 4·K_code (when a side
has fewer than 2·K_code entries: all P positives and the P largest negatives, over 2P; zero, still
attached to the graph, when the batch has no positive pair, where the released code divides by
zero); DRO-KL draws
4·K_code pairs from p ∝ e^{l/γ} - 1 restricted to the pairs at or above the (4·K_code + 1)-th
largest p; the binomial base is (2/α) log(1 + e^{α(λ - S)}) for positives and
(2/β) log(1 + e^{β(S - λ)}) for negatives with the run scripts' β = 40 unless `beta` is given.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dmlbench.methods.losses.base import LOSSES, PairLoss
from dmlbench.methods.pairs import PairBatch

BASES = ("margin", "binomial", "linear")
VARIANTS = ("paper", "code")
CODE_BINOMIAL_BETA = 40.0  # the released run scripts' negative scale (ALPHA=40 there)


def distinct(mask: torch.Tensor) -> torch.Tensor:
    """The distinct pairs {i, j} of a B×B mask, each once (i < j): a pair is kept when either of
    its ordered entries is."""
    return torch.triu(mask | mask.T, diagonal=1)


class DROLoss(PairLoss):
    """Shared part: the base pair losses, the set of pairs the robust step sees, and K."""

    limits = {
        "base": BASES,
        "variant": VARIANTS,
        "margin": ">= 0",
        "lam": "[-1, 1]",
        "alpha": "> 0",
        "beta": "> 0",
        "K": ">= 1",
        "k_per_anchor": "> 0",
    }  # checked when the plan loads (methods/declared.py)
    about = {
        "base": "base pair loss l_ij: margin L_M, binomial L_B or linear (L_M unclipped); dro paper section 4",
        "margin": "margin m of the margin base loss L_M; dro paper section 4",
        "lam": "similarity threshold λ of both base losses; dro paper section 4",
        "alpha": "scale α of the binomial base loss's positive pairs; dro paper section 4",
        "beta": "scale β of the binomial base loss's negative pairs (50, code variant 40); dro paper section 4",
        "variant": "paper: the text, or code: the authors' released code (DRO/*.py); the suite's choice",
        "K": "number K of distinct pairs the robust step keeps (top K); dro paper section 3.2",
        "k_per_anchor": "K per image of the batch, K = k_per_anchor × B (paper: K = 2B); dro paper section 4.2",
    }

    def __init__(
        self,
        base: str = "margin",
        margin: float = 0.2,
        lam: float = 0.5,
        alpha: float = 2.0,
        beta: float | None = None,
        variant: str = "paper",
        K: int | None = None,
        k_per_anchor: float | None = None,
    ):
        super().__init__()
        if base not in BASES:
            raise ValueError(f"base must be one of {BASES}, not {base!r}")
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
        if K is not None and k_per_anchor is not None:
            raise ValueError("give K or k_per_anchor, not both")
        if beta is None:
            beta = CODE_BINOMIAL_BETA if variant == "code" else 50.0
        self.base, self.margin, self.lam, self.alpha, self.beta = base, margin, lam, alpha, beta
        self.variant, self.K, self.k_per_anchor = variant, K, k_per_anchor

    def pair_losses(self, batch: PairBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(l, pos, neg): the B×B base losses and the masks of the pairs kept (non-zero loss in
        the paper; every pair in the code variant)."""
        s = batch.sim
        pos, neg = batch.pair_masks()
        y = pos.to(s.dtype) - neg.to(s.dtype)
        if self.base == "binomial":
            zero = torch.zeros((), dtype=s.dtype, device=s.device)
            l_pos = torch.logaddexp(zero, self.alpha * (self.lam - s))
            l_neg = torch.logaddexp(zero, self.beta * (s - self.lam))
            if self.variant == "code":
                l_pos, l_neg = 2.0 / self.alpha * l_pos, 2.0 / self.beta * l_neg
            l = torch.where(pos, l_pos, l_neg)
        else:
            l = self.margin + y * (self.lam - s)
            if self.base == "margin":
                l = F.relu(l)
        if self.base != "linear" and self.variant == "paper":
            pos, neg = pos & (l > 0), neg & (l > 0)
        return l, pos, neg

    def robust_pairs(self, batch: PairBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """`pair_losses` with the masks over the pairs the batch-level robust step ranks: the
        distinct pairs (i < j) in the paper's count; every ordered entry in the code variant."""
        l, pos, neg = self.pair_losses(batch)
        if self.variant == "paper":
            pos, neg = distinct(pos), distinct(neg)
        return l, pos, neg

    def k(self, batch_size: int) -> int:
        """K in the paper's count (distinct pairs)."""
        if self.K is None and self.k_per_anchor is None:
            raise ValueError("give K or k_per_anchor")
        return int(self.K) if self.K is not None else int(round(self.k_per_anchor * batch_size))

    def k_code(self, batch_size: int) -> int:
        """The released code's K: half the paper's (its 4·K_code ordered entries are K distinct pairs)."""
        return max(1, self.k(batch_size) // 2)


@LOSSES.register("dro_topk")
class DROTopK(DROLoss):
    """DRO-TopK: (1/K) Σ of the K largest pair losses of the batch, the optimum of max Σ p l over
    U = {Σp = 1, 0 ≤ p ≤ 1/K}. Zero-loss pairs are skipped, but when fewer than K pairs have a
    non-zero loss the sum is still divided by K (the zeros fill the top K). `variant: code`: see
    the module docstring."""

    def compute(self, batch: PairBatch) -> torch.Tensor:
        l, pos, neg = self.robust_pairs(batch)
        values = l[pos | neg]
        if len(values) == 0:
            return l.sum() * 0.0
        if self.variant == "code":
            keep = 4 * self.k_code(len(l))
            return values.mean() if keep > len(values) else values.topk(keep).values.mean()
        k = self.k(len(l))
        return values.topk(min(k, len(values))).values.sum() / k


@LOSSES.register("dro_topk_pn")
class DROTopKPN(DROLoss):
    """DRO-TopK-PN: the K/2 largest positive and the K/2 largest negative pair losses, summed and
    divided by K (zeros fill a side with fewer non-zero pairs). `variant: code`: see the module
    docstring."""

    about = {"K": "number K of pairs kept, the K/2 largest positive and K/2 largest negative; dro paper section 3.2"}

    def compute(self, batch: PairBatch) -> torch.Tensor:
        l, pos, neg = self.robust_pairs(batch)
        l_pos, l_neg = l[pos], l[neg]
        if len(l_pos) + len(l_neg) == 0:
            return l.sum() * 0.0
        if self.variant == "code":
            per_side = 2 * self.k_code(len(l))
            if per_side <= len(l_pos) and per_side <= len(l_neg):
                return (l_pos.topk(per_side).values.sum() + l_neg.topk(per_side).values.sum()) / (2 * per_side)
            n = min(len(l_pos), len(l_neg))
            if n == 0:
                return l.sum() * 0.0
            return (l_pos.sum() + l_neg.topk(n).values.sum()) / (2 * len(l_pos))
        per_side = self.k(len(l)) // 2
        chosen = [v.topk(min(per_side, len(v))).values.sum() for v in (l_pos, l_neg)]
        return sum(chosen) / (2 * per_side)


def code_weights(values: torch.Tensor, gamma: float) -> torch.Tensor:
    """p ∝ e^{l/γ} - 1 (the released code's weights), computed without overflow as
    e^{l/γ - max} (1 - e^{-l/γ}); the plain softmax when every loss is zero."""
    scaled = values / gamma
    w = torch.exp(scaled - scaled.max()) * -torch.expm1(-scaled)
    total = w.sum()
    return w / total if total > 0 else torch.softmax(scaled, dim=0)


@LOSSES.register("dro_kl")
class DROKL(DROLoss):
    """DRO-KL: p* = argmax Σ p l - γ KL(p ‖ uniform) over the non-zero pairs, i.e.
    p* ∝ exp(l/γ) (held constant); L = Σ p* l. With `sample: true`, K pairs (`K` or
    `k_per_anchor` × B) are drawn from p* with replacement and L is their mean loss (p-sampling,
    the tables' DRO-KL_M, section 4.1). `variant: code`: see the module docstring."""

    limits = {"gamma": "> 0"}  # checked when the plan loads (methods/declared.py)
    about = {
        "gamma": "weight γ of the KL divergence from the uniform distribution; dro paper section 3.2",
        "sample": "draw K pairs from p* and average their losses (DRO-KL_M); dro paper sections 3.2, 4.1",
        "K": "number K of pairs drawn from p* (sample true, or variant code); dro paper section 3.2",
    }

    def __init__(self, gamma: float = 0.1, sample: bool = False, **base):
        super().__init__(**base)
        self.gamma, self.sample = gamma, sample

    def weights(self, values: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            if self.variant == "code":
                return code_weights(values, self.gamma)
            return torch.softmax(values / self.gamma, dim=0)

    def compute(self, batch: PairBatch) -> torch.Tensor:
        l, pos, neg = self.robust_pairs(batch)
        values = l[pos | neg]
        if len(values) == 0:
            return l.sum() * 0.0
        p = self.weights(values)
        if self.variant == "code":
            draws = 4 * self.k_code(len(l))
            if draws < len(values):
                p = torch.where(p >= p.topk(draws + 1).values[-1], p, torch.zeros_like(p))
                p = p / p.sum()
            return values[torch.multinomial(p, draws, replacement=True)].mean()
        if self.sample:
            return values[torch.multinomial(p, self.k(len(l)), replacement=True)].mean()
        return (p * values).sum()


@LOSSES.register("dro_kl_g")
class DROKLGrouped(DROLoss):
    """DRO-KL-G (eq. 7): per anchor i, the positive group and the negative group each get
    p ∝ exp(l/γ) (γ_pos, γ_neg); L = Σ_i (Σ_{P_i} p l + Σ_{N_i} p l), p held constant.
    `pseudo_pair=True` adds one zero-loss pair to each group (supplement 6.1.2, the MS case).
    With γ = 1 and the margin loss (no pair clipped) the gradient is the lifted-structure one;
    with pseudo pairs, γ_pos = 1/α, γ_neg = 1/β it is MS's with thresholds c± = λ ± m."""

    # checked when the plan loads (methods/declared.py)
    limits = {"gamma": "> 0", "gamma_pos": "> 0", "gamma_neg": "> 0"}
    about = {
        "gamma": "KL weight γ of both groups, where gamma_pos or gamma_neg is not given; dro paper eq. 7",
        "gamma_pos": "KL weight γ_i^+ of each anchor's positive group; dro paper eq. 7",
        "gamma_neg": "KL weight γ_i^- of each anchor's negative group; dro paper eq. 7",
        "pseudo_pair": "add one zero-loss pair to each group (recovers MS); dro paper supplement 6.1.2",
        "K": "not used by this loss (weights per anchor group); the suite",
        "k_per_anchor": "not used by this loss (weights per anchor group); the suite",
    }

    def __init__(
        self,
        gamma: float = 1.0,
        gamma_pos: float | None = None,
        gamma_neg: float | None = None,
        pseudo_pair: bool = False,
        **base,
    ):
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
    semi-hard (SH) and distance-weighted (DWS) baselines of the dro paper. A pair a sampling
    miner drew several times counts that many times."""

    about = {
        "K": "not used by this loss (the miner picks the pairs); the suite",
        "k_per_anchor": "not used by this loss (the miner picks the pairs); the suite",
    }

    def compute(self, batch: PairBatch) -> torch.Tensor:
        l, pos, neg = self.pair_losses(batch)
        pos_count, neg_count = batch.pair_counts()
        kept = pos * pos_count + neg * neg_count
        return (l * kept).sum() / kept.sum().clamp(min=1)
