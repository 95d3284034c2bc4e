"""k-means on faiss (GPU when faiss-gpu and a device are present)."""

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


def kmeans(x: np.ndarray, n_clusters: int, seed: int = 0, iterations: int = 20, restarts: int = 1) -> np.ndarray:
    """Cluster assignment of each row by faiss k-means (spherical: cosine data); with `restarts` > 1
    the run with the best objective is kept."""
    n_clusters = min(n_clusters, len(x))
    km = faiss.Kmeans(
        x.shape[1],
        n_clusters,
        niter=iterations,
        nredo=restarts,
        seed=seed,
        gpu=_use_gpu(),
        spherical=True,
        min_points_per_centroid=1,
        max_points_per_centroid=10**7,
        verbose=False,
    )
    km.train(x)
    _, assignment = km.index.search(x, 1)
    return assignment[:, 0]
