"""Self-retrieval ranks from half the similarity matrix.

In self-retrieval the similarity matrix is symmetric, so each block above the diagonal serves
both its rows and, read down its columns, the rows of its column block: the matrix products
cost half of a row-by-row pass. It needs every row's bound before its blocks are read, so a
first pass takes it from cheaper products (the row against a sample, every `STRIDE`-th item,
and against its relevant items), lowered by `SLACK` (other products may round differently):

- a row's candidates are the items at or above its bound, taken from each block where the
  block's row (or column) maximum reaches it;
- the bound stands when the candidates hold at least R items and a relevant one (then they
  hold the first R places and every item ranked before the best relevant one, as in
  `dmlbench.evaluation.ranking`); otherwise, and for rows whose sample predicts more than `ROUTED`
  candidates or that gather more than `CAP`, the row is left to the row-by-row ranking.

When more than half the rows would be routed, the blocks would save less than they cost and
every row is left (large classes, as CUB's and Cars' ~60 test images each, route most rows: the
sample's R-th largest alone lets STRIDE × R items through).
"""

from __future__ import annotations

import numpy as np
import torch

from dmlbench.evaluation.rank_keys import max_rows, order_keys

STRIDE = 16  # every STRIDE-th item is in the sample that bounds the R-th largest
SLACK = 1e-4  # bounds come from other products than the blocks: lowered by this much
ROUTED = 256  # a row whose sample predicts more candidates is ranked row by row
CAP = 1024  # a row that gathers more candidates leaves this pass
GROUP = 64  # entries per run whose maximum is checked before the run is read


