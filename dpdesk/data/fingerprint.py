"""How dpdesk tells datasets apart: one home for the content fingerprint, whichever path read the
data (the in-memory matrix, or an engine streaming rows), and the digest of a raw source.

Both are internal: functions of the true data, kept in the local ledger, never published.
"""

from __future__ import annotations

import hashlib
from typing import Iterable

import numpy as np

def sha_parts(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()


def labels_bytes(labels: Iterable[str]) -> bytes:
    return "\x1f".join(labels).encode("utf-8")


_SOURCE_DIGESTS: dict = {}  # (path, size, mtime) → digest: a file is hashed once per process


def source_digest(source: dict | None) -> str | None:
    """The raw source a dataset was read from, as the ledger's "same data" check needs it.

    The content fingerprint describes the data *as read*: the same file read with another
    header setting, as records instead of cells, or with one column more is other content,
    yet the same people. So the ledger also keys a release on its raw source: the sha256 of
    the file's bytes, or a database's address (without password) and query. ``None`` for
    data made in memory (``from_matrix``, ``from_cells``). Internal, like the fingerprint.
    """
    import os

    source = source or {}
    if source.get("sql"):
        text = f"{source['sql']}\n{' '.join(str(source.get('query', '')).split())}"
        return "source-query:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    path = source.get("path")
    if not path:
        return None
    try:
        status = os.stat(path)
        key = (os.path.realpath(path), status.st_size, status.st_mtime_ns)
        if key not in _SOURCE_DIGESTS:
            with open(path, "rb") as handle:
                _SOURCE_DIGESTS[key] = "source-sha256:" + hashlib.file_digest(handle, "sha256").hexdigest()
        return _SOURCE_DIGESTS[key]
    except OSError:  # the file went away since it was read: the content fingerprint still holds
        return None


#: cells hashed at a time by :attr:`Dataset.fingerprint` (its temporaries are a few × 8 bytes × this)
FINGERPRINT_BLOCK = 1 << 20
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_LANE2 = np.uint64(0xD6E8FEB86659FD93)
_LANE3 = np.uint64(0xA0761D6478BD642F)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place on a uint64 array (arithmetic wraps mod 2^64 on purpose)."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def row_blocks(indptr: np.ndarray, cells: int):
    """``(first, last)`` row ranges holding about ``cells`` cells each (at least one row)."""
    n_rows = indptr.size - 1
    first = 0
    while first < n_rows:
        last = int(np.searchsorted(indptr, int(indptr[first]) + cells, side="right")) - 1
        last = min(max(last, first + 1), n_rows)
        yield first, last
        first = last


def row_digest(indptr: np.ndarray, indices: np.ndarray, values, position) -> np.ndarray:
    """The three lane sums of one block of rows (``indptr`` is the block's slice of row pointers)."""
    start, stop = int(indptr[0]), int(indptr[-1])
    lengths = np.diff(indptr).astype(np.uint64)
    columns = indices[start:stop]
    cell = (position[columns] if position is not None else columns).astype(np.uint64)
    cell += _GOLDEN
    _mix(cell)
    if values is not None:
        value = np.ascontiguousarray(values[start:stop], dtype=np.float64).view(np.uint64).copy()
        value += _LANE3
        cell ^= _mix(value)
        del value
    other = cell + _LANE2
    _mix(other)
    sums = np.zeros(lengths.size, dtype=np.uint64)
    sums2 = np.zeros(lengths.size, dtype=np.uint64)
    filled = np.flatnonzero(lengths > 0)
    if cell.size:
        offsets = (indptr[:-1][filled] - start).astype(np.int64)
        sums[filled] = np.add.reduceat(cell, offsets)
        sums2[filled] = np.add.reduceat(other, offsets)
    del cell, other
    sums ^= lengths * _GOLDEN
    _mix(sums)
    sums2 += lengths * _LANE2
    _mix(sums2)
    third = sums ^ sums2
    _mix(third)
    return np.array([sums.sum(dtype=np.uint64), sums2.sum(dtype=np.uint64), third.sum(dtype=np.uint64)],
                    dtype=np.uint64)


class RowsDigest:
    """The three 64-bit lane sums over every row, fed in any number of pieces of whole rows."""

    def __init__(self):
        self.lanes = np.zeros(3, dtype=np.uint64)

    def add(self, indptr: np.ndarray, indices: np.ndarray, values=None, position=None) -> None:
        """Rows given by CSR arrays (``indptr`` from the rows' first cell), in blocks of
        :data:`FINGERPRINT_BLOCK` cells."""
        for first, last in row_blocks(indptr, FINGERPRINT_BLOCK):
            self.lanes += row_digest(indptr[first:last + 1], indices, values, position)


def incidence_fingerprint(natural_labels: Iterable[str], n_rows: int, nnz: int, binary: bool,
                          rows: RowsDigest) -> str:
    """:attr:`dpdesk.data.dataset.Dataset.fingerprint` from its parts (labels in natural order)."""
    return sha_parts(b"dpdesk-incidence-v2", labels_bytes(natural_labels),
                     np.array([n_rows, nnz, int(binary)], dtype="<i8").tobytes(),
                     rows.lanes.astype("<u8").tobytes())
