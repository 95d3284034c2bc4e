"""FastAP (fastap paper, "Deep Metric Learning to Rank", supplement section C).

Squared distances of the L2-normalised embeddings, d_ij = 2 - 2 x_iᵀx_j ∈ [0, 4], are binned into
soft histograms with the triangular kernel δ(z, c) = [1 - |z - c| / Δ]_+ (eq. 7), one bin wide.
For the in-batch query i (itself excluded), with h⁺, h⁻ its positive and negative histograms and
H⁺, H their cumulative sums (H over both):

    FastAP_i = (1 / N_i⁺) Σ_l H⁺_l h⁺_l / H_l          (eq. 21; a term with H_l = 0 is 0)

and the loss is 1 - mean FastAP_i over the queries with at least one neighbour (N_i⁺ > 0; a query
without one is skipped).

Bins (`bins`): `paper`, L centres spanning [0, 4] (c_l = 4(l - 1)/(L - 1), Δ = 4/(L - 1)), as
section C.1 states; `code`, the authors' code and pytorch-metric-learning: L + 1 centres
linspace(0, 4, L + 1), Δ = 4/L. Default L (`num_bins`) = 10.

Backward (`gradient`): `closed_form` is the supplement's O(L·M²) gradient (eqs. 17-30), written
as a custom autograd function that multiplies by the incoming gradient, so it is the true
gradient of the loss reported here; `autograd` differentiates the forward pass.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dmlbench.methods.losses.base import LOSSES, PairLoss, refuse_miner
from dmlbench.methods.pairs import PairBatch

BINS = ("paper", "code")
GRADIENTS = ("closed_form", "autograd")


def bin_centres(num_bins: int, bins: str, dtype, device) -> tuple[torch.Tensor, float]:
    """The bin centres over [0, 4] and the kernel width Δ, by convention."""
    count = num_bins if bins == "paper" else num_bins + 1
    return torch.linspace(0.0, 4.0, count, dtype=dtype, device=device), 4.0 / (count - 1)


def _histograms(d, pos, neg, centres, width):
    """δ (M×M×L), and the positive and negative histograms h⁺, h⁻ (M×L) of every query."""
    delta = F.relu(1.0 - (d[:, :, None] - centres).abs() / width)
    return delta, torch.einsum("ijl,ij->il", delta, pos), torch.einsum("ijl,ij->il", delta, neg)


def _safe(denominator: torch.Tensor) -> torch.Tensor:
    return torch.where(denominator > 0, denominator, torch.ones_like(denominator))


def fastap_per_query(d, pos, neg, centres, width):
    """(FastAP_i of every query, N⁺_i) from squared distances `d` and 0/1 masks `pos`, `neg`."""
    _, h_pos, h_neg = _histograms(d, pos, neg, centres, width)
    cum_pos, cum_all = h_pos.cumsum(1), (h_pos + h_neg).cumsum(1)
    terms = torch.where(cum_all > 0, cum_pos * h_pos / _safe(cum_all), torch.zeros_like(h_pos))
    n_pos = pos.sum(1)
    return terms.sum(1) / _safe(n_pos), n_pos


def _near_bins(d, centres, width):
    """The kernel is one bin wide, so a distance touches at most the bins next to its nearest
    centre: for the nearest bin and its two neighbours, the index and the kernel's value and slope
    dδ/dz = -sign(z - c)/Δ (0 at the kinks, as autograd takes it). Exactly eq. 7's values (a
    distance on a centre can leave rounding-sized values in both neighbours), in O(M²) instead of
    O(M²·L)."""
    middle = torch.clamp(torch.round(d / width), 1, len(centres) - 2).long()
    out = []
    for index in (middle - 1, middle, middle + 1):
        offset = d - centres[index]
        value = F.relu(1.0 - offset.abs() / width)
        out.append((index, value, -torch.sign(offset) / width * (value > 0)))
    return out


def _histogram(bins, mask, count):
    h = torch.zeros(mask.shape[0], count, dtype=mask.dtype, device=mask.device)
    for index, value, _ in bins:
        h.scatter_add_(1, index, value * mask)
    return h


class _ClosedForm(torch.autograd.Function):
    """1 - mean FastAP with the supplement's gradient with respect to the unit embeddings x."""

    @staticmethod
    def forward(ctx, x, pos, neg, centres, width):
        bins = _near_bins(2.0 - 2.0 * x @ x.T, centres, width)
        h_pos, h_neg = _histogram(bins, pos, len(centres)), _histogram(bins, neg, len(centres))
        cum_pos, cum_all = h_pos.cumsum(1), (h_pos + h_neg).cumsum(1)
        terms = torch.where(cum_all > 0, cum_pos * h_pos / _safe(cum_all), torch.zeros_like(h_pos))
        n_pos = pos.sum(1)
        valid = n_pos > 0
        ctx.save_for_backward(x, pos, neg, h_pos, cum_pos, cum_all, n_pos)
        ctx.bins = bins
        return 1.0 - (terms.sum(1) / _safe(n_pos))[valid].mean()

    @staticmethod
    def backward(ctx, grad_output):
        x, pos, neg, h_pos, cum_pos, cum_all, n_pos = ctx.saved_tensors
        valid = n_pos > 0
        scale = (valid / _safe(n_pos))[:, None]
        square = _safe(cum_all) ** 2
        has = cum_all > 0
        zero = torch.zeros_like(h_pos)
        # ∂FastAP_{i,l}/∂h⁺_{i,l} (eq. 27) and ∂FastAP_{i,j}/∂h_{i,l} for j > l (eqs. 25-26)
        g_pos = torch.where(has, (cum_pos + h_pos) / _safe(cum_all) - cum_pos * h_pos / square, zero)
        f_pos = torch.where(has, (cum_all - cum_pos) * h_pos / square, zero)
        g_neg = torch.where(has, -cum_pos * h_pos / square, zero)
        later = lambda f: f.flip(1).cumsum(1).flip(1) - f  # Σ_{j>l} f_j, i.e. U f (eq. 29)
        f_plus = scale * (g_pos + later(f_pos))  # F⁺ (eq. 30), one row per query
        f_minus = scale * (g_neg + later(g_neg))  # F⁻ (∂FastAP_{i,j}/∂h⁻_{i,l} = g⁻_j)
        # W_ij = Σ_l F_{i,l} B_l[i,j] (eqs. 14-15): only the bins near d_ij contribute
        w = sum(
            slope * (torch.gather(f_plus, 1, index) * pos + torch.gather(f_minus, 1, index) * neg)
            for index, _, slope in ctx.bins
        )
        # ∂d_ij/∂x_i = -2 x_j, ∂d_ij/∂x_j = -2 x_i (eq. 17); loss = 1 - mean over valid queries
        grad_x = 2.0 * (w + w.T) @ x / valid.sum()
        return grad_output * grad_x, None, None, None, None


