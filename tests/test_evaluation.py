"""Retrieval and clustering metrics against brute-force numpy computations."""

import math

import numpy as np
import pytest

from dmlbench.evaluation import ranking, search
from dmlbench.evaluation.metrics import normalized_mutual_information, pairwise_f1, retrieval_metrics


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
    ours = retrieval_metrics(x, y, ks, clustering=False)
    expected = brute_metrics(x, y, x, y, ks, self_retrieval=True)
    for key, value in expected.items():
        assert ours[key] == pytest.approx(value, abs=1e-9), key


@pytest.mark.parametrize("seed", range(4))
def test_query_gallery_matches_brute_force(seed):
    x, y = data(seed)
    g, gl = x[:180], y[:180]
    q, ql = x[180:], y[180:]
    ks = (1, 5, 10, 20)
    ours = retrieval_metrics(g, gl, ks, q, ql, clustering=False)
    expected = brute_metrics(q, ql, g, gl, ks, self_retrieval=False)
    for key, value in expected.items():
        assert ours[key] == pytest.approx(value, abs=1e-9), key


def test_query_is_excluded_even_with_exact_duplicates():
    # two identical items of different classes: each must not count itself
    x = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], dtype=np.float32)
    y = np.array([0, 1, 1, 0])
    metrics = retrieval_metrics(x, y, (1,), clustering=False)
    assert metrics["recall@1"] == 0.0


def test_ranking_in_chunks_equals_one_pass():
    x, y = data(3, n=257)
    one = ranking.relevant_ranks(x, y, x, y, True, chunk=10_000)
    chunked = ranking.relevant_ranks(x, y, x, y, True, chunk=7, threads=3)
    for a, b in zip(one, chunked):
        np.testing.assert_array_equal(a, b)


def brute_order_ties_to_higher_index(queries, gallery, self_retrieval):
    """Every row's gallery order: similarity descending, equal similarities higher index first."""
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    g = gallery / np.linalg.norm(gallery, axis=1, keepdims=True)
    orders = []
    for i, row in enumerate(q):
        sims = [float(np.dot(row, item)) for item in g]
        items = [j for j in range(len(g)) if not (self_retrieval and j == i)]
        orders.append(sorted(items, key=lambda j: (-sims[j], -j)))
    return orders


def tied_data(seed):
    """Few distinct vectors, each several times with different labels: ties everywhere, also
    across the R-th place."""
    rng = np.random.default_rng(seed)
    base = np.zeros((7, 8), dtype=np.float32)  # four entries ±1: norm 2, so normalised vectors
    for row in base:  # and their similarities are exact in float32
        row[rng.choice(8, 4, replace=False)] = rng.choice([-1.0, 1.0], 4)
    x = base[rng.integers(0, 7, 60)]
    return x, rng.integers(0, 5, 60)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("self_retrieval", [True, False])
@pytest.mark.parametrize("stride, max_sorted", [(16, 4096), (1, 4096), (3, 0)])
def test_ranks_with_ties_self_exclusion_and_query_gallery_equal_brute_force(
    seed, self_retrieval, stride, max_sorted, monkeypatch
):
    """Also with every column sampled (the bound is the R-th largest itself) and with every row
    on the path for many candidates (integer keys selected, the rank counted)."""
    monkeypatch.setattr(ranking, "STRIDE", stride)
    monkeypatch.setattr(ranking, "MAX_SORTED", max_sorted)
    x, y = tied_data(seed)
    q, ql, g, gl = (x, y, x, y) if self_retrieval else (x[:25], y[:25], x[25:], y[25:])
    first, top = ranking.relevant_ranks(q / 2, ql, g / 2, gl, self_retrieval, chunk=8)
    for i, order in enumerate(brute_order_ties_to_higher_index(q, g, self_retrieval)):
        hits = [gl[j] == ql[i] for j in order]
        r = sum(hits)
        assert first[i] == (hits.index(True) if any(hits) else len(g)), i
        assert list(top[i]) == hits[:r] + [False] * (top.shape[1] - r), i
    ks = (1, 2, 4, 8, 16)
    ours = retrieval_metrics(g, gl, ks, None if self_retrieval else q, None if self_retrieval else ql, clustering=False)
    orders = brute_order_ties_to_higher_index(q, g, self_retrieval)
    for k in ks:
        expected = np.mean([any(gl[j] == ql[i] for j in order[:k]) for i, order in enumerate(orders)])
        assert ours[f"recall@{k}"] == pytest.approx(expected, abs=1e-12)
    maps = []
    for i, order in enumerate(orders):
        r = int(np.sum(gl == ql[i])) - int(self_retrieval)
        if r:
            hits = [gl[j] == ql[i] for j in order[:r]]
            maps.append(sum(sum(hits[: j + 1]) / (j + 1) for j in range(r) if hits[j]) / r)
    assert ours["map@r"] == pytest.approx(np.mean(maps), abs=1e-12)


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
    assert pairwise_f1(labels, clusters) == pytest.approx(brute_f1(labels, clusters))


