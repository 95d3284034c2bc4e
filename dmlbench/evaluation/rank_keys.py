"""The retrieval order as integer keys: one int64 per (row, similarity, gallery index)."""

from __future__ import annotations

import numpy as np


def order_keys(values: np.ndarray, items: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """Keys whose ascending order is: row, then most similar first, then higher gallery index
    first (the similarity's bits in sortable form); `n` is the gallery size."""
    bits = (values + np.float32(0.0)).view(np.int32).astype(np.int64)  # +0.0: −0.0 ties with 0.0
    ascending = np.where(bits < 0, bits ^ 0x7FFFFFFF, bits) + (1 << 31)  # 0 … 2³² − 1
    width = index_bits(n)
    return (rows << (32 + width)) | ((0xFFFFFFFF - ascending) << width) | ((1 << width) - 1 - items)


def index_bits(n: int) -> int:
    """Bits of a gallery index."""
    return max(int(n - 1).bit_length(), 1)


def max_rows(n: int) -> int:
    """Rows that fit the keys beside the similarity and a gallery index of `n` items."""
    return 1 << (31 - index_bits(n))
