"""Array steps that hold the interpreter lock briefly, and other small helpers on numpy arrays.

Below every package of dpdesk (it imports nothing of it): the privacy core, the data, the
engine and the mechanisms use them alike.
"""

from __future__ import annotations

import numpy as np

#: elements one numpy call handles in the long steps below. A numpy call holds Python's interpreter
#: lock, so a worker thread that handles 8 M cells in one call freezes the window for as long;
#: a million at a time keeps each hold to a few milliseconds (benchmarks/bench_responsiveness.py)
BLOCK = 1 << 20


def blockwise_bincount(indices: np.ndarray, n: int, block: int = BLOCK) -> np.ndarray:
    """``np.bincount(indices, minlength=n)`` without its full-size int64 copy of ``indices``."""
    counts = np.zeros(n, dtype=np.int64)
    for start in range(0, indices.size, block):
        counts += np.bincount(indices[start:start + block], minlength=n)
    return counts


def blockwise_at(ufunc, target: np.ndarray, index: np.ndarray, values, block: int = BLOCK) -> None:
    """``ufunc.at(target, index, values)`` a block at a time: the same result (``at`` applies its
    elements one by one, in order), without holding the interpreter lock for millions of them."""
    scalar = np.ndim(values) == 0
    for start in range(0, index.size, block):
        ufunc.at(target, index[start:start + block], values if scalar else values[start:start + block])


def blockwise_repeat(values: np.ndarray, counts: np.ndarray, block: int = BLOCK) -> np.ndarray:
    """``np.repeat(values, counts)`` (1-d), written a block of about ``block`` outputs at a time."""
    values, counts = np.asarray(values), np.asarray(counts)
    ends = np.cumsum(counts, dtype=np.int64)
    total = int(ends[-1]) if ends.size else 0
    if total <= block:
        return np.repeat(values, counts)
    out = np.empty(total, dtype=values.dtype)
    cuts = np.unique(np.searchsorted(ends, np.arange(block, total, block, dtype=np.int64), side="right"))
    first, done = 0, 0
    for last in [*cuts.tolist(), counts.size]:
        if last <= first:
            continue
        piece = np.repeat(values[first:last], counts[first:last])
        out[done:done + piece.size] = piece
        done += piece.size
        first = last
    return out


def gather_rows(indptr: np.ndarray, row_order: np.ndarray) -> np.ndarray:
    """Positions of the cells of ``row_order``'s rows, row after row (vectorised)."""
    lengths = np.diff(indptr)[row_order]
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = indptr[:-1][row_order].astype(np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return np.arange(total, dtype=np.int64) + offsets