@LOSSES.register("fastap")
class FastAPLoss(PairLoss):
    """FastAP (fastap supplement, section C): 1 - mean over in-batch queries of
    (1/N⁺) Σ_l H⁺_l h⁺_l / H_l on soft histograms of squared distances. Parameters: `num_bins`
    L = 10, `bins` paper | code, `gradient` closed_form | autograd (see the module docstring)."""

    # checked when the plan loads (methods/declared.py)
    limits = {"num_bins": ">= 2", "bins": BINS, "gradient": GRADIENTS}
    about = {
        "num_bins": "number L of histogram bins over squared distances in [0, 4]; fastap supplement C.1",
        "bins": "paper: L bin centres, or code: L + 1 as in the authors' code; fastap supplement C.1",
        "gradient": "closed_form: the supplement's gradient (eqs. 17-30), or autograd; fastap supplement C.3",
    }

    takes_miner = False  # every query's whole ranking of the batch
    restricts_pairs = False

    def __init__(self, num_bins: int = 10, bins: str = "paper", gradient: str = "closed_form"):
        super().__init__()
        if bins not in BINS:
            raise ValueError(f"bins must be one of {BINS}, not {bins!r}")
        if gradient not in GRADIENTS:
            raise ValueError(f"gradient must be one of {GRADIENTS}, not {gradient!r}")
        self.num_bins, self.bins, self.gradient = num_bins, bins, gradient

    def forward(self, embeddings, labels, miner=None):
        refuse_miner(self, miner)
        x = F.normalize(embeddings, dim=1)
        batch = PairBatch.from_similarity(x @ x.T, labels)
        pos, neg = batch.pos.to(x.dtype), batch.neg.to(x.dtype)
        if not bool((pos.sum(1) > 0).any()):
            return embeddings.sum() * 0.0
        centres, width = bin_centres(self.num_bins, self.bins, x.dtype, x.device)
        if self.gradient == "closed_form":
            return _ClosedForm.apply(x, pos, neg, centres, width)
        d = 2.0 - 2.0 * x @ x.T
        per_query, n_pos = fastap_per_query(d, pos, neg, centres, width)
        return 1.0 - per_query[n_pos > 0].mean()

    def compute(self, batch: PairBatch) -> torch.Tensor:
        d = 2.0 - 2.0 * batch.sim
        pos, neg = batch.pos.to(d.dtype), batch.neg.to(d.dtype)
        centres, width = bin_centres(self.num_bins, self.bins, d.dtype, d.device)
        per_query, n_pos = fastap_per_query(d, pos, neg, centres, width)
        return 1.0 - per_query[n_pos > 0].mean()
