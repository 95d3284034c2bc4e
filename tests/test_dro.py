"""DRO variants against brute-force solutions of their optimisation problems, and the dro.eq identities."""

import numpy as np
import pytest
import torch
from scipy.optimize import minimize
from test_losses import batch, check_against, cosine

from dmlbench.analysis import dro_identities
from dmlbench.methods import losses
from dmlbench.methods.pairs import PairBatch
from dmlbench.config.jobs import of as jobs_of


def brute_pair_losses(e, y, m=0.2, lam=0.5):
    """Non-zero margin losses [m + y(λ - S)]_+ of every distinct pair {i, j} (counted once, as
    section 4.2.3 of the dro paper counts |P|), split by kind."""
    s = cosine(e)
    pos, neg = [], []
    for i in range(len(y)):
        for j in range(i + 1, len(y)):
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
def test_topk_is_the_sum_of_the_k_largest_over_k(seed, k):
    """max Σ p l over Σ p = 1, 0 ≤ p ≤ 1/K: (1/K) Σ of the K largest, zeros filling up."""

    def brute(e, y):
        pos, neg = brute_pair_losses(e, y)
        return sum(top(pos + neg, k)) / k

    check_against(losses.build("dro_topk", K=k), brute, seed)


def test_topk_with_fewer_nonzero_pairs_than_k_still_divides_by_k():
    e, y = batch(0)
    pos, neg = brute_pair_losses(e, y)
    k = len(pos) + len(neg) + 40
    value = losses.build("dro_topk", K=k)(e, y).item()
    assert value == pytest.approx(float(sum(pos + neg)) / k, rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [6, 30, 400])
