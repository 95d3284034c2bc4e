"""The pair-loss family of the ms paper and its baselines, each against a brute-force loop."""

import math

import pytest
import torch
from test_losses import batch, check_against, cosine

from dmlbench.methods import losses, miners
from dmlbench.methods.pairs import PairBatch
from dmlbench.run_config import Model


def pairs_of(labels, i):
    n = len(labels)
    pos = [j for j in range(n) if j != i and labels[j] == labels[i]]
    neg = [j for j in range(n) if labels[j] != labels[i]]
    return pos, neg


def brute_binomial(e, y, alpha, beta, gamma):
    s = cosine(e)
    total = 0
    for i in range(len(y)):
        pos, neg = pairs_of(y, i)
        total = total + sum(torch.log1p(torch.exp(alpha * (gamma - s[i, k]))) for k in pos) / len(pos)
        total = total + sum(torch.log1p(torch.exp(beta * (s[i, k] - gamma))) for k in neg) / len(neg)
    return total


def brute_lifted(e, y, margin):
    s = cosine(e)
    total = 0
    for i in range(len(y)):
        pos, neg = pairs_of(y, i)
        value = torch.log(sum(torch.exp(-s[i, k]) for k in pos)) + torch.log(
            sum(torch.exp(margin + s[i, k]) for k in neg)
        )
        total = total + torch.clamp(value, min=0)
    return total / len(y)


def brute_lifted_structure(e, y, margin):
    s = cosine(e)

    def d(i, j):
        return torch.sqrt(2 - 2 * s[i, j])

    total, count = 0, 0
    n = len(y)
    for i in range(n):
        for j in range(i + 1, n):
            if y[i] != y[j]:
                continue
            _, neg_i = pairs_of(y, i)
            _, neg_j = pairs_of(y, j)
            value = torch.log(
                sum(torch.exp(margin - d(i, k)) for k in neg_i) + sum(torch.exp(margin - d(j, l)) for l in neg_j)
            ) + d(i, j)
            total = total + torch.clamp(value, min=0) ** 2
            count += 1
    return total / (2 * count)


def brute_pair_sum(e, y):
    s = cosine(e)
    total = 0
    for i in range(len(y)):
        pos, neg = pairs_of(y, i)
        total = total + sum(s[i, k] for k in neg) - sum(s[i, k] for k in pos)
    return total / len(y)


def brute_contrastive_distance(e, y, margin, factor=1.0):
    """profs eq. 3.2 (factor 1) or Hadsell et al.'s halved form (factor ½), mean over ordered pairs."""
    s = cosine(e)
    terms = []
    for i in range(len(y)):
        for j in range(len(y)):
            if i == j:
                continue
            d = torch.sqrt(2 - 2 * s[i, j])
            terms.append(factor * d**2 if y[i] == y[j] else factor * torch.clamp(margin - d, min=0) ** 2)
    return sum(terms) / len(terms)


def brute_triplet_distance_hardest(e, y, margin):
    s = cosine(e)
    terms = []
    for a in range(len(y)):
        pos, neg = pairs_of(y, a)
        p = min(pos, key=lambda k: s[a, k].item())
        n = max(neg, key=lambda k: s[a, k].item())
        terms.append(torch.clamp((2 - 2 * s[a, p]) - (2 - 2 * s[a, n]) + margin, min=0))
    return sum(terms) / len(terms)


def brute_margin(e, y, alpha, beta):
    s = cosine(e)
    terms = []
    for i in range(len(y)):
        for j in range(len(y)):
            if i == j:
                continue
            d = torch.sqrt(2 - 2 * s[i, j])
            sign = 1 if y[i] == y[j] else -1
            terms.append(torch.clamp(alpha + sign * (d - beta[y[i]]), min=0))
    active = sum(1 for t in terms if t.item() > 0)
    return sum(terms) / max(active, 1)


def brute_npair(e, y):
    """Sohn's N-pair-mc: the first two images of each class are (x_i, x_i+)."""
    firsts = {}
    for index, label in enumerate(y.tolist()):
        firsts.setdefault(label, []).append(index)
    pairs = [(v[0], v[1]) for v in firsts.values() if len(v) >= 2]
    terms = []
    for i, (a, p) in enumerate(pairs):
        others = [q for j, (_, q) in enumerate(pairs) if j != i]
        terms.append(torch.log(1 + sum(torch.exp(e[a] @ e[q] - e[a] @ e[p]) for q in others)))
    return sum(terms) / len(terms)