@pytest.mark.parametrize("seed", range(3))
def test_nmi_and_f1_use_the_kmeans_assignment(seed, monkeypatch):
    x, y = data(seed)
    assignment = np.random.default_rng(seed).integers(0, 12, len(y))
    monkeypatch.setattr(search, "kmeans", lambda *a, **k: assignment)
    metrics = retrieval_metrics(x, y, (1,))
    assert metrics["nmi"] == pytest.approx(brute_nmi(y, assignment))
    assert metrics["f1"] == pytest.approx(brute_f1(y, assignment))


@pytest.mark.parametrize(
    "labels, clusters",
    [
        *[tuple(np.random.default_rng(seed).integers(0, k, (2, 200))) for seed, k in ((0, 7), (1, 2), (2, 40))],
        ([3, 3, 3, 3], [0, 0, 0, 0]),  # one class, one cluster: full agreement
        ([0, 1, 2, 3], [5, 5, 5, 5]),  # one cluster: no information
        ([0, 0, 1, 1], [9, 8, 7, 6]),  # every item its own cluster
        (["b", "a", "b", "c"], [2, 2, 1, 0]),  # labels of any kind
    ],
)
def test_nmi_equals_scikit_learns(labels, clusters):
    from sklearn.metrics import normalized_mutual_info_score

    assert normalized_mutual_information(np.asarray(labels), np.asarray(clusters)) == pytest.approx(
        normalized_mutual_info_score(labels, clusters), abs=1e-12
    )


def test_a_perfect_clustering_has_nmi_one_not_one_plus_rounding():
    """5 classes in 44 images (the first of each class, then random ones) clustered perfectly: the
    ratio of sums rounds to 1.0000000000000002, which the report refused as out of [0, 1]."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        k = int(rng.integers(2, 30))
        labels = np.concatenate([np.arange(k), rng.integers(0, k, int(rng.integers(k, 300)) - k)])
        assert 1.0 - 1e-12 <= normalized_mutual_information(labels, labels) <= 1.0


def test_kmeans_recovers_well_separated_classes():
    x, y = data(0, n=400, classes=8, spread=20.0)
    metrics = retrieval_metrics(x, y, (1,), kmeans_restarts=10)
    assert metrics["nmi"] == pytest.approx(1.0)
    assert metrics["f1"] == pytest.approx(1.0)


def test_kmeans_runs_once_per_evaluation(monkeypatch):
    calls = []
    real = search.kmeans
    monkeypatch.setattr(search, "kmeans", lambda *a, **k: calls.append(1) or real(*a, **k))
    x, y = data(1)
    retrieval_metrics(x, y, (1, 2, 4))
    assert len(calls) == 1


def assert_ranks_equal_brute_force(q, ql, g, gl, self_retrieval, chunk, threads=None):
    unit = [v / np.linalg.norm(v, axis=1, keepdims=True) for v in (q, g)]  # tied data: exact
    first, top = ranking.relevant_ranks(unit[0], ql, unit[1], gl, self_retrieval, chunk=chunk, threads=threads)
    for i, order in enumerate(brute_order_ties_to_higher_index(q, g, self_retrieval)):
        hits = [gl[j] == ql[i] for j in order]
        r = sum(hits)
        assert first[i] == (hits.index(True) if any(hits) else len(g)), i
        assert list(top[i]) == hits[:r] + [False] * (top.shape[1] - r), i


@pytest.mark.parametrize("threads, chunk", [(1, 8), (2, 8), (3, 5), (2, 1000)])
@pytest.mark.parametrize("max_sorted", [4096, 6])
def test_rows_split_among_threads_rank_as_brute_force(threads, chunk, max_sorted, monkeypatch):
    """The row-by-row ranking with its chunks shared among threads (each thread's products on
    one core), rows with many candidates ranked alone beside rows sorted together, ties across
    the R-th place; torch's thread setting is restored after."""
    import torch

    monkeypatch.setattr(ranking, "MAX_SORTED", max_sorted)
    monkeypatch.setattr(ranking, "MIN_ROWS", 1)
    before = torch.get_num_threads()
    for seed in range(3):
        for x, y in (tied_data(seed), data(seed, n=90)):
            assert_ranks_equal_brute_force(x[:25], y[:25], x[25:], y[25:], False, chunk, threads)
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("threads, chunk", [(1, 7), (2, 16), (1, 1000)])
def test_query_gallery_with_more_queries_and_absent_classes_ranks_as_brute_force(threads, chunk, monkeypatch):
    """In-Shop's shape: more queries than gallery items, ragged last chunks, a gallery size no
    multiple of the sample's stride, queries whose class the gallery lacks."""
    monkeypatch.setattr(ranking, "MIN_ROWS", 1)
    for seed in range(2):
        x, y = data(seed, n=400, spread=0.5)  # loose classes: the sample's R-th largest bounds some queries
        gallery = np.flatnonzero(y != 0)[::3][:114]  # 114 items, class 0 absent
        queries = np.setdiff1d(np.arange(len(y)), gallery)
        assert_ranks_equal_brute_force(x[queries], y[queries], x[gallery], y[gallery], False, chunk, threads)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("group, chunk", [(64, 8), (4, 8), (4, 12), (2, 1000)])
