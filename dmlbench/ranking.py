"""Where each query's relevant gallery items rank, from chunks of the similarity matrix.

Recall@K needs only the rank of a query's most similar relevant item (a hit at K when fewer than
K items rank before it), and MAP@R and R-Precision only the first R places (R = the query's
relevant items). So each chunk of queries costs one matrix product, a few comparisons against the
best relevant similarity, and a top-R selection, instead of retrieving K = 1000 neighbours.

Order: by cosine similarity, most similar first; equal similarities put the higher gallery
index first (the order the faiss flat-index search gave before). In self-retrieval the query
itself is left out.
"""

from __future__ import annotations

import numpy as np
import torch

CHUNK = 2048


def relevant_lists(q_labels: np.ndarray, g_labels: np.ndarray, self_retrieval: bool) -> torch.Tensor:
    """For each query, the gallery indices of its class in ascending order, padded with −1
    (its own index left out in self-retrieval)."""
    order = np.argsort(g_labels, kind="stable")
    classes, starts, counts = np.unique(g_labels[order], return_index=True, return_counts=True)
    width = int(counts.max()) if len(counts) else 0
    table = np.full((len(classes) + 1, max(width, 1)), -1, dtype=np.int64)  # last row: absent class
    for row, (start, count) in enumerate(zip(starts, counts)):
        table[row, :count] = order[start:start + count]
    where = np.searchsorted(classes, q_labels)
    found = (where < len(classes)) & (classes[np.minimum(where, len(classes) - 1)] == q_labels)
    lists = table[np.where(found, where, len(classes))]
    if self_retrieval:
        lists = np.where(lists == np.arange(len(q_labels))[:, None], -1, lists)
    return torch.from_numpy(lists)


def relevant_ranks(queries: np.ndarray, q_labels: np.ndarray, gallery: np.ndarray,
                   g_labels: np.ndarray, self_retrieval: bool, depth: int,
                   chunk: int = CHUNK) -> tuple[np.ndarray, np.ndarray]:
    """(first, top_hits): the 0-based rank of each query's best relevant item (the gallery size
    when it has none), and whether each of its first `depth` places holds a relevant item."""
    g = torch.from_numpy(np.ascontiguousarray(gallery, dtype=np.float32))
    q = torch.from_numpy(np.ascontiguousarray(queries, dtype=np.float32))
    g_lab = torch.from_numpy(np.asarray(g_labels))
    q_lab = torch.from_numpy(np.asarray(q_labels))
    lists = relevant_lists(np.asarray(q_labels), np.asarray(g_labels), self_retrieval)
    n = len(g)
    first = np.empty(len(q), dtype=np.int64)
    top_hits = np.empty((len(q), depth), dtype=bool)
    for start in range(0, len(q), chunk):
        stop = min(start + chunk, len(q))
        sim = q[start:stop] @ g.T
        if self_retrieval:
            rows = torch.arange(stop - start)
            sim[rows, rows + start] = float("-inf")
        first[start:stop] = _first_ranks(sim, lists[start:stop], n)
        top = _top(sim, depth)
        top_hits[start:stop] = (g_lab[top] == q_lab[start:stop, None]).numpy()
    return first, top_hits


def _first_ranks(sim: torch.Tensor, lists: torch.Tensor, n: int) -> np.ndarray:
    """Items before the best relevant one: those more similar, and equally similar ones of
    higher index (ties are rare: counted only in rows that have them)."""
    values = sim.gather(1, lists.clamp(min=0)).masked_fill(lists < 0, float("-inf"))
    best = values.max(dim=1).values
    best_index = torch.where(values == best[:, None], lists, torch.full_like(lists, -1)).max(dim=1).values
    column = best[:, None]
    above = (sim > column).sum(dim=1)
    tied = (((sim >= column).sum(dim=1) - above) > 1) & torch.isfinite(best)
    for row in tied.nonzero().flatten().tolist():
        same = sim[row] == best[row]
        above[row] += int(same[best_index[row] + 1:].sum())
    above[torch.isinf(best)] = n  # no relevant item: never a hit
    return above.numpy()


def _top(sim: torch.Tensor, depth: int) -> torch.Tensor:
    """Gallery indices of the first `depth` places of each row, in the order above."""
    values, index = sim.topk(depth, dim=1)
    by_index = torch.argsort(index, dim=1, descending=True, stable=True)
    values, index = values.gather(1, by_index), index.gather(1, by_index)
    by_value = torch.argsort(values, dim=1, descending=True, stable=True)
    index = index.gather(1, by_value)
    cut = values.gather(1, by_value)[:, -1:]
    straddling = (sim >= cut).sum(dim=1) > depth  # an equal value left out may rank before
    for row in straddling.nonzero().flatten().tolist():
        reverse = torch.arange(sim.shape[1] - 1, -1, -1)
        order = torch.argsort(sim[row][reverse], descending=True, stable=True)
        index[row] = reverse[order[:depth]]
    return index
