"""Contribution bounding: every person keeps at most the declared bound Δ of their items.

The bound is *declared* by the steward (public), never read off the data (docs/ARCHITECTURE.md §3).
A row with more than Δ items keeps a uniformly random Δ of them, chosen independently
per row, before any mechanism runs. After that, adding or removing one person changes
at most Δ column counts by one each: the L1 sensitivity of the count vector is Δ.
How many rows were cut is true-data information and is reported internally only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..arrays import blockwise_bincount, blockwise_repeat
from ..errors import ParameterError
from .randomness import RandomSource


@dataclass
class BoundedRows:
    """The deterministic part of bounding: which rows exceed Δ and the counts of the rest."""

    bound: int
    over_rows: np.ndarray  # rows with more than Δ items
    base_counts: np.ndarray  # column counts of the rows within the bound
    over_positions: np.ndarray  # positions (in the CSR arrays) of the over rows' cells
    over_lengths: np.ndarray  # number of items of each over row
    block_starts: np.ndarray  # where each over row's cells start within over_positions
    #: data held by an engine: the over rows alone (``over_positions`` index its cells), else None
    over: sp.csr_matrix | None = None

    def over_columns(self, data) -> np.ndarray:
        """The column of every cell ``over_positions`` can point at."""
        return self.over.indices if self.over is not None else matrix_of(data).indices

    @property
    def rows_cut(self) -> int:
        """Internal: number of people whose items were truncated."""
        return int(self.over_rows.size)


def effective_bound(bound: int, d: int) -> int:
    """Δ' = min(Δ, d): after truncation to Δ a person holds at most Δ of the d items, and never more than d: the
    sensitivity of the item counts (and of any sum of them) is Δ', a function of the declared Δ and d."""
    return max(1, min(int(bound), int(d)))


def check_bound(bound) -> int:
    if bound is None:
        raise ParameterError("This mechanism needs the declared bound Δ (the most items one person may "
                             "contribute). Set --bound (or 'bound' in the API).")
    if isinstance(bound, bool) or not float(bound).is_integer() or int(bound) < 1:
        raise ParameterError(f"The declared bound must be a whole number of at least 1, not {bound!r}.")
    return int(bound)


def matrix_of(data) -> sp.csr_matrix:
    """The CSR matrix of a dataset (or the matrix itself)."""
    return data if sp.issparse(data) else data.matrix


def prepare_bound(data, bound: int) -> BoundedRows:
    """Split rows into those within Δ (counted now) and those over it (cut at release).

    ``data`` is a CSR matrix, or a dataset, which splits its own rows (``prepare_bounding``):
    a matrix in memory with :func:`bound_matrix`, data held by an engine by counting the rows
    within Δ there and handing over only the rows over it (``dpdesk.engine.dataset``).
    """
    if sp.issparse(data):
        return bound_matrix(data, bound)
    return data.prepare_bounding(bound)


def bound_matrix(matrix: sp.csr_matrix, bound: int) -> BoundedRows:
    """:func:`prepare_bound` of a matrix in memory: positions of the over rows' cells, no copy."""
    bound = check_bound(bound)
    lengths = np.diff(matrix.indptr)
    over = np.flatnonzero(lengths > bound)
    over_lengths = lengths[over]
    starts = matrix.indptr[:-1][over].astype(np.int64)
    total = int(over_lengths.sum())
    block_starts = np.cumsum(over_lengths, dtype=np.int64) - over_lengths
    # positions in the index dtype (4 bytes each for most data), built in place
    dtype = np.int32 if matrix.nnz < 2**31 else np.int64
    positions = blockwise_repeat((starts - block_starts).astype(dtype), over_lengths)
    positions += np.arange(total, dtype=dtype)
    # all counts minus the over rows' (few): no copy of the whole matrix's columns
    base = blockwise_bincount(matrix.indices, matrix.shape[1])
    base -= np.bincount(matrix.indices[positions], minlength=matrix.shape[1])
    return BoundedRows(bound, over, base, positions, over_lengths.astype(np.int64), block_starts.astype(np.int64))


def sample_kept(prepared: BoundedRows, source: RandomSource) -> np.ndarray:
    """Positions (in the CSR arrays) of the cells kept in the over-bound rows: Δ per row, uniform; ascending.

    Floyd's algorithm (Bentley & Floyd, CACM 1987) for every over row at once. A row of L > Δ
    cells: for k = 0, …, Δ−1, with j = L − Δ + k, draw t uniformly from 0..j (exact
    ``uniform_int``) and keep offset t, or offset j if t is kept already. Why the Δ kept
    offsets are a uniform random Δ-subset of 0..L−1: by induction, after step k the k + 1
    kept offsets are uniform among the (k+1)-subsets of 0..j. True for k = 0 (t uniform on
    0..L−Δ). Step k: a (k+1)-subset T of 0..j comes out either as S ∪ {t} with t ∉ S, j ∉ T,
    from each of the k + 1 subsets S = T − {t} (each of probability 1/C(j, k), t with
    probability 1/(j+1)), or, when j ∈ T, with S = T − {j} and t ∈ S ∪ {j} (k + 1 draws
    out of j + 1): both give (k+1)/((j+1)·C(j, k)) = 1/C(j+1, k+1). Each row draws exactly
    Δ words; the work touches a Δ-column table, not the rows' cells. Each row's offsets are
    sorted, so the positions come out ascending (a row's cells are contiguous, rows in order).
    """
    if prepared.over_positions.size == 0:
        return prepared.over_positions
    starts, lengths, bound = prepared.block_starts, prepared.over_lengths, prepared.bound
    dtype = np.int32 if int(lengths.max()) < 2**31 else np.int64
    chosen = np.empty((bound, lengths.size), dtype=dtype)  # step by row: each step's comparisons are contiguous
    for k in range(bound):
        last = lengths - bound + k
        drawn = source.uniform_int(last + 1).astype(dtype)
        already = (chosen[:k] == drawn).any(axis=0)
        chosen[k] = np.where(already, last, drawn)
    offsets = np.ascontiguousarray(chosen.T)
    offsets.sort(axis=1)
    return prepared.over_positions[(starts[:, None] + offsets).ravel()]


def bounded_counts(data, prepared: BoundedRows, source: RandomSource) -> np.ndarray:
    """Column counts after truncating every row to at most Δ uniformly chosen items (``data``: a dataset or its matrix)."""
    kept = sample_kept(prepared, source)
    extra = np.bincount(prepared.over_columns(data)[kept], minlength=prepared.base_counts.size)
    return prepared.base_counts + extra


def truncate(matrix: sp.csr_matrix, bound: int, source: RandomSource) -> tuple[sp.csr_matrix, int]:
    """The truncated matrix itself (for mechanisms that need rows) and the number of rows cut."""
    prepared = prepare_bound(matrix, bound)
    if prepared.over_rows.size == 0:
        return matrix, 0
    keep = np.ones(matrix.nnz, dtype=bool)
    keep[prepared.over_positions] = False
    keep[sample_kept(prepared, source)] = True
    lengths = np.diff(matrix.indptr)
    new_lengths = np.minimum(lengths, prepared.bound)
    indptr = np.concatenate([[0], np.cumsum(new_lengths)]).astype(matrix.indptr.dtype)
    truncated = sp.csr_matrix((matrix.data[keep], matrix.indices[keep], indptr), shape=matrix.shape)
    return truncated, prepared.rows_cut