@pytest.mark.parametrize("stride", [16, 3, 1])
def test_symmetric_blocks_rank_as_brute_force_and_rank_most_rows_themselves(seed, group, chunk, stride, monkeypatch):
    """Self-retrieval from half the matrix: blocks read along rows and down columns, runs of
    `group` entries, ragged last blocks, samples down to every item; few rows are left to the
    row-by-row ranking."""
    from dmlbench.evaluation import symmetric_ranking

    monkeypatch.setattr(symmetric_ranking, "GROUP", group)
    monkeypatch.setattr(symmetric_ranking, "STRIDE", stride)
    left = []
    rank = symmetric_ranking.rank
    monkeypatch.setattr(symmetric_ranking, "rank", lambda *a: left.append(rank(*a)) or left[-1])
    for x, y in (tied_data(seed), data(seed, n=120)):
        left.clear()
        assert_ranks_equal_brute_force(x, y, x, y, True, chunk)
        assert len(left) == 1 and len(left[0]) <= len(x) // 10


@pytest.mark.parametrize("setting", [{"SLACK": -2.0}, {"SLACK": -0.05}, {"ROUTED": -1}, {"CAP": 0}, {"CAP": 5}])
def test_rows_the_symmetric_blocks_cannot_rank_are_ranked_row_by_row(setting, monkeypatch):
    """Bounds set too high (no candidates: the check must refuse them), rows routed away, rows
    capped before or part-way through their blocks."""
    from dmlbench.evaluation import symmetric_ranking

    for name, value in setting.items():
        monkeypatch.setattr(symmetric_ranking, name, value)
    left = []
    rank = symmetric_ranking.rank
    monkeypatch.setattr(symmetric_ranking, "rank", lambda *a: left.append(rank(*a)) or left[-1])
    for x, y in (tied_data(5), data(5, n=120)):
        left.clear()
        assert_ranks_equal_brute_force(x, y, x, y, True, 8)
    assert len(left[0]) > len(x) // 2  # on continuous similarities: a bound slightly high bites


@pytest.mark.parametrize("quantile", [0.25, 0.5, 0.75])
def test_a_row_leaves_the_symmetric_blocks_exactly_when_its_candidates_pass_the_cap(quantile, monkeypatch):
    """The cap bounds the candidates held: counted along rows and down columns alike."""
    import torch

    from dmlbench.evaluation import symmetric_ranking

    x, y = data(2, n=120)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    lists = ranking.relevant_lists(y, y, True)
    counts = (lists >= 0).sum(axis=1)
    bound = symmetric_ranking._bounds(torch.from_numpy(x), lists, counts, 8)
    sim = x @ x.T
    np.fill_diagonal(sim, -np.inf)
    candidates = (sim >= bound[:, None]).sum(axis=1)
    cap = int(np.quantile(candidates, quantile))
    monkeypatch.setattr(symmetric_ranking, "CAP", cap)
    expected = np.flatnonzero((counts > 0) & (np.isinf(bound) | (candidates > cap)))
    first = np.full(len(x), len(x))
    hits = np.zeros((len(x), counts.max()), dtype=bool)
    left = symmetric_ranking.rank(x, y, lists, counts, first, hits, 8)
    np.testing.assert_array_equal(left, expected)
    assert 0 < len(expected) < len(x)


