"""Each loss against a brute-force per-anchor loop over its equation: values and gradients."""

import math

import pytest
import torch

from dmlbench.core.errors import ConfigError
from dmlbench.methods import losses, miners


def batch(seed=0, n_classes=4, per_class=3, dim=8):
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(n_classes).repeat_interleave(per_class)
    embeddings = torch.randn(len(labels), dim, generator=g, dtype=torch.float64)
    return embeddings, labels


def cosine(embeddings):
    x = embeddings / embeddings.norm(dim=1, keepdim=True)
    return x @ x.T


def brute_contrastive(embeddings, labels, margin, pos_margin=None):
    """ms eq. 5 (pos_margin None: the paper's -S, shifted by 1) or with the positive hinge [m+ - S]_+."""
    s = cosine(embeddings)
    pos, neg = [], []
    for i in range(len(labels)):
        for j in range(len(labels)):
            if i == j:
                continue
            if labels[i] == labels[j]:
                pos.append(1 - s[i, j] if pos_margin is None else torch.clamp(pos_margin - s[i, j], min=0))
            else:
                neg.append(torch.clamp(s[i, j] - margin, min=0))
    return sum(pos) / len(pos) + sum(neg) / len(neg)


def brute_triplet_semihard(embeddings, labels, margin):
    s = cosine(embeddings)
    terms = []
    n = len(labels)
    for a in range(n):
        for p in range(n):
            if p == a or labels[p] != labels[a]:
                continue
            best = None
            for k in range(n):
                if labels[k] == labels[a]:
                    continue
                if s[a, p] - margin < s[a, k] < s[a, p] and (best is None or s[a, k] > s[a, best]):
                    best = k
            if best is not None:
                terms.append(torch.clamp(s[a, best] - s[a, p] + margin, min=0))
    return sum(terms) / len(terms) if terms else embeddings.sum() * 0


def brute_triplet_all(embeddings, labels, margin):
    s = cosine(embeddings)
    terms = []
    n = len(labels)
    for a in range(n):
        for p in range(n):
            for k in range(n):
                if p != a and labels[p] == labels[a] and labels[k] != labels[a]:
                    terms.append(torch.clamp(s[a, k] - s[a, p] + margin, min=0))
    return sum(terms) / len(terms)


def brute_multi_similarity(embeddings, labels, alpha, beta, gamma, epsilon):
    s = cosine(embeddings)
    n = len(labels)
    total = 0
    for i in range(n):
        pos = [j for j in range(n) if j != i and labels[j] == labels[i]]
        neg = [j for j in range(n) if labels[j] != labels[i]]
        if epsilon is not None:
            hardest_pos = min(s[i, j].item() for j in pos)
            hardest_neg = max(s[i, j].item() for j in neg)
            pos_kept = [j for j in pos if s[i, j] < hardest_neg + epsilon]
            neg_kept = [j for j in neg if s[i, j] > hardest_pos - epsilon]
        else:
            pos_kept, neg_kept = pos, neg
        p_sum = sum((torch.exp(-alpha * (s[i, j] - gamma)) for j in pos_kept), torch.tensor(0.0, dtype=s.dtype))
        n_sum = sum((torch.exp(beta * (s[i, j] - gamma)) for j in neg_kept), torch.tensor(0.0, dtype=s.dtype))
        total = total + torch.log1p(p_sum) / alpha + torch.log1p(n_sum) / beta
    return total / n


