"""FastAP against a brute-force loop over queries and bins written from the supplement's equations,
the closed-form gradient against autograd (ties at bin centres included), and
pytorch-metric-learning's FastAPLoss where it implements the same formula (the code's bins)."""

import math

import pytest
import torch

from dmlbench.methods import losses
from dmlbench.methods.losses.ranking_losses import bin_centres


def brute_fastap(embeddings, labels, num_bins, bins):
    """Eqs. 6-7 and 21, one query and one bin at a time."""
    x = embeddings / embeddings.norm(dim=1, keepdim=True)
    count = num_bins if bins == "paper" else num_bins + 1
    width = 4.0 / (count - 1)
    centres = [4.0 * l / (count - 1) for l in range(count)]
    values = []
    for i in range(len(labels)):
        h_pos, h_neg = [0.0] * count, [0.0] * count
        for j in range(len(labels)):
            if j == i:
                continue
            d = 2 - 2 * torch.dot(x[i], x[j])
            for l, c in enumerate(centres):
                share = torch.clamp(1 - (d - c).abs() / width, min=0)
                if labels[j] == labels[i]:
                    h_pos[l] = h_pos[l] + share
                else:
                    h_neg[l] = h_neg[l] + share
        n_pos = sum(1 for j in range(len(labels)) if j != i and labels[j] == labels[i])
        if n_pos == 0:
            continue  # a query without neighbours is skipped
        cum_pos, cum_all, total = 0.0, 0.0, 0.0
        for l in range(count):
            cum_pos = cum_pos + h_pos[l]
            cum_all = cum_all + h_pos[l] + h_neg[l]
            if cum_all > 0:
                total = total + cum_pos * h_pos[l] / cum_all
        values.append(total / n_pos)
    return 1 - sum(values) / len(values)


def random_batch(seed, n_classes=4, per_class=4, dim=8, singleton=True):
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(n_classes).repeat_interleave(per_class)
    if singleton:
        labels = torch.cat([labels, torch.tensor([n_classes])])  # a query with no neighbour
    return torch.randn(len(labels), dim, generator=g, dtype=torch.float64), labels


@pytest.mark.parametrize("bins", ["paper", "code"])
@pytest.mark.parametrize("seed", range(3))
def test_fastap_equals_the_brute_force_loop(bins, seed):
    e, y = random_batch(seed)
    for gradient in ("closed_form", "autograd"):
        ours = losses.build("fastap", num_bins=10, bins=bins, gradient=gradient)(e, y)
        assert ours.item() == pytest.approx(brute_fastap(e, y, 10, bins).item(), rel=1e-12)


def test_the_two_bin_conventions():
    centres, width = bin_centres(10, "paper", torch.float64, "cpu")
    assert len(centres) == 10 and width == pytest.approx(4 / 9) and centres[-1] == 4.0
    centres, width = bin_centres(10, "code", torch.float64, "cpu")
    assert len(centres) == 11 and width == pytest.approx(0.4)


def _gradients(e, y, **params):
    grads = []
    for gradient in ("closed_form", "autograd"):
        x = e.clone().requires_grad_(True)
        losses.build("fastap", gradient=gradient, **params)(x, y).backward()
        grads.append(x.grad)
    return grads


@pytest.mark.parametrize("bins", ["paper", "code"])
@pytest.mark.parametrize("seed", range(5))
def test_closed_form_gradient_equals_autograd(bins, seed):
    e, y = random_batch(seed, n_classes=5, per_class=3, dim=16)
    closed, auto = _gradients(e, y, num_bins=10, bins=bins)
    assert auto.abs().max() > 1e-6
    torch.testing.assert_close(closed, auto, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("bins, num_bins", [("code", 10), ("paper", 9)])
def test_closed_form_gradient_equals_autograd_with_ties_at_bin_centres(bins, num_bins):
    # one-hot rows: orthogonal pairs sit at d = 2 (a centre of both grids), duplicates at d = 0
    basis = torch.eye(6, dtype=torch.float64)
    e = torch.cat(
        [basis, basis[:3], torch.randn(5, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)]
    )
    y = torch.tensor([0, 1, 2, 3, 0, 1, 0, 1, 2, 2, 3, 3, 4, 4])
    centres, _ = bin_centres(num_bins, bins, torch.float64, "cpu")
    x = e / e.norm(dim=1, keepdim=True)
    d = 2 - 2 * x @ x.T
    assert ((d[:, :, None] - centres) == 0).any(), "the batch must hold ties at bin centres"
    closed, auto = _gradients(e, y, num_bins=num_bins, bins=bins)
    torch.testing.assert_close(closed, auto, rtol=1e-9, atol=1e-12)


def test_closed_form_multiplies_the_incoming_gradient():
    e, y = random_batch(7)
    x = e.clone().requires_grad_(True)
    (3.0 * losses.build("fastap")(x, y)).backward()
    _, auto = _gradients(e, y)
    torch.testing.assert_close(x.grad, 3.0 * auto)


def test_code_bins_match_pytorch_metric_learning():
    from pytorch_metric_learning.losses import FastAPLoss

    for seed in range(3):
        e, y = random_batch(seed, singleton=False)
        ours = losses.build("fastap", num_bins=10, bins="code")(e, y)
        theirs = FastAPLoss(num_bins=10)(e, y)
        assert ours.item() == pytest.approx(theirs.item(), rel=1e-9)


def test_a_batch_without_any_neighbour_gives_zero_not_nan():
    e = torch.randn(4, 8, dtype=torch.float64, requires_grad=True)
    value = losses.build("fastap")(e, torch.arange(4))
    value.backward()
    assert value.item() == 0.0 and not math.isnan(e.grad.abs().sum().item())
