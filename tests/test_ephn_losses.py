"""The ephn losses (eqs. 1, 16) and per-anchor miners: brute-force loops, the paper's gradient
formulas (eqs. 13-15) and pytorch-metric-learning's BatchEasyHardMiner as references."""

import math

import pytest
import torch

from dmlbench.core.errors import ConfigError
from dmlbench.methods import losses, miners
from dmlbench.methods.criterion import Criterion
from dmlbench.methods.pairs import PairBatch


def unit_triplets(count, dim=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    f = torch.nn.functional.normalize(torch.randn(3, count, dim, generator=g, dtype=torch.float64), dim=2)
    return f[0], f[1], f[2]


def random_batch(seed=0, n_classes=4, per_class=4, dim=6):
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(n_classes).repeat_interleave(per_class)
    return torch.randn(len(labels), dim, generator=g, dtype=torch.float64), labels


@pytest.mark.parametrize("temperature", [1.0, 0.1])
def test_triplet_nca_is_eq1_averaged_over_mined_triplets(temperature):
    embeddings, labels = random_batch(seed=1)
    miner = miners.build("per_anchor", positive="easy", negative="hard")
    loss = losses.build("triplet_nca", temperature=temperature)
    value = loss(embeddings, labels, miner=miner)
    batch = miner(PairBatch.from_embeddings(embeddings, labels))
    s = batch.sim
    terms = []
    for a, p, n in zip(*batch.triplets):
        ap, an = math.exp(s[a, p] / temperature), math.exp(s[a, n] / temperature)
        terms.append(-math.log(ap / (ap + an)))
    assert len(terms) == len(labels)
    assert value.item() == pytest.approx(sum(terms) / len(terms), rel=1e-12)


def test_second_order_loss_is_eq16():
    f_a, f_p, f_n = unit_triplets(20)
    s_ap, s_an = (f_a * f_p).sum(1), (f_a * f_n).sum(1)
    terms = losses.build("triplet_2nd").triplet_terms(s_ap, s_an)
    for value, ap, an in zip(terms, s_ap.tolist(), s_an.tolist()):
        num = math.exp(ap - ap * ap / 2)
        assert value.item() == pytest.approx(-math.log(num / (num + math.exp(an * an / 2))), rel=1e-12)


def test_second_order_gradients_are_eqs_13_to_15():
    """∂L2nd/∂f with S = f_a·f_p, f_a·f_n on unit vectors, against the paper's weighted gradients
    (α = 1): g_p = -β_w w_ap f_a, g_n = β_w w_an f_a, g_a = β_w w_an f_n - β_w w_ap f_p."""
    f_a, f_p, f_n = (f.clone().requires_grad_() for f in unit_triplets(30, seed=2))
    s_ap, s_an = (f_a * f_p).sum(1), (f_a * f_n).sum(1)
    losses.build("triplet_2nd").triplet_terms(s_ap, s_an).sum().backward()
    with torch.no_grad():
        w_ap, w_an = 1 - s_ap, s_an
        e_n = torch.exp(s_an**2 / 2)
        beta_w = (e_n / (torch.exp(s_ap - s_ap**2 / 2) + e_n))[:, None]
        torch.testing.assert_close(f_p.grad, -beta_w * w_ap[:, None] * f_a, rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(f_n.grad, beta_w * w_an[:, None] * f_a, rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(
            f_a.grad, beta_w * (w_an[:, None] * f_n - w_ap[:, None] * f_p), rtol=1e-12, atol=1e-14
        )


def test_first_order_gradients_are_eqs_4_to_6():
    f_a, f_p, f_n = (f.clone().requires_grad_() for f in unit_triplets(30, seed=3))
    s_ap, s_an = (f_a * f_p).sum(1), (f_a * f_n).sum(1)
    losses.build("triplet_nca").triplet_terms(s_ap, s_an).sum().backward()
    with torch.no_grad():
        beta = (torch.exp(s_an) / (torch.exp(s_ap) + torch.exp(s_an)))[:, None]
        torch.testing.assert_close(f_p.grad, -beta * f_a, rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(f_n.grad, beta * f_a, rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(f_a.grad, beta * (f_n - f_p), rtol=1e-12, atol=1e-14)


# --- miners ---------------------------------------------------------------------------------

# Anchor 0's positives are 1 (S 0.9) and 2 (S 0.3); its negatives 3 (S 0.8), 4 (S 0.5), 5 (S -0.2).
LABELS = torch.tensor([0, 0, 0, 1, 1, 2])
ROW0 = [1.0, 0.9, 0.3, 0.8, 0.5, -0.2]


def hand_built_batch():
    sim = torch.eye(6, dtype=torch.float64)
    sim[0], sim[:, 0] = torch.tensor(ROW0, dtype=torch.float64), torch.tensor(ROW0, dtype=torch.float64)
    return PairBatch.from_similarity(sim, LABELS)


@pytest.mark.parametrize(
    "positive, negative, expected",
    [
        ("easy", "hard", (1, 3)),  # EPHN: most similar positive, most similar negative
        ("easy", "semihard", (1, 3)),  # 0.8 < 0.9: the hard negative is already semi-hard
        ("hard", "hard", (2, 3)),  # HPHN
        ("easy", "easy", (1, 5)),  # EPEN: least similar negative
        ("hard", "semihard", (2, 5)),  # below S_ap = 0.3 only negative 5 (S -0.2) is left
    ],
)
def test_each_miner_picks_the_pair_its_name_says(positive, negative, expected):
    miner = miners.build("per_anchor", positive=positive, negative=negative)
    a, p, n = miner(hand_built_batch()).triplets
    row = (a == 0).nonzero()
    assert len(row) == 1
    assert (p[row].item(), n[row].item()) == expected


def test_anchors_without_a_positive_or_a_semihard_negative_are_skipped_and_counted():
    miner = miners.build("per_anchor", positive="easy", negative="semihard")
    sim = torch.tensor(
        [[1.0, 0.2, 0.5, 0.1], [0.2, 1.0, 0.6, 0.7], [0.5, 0.6, 1.0, 0.0], [0.1, 0.7, 0.0, 1.0]], dtype=torch.float64
    )
    # anchors 0, 1 (class 0): every negative of 0 and 1 is more similar than their positive
    # anchor 2 has no positive (class 1 alone), anchor 3 neither (class 2 alone)
    a, p, n = miner(PairBatch.from_similarity(sim, torch.tensor([0, 0, 1, 2]))).triplets
    assert a.tolist() == [0]  # 0: positive 1 (0.2), negative 3 (0.1 < 0.2)
    assert (p.tolist(), n.tolist()) == ([1], [3])
    assert miner.take_stats() == {"anchors": 4, "skipped_anchors": 3}
    assert miner.take_stats() == {"anchors": 0, "skipped_anchors": 0}


@pytest.mark.parametrize(
    "positive, negative", [("easy", "hard"), ("easy", "semihard"), ("hard", "hard"), ("easy", "easy")]
)
def test_miner_agrees_with_pytorch_metric_learning(positive, negative):
    from pytorch_metric_learning.distances import CosineSimilarity
    from pytorch_metric_learning.miners import BatchEasyHardMiner

    for seed in range(3):
        embeddings, labels = random_batch(seed=seed, n_classes=5, per_class=4, dim=8)
        ours = miners.build("per_anchor", positive=positive, negative=negative)(
            PairBatch.from_embeddings(embeddings, labels)
        ).triplets
        reference = BatchEasyHardMiner(pos_strategy=positive, neg_strategy=negative, distance=CosineSimilarity())(
            embeddings, labels
        )
        a, p, _, n = reference
        assert [t.tolist() for t in ours] == [a.tolist(), p.tolist(), n.tolist()]


def test_one_triplet_per_image_uses_each_image_once_and_follows_the_rule():
    embeddings, labels = random_batch(seed=4, n_classes=4, per_class=8, dim=8)
    batch = PairBatch.from_embeddings(embeddings, labels)
    miner = miners.build("per_anchor", positive="hard", negative="hard", one_triplet_per_image=True)
    a, p, n = miner(batch).triplets
    used = torch.cat([a, p, n]).tolist()
    assert len(used) == len(set(used)) and len(a) >= 8
    free = set(range(len(labels)))
    s = batch.sim
    for anchor, pos, neg in zip(a.tolist(), p.tolist(), n.tolist()):
        free.discard(anchor)
        same = [j for j in free if labels[j] == labels[anchor]]
        other = [j for j in free if labels[j] != labels[anchor]]
        assert pos == min(same, key=lambda j: s[anchor, j]) and neg == max(other, key=lambda j: s[anchor, j])
        free -= {pos, neg}
    stats = miner.take_stats()
    assert stats["anchors"] == len(labels) and stats["skipped_anchors"] == len(labels) - len(a)


def test_duplicate_threshold_excludes_near_identical_positives():
    sim = torch.tensor(
        [[1.0, 1.0, 0.4, 0.2], [1.0, 1.0, 0.3, 0.1], [0.4, 0.3, 1.0, 0.0], [0.2, 0.1, 0.0, 1.0]], dtype=torch.float64
    )
    batch = PairBatch.from_similarity(sim, torch.tensor([0, 0, 0, 1]))
    a, p, _ = miners.build("per_anchor", duplicate_threshold=0.9999)(batch).triplets
    assert dict(zip(a.tolist(), p.tolist()))[0] == 2
    a, p, _ = miners.build("per_anchor")(batch).triplets
    assert dict(zip(a.tolist(), p.tolist()))[0] == 1


def test_criterion_reports_the_miner_counts():
    method = {"loss": {"name": "triplet_2nd"}, "miner": {"name": "per_anchor", "negative": "semihard"}}
    criterion = Criterion(method)
    embeddings, labels = random_batch(seed=5)
    criterion(embeddings.requires_grad_(), labels)
    stats = criterion.take_stats()
    assert stats["anchors"] == len(labels) and 0 <= stats["skipped_anchors"] <= len(labels)


def test_bad_miner_options_are_named():
    with pytest.raises(ConfigError, match="negative: 'medium' is outside what it allows.*'hard', 'semihard', 'easy'"):
        miners.build("per_anchor", negative="medium")
    with pytest.raises(ConfigError, match="positive: 'semihard' is outside what it allows"):
        miners.build("per_anchor", positive="semihard")


def ephn_code_loss(e, y, semi=False, sigma=0.1):
    """A hand reading of the authors' EasyPositiveHardNegative `EPHNLoss.forward`, as loops: per
    anchor the most similar positive (S ≤ 0.9999, self excluded), the most similar negative
    (semi-hard: not more similar than that positive), the triplet dropped when either similarity
    is ≤ 0, then the mean of -log softmax([S_ap, S_an] / σ)[0]."""
    x = e / e.norm(dim=1, keepdim=True)
    s = x @ x.T
    terms = []
    for a in range(len(y)):
        positives = [(s[a, j].item(), j) for j in range(len(y)) if j != a and y[j] == y[a] and s[a, j] <= 0.9999]
        if not positives:
            continue
        v_pos, p = max(positives)
        negatives = [(s[a, j].item(), j) for j in range(len(y)) if y[j] != y[a] and not (semi and s[a, j] > v_pos)]
        if not negatives:
            continue
        v_neg, n = max(negatives)
        if v_pos <= 0 or v_neg <= 0:
            continue
        terms.append(-torch.log_softmax(torch.stack([s[a, p], s[a, n]]) / sigma, dim=0)[0])
    return sum(terms) / len(terms)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("method, semi", [("ephn_1st_code", False), ("epshn_1st_code", True)])
def test_ephn_code_variant_drops_triplets_with_non_positive_similarities(seed, method, semi):
    from conftest import full_plan

    spec = full_plan().methods[method]
    e, y = random_batch(seed, n_classes=4, per_class=4, dim=6)
    e = e.double()
    ours = Criterion(spec)(e, y)
    expected = ephn_code_loss(e, y, semi=semi)
    assert ours.item() == pytest.approx(expected.item(), rel=1e-9)
    # and the default (the paper, the HardNegative code) keeps those triplets
    kept = Criterion(dict(spec, miner={k: v for k, v in spec["miner"].items() if k != "drop_nonpositive"}))(e, y)
    mined = miners.build(**spec["miner"])(PairBatch.from_embeddings(e, y)).triplets[0]
    all_kept = miners.build(**{k: v for k, v in spec["miner"].items() if k != "drop_nonpositive"})(
        PairBatch.from_embeddings(e, y)
    ).triplets[0]
    assert len(mined) < len(all_kept) and kept.item() != pytest.approx(ours.item())
