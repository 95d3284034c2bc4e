"""DRO variants against brute-force solutions of their optimisation problems, and the dro.eq identities."""

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from dmlbench import losses
from dmlbench.analysis import dro_identities
from dmlbench.pairs import PairBatch
from test_losses import batch, check_against, cosine


def brute_pair_losses(e, y, m=0.2, lam=0.5):
    """Non-zero margin losses [m + y(λ - S)]_+ of every ordered pair, split by kind."""
    s = cosine(e)
    pos, neg = [], []
    for i in range(len(y)):
        for j in range(len(y)):
            if i == j:
                continue
            if y[i] == y[j]:
                value = torch.clamp(m + (lam - s[i, j]), min=0)
                (pos.append(value) if value > 0 else None)
            else:
                value = torch.clamp(m - (lam - s[i, j]), min=0)
                (neg.append(value) if value > 0 else None)
    return pos, neg


def top(values, k):
    return sorted(values, key=lambda v: v.item(), reverse=True)[:k]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [5, 20, 10_000])
def test_topk_is_the_mean_of_the_k_largest(seed, k):
    def brute(e, y):
        pos, neg = brute_pair_losses(e, y)
        chosen = top(pos + neg, k)
        return sum(chosen) / len(chosen)

    check_against(losses.build("dro_topk", K=k), brute, seed)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [6, 30])
def test_topk_pn_takes_k_over_2_per_side(seed, k):
    def brute(e, y):
        pos, neg = brute_pair_losses(e, y)
        chosen = top(pos, k // 2) + top(neg, k // 2)
        return sum(chosen) / len(chosen)

    check_against(losses.build("dro_topk_pn", K=k), brute, seed)


def test_k_per_anchor_and_code_counting():
    e, y = batch(0)
    B = len(y)
    a = losses.build("dro_topk", k_per_anchor=2.0)(e, y)
    b = losses.build("dro_topk", K=2 * B)(e, y)
    c = losses.build("dro_topk", K=B // 2, k_counting="code")(e, y)
    assert a == b == c


def kl_maximiser(values: np.ndarray, gamma: float) -> np.ndarray:
    """argmax_p Σ p l - γ KL(p ‖ uniform) on the simplex, by a generic solver."""
    n = len(values)

    def objective(p):
        p = np.clip(p, 1e-300, None)
        return -(p @ values - gamma * np.sum(p * np.log(n * p)))

    res = minimize(objective, np.full(n, 1 / n), bounds=[(0, 1)] * n, method="SLSQP",
                   constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1}],
                   options={"ftol": 1e-15, "maxiter": 1000})
    return res.x


@pytest.mark.parametrize("gamma", [0.3, 1.0])
def test_kl_weights_are_the_regularised_maximiser(gamma):
    e, y = batch(1, n_classes=3, per_class=2)
    loss = losses.build("dro_kl", gamma=gamma)
    b = PairBatch.from_embeddings(e, y)
    l, pos, neg = loss.pair_losses(b)
    values = l[pos | neg]
    ours = loss.weights(values).numpy()
    np.testing.assert_allclose(ours, kl_maximiser(values.numpy(), gamma), atol=2e-5)
    assert loss(e, y).item() == pytest.approx(float(ours @ values.numpy()))


@pytest.mark.parametrize("gamma", [0.5, 1.0])
def test_kl_g_group_weights_are_the_per_anchor_maximisers(gamma):
    e, y = batch(2, n_classes=3, per_class=3)
    loss = losses.build("dro_kl_g", gamma=gamma, margin=2.0)
    s = cosine(e).detach().requires_grad_(True)
    b = PairBatch.from_similarity(s, y)
    (grad,) = torch.autograd.grad(loss.compute(b), s)
    l, pos, neg = loss.pair_losses(b)
    for i in range(len(y)):
        for mask, sign in ((pos[i], -1.0), (neg[i], 1.0)):
            values = l[i][mask].detach().numpy()
            p = kl_maximiser(values, gamma)
            np.testing.assert_allclose(sign * grad[i][mask].numpy(), p, atol=2e-5)


def test_kl_sampling_follows_p():
    from scipy.stats import chisquare

    torch.manual_seed(0)
    e, y = batch(3, n_classes=3, per_class=2)
    loss = losses.build("dro_kl", gamma=0.2, samples=1)
    b = PairBatch.from_embeddings(e, y)
    l, pos, neg = loss.pair_losses(b)
    values = l[pos | neg].detach().numpy()
    p = loss.weights(l[pos | neg]).numpy()
    # S is symmetric, so pairs (i, j) and (j, i) share a loss: count draws per distinct loss
    distinct, group = np.unique(np.round(values, 12), return_inverse=True)
    expected = np.bincount(group, weights=p)
    counts = np.zeros(len(distinct))
    for _ in range(6000):
        counts[np.argmin(np.abs(distinct - loss.compute(b).item()))] += 1
    assert chisquare(counts, 6000 * expected).pvalue > 0.001


@pytest.mark.parametrize("seed", range(5))
def test_dro_eq_identities_hold(seed):
    a, b = dro_identities.lifted_structure_gradients(seed)
    torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    a, b = dro_identities.ms_gradients(seed)
    torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    lp, mean = dro_identities.topk_lp(seed)
    assert lp == pytest.approx(mean, rel=1e-9)
    solver, closed, valid = dro_identities.chi2_set(seed)
    assert valid and solver == pytest.approx(closed, rel=1e-6)


def test_linear_ms_case_is_the_suites_ms_loss():
    """m = 0, no clipping: DRO-KL-G(pseudo) recovers MS with one threshold λ exactly."""
    e, y = batch(4)
    dro = losses.build("dro_kl_g", gamma_pos=0.5, gamma_neg=0.02, pseudo_pair=True, base="linear",
                       margin=0.0, lam=0.5).double()
    ms = losses.build("multi_similarity", alpha=2.0, beta=50.0, gamma=0.5).double()
    torch.testing.assert_close(dro_identities.gradient(dro, e, y),
                               len(y) * dro_identities.gradient(ms, e, y))


def test_zero_loss_pairs_are_dropped():
    e, y = batch(5)
    loss = losses.build("dro_topk", K=10_000, margin=0.0, lam=0.0)
    _, pos, neg = loss.pair_losses(PairBatch.from_embeddings(e, y))
    s = cosine(e)
    assert (s[pos] < 0).all() and (s[neg] > 0).all()


def test_loss_timing_measures_both_scopes():
    from dmlbench.analysis import loss_timing

    frame = loss_timing.measure(repeats=1, batches=(10,), whole_iteration=True,
                                backbone="small_cnn", image_size=16)
    assert set(frame["scope"]) == {"loss side", "whole iteration"}
    assert set(frame["method"]) == set(loss_timing.METHODS)
    assert (frame["mean_ms"] > 0).all()
