"""Retrieval and clustering metrics against brute-force numpy computations."""

import math

import numpy as np
import pytest

from dmlbench import evaluation, search


def brute_neighbours(queries, gallery, self_retrieval):
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    g = gallery / np.linalg.norm(gallery, axis=1, keepdims=True)
    sim = q @ g.T
    if self_retrieval:
        np.fill_diagonal(sim, -np.inf)
    order = np.argsort(-sim, axis=1, kind="stable")
    return order[:, : g.shape[0] - int(self_retrieval)]


def brute_metrics(queries, q_labels, gallery, g_labels, ks, self_retrieval):
    order = brute_neighbours(queries, gallery, self_retrieval)
    out = {}
    for k in ks:
        out[f"recall@{k}"] = np.mean([any(g_labels[order[i, :k]] == q_labels[i]) for i in range(len(q_labels))])
    maps, rps = [], []
    for i in range(len(q_labels)):
        r = int(np.sum(g_labels == q_labels[i])) - int(self_retrieval)
        if r == 0:
            continue
        hits = g_labels[order[i, :r]] == q_labels[i]
        precision_sum = sum(hits[: j + 1].sum() / (j + 1) for j in range(r) if hits[j])
        maps.append(precision_sum / r)
        rps.append(hits.sum() / r)
    out["map@r"], out["r_precision"] = np.mean(maps), np.mean(rps)
    return out


def data(seed, n=300, classes=12, dim=16, spread=1.5):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    centres = rng.normal(size=(classes, dim))
    return (centres[labels] * spread + rng.normal(size=(n, dim))).astype(np.float32), labels


@pytest.mark.parametrize("seed", range(4))
def test_self_retrieval_matches_brute_force(seed):
    x, y = data(seed)
    ks = (1, 2, 4, 8, 16)
    ours = evaluation.retrieval_metrics(x, y, ks, clustering=False)
    expected = brute_metrics(x, y, x, y, ks, self_retrieval=True)
    for key, value in expected.items():
        assert ours[key] == pytest.approx(value, abs=1e-9), key


@pytest.mark.parametrize("seed", range(4))
def test_query_gallery_matches_brute_force(seed):
    x, y = data(seed)
    g, gl = x[:180], y[:180]
    q, ql = x[180:], y[180:]
    ks = (1, 5, 10, 20)
    ours = evaluation.retrieval_metrics(g, gl, ks, q, ql, clustering=False)
    expected = brute_metrics(q, ql, g, gl, ks, self_retrieval=False)
    for key, value in expected.items():
        assert ours[key] == pytest.approx(value, abs=1e-9), key


def test_query_is_excluded_even_with_exact_duplicates():
    # two identical items of different classes: each must not count itself
    x = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], dtype=np.float32)
    y = np.array([0, 1, 1, 0])
    metrics = evaluation.retrieval_metrics(x, y, (1,), clustering=False)
    assert metrics["recall@1"] == 0.0


def test_search_in_chunks_equals_one_pass():
    x, _ = data(3, n=257)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    one = search.knn(x, x, 10, exclude_self=True, chunk=10_000)
    chunked = search.knn(x, x, 10, exclude_self=True, chunk=7)
    np.testing.assert_array_equal(one, chunked)


def brute_f1(labels, clusters):
    tp = fp = fn = 0
    n = len(labels)
    for i in range(n):
        for j in range(i + 1, n):
            same_class, same_cluster = labels[i] == labels[j], clusters[i] == clusters[j]
            tp += same_class and same_cluster
            fp += same_cluster and not same_class
            fn += same_class and not same_cluster
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return 2 * precision * recall / (precision + recall)


def brute_nmi(labels, clusters):
    n = len(labels)
    def entropy(a):
        _, counts = np.unique(a, return_counts=True)
        p = counts / n
        return -np.sum(p * np.log(p))
    mutual = 0.0
    for c in np.unique(labels):
        for k in np.unique(clusters):
            joint = np.sum((labels == c) & (clusters == k)) / n
            if joint > 0:
                mutual += joint * math.log(joint / (np.mean(labels == c) * np.mean(clusters == k)))
    return mutual / ((entropy(labels) + entropy(clusters)) / 2)


@pytest.mark.parametrize("seed", range(4))
def test_pairwise_f1_matches_pair_loop(seed):
    rng = np.random.default_rng(seed)
    labels, clusters = rng.integers(0, 6, 120), rng.integers(0, 5, 120)
    assert evaluation.pairwise_f1(labels, clusters) == pytest.approx(brute_f1(labels, clusters))


@pytest.mark.parametrize("seed", range(3))
def test_nmi_and_f1_use_the_kmeans_assignment(seed, monkeypatch):
    x, y = data(seed)
    assignment = np.random.default_rng(seed).integers(0, 12, len(y))
    monkeypatch.setattr(search, "kmeans", lambda *a, **k: assignment)
    metrics = evaluation.retrieval_metrics(x, y, (1,))
    assert metrics["nmi"] == pytest.approx(brute_nmi(y, assignment))
    assert metrics["f1"] == pytest.approx(brute_f1(y, assignment))


def test_kmeans_recovers_well_separated_classes():
    x, y = data(0, n=400, classes=8, spread=20.0)
    metrics = evaluation.retrieval_metrics(x, y, (1,), kmeans_restarts=10)
    assert metrics["nmi"] == pytest.approx(1.0)
    assert metrics["f1"] == pytest.approx(1.0)


def test_kmeans_runs_once_per_evaluation(monkeypatch):
    calls = []
    real = search.kmeans
    monkeypatch.setattr(search, "kmeans", lambda *a, **k: calls.append(1) or real(*a, **k))
    x, y = data(1)
    evaluation.retrieval_metrics(x, y, (1, 2, 4))
    assert len(calls) == 1


def test_nan_embeddings_are_refused():
    x, y = data(0)
    x[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        evaluation.retrieval_metrics(x, y, (1,))