def test_rows_the_sample_predicts_many_candidates_for_are_routed_and_the_rest_ranked():
    import torch

    from dmlbench.evaluation import symmetric_ranking

    x, y = data(3, n=2000, classes=200, dim=16, spread=0.7)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    lists = ranking.relevant_lists(y, y, True)
    counts = (lists >= 0).sum(axis=1)
    routed = np.isinf(symmetric_ranking._bounds(torch.from_numpy(x), lists, counts, 256)) & (counts > 0)
    first = np.full(len(x), len(x))
    hits = np.zeros((len(x), counts.max()), dtype=bool)
    left = symmetric_ranking.rank(x, y, lists, counts, first, hits, 256)
    np.testing.assert_array_equal(left, np.flatnonzero(routed))
    assert 0 < routed.sum() < len(x) / 2


@pytest.mark.parametrize("classes", [3, 20])
def test_the_symmetric_blocks_are_skipped_when_most_rows_would_be_routed(classes, monkeypatch):
    """Large classes (R × STRIDE > ROUTED for most rows), or most rows routed by their bounds:
    every row goes to the row-by-row ranking, which still equals brute force."""
    from dmlbench.evaluation import symmetric_ranking

    blocks, bounds = [], []
    monkeypatch.setattr(symmetric_ranking, "_rank_block", lambda *a: blocks.append(a))
    compute_bounds = symmetric_ranking._bounds
    monkeypatch.setattr(symmetric_ranking, "_bounds", lambda *a: bounds.append(1) or compute_bounds(*a))
    if classes == 20:  # R about 15 passes the class-size rule; bounds lowered by 0.5 route all rows
        monkeypatch.setattr(symmetric_ranking, "SLACK", 0.5)
    x, y = data(4, n=300, classes=classes, dim=16, spread=0.3)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    lists = ranking.relevant_lists(y, y, True)
    counts = (lists >= 0).sum(axis=1)
    first = np.full(len(x), len(x))
    hits = np.zeros((len(x), counts.max()), dtype=bool)
    left = symmetric_ranking.rank(x, y, lists, counts, first, hits, 64)
    np.testing.assert_array_equal(left, np.flatnonzero(counts > 0))
    assert not blocks and (first == len(x)).all() and not hits.any()
    assert len(bounds) == (classes == 20)  # R about 100: not even the bounds are computed


def test_nan_embeddings_are_refused():
    x, y = data(0)
    x[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        retrieval_metrics(x, y, (1,))


def test_ties_are_ordered_as_the_faiss_flat_index_ordered_them():
    """The earlier search (faiss IndexFlatIP) put equal similarities higher index first."""
    import faiss

    x, y = tied_data(1)
    x = x / 2
    index = faiss.IndexFlatIP(x.shape[1])
    index.add(x)
    _, found = index.search(x, len(x))
    _, top = ranking.relevant_ranks(x, y, x, y, True)
    for i in range(len(x)):
        r = int(np.sum(y == y[i])) - 1
        order = [j for j in found[i] if j != i][:r]
        assert list(top[i][:r]) == [y[j] == y[i] for j in order]


def test_a_k_beyond_the_gallery_is_computed_and_said_to_be_trivial():
    """eval.ks larger than what a query searches (a fixture smaller than the paper's gallery):
    Recall@K is 1 by construction, kept, and said."""
    import numpy as np
    import pytest

    from dmlbench.evaluation.metrics import retrieval_metrics

    rng = np.random.default_rng(0)
    embeddings, labels = rng.normal(size=(12, 4)).astype(np.float32), np.repeat(np.arange(4), 3)
    with pytest.warns(UserWarning, match=r"recall@11, recall@100: K is at least the 11 items a query searches"):
        metrics = retrieval_metrics(embeddings, labels, ks=[1, 11, 100], clustering=False)
    assert metrics["recall@11"] == metrics["recall@100"] == 1.0