def rank(
    gallery: np.ndarray,
    labels: np.ndarray,
    lists: np.ndarray,
    counts: np.ndarray,
    first: np.ndarray,
    hits: np.ndarray,
    block: int,
) -> np.ndarray:
    """Fill `first` and `hits` (as `ranking.relevant_ranks` returns them) of the rows this pass
    ranks, in blocks of `block` items; return the rows with relevant items it leaves."""
    queried = np.flatnonzero(counts > 0)
    if not len(queried) or np.median(counts[queried]) * STRIDE > ROUTED:
        return queried  # most rows would be routed: they predict at least STRIDE × R candidates
    n = len(gallery)
    g = torch.from_numpy(gallery)
    block = min(block, max_rows(n))
    side = -(-min(block, n) // GROUP) * GROUP
    bound = np.full(n + side, np.inf, dtype=np.float32)  # past the items: never reached
    bound[:n] = _bounds(g, lists, counts, block)
    shared = torch.from_numpy(bound)  # the same memory: a row capped in `bound` stops gathering
    left = (bound[:n] == np.inf) & (counts > 0)
    if left.sum() > len(queried) / 2:  # the blocks (half the products) would save less than they cost
        return queried
    gathered = np.zeros(n, dtype=np.int64)
    starts = range(0, n, block)
    pending: dict[int, list] = {start: [] for start in starts}
    tile = torch.full((side, side), -np.inf, dtype=torch.float32)  # reused; beyond the items: −inf
    for i in starts:
        rows = slice(i, min(i + block, n))
        for j in starts[i // block :]:
            columns = slice(j, min(j + block, n))
            if rows.stop - i < side or columns.stop - j < side:
                tile.fill_(-np.inf)
            torch.matmul(g[rows], g[columns].T, out=tile[: rows.stop - i, : columns.stop - j])
            if i == j:
                tile.fill_diagonal_(-np.inf)
            pending[i].append(_candidates(tile, shared[i : i + side], i, j))
            _cap(pending[i][-1][0], gathered, bound, left)
            if j > i:
                pending[j].append(_candidates(tile, shared[j : j + side], j, i, down_columns=True))
                _cap(pending[j][-1][0], gathered, bound, left)
        _rank_block(pending.pop(i), rows, labels, counts, left, first, hits, n)
    return np.flatnonzero(left)


def _bounds(g: torch.Tensor, lists: np.ndarray, counts: np.ndarray, block: int) -> np.ndarray:
    """Per row: min(max(least relevant similarity, R-th largest of the sample), best relevant
    similarity) − SLACK; +inf for rows without relevant items or routed row by row."""
    n = len(g)
    sample = g[::STRIDE].contiguous()
    bound = np.full(n, np.inf, dtype=np.float32)
    for i in range(0, n, block):
        rows = slice(i, min(i + block, n))
        against_sample = torch.matmul(g[rows], sample.T)
        own = np.arange(rows.start, rows.stop)
        sampled = own % STRIDE == 0
        against_sample[torch.from_numpy(np.flatnonzero(sampled)), torch.from_numpy(own[sampled] // STRIDE)] = -np.inf
        relevant = _relevant_similarities(g, rows, lists[rows])
        valid = lists[rows] >= 0
        best = np.where(valid, relevant, -np.inf).max(axis=1)
        least = np.where(valid, relevant, np.inf).min(axis=1)
        r = counts[rows]
        depth = min(int(r.max(initial=0)), len(sample))
        rth = np.full(len(r), -np.inf, dtype=np.float32)
        if depth:
            largest = against_sample.topk(depth, dim=1).values.numpy()
            within = (r >= 1) & (r <= depth)
            rth[within] = largest[within, r[within] - 1]
        row_bound = np.minimum(np.maximum(least, rth), best) - np.float32(SLACK)
        predicted = STRIDE * (against_sample >= torch.from_numpy(row_bound)[:, None]).sum(dim=1).numpy()
        keep = (r > 0) & (predicted <= ROUTED)
        bound[rows] = np.where(keep, row_bound, np.inf)
    return bound


def _relevant_similarities(g: torch.Tensor, rows: slice, lists: np.ndarray) -> np.ndarray:
    """Similarity of each row to each of its relevant items (padding: any value)."""
    items = torch.from_numpy(np.maximum(lists, 0))
    step = max(1, (1 << 16) // max(lists.shape[1], 1))  # at most 65,536 gathered vectors at once
    parts = [
        torch.einsum("rd,rkd->rk", g[rows][s : s + step], g[items[s : s + step]]) for s in range(0, len(lists), step)
    ]
    return torch.cat(parts).numpy()


def _candidates(tile: torch.Tensor, bound: torch.Tensor, row_start: int, column_start: int, down_columns: bool = False):
    """(rows, items, similarities) of the entries of `tile` at or above their row's bound (with
    `down_columns`, of `tile`'s transpose: its columns are the rows): the maximum of each run of
    `GROUP` entries tells which runs to read."""
    side = len(tile)
    if down_columns:
        runs = tile.reshape(side // GROUP, GROUP, side)  # run, entry, row
        reached = torch.nonzero(runs.amax(dim=1).T >= bound[:, None])  # (row, run)
        values = runs[reached[:, 1], :, reached[:, 0]]
    else:
        runs = tile.reshape(side, side // GROUP, GROUP)  # row, run, entry
        reached = torch.nonzero(runs.amax(dim=2) >= bound[:, None])
        values = runs[reached[:, 0], reached[:, 1]]
    run, offset = torch.nonzero(values >= bound[reached[:, 0], None], as_tuple=True)
    row, column = reached[run, 0], reached[run, 1] * GROUP + offset
    return ((row + row_start).numpy(), (column + column_start).numpy(), values[run, offset].numpy())


def _cap(rows: np.ndarray, gathered: np.ndarray, bound: np.ndarray, left: np.ndarray) -> None:
    """Count the rows' candidates; a row past `CAP` stops gathering and is left."""
    np.add.at(gathered, rows, 1)
    over = np.unique(rows[gathered[rows] > CAP])
    bound[over] = np.inf
    left[over] = True


def _rank_block(found, rows: slice, labels, counts, left, first, hits, n: int) -> None:
    """Order a block's candidates (one sort of integer keys); fill the rows whose bound stands,
    leave the others."""
    row, item, value = (np.concatenate(parts) for parts in zip(*found))
    keep = ~left[row]
    row, item, value = row[keep], item[keep], value[keep]
    order = np.argsort(order_keys(value, item, row - rows.start, n))
    row, item = row[order], item[order]
    lengths = np.bincount(row - rows.start, minlength=rows.stop - rows.start)
    place = np.arange(len(row)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    relevant = labels[item] == labels[row]
    best = np.full(rows.stop - rows.start, n, dtype=np.int64)
    np.minimum.at(best, row[relevant] - rows.start, place[relevant])
    r = counts[rows]
    stands = (r > 0) & ~left[rows] & (lengths >= r) & (best < n)
    left[rows] |= (r > 0) & ~stands
    first[rows] = np.where(stands, best, first[rows])
    top = stands[row - rows.start] & (place < counts[row])
    hits[row[top], place[top]] = relevant[top]