def brute_angular(e, y, degrees):
    x = e / e.norm(dim=1, keepdim=True)
    t2 = math.tan(math.radians(degrees)) ** 2
    terms = []
    for a in range(len(y)):
        pos, neg = pairs_of(y, a)
        for p in pos:
            f = [4 * t2 * (x[a] + x[p]) @ x[n] - 2 * (1 + t2) * x[a] @ x[p] for n in neg]
            terms.append(torch.log(1 + sum(torch.exp(v) for v in f)))
    return sum(terms) / len(terms)


@pytest.mark.parametrize("seed", range(4))
def test_binomial(seed):
    check_against(
        losses.build("binomial", alpha=2.0, beta=50.0, gamma=0.5),
        lambda e, y: brute_binomial(e, y, 2.0, 50.0, 0.5),
        seed,
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("margin", [0.0, 1.0])
def test_generalised_lifted(seed, margin):
    check_against(losses.build("lifted", margin=margin), lambda e, y: brute_lifted(e, y, margin), seed)


@pytest.mark.parametrize("seed", range(4))
def test_lifted_structure(seed):
    check_against(losses.build("lifted_structure", margin=1.0), lambda e, y: brute_lifted_structure(e, y, 1.0), seed)


@pytest.mark.parametrize("seed", range(3))
def test_pair_sum_gives_every_pair_weight_one(seed):
    loss = losses.build("pair_sum")
    check_against(loss, brute_pair_sum, seed)


@pytest.mark.parametrize("seed", range(3))
def test_contrastive_distance_is_profs_eq_3_2_without_a_half(seed):
    check_against(
        losses.build("contrastive_distance", margin=1.0), lambda e, y: brute_contrastive_distance(e, y, 1.0), seed
    )
    check_against(
        losses.build("contrastive_distance", margin=1.0, halved=True),
        lambda e, y: brute_contrastive_distance(e, y, 1.0, factor=0.5),
        seed,
    )


@pytest.mark.parametrize("seed", range(3))
def test_triplet_distance_with_batch_hard(seed):
    loss, miner = losses.build("triplet_distance", margin=0.2), miners.build("hardest")
    check_against(lambda e, y: loss(e, y, miner=miner), lambda e, y: brute_triplet_distance_hardest(e, y, 0.2), seed)


@pytest.mark.parametrize("seed", range(3))
def test_margin_loss_class_specific_beta(seed):
    loss = losses.build("margin", margin=0.2, beta=1.2, num_classes=4).double()
    with torch.no_grad():
        loss.beta.copy_(torch.tensor([1.0, 1.1, 1.2, 1.3], dtype=torch.float64))
    check_against(loss, lambda e, y: brute_margin(e, y, 0.2, [1.0, 1.1, 1.2, 1.3]), seed)


@pytest.mark.parametrize("seed", range(3))
def test_npair(seed):
    loss = losses.build("npair", l2_reg=0.0)
    check_against(loss, brute_npair, seed)
    # Sohn's L2 penalty, on the embeddings as given (unnormalised): λ · mean ‖f‖²
    check_against(
        losses.build("npair", l2_reg=0.002),
        lambda e, y: brute_npair(e, y) + 0.002 * sum(f @ f for f in e) / len(e),
        seed,
    )


def test_the_catalogues_npair_methods_train_unnormalised_embeddings_as_sohn():
    """Sohn's N-pair (profs Table 1's N-pair rows) is defined on unnormalised embeddings with an
    L2 penalty: the model feeds the loss unnormalised vectors, and the penalty is not constant."""
    from dmlbench import models

    from conftest import full_plan

    plan = full_plan()
    for method in ("npair", "n_profs", "n_profs_hncm"):
        run = next(r for r in plan.runs("profs.t1") if r.method == method)
        cfg = plan.resolve(run)
        assert cfg["model"]["normalize"] is False
        model = models.build(Model(**dict(cfg["model"], backbone="small_cnn", pretrained=False))).eval()
        norms = model(torch.rand(4, 3, 32, 32)).norm(dim=1)
        assert not torch.allclose(norms, torch.ones(4))
    assert plan.resolve(next(r for r in plan.runs("profs.t1") if r.method == "angular"))["model"]["normalize"]


@pytest.mark.parametrize("seed", range(3))
def test_angular(seed):
    check_against(losses.build("angular", alpha_degrees=40.0), lambda e, y: brute_angular(e, y, 40.0), seed)


@pytest.mark.parametrize("seed", range(3))
def test_proxy_nca(seed):
    loss = losses.build("proxy_nca", num_classes=4, embedding_dim=8, scale=3.0).double()
    proxies = loss.proxies.detach()

    def brute(e, y):
        x = e / e.norm(dim=1, keepdim=True)
        p = proxies / proxies.norm(dim=1, keepdim=True)
        total = 0
        for i in range(len(y)):
            d = [((x[i] - p[c]) ** 2).sum() for c in range(4)]
            total = total - torch.log(
                torch.exp(-3.0 * d[y[i]]) / sum(torch.exp(-3.0 * d[c]) for c in range(4) if c != y[i])
            )
        return total / len(y)

    check_against(loss, brute, seed)


@pytest.mark.parametrize("seed", range(3))
def test_softtriple(seed):
    loss = losses.build("softtriple", num_classes=4, embedding_dim=8, centres_per_class=3).double()
    w = loss.centres.detach()
    w = w / w.norm(dim=1, keepdim=True)

    def brute(e, y):
        x = e / e.norm(dim=1, keepdim=True)
        total = 0
        for i in range(len(y)):
            scores = []
            for c in range(4):
                sims = torch.stack([x[i] @ w[c * 3 + k] for k in range(3)])
                weights = torch.softmax(sims / 0.1, dim=0)
                scores.append((weights * sims).sum())
            own = torch.exp(20 * (scores[y[i]] - 0.01))
            total = total - torch.log(own / (own + sum(torch.exp(20 * scores[c]) for c in range(4) if c != y[i])))
        reg = 0
        for c in range(4):
            for k in range(3):
                for k2 in range(k + 1, 3):
                    reg = reg + torch.sqrt(2 + 1e-5 - 2 * w[c * 3 + k] @ w[c * 3 + k2])
        return total / len(y) + 0.2 * reg / (4 * 3 * 2)

    check_against(loss, brute, seed)


def brute_per_positive_triplets(e, y):
    """profs §5.3 read as a loop: for each anchor, its positives from least to most similar, its
    negatives from most to least similar, the k-th of each paired, as many as the shorter list."""
    s = cosine(e)
    triplets = []
    for a in range(len(y)):
        pos, neg = pairs_of(y, a)
        pos = sorted(pos, key=lambda k: s[a, k].item())
        neg = sorted(neg, key=lambda k: -s[a, k].item())
        triplets += [(a, p, n) for p, n in zip(pos, neg)]
    return triplets


@pytest.mark.parametrize("seed", range(3))
def test_hardest_per_positive_keeps_one_hard_negative_per_positive_pair(seed):
    e, y = batch(seed)
    mined = miners.build("hardest", negatives="per_positive")(PairBatch.from_embeddings(e, y))
    ours = sorted(zip(*(t.tolist() for t in mined.triplets)))
    expected = sorted(brute_per_positive_triplets(e, y))
    assert ours == expected
    per_anchor = {a: sum(1 for t in expected if t[0] == a) for a in range(len(y))}
    assert all(count == (y == y[a]).sum().item() - 1 for a, count in per_anchor.items())  # every positive


@pytest.mark.parametrize("seed", range(3))
def test_profs_losses_with_per_positive_hard_mining_equal_brute_force(seed):
    """Contrastive (mean over the kept pairs), triplet and margin losses on the triplets of the
    loop above: every positive pair and its matched hard negative pair."""

    def contrastive(e, y):
        s = cosine(e)
        terms = []
        for a, p, n in brute_per_positive_triplets(e, y):
            terms.append(2 - 2 * s[a, p])
            terms.append(torch.clamp(1.0 - torch.sqrt(2 - 2 * s[a, n]), min=0) ** 2)
        return sum(terms) / len(terms)

    def triplet(e, y):
        s = cosine(e)
        terms = [
            torch.clamp((2 - 2 * s[a, p]) - (2 - 2 * s[a, n]) + 0.2, min=0)
            for a, p, n in brute_per_positive_triplets(e, y)
        ]
        return sum(terms) / len(terms)

    miner = miners.build("hardest", negatives="per_positive")
    for name, params, brute in (
        ("contrastive_distance", {"margin": 1.0}, contrastive),
        ("triplet_distance", {"margin": 0.2}, triplet),
    ):
        loss = losses.build(name, **params)
        check_against(lambda e, y: loss(e, y, miner=miner), brute, seed)


def test_hardest_miner_picks_the_named_pairs():
    labels = torch.tensor([0, 0, 0, 1, 1])
    sim = torch.eye(5)
    sim[0, 1:] = torch.tensor([0.9, 0.3, 0.35, 0.1])
    mined = miners.build("hardest")(PairBatch.from_similarity(sim, labels))
    a, p, n = mined.triplets
    row = (a == 0).nonzero().item()
    assert (p[row].item(), n[row].item()) == (2, 3)


def test_distance_weighted_sampling_frequencies():
    """Negatives are drawn with probability ∝ 1/q(d) (Wu et al.), checked by a chi-square test."""
    from scipy.stats import chisquare

    torch.manual_seed(0)
    dim = 8
    labels = torch.tensor([0, 0] + list(range(1, 7)))
    e = torch.randn(8, dim, dtype=torch.float64)
    batch = PairBatch.from_embeddings(e, labels)
    miner = miners.build("distance_weighted", cutoff=0.5, nonzero_loss_cutoff=1.4)
    d = batch.distances()[0].clamp(min=0.5)
    q = d ** (dim - 2) * (1 - d**2 / 4) ** ((dim - 3) / 2)
    allowed = batch.neg[0] & (batch.distances()[0] < 1.4)
    expected = torch.where(allowed, 1 / q, torch.zeros_like(q))
    if expected.sum() == 0:
        pytest.skip("no negative under the cutoff for this draw")
    expected = expected / expected.sum()
    counts = torch.zeros(8)
    for _ in range(4000):
        a, p, n = miner(batch).triplets
        counts[n[(a == 0).nonzero()[0]]] += 1
    support = expected > 0
    assert counts[~support].sum() == 0
    stat = chisquare(counts[support].numpy(), 4000 * expected[support].numpy())
    assert stat.pvalue > 0.001


@pytest.mark.parametrize(
    "name, params, miner",
    [
        ("contrastive", {"neg_margin": 0.5}, None),
        ("contrastive", {"neg_margin": 0.3, "pos_margin": 0.8}, None),
        ("triplet", {"margin": 0.1}, ("semihard", {"margin": 0.1})),
        ("multi_similarity", {}, ("multi_similarity", {"epsilon": 0.1})),
        ("binomial", {}, None),
        ("lifted", {"margin": 1.0}, None),
        ("lifted_structure", {}, None),
        ("pair_sum", {}, ("multi_similarity", {"epsilon": 0.1})),
        ("contrastive_distance", {}, None),
        ("triplet_distance", {}, ("hardest", {})),
        ("margin", {"num_classes": 4}, None),
        ("angular", {}, None),
        ("multi_similarity", {}, ("semihard", {"margin": 0.1})),
    ],
)
@pytest.mark.parametrize("seed", range(2))
def test_theorem_3_1_weights_give_the_same_gradient(name, params, miner, seed):
    """Σ w·S with w = ∂L/∂S held constant has the loss's gradient w.r.t. the embeddings, and the
    weights are non-negative in the paper's sign convention (w = -∂L/∂S on positives)."""
    e, y = batch(seed)
    loss = losses.build(name, **params).double()
    mine = miners.build(miner[0], **miner[1]) if miner else None
    x = e.clone().requires_grad_(True)
    direct = torch.autograd.grad(loss(x, y, miner=mine), x)[0]

    x2 = e.clone().requires_grad_(True)
    xn = x2 / x2.norm(dim=1, keepdim=True)
    s = xn @ xn.T
    s_leaf = s.detach().requires_grad_(True)
    b = PairBatch.from_similarity(s_leaf, y)
    if mine:
        b = mine(b)
    weights = torch.autograd.grad(loss.compute(b), s_leaf)[0]
    surrogate = (weights.detach() * s).sum()
    torch.testing.assert_close(torch.autograd.grad(surrogate, x2)[0], direct)
    same = y[:, None] == y[None, :]
    assert (weights[same & ~torch.eye(len(y), dtype=torch.bool)] <= 1e-12).all()
    assert (weights[~same] >= -1e-12).all()


def test_semihard_threshold_miner_keeps_the_band_below_lambda():
    labels = torch.tensor([0, 0, 1, 1, 1])
    sim = torch.eye(5)
    sim[0, 1:] = torch.tensor([0.9, 0.45, 0.2, 0.6])
    mined = miners.build("semihard_threshold", lam=0.5, margin=0.2)(PairBatch.from_similarity(sim, labels))
    assert mined.neg[0].nonzero().flatten().tolist() == [2]  # 0.3 < S < 0.5
    assert mined.pos[0].nonzero().flatten().tolist() == [1]  # every positive


# --- distance-weighted sampling draws with replacement: a negative drawn twice counts twice ---


def _triplets_with_repeats(embeddings, labels):
    """Every positive pair (a, p) with one negative; every anchor's negative is its most similar
    one (so its loss term is active), drawn once per positive: repeats."""
    s = cosine(embeddings)
    anchors, positives, negatives = [], [], []
    for a in range(len(labels)):
        negs = [n for n in range(len(labels)) if labels[n] != labels[a]]
        hardest = max(negs, key=lambda n: s[a, n].item())
        for p in range(len(labels)):
            if a != p and labels[a] == labels[p]:
                anchors.append(a), positives.append(p), negatives.append(hardest)
    return [torch.tensor(v) for v in (anchors, positives, negatives)]


def test_margin_loss_counts_every_drawn_negative():
    from dmlbench.methods.pairs import PairBatch

    e, y = batch(7)
    a, p, n = _triplets_with_repeats(e, y)
    assert len(set(zip(a.tolist(), n.tolist()))) < len(a)  # repeats present
    loss = losses.build("margin", margin=0.2, beta=1.2, learn_beta=False)
    loss._labels = y
    pb = PairBatch.from_embeddings(e, y).with_triplets(a, p, n)
    x = e / e.norm(dim=1, keepdim=True)
    terms = []
    for i, j, k in zip(a.tolist(), p.tolist(), n.tolist()):  # Wu et al.: both terms of every triplet
        terms.append(torch.clamp(0.2 + (x[i] - x[j]).norm() - 1.2, min=0))
        terms.append(torch.clamp(0.2 - ((x[i] - x[k]).norm() - 1.2), min=0))
    brute = sum(terms) / sum(1 for t in terms if t > 0)
    assert loss.compute(pb).item() == pytest.approx(brute.item(), rel=1e-6)  # D via sqrt(2 - 2S)


def test_pair_margin_counts_every_drawn_negative():
    from dmlbench.methods.pairs import PairBatch

    e, y = batch(8)
    a, p, n = _triplets_with_repeats(e, y)
    pb = PairBatch.from_embeddings(e, y).with_triplets(a, p, n)
    s = cosine(e)
    kept = []
    for i, j, k in zip(a.tolist(), p.tolist(), n.tolist()):
        kept += [torch.clamp(0.2 + (0.5 - s[i, j]), min=0), torch.clamp(0.2 - (0.5 - s[i, k]), min=0)]
    kept = [t for t in kept if t > 0]
    value = losses.build("pair_margin", margin=0.2, lam=0.5).compute(pb)
    assert value.item() == pytest.approx((sum(kept) / len(kept)).item(), rel=1e-9)


def test_ms_miner_drops_near_identical_positives_before_mining_on_request():
    """The ms authors' code: positives with S ≥ 1 - 1e-5 are left out, also of min_{P_i} S."""
    e, y = batch(9)
    e = e.clone()
    e[1] = e[0] * 3.0  # image 1 duplicates image 0 (same class): S_01 = 1
    e[3] = e[0] + 0.01 * e[4]  # a negative almost as similar, so VTHM alone would keep (0, 1)
    pb = PairBatch.from_embeddings(e, y)
    s = pb.sim
    mined = miners.build("multi_similarity", epsilon=0.1, duplicate_threshold=1 - 1e-5)(pb)
    plain = miners.build("multi_similarity", epsilon=0.1)(pb)
    assert plain.pos[0, 1] and not mined.pos[0, 1] and not mined.pos[1, 0]
    for i in range(len(y)):
        positives = [j for j in range(len(y)) if j != i and y[j] == y[i] and s[i, j] < 1 - 1e-5]
        negatives = [j for j in range(len(y)) if y[j] != y[i]]
        hardest_pos = min(s[i, j].item() for j in positives)
        hardest_neg = max(s[i, j].item() for j in negatives)
        assert {j for j in negatives if s[i, j] > hardest_pos - 0.1} == set(mined.neg[i].nonzero().flatten().tolist())
        assert {j for j in positives if s[i, j] < hardest_neg + 0.1} == set(mined.pos[i].nonzero().flatten().tolist())


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("alpha, delta", [(32.0, 0.1), (4.0, 0.0)])
def test_proxy_anchor(seed, alpha, delta):
    """Kim et al. 2020, eq. 4, as a loop over proxies; six proxies, the batch holds four classes
    (two proxies have no positive: in the mean over all proxies, not in the one over P⁺)."""
    loss = losses.build("proxy_anchor", num_classes=6, embedding_dim=8, alpha=alpha, delta=delta).double()
    proxies = loss.proxies.detach()

    def brute(e, y):
        x = e / e.norm(dim=1, keepdim=True)
        p = proxies / proxies.norm(dim=1, keepdim=True)
        with_positives, positive, negative = 0, 0, 0
        for c in range(6):
            s = [x[i] @ p[c] for i in range(len(y))]
            own = [i for i in range(len(y)) if y[i] == c]
            if own:
                with_positives += 1
                positive = positive + torch.log(1 + sum(torch.exp(-alpha * (s[i] - delta)) for i in own))
            negative = negative + torch.log(
                1 + sum(torch.exp(alpha * (s[i] + delta)) for i in range(len(y)) if y[i] != c)
            )
        return positive / with_positives + negative / 6

    check_against(loss, brute, seed)


def test_proxy_anchor_gives_pytorch_metric_learnings_value_and_gradients():
    from pytorch_metric_learning.losses import ProxyAnchorLoss

    ours = losses.build("proxy_anchor", num_classes=5, embedding_dim=8).double()
    theirs = ProxyAnchorLoss(num_classes=5, embedding_size=8, margin=0.1, alpha=32).double()
    with torch.no_grad():
        theirs.proxies.copy_(ours.proxies)
    embeddings, labels = batch(7, n_classes=4)
    e1, e2 = embeddings.clone().requires_grad_(True), embeddings.clone().requires_grad_(True)
    a, b = ours(e1, labels), theirs(e2, labels)
    a.backward()
    b.backward()
    assert a.item() == pytest.approx(b.item(), rel=1e-9)
    # float64; 1e-9: summation order differs with the thread count (5.9e-10 seen on a 2-core CI)
    torch.testing.assert_close(e1.grad, e2.grad, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(ours.proxies.grad, theirs.proxies.grad, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize(
    "name", [n for n in losses.LOSSES.names() if not getattr(losses.LOSSES.get(n), "takes_miner", True)]
)
def test_a_loss_that_builds_its_own_comparisons_refuses_a_miner_in_ones_own_loop(name):
    """Called directly (docs/howto/own-code.md), as the plan refuses it in the pipeline."""
    from dmlbench.methods import declared

    component = declared.components("loss")[name]
    filled = {"num_classes": 4, "embedding_dim": 8} if component.needs else {}
    loss = losses.LOSSES.build(name, **filled)
    embeddings, labels = torch.randn(8, 8), torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    with pytest.raises(ValueError, match="takes no miner"):
        loss(embeddings, labels, miner=miners.build("semihard", margin=0.2))
    assert torch.isfinite(loss(embeddings, labels))
