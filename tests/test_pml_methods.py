"""The catalogue's methods through pytorch-metric-learning (Circle, SupCon, NT-Xent, ArcFace, CosFace,
Sub-center ArcFace, cross-batch memory) against loops written from their papers' equations, and PML's
miners as the suite's: the same pairs as the suite's own miner of that rule, within a scheme's
restriction, feeding the suite's losses and PML's."""

from __future__ import annotations

import math

import pytest
import torch
import yaml
from conftest import CONFIG_DIR

from dmlbench.core.errors import ConfigError
from dmlbench.methods import losses, miners, plugin_code
from dmlbench.methods.criterion import Criterion
from dmlbench.methods.pairs import PairBatch

pytest.importorskip("pytorch_metric_learning")
CATALOGUE = yaml.safe_load((CONFIG_DIR / "methods.yaml").read_text())


def _batch(seed: int = 0, n_classes: int = 6, per_class: int = 4, dim: int = 16):
    torch.manual_seed(seed)
    x = torch.randn(n_classes * per_class, dim, dtype=torch.float64)
    return x, torch.arange(n_classes).repeat_interleave(per_class)


def _cosines(x):
    z = torch.nn.functional.normalize(x, dim=1)
    return z @ z.T


def circle_loop(x, y, m, gamma):
    """Sun et al. 2020, eq. 6 with eq. 8's optima and margins, per anchor, averaged over anchors."""
    s, total = _cosines(x), []
    for i in range(len(y)):
        pos = [s[i, j] for j in range(len(y)) if j != i and y[j] == y[i]]
        neg = [s[i, j] for j in range(len(y)) if y[j] != y[i]]
        a_p = [max(1 + m - sp, 0) * (sp - (1 - m)) for sp in pos]
        a_n = [max(sn + m, 0) * (sn - m) for sn in neg]
        inner = sum(math.exp(gamma * v) for v in a_n) * sum(math.exp(-gamma * v) for v in a_p)
        total.append(math.log(1 + inner))
    return sum(total) / len(total)


def supcon_loop(x, y, tau):
    """Khosla et al. 2020, eq. 2 (L_out): −1/|P(i)| Σ_p log(e^{z_i·z_p/τ} / Σ_{a≠i} e^{z_i·z_a/τ}), mean over i."""
    s, total = _cosines(x), []
    for i in range(len(y)):
        others = sum(math.exp(s[i, a] / tau) for a in range(len(y)) if a != i)
        pos = [p for p in range(len(y)) if p != i and y[p] == y[i]]
        total.append(-sum(math.log(math.exp(s[i, p] / tau) / others) for p in pos) / len(pos))
    return sum(total) / len(total)


def ntxent_loop(x, y, tau):
    """Chen et al. 2020, eq. 1, each same-label pair a positive and the anchor's other labels the
    negatives: −log(e^{s_ip/τ} / (e^{s_ip/τ} + Σ_n e^{s_in/τ})), mean over the positive pairs."""
    s, total = _cosines(x), []
    for i in range(len(y)):
        negatives = sum(math.exp(s[i, n] / tau) for n in range(len(y)) if y[n] != y[i])
        for p in range(len(y)):
            if p != i and y[p] == y[i]:
                total.append(-math.log(math.exp(s[i, p] / tau) / (math.exp(s[i, p] / tau) + negatives)))
    return sum(total) / len(total)


def margin_softmax_loop(x, y, weights, scale, target_logit):
    """−log(e^{s·f(θ_y)} / (e^{s·f(θ_y)} + Σ_{j≠y} e^{s cos θ_j})), mean over the batch; cos θ_j the
    cosine of the embedding and class j's weight (the best of its sub-centres: `weights` C × K × d)."""
    z = torch.nn.functional.normalize(x, dim=1)
    w = torch.nn.functional.normalize(weights, dim=-1)
    total = []
    for i in range(len(y)):
        cos = [max(float(z[i] @ w[j, k]) for k in range(w.shape[1])) for j in range(w.shape[0])]
        target = math.exp(scale * target_logit(cos[y[i]]))
        rest = sum(math.exp(scale * c) for j, c in enumerate(cos) if j != y[i])
        total.append(-math.log(target / (target + rest)))
    return sum(total) / len(total)


