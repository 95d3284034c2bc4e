"""Embeddings → Recall@K, NMI, pairwise F1, MAP@R and R-Precision.

Similarity is cosine (inner product of L2-normalised embeddings). Retrieval is exact and runs
once per call over chunks of the similarity matrix (`dmlbench.evaluation.ranking`): Recall@K from the rank of
each query's best relevant item, MAP@R from the first R places; k-means runs once for NMI and F1.
"""

from __future__ import annotations

import warnings

import numpy as np

from dmlbench.evaluation import ranking, search


def retrieval_metrics(
    embeddings: np.ndarray,
    labels: np.ndarray,
    ks=(1, 2, 4, 8),
    query_embeddings: np.ndarray | None = None,
    query_labels: np.ndarray | None = None,
    clustering: bool = True,
    seed: int = 0,
    kmeans_restarts: int = 1,
) -> dict[str, float]:
    """Metrics of one evaluation, keyed `recall@K`, `map@r`, `r_precision`, `nmi`, `f1`.

    Without query arrays every item queries all others (itself excluded). With them, the queries
    search `embeddings` as the gallery (In-Shop protocol); clustering then runs on the gallery.
    Recall values are fractions in [0, 1]. k-means (k = number of classes) keeps the best of
    `kmeans_restarts` runs.
    """
    gallery = _normalise(embeddings)
    gallery_labels = np.asarray(labels)
    self_retrieval = query_embeddings is None
    queries = gallery if self_retrieval else _normalise(query_embeddings)
    q_labels = gallery_labels if self_retrieval else np.asarray(query_labels)
    _check_inputs(gallery, gallery_labels, queries, q_labels)

    relevant = _relevant_counts(q_labels, gallery_labels, self_retrieval)
    first, top_hits = ranking.relevant_ranks(queries, q_labels, gallery, gallery_labels, self_retrieval)
    metrics = {f"recall@{k}": float((first < k).mean()) for k in ks}
    searched = len(gallery) - (1 if self_retrieval else 0)
    trivial = [k for k in ks if k >= searched]
    if trivial:  # kept (a fixture is smaller than the paper's gallery), but said: it tells nothing
        warnings.warn(
            f"recall@{', recall@'.join(map(str, trivial))}: K is at least the {searched} items a query "
            f"searches, so it is 1 by construction (eval.ks larger than this gallery)",
            stacklevel=2,
        )
    metrics.update(_map_at_r(top_hits, relevant))
    if clustering:
        n_clusters = len(np.unique(gallery_labels))
        assignment = search.kmeans(gallery, n_clusters, seed=seed, restarts=kmeans_restarts)
        metrics["nmi"] = normalized_mutual_information(gallery_labels, assignment)
        metrics["f1"] = pairwise_f1(gallery_labels, assignment)
    return metrics


REID_DRAWS = 10


def vehicleid_metrics(
    embeddings: np.ndarray, labels: np.ndarray, ks, protocol: str, clustering: bool = True, kmeans_restarts: int = 1
) -> dict[str, float]:
    """One VehicleID test list. `all_vs_all` (the DML papers, FastAP's Table 3): every image
    queries all others. `one_gallery_per_vehicle` (re-identification papers): one random image per
    vehicle forms the gallery, the rest query it; Recall@K is the mean over 10 draws (seeds 0-9)."""
    if protocol == "all_vs_all":
        return retrieval_metrics(embeddings, labels, ks, clustering=clustering, kmeans_restarts=kmeans_restarts)
    labels = np.asarray(labels)
    draws = []
    for seed in range(REID_DRAWS):
        rng = np.random.default_rng(seed)
        gallery = np.array([rng.choice(np.flatnonzero(labels == v)) for v in np.unique(labels)])
        queries = np.setdiff1d(np.arange(len(labels)), gallery)
        draws.append(
            retrieval_metrics(
                embeddings[gallery], labels[gallery], ks, embeddings[queries], labels[queries], clustering=False
            )
        )
    return {key: float(np.mean([d[key] for d in draws])) for key in draws[0] if key.startswith("recall@")}