def test_topk_pn_takes_k_over_2_per_side_over_k(seed, k):
    def brute(e, y):
        pos, neg = brute_pair_losses(e, y)
        return (sum(top(pos, k // 2)) + sum(top(neg, k // 2))) / (2 * (k // 2))

    check_against(losses.build("dro_topk_pn", K=k), brute, seed)


def test_k_counts_distinct_pairs_as_the_paper_does():
    """Section 4.2.3: B = 640, M = 5 make |P| = 1280; with K = 1280 DRO-TopK averages exactly the
    1,280 largest distinct pair losses (each {i, j} once), found here by a loop over i < j."""
    generator = torch.Generator().manual_seed(0)
    y = torch.arange(128).repeat_interleave(5)
    e = torch.randn(640, 16, generator=generator, dtype=torch.float64)
    s = cosine(e)
    values = []
    for i in range(640):
        for j in range(i + 1, 640):
            same = bool(y[i] == y[j])
            value = max(0.2 + (0.5 - s[i, j].item()) * (1 if same else -1), 0.0)
            if value > 0:
                values.append(value)
    assert sum(1 for i in range(640) for j in range(i + 1, 640) if y[i] == y[j]) == 1280
    expected = sum(sorted(values, reverse=True)[:1280]) / 1280
    assert losses.build("dro_topk", K=1280)(e, y).item() == pytest.approx(expected, rel=1e-10)
    # the same K in the code variant (K_code = K/2, 4·K_code ordered entries) keeps the same pairs
    assert losses.build("dro_topk", K=1280, variant="code")(e, y).item() == pytest.approx(expected, rel=1e-10)


def test_k_per_anchor_is_k_over_the_batch():
    e, y = batch(0)
    B = len(y)
    assert losses.build("dro_topk", k_per_anchor=2.0)(e, y) == losses.build("dro_topk", K=2 * B)(e, y)


# --- the authors' released code (variant: code), against hand-written readings of each branch ---


def code_pair_losses(e, y, base="margin", m=0.2, lam=0.5, a=2.0, b=40.0):
    """Every ordered pair's loss, zeros kept, as the code's LOSSES class computes them."""
    s = cosine(e)
    pos, neg = [], []
    for i in range(len(y)):
        for j in range(len(y)):
            if i == j:
                continue
            if base == "margin":
                value = torch.clamp(m + lam - s[i, j], min=0) if y[i] == y[j] else torch.clamp(m + s[i, j] - lam, min=0)
            elif y[i] == y[j]:
                value = 2.0 / a * torch.log(1 + torch.exp(-a * (s[i, j] - lam)))
            else:
                value = 2.0 / b * torch.log(1 + torch.exp(b * (s[i, j] - lam)))
            (pos if y[i] == y[j] else neg).append(value)
    return pos, neg


@pytest.mark.parametrize("base", ["margin", "binomial"])
@pytest.mark.parametrize("K", [6, 20, 10_000])  # K_code 3, 10 (4·K_code < pairs); all pairs
def test_code_topk_averages_the_4k_code_largest_or_all(base, K):
    def brute(e, y):
        pos, neg = code_pair_losses(e, y, base)
        everything = pos + neg
        keep = 4 * (K // 2)
        chosen = everything if keep > len(everything) else top(everything, keep)
        return sum(chosen) / len(chosen)

    params = {"base": base, "alpha": 2.0} if base == "binomial" else {"base": base}
    check_against(losses.build("dro_topk", K=K, variant="code", **params), brute, 0)


@pytest.mark.parametrize("K", [4, 40])  # 2·K_code within both sides; more than the 24 positives
def test_code_topk_pn_branches(K):
    def brute(e, y):
        pos, neg = code_pair_losses(e, y)
        per_side = 2 * (K // 2)
        if per_side <= len(pos) and per_side <= len(neg):
            return (sum(top(pos, per_side)) + sum(top(neg, per_side))) / (4 * (K // 2))
        return (sum(pos) + sum(top(neg, len(pos)))) / (2 * len(pos))

    e, y = batch(1)
    assert len(code_pair_losses(e, y)[0]) == 24 < 2 * (40 // 2)
    check_against(losses.build("dro_topk_pn", K=K, variant="code"), brute, 1)


def test_code_binomial_defaults_to_the_run_scripts_scale():
    assert losses.build("dro_topk", K=4, variant="code", base="binomial").beta == 40.0
    assert losses.build("dro_topk", K=4, base="binomial").beta == 50.0


def test_code_kl_draws_4k_code_pairs_from_the_truncated_expm1_weights(monkeypatch):
    e, y = batch(2)
    K = 10  # K_code 5: 20 draws
    pos, neg = code_pair_losses(e, y)
    values = torch.stack(pos + neg).detach()
    gamma = 0.5
    w = torch.exp(values / gamma) - 1
    p = w / w.sum()
    threshold = sorted(p.tolist(), reverse=True)[4 * (K // 2)]  # order_np_p[4K]
    p = torch.where(p < threshold, torch.zeros_like(p), p)
    p = p / p.sum()
    seen = {}

    def spy(weights, n, replacement):
        seen.update(weights=weights.clone(), n=n, replacement=replacement)
        return torch.arange(n) % len(weights)

    monkeypatch.setattr(torch, "multinomial", spy)
    losses.build("dro_kl", gamma=gamma, K=K, variant="code")(e, y)
    assert seen["n"] == 4 * (K // 2) and seen["replacement"]
    # the code lists positives before negatives, the suite row by row: compare as multisets
    torch.testing.assert_close(seen["weights"].sort().values, p.sort().values)


def test_code_weights_do_not_overflow_in_float32():
    from dmlbench.methods.losses.robust_losses import code_weights

    values = torch.tensor([0.0, 0.5, 0.9, 1.3], dtype=torch.float32)
    w = code_weights(values, 0.01)  # e^{130} overflows float32
    assert torch.isfinite(w).all() and w.sum().item() == pytest.approx(1.0)
    exact = torch.expm1(values.double() / 0.01)
    torch.testing.assert_close(w.double(), exact / exact.sum(), rtol=1e-5, atol=1e-30)
    e, y = batch(3)
    torch.manual_seed(0)
    loss = losses.build("dro_kl", gamma=0.01, K=8, variant="code")(e.float(), y)
    assert torch.isfinite(loss)


def kl_maximiser(values: np.ndarray, gamma: float) -> np.ndarray:
    """argmax_p Σ p l - γ KL(p ‖ uniform) on the simplex, by a generic solver."""
    n = len(values)

    def objective(p):
        p = np.clip(p, 1e-300, None)
        return -(p @ values - gamma * np.sum(p * np.log(n * p)))

    res = minimize(
        objective,
        np.full(n, 1 / n),
        bounds=[(0, 1)] * n,
        method="SLSQP",
        constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
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
    loss = losses.build("dro_kl", gamma=0.2, sample=True, K=1)
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
    dro = losses.build(
        "dro_kl_g", gamma_pos=0.5, gamma_neg=0.02, pseudo_pair=True, base="linear", margin=0.0, lam=0.5
    ).double()
    ms = losses.build("multi_similarity", alpha=2.0, beta=50.0, gamma=0.5).double()
    torch.testing.assert_close(dro_identities.gradient(dro, e, y), len(y) * dro_identities.gradient(ms, e, y))


def test_zero_loss_pairs_are_dropped():
    e, y = batch(5)
    loss = losses.build("dro_topk", K=10_000, margin=0.0, lam=0.0)
    _, pos, neg = loss.pair_losses(PairBatch.from_embeddings(e, y))
    s = cosine(e)
    assert (s[pos] < 0).all() and (s[neg] > 0).all()


def test_loss_timing_measures_both_scopes():
    from dmlbench.analysis import loss_timing

    from conftest import full_plan

    plan = full_plan()
    methods = jobs_of(plan).analysis_spec("dro.f3")["methods"]
    frame = loss_timing.measure(
        methods, repeats=1, batches=(10,), whole_iteration=True, backbone="small_cnn", image_size=16
    )
    assert set(frame["scope"]) == {"loss side", "whole iteration"}
    assert set(frame["method"]) == {m["label"] for m in methods.values()}
    assert (frame["mean_ms"] > 0).all()


def test_dro_f3_times_the_same_baselines_as_the_other_figures():
    from conftest import full_plan

    plan = full_plan()
    timed = jobs_of(plan).analysis_spec("dro.f3")["methods"]
    for name in ("sh_m", "dws_m", "ms", "dro_topk_m", "dro_topk_pn_m"):
        assert name in plan.experiments["dro.f1"]["methods"] + plan.experiments["dro.t1"]["methods"]
        assert timed[name]["loss"] == plan.methods[name]["loss"]
        assert timed[name]["miner"] == plan.methods[name].get("miner")
    assert timed["ls_dro"]["loss"] == plan.methods["ls_dro"]["loss"]  # the LS of dro.t2/t4
    assert timed["dro_kl_m"]["loss"]["gamma"] == 0.1  # the figure's γ


def test_the_tables_dro_kl_m_samples_k_pairs_and_the_closed_form_is_its_own_method():
    from conftest import full_plan

    plan = full_plan()
    sampled = losses.build(**plan.methods["dro_kl_m"]["loss"])
    closed = losses.build(**plan.methods["dro_kl_m_weights"]["loss"])
    assert sampled.sample and not closed.sample
    e, y = batch(6)
    draws = set()
    for seed in range(5):
        torch.manual_seed(seed)
        draws.add(round(sampled(e, y).item(), 12))
    assert len(draws) > 1  # stochastic: pairs drawn from p
    assert closed(e, y).item() == closed(e, y).item()
    for key in ("dro.t1", "dro.t3", "dro.f1", "dro.f5"):
        assert "dro_kl_m" in plan.experiments[key]["methods"]