def _criterion(method: str, x, y):
    entry = dict(CATALOGUE[method])
    entry["code"] = plugin_code.digests(entry)  # as the plan records it in the run's settings
    return Criterion(entry, num_classes=int(y.max()) + 1, embedding_dim=x.shape[1]).double()


@pytest.mark.parametrize(
    "method, loop",
    [
        ("circle", lambda x, y: circle_loop(x, y, m=0.4, gamma=80)),
        ("supcon", lambda x, y: supcon_loop(x, y, tau=0.1)),
        ("ntxent", lambda x, y: ntxent_loop(x, y, tau=0.07)),
    ],
)
def test_the_catalogues_pair_methods_are_their_papers_equations(method, loop):
    x, y = _batch(seed=3)
    x = x * 0.3  # similarities spread so that Circle's margins and both temperatures matter
    assert _criterion(method, x, y)(x, y).item() == pytest.approx(loop(x, y), rel=1e-6)


def _class_weights(loss, classes: int, dim: int) -> torch.Tensor:
    """PML keeps W as d × (C·K): class j's sub-centres are columns j·K … j·K+K−1."""
    w = loss.loss.loss.W.detach().T
    return w.reshape(classes, w.shape[0] // classes, dim)


@pytest.mark.parametrize(
    "method, target",
    [
        ("arcface", lambda c: math.cos(math.acos(max(min(c, 1), -1)) + math.radians(28.6))),
        ("subcenter_arcface", lambda c: math.cos(math.acos(max(min(c, 1), -1)) + math.radians(28.6))),
        ("cosface", lambda c: c - 0.35),
    ],
)
def test_the_margin_softmaxes_are_their_papers_equations_over_their_learned_weights(method, target):
    x, y = _batch(seed=4, dim=8)
    criterion = _criterion(method, x, y)
    weights = _class_weights(criterion, 6, 8).double()
    assert weights.shape[1] == (3 if method == "subcenter_arcface" else 1)
    assert criterion(x, y).item() == pytest.approx(margin_softmax_loop(x, y, weights, 64, target), rel=1e-5)
    assert any(p.requires_grad for p in criterion.parameters())  # trained by the run's optimiser


def test_cross_batch_memory_compares_the_batch_with_the_remembered_ones_and_resumes_its_queue():
    x1, y1 = _batch(seed=5)
    x2, y2 = _batch(seed=6)
    criterion = _criterion("xbm_contrastive", x1, y1)
    criterion(x1, y1)
    second = criterion(x2, y2).item()
    s = _cosines(torch.cat([x2, x1]))  # the memory after step 2: this batch, then the last one
    labels = torch.cat([y2, y1])
    pos = [1 - s[i, j] for i in range(24) for j in range(48) if j != i and labels[j] == labels[i]]
    neg = [max(s[i, j] - 0.5, 0) for i in range(24) for j in range(48) if labels[j] != labels[i]]
    nonzero = [v for v in pos + neg if v > 0]  # PML's reducer: the mean of the nonzero pair losses, per kind
    pos_nonzero, neg_nonzero = [v for v in pos if v > 0], [v for v in neg if v > 0]
    assert nonzero and second == pytest.approx(
        sum(pos_nonzero) / len(pos_nonzero) + sum(neg_nonzero) / len(neg_nonzero), rel=1e-6
    )

    resumed = _criterion("xbm_contrastive", x1, y1)
    fresh = _criterion("xbm_contrastive", x1, y1)
    fresh(x1, y1)
    resumed.load_state_dict(fresh.state_dict())  # as a checkpoint restores it: the queue and its position
    x3, y3 = _batch(seed=7)
    assert resumed(x3, y3).item() == pytest.approx(fresh(x3, y3).item(), rel=1e-12)


def test_pmls_multi_similarity_miner_keeps_exactly_the_suites_vthm_pairs_and_feeds_its_losses():
    x, y = _batch(seed=1)
    batch = PairBatch.from_embeddings(x, y)
    ours, theirs = miners.build("multi_similarity", epsilon=0.1), miners.build("pml:MultiSimilarityMiner", epsilon=0.1)
    kept_ours, kept_theirs = ours(batch), theirs(batch)
    assert torch.equal(kept_ours.pos, kept_theirs.pos) and torch.equal(kept_ours.neg, kept_theirs.neg)
    assert 0 < int(kept_theirs.neg.sum()) < int(batch.neg.sum())  # it narrows the pairs
    loss = losses.build("multi_similarity", alpha=2.0, beta=50.0, gamma=0.5)
    assert loss(x, y, miner=theirs).item() == pytest.approx(loss(x, y, miner=ours).item(), rel=1e-12)


def test_a_pml_triplet_miner_hands_its_triplets_within_the_schemes_restriction():
    x, y = _batch(seed=2)
    miner = miners.build("pml:TripletMarginMiner", margin=0.2, type_of_triplets="semihard")
    s, mined = _cosines(x), miner(PairBatch.from_embeddings(x, y)).triplets
    d = torch.sqrt((2 - 2 * s).clamp(min=0))  # PML's default distance: L2 of the normalised embeddings
    for a, p, n in zip(*mined):  # semi-hard: d_ap < d_an ≤ d_ap + margin
        assert y[a] == y[p] != y[n] and d[a, p] < d[a, n] <= d[a, p] + 0.2 + 1e-12
    allowed = torch.rand(24, 24, generator=torch.Generator().manual_seed(0)) < 0.5
    loss = losses.build("triplet", margin=0.1)
    restricted = PairBatch.from_embeddings(x, y)
    restricted = miner(restricted.with_pairs(restricted.pos & allowed, restricted.neg & allowed))
    a, p, n = restricted.triplets
    assert 0 < len(a) < len(mined[0]) and bool((allowed[a, p] & allowed[a, n]).all())
    value = loss(x, y, miner=miner)  # a suite loss over PML's triplets: the mean hinge over them
    hinge = torch.relu(s[mined[1 + 1]].new_tensor(0.0) + s[mined[0], mined[2]] - s[mined[0], mined[1]] + 0.1)
    assert value.item() == pytest.approx(hinge.mean().item(), rel=1e-9)


def test_a_pml_miner_feeds_a_pml_loss_with_its_own_indices():
    from pytorch_metric_learning import losses as pml_losses, miners as pml_miners

    x, y = _batch(seed=8)
    ours = losses.build("pml:CircleLoss")(x, y, miner=miners.build("pml:MultiSimilarityMiner", epsilon=0.2))
    mined = pml_miners.MultiSimilarityMiner(epsilon=0.2)(x, y)
    assert ours.item() == pytest.approx(pml_losses.CircleLoss()(x, y, indices_tuple=mined).item(), rel=1e-12)


@pytest.mark.parametrize(
    "miner, refusal",
    [
        ({"name": "pml:MultiSimilarityMinr"}, "no miner 'MultiSimilarityMinr' .did you mean 'MultiSimilarityMiner'"),
        ({"name": "pml:MultiSimilarityMiner", "epsilom": 0.1}, "did you mean 'epsilon'"),
        ({"name": "pml:MultiSimilarityMiner", "epsilon": -1.0}, "is outside what it allows"),
        ({"name": "pml:TripletMarginMiner", "type_of_triplets": "hardest"}, "one of 'all', 'hard'"),
    ],
)
def test_a_bad_pml_miner_is_refused_naming_the_key(miner, refusal):
    with pytest.raises(ConfigError, match=refusal):
        miners.build(**miner)
