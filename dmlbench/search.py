"""Exact inner-product k-NN search and k-means, on faiss (GPU when faiss-gpu and a device are present)."""

from __future__ import annotations

import faiss
import numpy as np


def _use_gpu() -> bool:
    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


def _index(dim: int):
    index = faiss.IndexFlatIP(dim)
    if _use_gpu():
        index = faiss.index_cpu_to_all_gpus(index)
    return index


def knn(queries: np.ndarray, gallery: np.ndarray, k: int, exclude_self: bool, chunk: int) -> np.ndarray:
    """Indices (n_queries × k) of the k most similar gallery rows, most similar first.

    With `exclude_self`, `queries` is `gallery` and row i never returns i (one extra neighbour is
    searched and i removed wherever it landed, so ties with duplicates are handled). Queries run in
    chunks, so memory stays at chunk × gallery size.
    """
    index = _index(gallery.shape[1])
    index.add(gallery)
    extra = int(exclude_self)
    out = np.empty((len(queries), k), dtype=np.int64)
    for start in range(0, len(queries), chunk):
        stop = min(start + chunk, len(queries))
        _, found = index.search(queries[start:stop], k + extra)
        if exclude_self:
            found = _drop_self(found, np.arange(start, stop))
        out[start:stop] = found[:, :k]
    return out


def _drop_self(found: np.ndarray, own: np.ndarray) -> np.ndarray:
    is_self = found == own[:, None]
    # rows without themselves lose their last neighbour instead
    is_self[~is_self.any(axis=1), -1] = True
    return found[~is_self].reshape(len(found), found.shape[1] - 1)


def kmeans(x: np.ndarray, n_clusters: int, seed: int = 0, iterations: int = 20,
           restarts: int = 1) -> np.ndarray:
    """Cluster assignment of each row by faiss k-means (spherical: cosine data); with `restarts` > 1
    the run with the best objective is kept."""
    n_clusters = min(n_clusters, len(x))
    km = faiss.Kmeans(x.shape[1], n_clusters, niter=iterations, nredo=restarts, seed=seed,
                      gpu=_use_gpu(),
                      spherical=True, min_points_per_centroid=1, max_points_per_centroid=10**7,
                      verbose=False)
    km.train(x)
    _, assignment = km.index.search(x, 1)
    return assignment[:, 0]