def normalized_mutual_information(labels: np.ndarray, clusters: np.ndarray) -> float:
    """NMI = I(Y; C) / ((H(Y) + H(C)) / 2), natural logarithms, from the (class, cluster) cells that
    occur (scikit-learn's `normalized_mutual_info_score` with its default arithmetic mean, which
    the tests compare against; written here because importing scikit-learn costs each training
    process 2 s). Two single-group labellings agree fully (1.0); a zero mutual information gives 0.0."""
    _, label_ids = np.unique(labels, return_inverse=True)
    _, cluster_ids = np.unique(clusters, return_inverse=True)
    n_labels, n_clusters = label_ids.max(initial=-1) + 1, cluster_ids.max(initial=-1) + 1
    if n_labels == n_clusters and n_labels <= 1:
        return 1.0
    n = len(label_ids)
    cells, joint = np.unique(cluster_ids.astype(np.int64) * n_labels + label_ids, return_counts=True)
    label_counts, cluster_counts = np.bincount(label_ids), np.bincount(cluster_ids)
    outer = label_counts[cells % n_labels].astype(np.float64) * cluster_counts[cells // n_labels]
    mutual = float(np.sum(joint / n * (np.log(joint * n) - np.log(outer))))
    if mutual <= 0.0:
        return 0.0
    entropies = [-np.sum(c / n * np.log(c / n)) for c in (label_counts, cluster_counts)]
    # I(Y; C) ≤ min(H(Y), H(C)) ≤ their mean: above 1 only by rounding (a perfect clustering of 5
    # classes in 44 images gave 1.0000000000000002), which the report would refuse as out of range
    return float(min(1.0, mutual / max(np.mean(entropies), np.finfo(np.float64).eps)))


def pairwise_f1(labels: np.ndarray, clusters: np.ndarray) -> float:
    """F1 of the pairs put together: precision over pairs in one cluster, recall over same-class pairs.
    Pairs are counted from the (cluster, class) cells that occur, never a clusters × classes table
    (SOP: 11,318² cells, 1 GB)."""
    _, label_ids = np.unique(labels, return_inverse=True)
    _, cluster_ids = np.unique(clusters, return_inverse=True)
    cells = cluster_ids.astype(np.int64) * (label_ids.max() + 1) + label_ids
    together = _pairs(np.unique(cells, return_counts=True)[1]).sum()
    same_cluster = _pairs(np.bincount(cluster_ids)).sum()
    same_class = _pairs(np.bincount(label_ids)).sum()
    if together == 0:
        return 0.0
    precision, recall = together / same_cluster, together / same_class
    return float(2 * precision * recall / (precision + recall))


def _pairs(counts: np.ndarray) -> np.ndarray:
    counts = counts.astype(np.int64)
    return counts * (counts - 1) // 2


def _map_at_r(hits: np.ndarray, relevant: np.ndarray) -> dict[str, float]:
    """MAP@R and R-Precision (Musgrave et al. 2020); R = number of relevant gallery items."""
    rank = np.arange(1, hits.shape[1] + 1)
    within_r = rank[None, :] <= relevant[:, None]
    hits_r = hits & within_r
    precision_at_i = np.cumsum(hits_r, axis=1) / rank[None, :]
    r = np.maximum(relevant, 1)
    map_r = (precision_at_i * hits_r).sum(axis=1) / r
    r_precision = hits_r.sum(axis=1) / r
    valid = relevant > 0
    return {"map@r": float(map_r[valid].mean()), "r_precision": float(r_precision[valid].mean())}


def _relevant_counts(q_labels, gallery_labels, self_retrieval: bool) -> np.ndarray:
    classes, counts = np.unique(gallery_labels, return_counts=True)
    index = np.searchsorted(classes, q_labels)
    index = np.clip(index, 0, len(classes) - 1)
    found = classes[index] == q_labels
    relevant = np.where(found, counts[index], 0)
    return relevant - 1 if self_retrieval else relevant


def _normalise(x) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def _check_inputs(gallery, gallery_labels, queries, q_labels) -> None:
    if gallery.ndim != 2 or len(gallery) != len(gallery_labels):
        raise ValueError(f"embeddings {gallery.shape} and labels {gallery_labels.shape} do not match")
    if len(queries) != len(q_labels):
        raise ValueError(f"query embeddings {queries.shape} and labels {q_labels.shape} do not match")
    if queries.shape[1] != gallery.shape[1]:
        raise ValueError("query and gallery embeddings have different dimensions")
    if not np.isfinite(gallery).all() or not np.isfinite(queries).all():
        raise ValueError("embeddings contain NaN or infinity: the model diverged")
