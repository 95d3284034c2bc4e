"""A few fixed queries and their top-k gallery items, for the report's retrieved-images figure.

The queries are drawn from the labels alone (a seed, one query per class drawn), so every method
evaluated on the same split gets the same queries. Neighbours are ranked as the evaluation ranks
them (`dmlbench.evaluation.ranking`): by cosine similarity of the L2-normalised embeddings, most
similar first, equal similarities the higher gallery index first; in self-retrieval the query
itself is left out.
"""

from __future__ import annotations

import numpy as np
import torch


def choose_queries(labels: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Indices of `n` queries of distinct classes (all classes when fewer): the classes drawn
    with `seed`, then one item of each; from the labels alone, in the order drawn."""
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    chosen = rng.choice(classes, size=min(n, len(classes)), replace=False)
    return np.array([rng.choice(np.flatnonzero(labels == c)) for c in chosen], dtype=np.int64)


def top_k(
    queries: np.ndarray, gallery: np.ndarray, k: int, own: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(indices, similarities) of each query's `k` most similar gallery items (fewer where the
    gallery is smaller). `own`: in self-retrieval, each query's own gallery index, left out."""
    q = torch.from_numpy(np.ascontiguousarray(queries, np.float32))
    similarity = (q @ torch.from_numpy(np.ascontiguousarray(gallery, np.float32)).T).numpy()
    items = np.arange(len(gallery))
    indices, values = [], []
    for row, sims in enumerate(similarity):
        keep = items if own is None else items[items != own[row]]
        order = keep[np.lexsort((-keep, -sims[keep]))][:k]  # most similar, then higher index first
        indices.append(order)
        values.append(sims[order])
    return np.array(indices, dtype=np.int64), np.array(values, dtype=np.float32)