def check_against(ours_fn, brute_fn, seed):
    embeddings, labels = batch(seed)
    e1 = embeddings.clone().requires_grad_(True)
    e2 = embeddings.clone().requires_grad_(True)
    ours = ours_fn(e1, labels)
    brute = brute_fn(e2, labels)
    ours.backward()
    brute.backward()
    assert ours.item() == pytest.approx(brute.item(), rel=1e-9, abs=1e-12)
    torch.testing.assert_close(e1.grad, e2.grad, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("margin", [0.0, 0.3, 0.5])
def test_contrastive_equals_brute_force(seed, margin):
    loss = losses.build("contrastive", neg_margin=margin)  # the default pos_margin 1: the paper's form
    check_against(loss, lambda e, y: brute_contrastive(e, y, margin), seed)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("pos_margin", [0.2, 0.6])
def test_contrastive_positive_margin_equals_brute_force(seed, pos_margin):
    loss = losses.build("contrastive", neg_margin=0.3, pos_margin=pos_margin)
    check_against(loss, lambda e, y: brute_contrastive(e, y, 0.3, pos_margin), seed)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("margin", [0.1, 0.5, 1.0])
def test_triplet_semihard_equals_brute_force(seed, margin):
    loss = losses.build("triplet", margin=margin)
    miner = miners.build("semihard", margin=margin)
    check_against(lambda e, y: loss(e, y, miner=miner), lambda e, y: brute_triplet_semihard(e, y, margin), seed)


@pytest.mark.parametrize("seed", range(3))
def test_triplet_without_miner_uses_every_triplet(seed):
    loss = losses.build("triplet", margin=0.2)
    check_against(loss, lambda e, y: brute_triplet_all(e, y, 0.2), seed)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(
    "params",
    [
        dict(alpha=2.0, beta=50.0, gamma=0.5),
        dict(alpha=2.0, beta=40.0, gamma=0.5),
        dict(alpha=1.0, beta=10.0, gamma=0.0),
    ],
)
def test_multi_similarity_with_miner_equals_brute_force(seed, params):
    loss = losses.build("multi_similarity", **params)
    miner = miners.build("multi_similarity", epsilon=0.1)
    check_against(
        lambda e, y: loss(e, y, miner=miner), lambda e, y: brute_multi_similarity(e, y, epsilon=0.1, **params), seed
    )


@pytest.mark.parametrize("seed", range(3))
def test_multi_similarity_without_miner_equals_brute_force(seed):
    loss = losses.build("multi_similarity", alpha=2.0, beta=50.0, gamma=0.5)
    check_against(loss, lambda e, y: brute_multi_similarity(e, y, 2.0, 50.0, 0.5, None), seed)


def test_multi_similarity_is_stable_for_large_beta():
    embeddings, labels = batch(1)
    value = losses.build("multi_similarity", beta=1000.0)(embeddings, labels)
    assert math.isfinite(value.item())


def test_vthm_keeps_exactly_the_pairs_of_its_two_rules():
    labels = torch.tensor([0, 0, 0, 1, 1])
    # anchor 0: positives S = 0.9, 0.3; negatives S = 0.35, 0.1
    sim = torch.eye(5)
    sim[0, 1:] = torch.tensor([0.9, 0.3, 0.35, 0.1])
    from dmlbench.methods.pairs import PairBatch

    mined = miners.build("multi_similarity", epsilon=0.1)(PairBatch.from_similarity(sim, labels))
    # positive kept if S < max neg (0.35) + 0.1 = 0.45 → only index 2
    assert mined.pos[0].nonzero().flatten().tolist() == [2]
    # negative kept if S > min pos (0.3) - 0.1 = 0.2 → only index 3
    assert mined.neg[0].nonzero().flatten().tolist() == [3]


def test_unknown_loss_names_the_known_ones():
    with pytest.raises(ConfigError, match="did you mean 'contrastive'"):
        losses.build("contrastiv")


def test_a_proxy_loss_built_without_what_the_training_fills_in_says_what_it_needs():
    with pytest.raises(ConfigError, match="proxy_anchor'\\) needs num_classes, embedding_dim"):
        losses.build("proxy_anchor")


def test_bad_loss_parameter_is_named():
    with pytest.raises(ConfigError, match="no parameter 'alpah' \\(did you mean 'alpha'"):
        losses.build("multi_similarity", alpah=2.0)


@pytest.mark.parametrize("value, said", [(-32.0, "outside what it allows"), ("thirty-two", "is not a float")])
def test_a_bad_value_is_refused_when_built_in_ones_own_code_as_in_the_plan(value, said):
    """docs/howto/own-code.md: `build` checks values as the plan checks a methods file."""
    with pytest.raises(ConfigError, match=f"losses.build\\('multi_similarity'\\).alpha: .*{said}.*> 0"):
        losses.build("multi_similarity", alpha=value)
