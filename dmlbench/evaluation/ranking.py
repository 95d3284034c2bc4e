"""Where each query's relevant gallery items rank, from chunks of the similarity matrix.

Recall@K needs only the rank of a query's most similar relevant item (a hit at K when fewer than
K items rank before it), and MAP@R and R-Precision only the first R places (R = the query's
relevant items). So, instead of retrieving K = 1000 neighbours:

- a bound: the first R places all hold a similarity of at least the R-th largest, which is not
  below the least similar relevant item's (R relevant items reach it) nor below the R-th
  largest of a sample (every `STRIDE`-th gallery item, placed first in the matrix product so
  that the sample is contiguous); the bound is the larger of the two, or the best relevant
  item's similarity when that is lower;
- the candidates, every item at or above the bound, hold the first R places and every item
  ranked before the best relevant one; ordering them gives both.

Self-retrieval goes through half the matrix first (`dmlbench.evaluation.symmetric_ranking`). The rows it
leaves, and the queries of a query/gallery split, cost one matrix product per chunk of queries
here (gallery × queries) and one pass over it (a comparison with each query's bound and one
scan for the entries that reach it); each thread of a pool takes its own chunks, product and
pass, with torch on one core (no waits between threads; numpy and torch release the GIL).

Order: by cosine similarity, most similar first; equal similarities put the higher gallery
index first (the order the faiss flat-index search gave before). In self-retrieval the query
itself is left out.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
import torch

from dmlbench.evaluation import symmetric_ranking
from dmlbench.evaluation.rank_keys import index_bits, max_rows, order_keys

CHUNK = 1024  # query rows per matrix product
STRIDE = 16  # every STRIDE-th gallery item is in the sample that bounds the R-th largest
MAX_SORTED = 4096  # a row with more candidates is ranked on its own, by selection and counting
MIN_ROWS = 128  # rows per matrix product at least, however many threads share a chunk


def relevant_lists(q_labels: np.ndarray, g_labels: np.ndarray, self_retrieval: bool) -> np.ndarray:
    """For each query, the gallery indices of its class in ascending order, padded with −1
    (its own index left out in self-retrieval, as padding at the end)."""
    order = np.argsort(g_labels, kind="stable")
    classes, starts, counts = np.unique(g_labels[order], return_index=True, return_counts=True)
    width = int(counts.max()) if len(counts) else 0
    table = np.full((len(classes) + 1, max(width, 1)), -1, dtype=np.int64)  # last row: absent class
    for row, (start, count) in enumerate(zip(starts, counts)):
        table[row, :count] = order[start : start + count]
    where = np.searchsorted(classes, q_labels)
    found = (where < len(classes)) & (classes[np.minimum(where, len(classes) - 1)] == q_labels)
    lists = table[np.where(found, where, len(classes))]
    if self_retrieval:
        lists = np.where(lists == np.arange(len(q_labels))[:, None], -1, lists)
        lists = np.take_along_axis(lists, np.argsort(lists < 0, axis=1, kind="stable"), axis=1)
    return lists


def relevant_ranks(
    queries: np.ndarray,
    q_labels: np.ndarray,
    gallery: np.ndarray,
    g_labels: np.ndarray,
    self_retrieval: bool,
    chunk: int = CHUNK,
    threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(first, top_hits): the 0-based rank of each query's best relevant item (the gallery size
    when it has none), and whether each of its first R places holds a relevant item (R = its
    number of relevant items; the columns up to the largest R, later places False).
    Self-retrieval goes through the symmetric blocks first (`dmlbench.evaluation.symmetric_ranking`); the
    rows it leaves, and every query of a query/gallery split, are ranked a chunk of rows at a time."""
    g_labels, q_labels = np.asarray(g_labels), np.asarray(q_labels)
    gallery = np.ascontiguousarray(gallery, dtype=np.float32)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    lists = relevant_lists(q_labels, g_labels, self_retrieval)
    counts = (lists >= 0).sum(axis=1)
    first = np.full(len(queries), len(gallery), dtype=np.int64)
    top_hits = np.zeros((len(queries), max(int(counts.max(initial=0)), 1)), dtype=bool)
    rows = np.flatnonzero(counts > 0)
    if self_retrieval:
        rows = symmetric_ranking.rank(gallery, g_labels, lists, counts, first, top_hits, chunk)
    if len(rows):
        _rank_by_rows(
            queries,
            rows,
            gallery,
            g_labels,
            q_labels,
            lists,
            counts,
            self_retrieval,
            first,
            top_hits,
            chunk,
            threads or torch.get_num_threads(),
        )
    return first, top_hits


