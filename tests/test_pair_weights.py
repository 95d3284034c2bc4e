"""ms Theorem 3.1: autograd weights of the suite's losses equal the paper's closed forms."""

import numpy as np
import pytest

from dmlbench.analysis.pair_weights import curves, pair_weights


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def random_context(seed, n_pos=3, n_neg=5):
    rng = np.random.default_rng(seed)
    return list(rng.uniform(-0.5, 1, n_pos)), list(rng.uniform(-0.5, 1, n_neg))


@pytest.mark.parametrize("seed", range(10))
def test_contrastive_eq6(seed):
    positives, negatives = random_context(seed, 1, 1)
    w = pair_weights("contrastive", {"neg_margin": 0.5}, positives, negatives)
    assert w[0] == 1.0  # every positive pair
    assert w[1] == float(negatives[0] > 0.5)  # negatives above λ


@pytest.mark.parametrize("seed", range(10))
def test_triplet_eq8(seed):
    (s_ap,), (s_an,) = random_context(seed, 1, 1)
    w = pair_weights("triplet", {"margin": 0.1}, [s_ap], [s_an])
    active = float(s_an - s_ap + 0.1 > 0)
    assert list(w) == [active, active]  # both pairs of the triplet in B


@pytest.mark.parametrize("seed", range(10))
def test_lifted_eqs_10_11(seed):
    positives, negatives = random_context(seed)
    w = pair_weights("lifted", {"margin": 1.0}, positives, negatives)
    p, n = np.array(positives), np.array(negatives)
    active = np.log(np.exp(-p).sum()) + np.log(np.exp(1.0 + n).sum()) > 0
    expected_pos = 1 / np.exp(p[:, None] - p[None, :]).sum(axis=1)  # eq. 10
    # eq. 11: w = exp(S_ij) / Σ_k exp(S_ik) (its second printed form has the sign of the
    # exponent flipped; the first form is what the loss's gradient gives)
    expected_neg = np.exp(n) / np.exp(n).sum()
    expected = np.concatenate([expected_pos, expected_neg]) * active
    np.testing.assert_allclose(w, expected, rtol=1e-10)


@pytest.mark.parametrize("seed", range(10))
def test_binomial_eqs_13_14(seed):
    positives, negatives = random_context(seed)
    a, b, g = 2.0, 50.0, 0.5
    w = pair_weights("binomial", {"alpha": a, "beta": b, "gamma": g}, positives, negatives)
    p, n = np.array(positives), np.array(negatives)
    expected_pos = a * np.exp(a * (g - p)) / (1 + np.exp(a * (g - p))) / len(p)  # eq. 13
    expected_neg = b * np.exp(b * (n - g)) / (1 + np.exp(b * (n - g))) / len(n)  # eq. 14
    np.testing.assert_allclose(w, np.concatenate([expected_pos, expected_neg]), rtol=1e-10)


def test_figure_curves_have_the_papers_shapes():
    table = curves(np.linspace(-1, 1, 41))

    def weights(loss, pair):
        rows = table[(table["loss"] == loss) & (table["pair"] == pair)]
        return rows["similarity"].to_numpy(), rows["weight"].to_numpy()

    s, w = weights("contrastive", "negative")
    assert (w[s < 0.5] == 0).all() and (w[s > 0.5] == 1).all()
    s, w = weights("lifted", "negative")
    assert (np.diff(w) > 0).all()  # harder negatives weigh more
    s, w = weights("binomial", "positive")
    assert (np.diff(w) < 0).all()  # harder positives weigh more