def _rank_by_rows(
    queries, rows, gallery, g_labels, q_labels, lists, counts, self_retrieval, first, top_hits, chunk, threads
) -> None:
    """Rank the queries `rows` (in self-retrieval, query i is gallery item i) a chunk at a time:
    each of `threads` threads takes every `threads`-th chunk, its matrix product against the whole
    gallery on one core and its pass; the chunks are `chunk` rows shared among the threads.
    The product is laid out gallery × queries, one column per query: the same products as
    queries × gallery, which MKL's sgemm writes about 15 % slower."""
    n = len(gallery)
    position_item = np.concatenate([np.arange(0, n, STRIDE), np.delete(np.arange(n), np.s_[::STRIDE])])
    item_position = np.argsort(position_item)
    g = torch.from_numpy(np.ascontiguousarray(gallery[position_item]))
    chunk = min(chunk, max_rows(n))
    chunk = max(chunk // threads, min(chunk, MIN_ROWS))
    ranker = _ChunkRanker(position_item, g_labels, len(range(0, n, STRIDE)))

    def rank_chunks(starts):
        product = torch.empty(n * min(chunk, len(rows)), dtype=torch.float32)  # reused: no page faults
        reached = np.empty(len(product), dtype=bool)  # reused: which entries are candidates
        for start in starts:
            part = rows[start : start + chunk]
            out = product[: n * len(part)].view(n, len(part))
            sim = torch.matmul(g, torch.from_numpy(queries[part]).T, out=out).numpy()
            if self_retrieval:
                sim[item_position[part], np.arange(len(part))] = -np.inf
            positions = np.where(lists[part] >= 0, item_position[np.maximum(lists[part], 0)], -1)
            part_first, part_hits = first[part], top_hits[part]
            ranker.rank(
                sim,
                lists[part],
                positions,
                counts[part],
                q_labels[part],
                part_first,
                part_hits,
                reached[: sim.size].reshape(sim.shape),
            )
            first[part], top_hits[part] = part_first, part_hits  # rows of no other thread

    starts = range(0, len(rows), chunk)
    with _torch_threads(1), ThreadPoolExecutor(threads) as pool:
        list(pool.map(rank_chunks, [starts[k::threads] for k in range(threads)]))


@contextmanager
def _torch_threads(count: int):
    """torch's operations on `count` threads each (the setting restored after)."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class _ChunkRanker:
    """Ranks chunks of queries from their similarities, one column per query, whose rows are
    the gallery items `position_item`, the first `sampled` of them the sample."""

    def __init__(self, position_item: np.ndarray, g_labels: np.ndarray, sampled: int):
        self.position_item, self.g_labels, self.sampled = position_item, g_labels, sampled

    def rank(self, sim, lists, positions, counts, q_labels, first, hits, reached) -> None:
        """Fill `first` and `hits` of a chunk of queries (`sim`: gallery × queries; `lists`:
        relevant items, `positions`: their rows in `sim`, both padded with −1; `reached`: room
        for a mask of `sim`'s shape)."""
        valid = lists >= 0
        values = np.where(valid, sim[np.maximum(positions, 0), np.arange(len(lists))[:, None]], -np.inf)
        best = values.max(axis=1)
        best_item = np.where(valid & (values == best[:, None]), lists, -1).max(axis=1)
        least = np.where(valid, values, np.inf).min(axis=1)
        bound = np.minimum(np.maximum(least, self._sampled_bounds(sim, counts)), best)
        bound[counts == 0] = np.inf
        at = np.flatnonzero(np.greater_equal(sim, bound, out=reached))  # the candidates
        position, query = np.divmod(at, sim.shape[1])
        lengths = np.bincount(query, minlength=sim.shape[1])
        few = (lengths <= MAX_SORTED)[query]
        self._rank_together(
            sim.reshape(-1)[at[few]],
            query[few],
            position[few],
            lengths * (lengths <= MAX_SORTED),
            best_item,
            counts,
            q_labels,
            first,
            hits,
        )
        for i in np.flatnonzero(lengths > MAX_SORTED):
            self._rank_alone(sim[:, i], position[query == i], best_item[i], counts[i], q_labels[i], first, hits, i)

    def _sampled_bounds(self, sim: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Per query, the R-th largest similarity of the sample (−inf where it has fewer than R)."""
        depth = min(int(counts.max(initial=0)), self.sampled)
        bounds = np.full(len(counts), -np.inf, dtype=np.float32)
        if depth:
            largest = torch.from_numpy(sim[: self.sampled]).topk(depth, dim=0).values.numpy()
            within = np.flatnonzero((counts >= 1) & (counts <= depth))
            bounds[within] = largest[counts[within] - 1, within]
        return bounds

    def _rank_together(self, values, query, positions, lengths, best_item, counts, q_labels, first, hits) -> None:
        """Order the candidates of many queries (`lengths` per query) with one sort of their keys."""
        n = len(self.position_item)
        keys = np.sort(order_keys(values, self.position_item[positions], query, n))  # keys are unique
        width = index_bits(n)
        query, items = keys >> (32 + width), (1 << width) - 1 - (keys & ((1 << width) - 1))
        place = np.arange(len(items)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        top = place < counts[query]
        hits[query[top], place[top]] = self.g_labels[items[top]] == q_labels[query[top]]
        is_best = items == best_item[query]
        first[query[is_best]] = place[is_best]

    def _rank_alone(self, column, positions, best_item, places, label, first, hits, i) -> None:
        """A query with many candidates (`column`: its similarities): the best relevant item's
        rank by counting keys, the first places by selection."""
        items = self.position_item[positions]
        keys = order_keys(column[positions], items, np.zeros(1, dtype=np.int64), len(self.position_item))
        first[i] = np.count_nonzero(keys < keys[items == best_item][0])
        chosen = np.argpartition(keys, places - 1)[:places]
        hits[i, :places] = self.g_labels[items[chosen[np.argsort(keys[chosen])]]] == label
