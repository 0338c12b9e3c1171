"""The two data shapes of docs/ARCHITECTURE.md §2.

* :class:`Dataset` — incidence data: rows are people, columns are items, a cell says the
  person has the item (a CSR matrix of ones, or of values for non-binary data).
* :class:`CellCounts` — counts over a large domain of cells (a sparse contingency table).

Both carry a fingerprint: the sha256 of a canonical serialisation of the content, so that
the same data read from two formats (a FIMI file and a pairs CSV, say) has the same
fingerprint. Row order, person identifiers and the order of items in the file do not
enter it; item labels, values and the domain do.

Everything :meth:`summary` returns is computed from the true data and is *internal*:
it never goes into a public report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from ..arrays import blockwise_bincount
from .fingerprint import RowsDigest, incidence_fingerprint, labels_bytes, sha_parts
from ..errors import DataError, ParameterError
from ..privacy.bounding import bound_matrix

_NUMBER = re.compile(r"^[+-]?\d+(\.\d+)?$")


def natural_key(label: str):
    """Sort key putting numbers in numeric order before other labels (``2 < 10 < apple``)."""
    if _NUMBER.match(label):
        return (0, float(label), label)
    return (1, 0.0, label)


def natural_order(labels: Sequence[str]) -> np.ndarray:
    """Indices that sort ``labels`` with :func:`natural_key`."""
    labels = list(labels)
    if labels and all(label.isascii() and label.isdigit() for label in labels):
        # fast path for integer item ids (the common FIMI case)
        values = np.array([int(label) for label in labels], dtype=np.float64)
        lengths = np.array([len(label) for label in labels])
        return np.lexsort((lengths, values))
    return np.array(sorted(range(len(labels)), key=lambda i: natural_key(labels[i])), dtype=np.int64)


@dataclass(eq=False)
class Dataset:
    """Incidence data: ``matrix[i, j]`` is non-zero when person ``i`` has item ``j``.

    ``matrix`` is CSR with sorted, duplicate-free indices; for binary data its values are
    all 1 (``uint8``). ``item_labels[j]`` names column ``j``. ``source`` records how the
    data was imported (path, format, options) so a project file can import it again.
    """

    matrix: sp.csr_matrix
    item_labels: np.ndarray
    name: str = "dataset"
    source: dict = field(default_factory=dict)
    #: the declared item domain (``dpdesk.data.domain``) when the columns are exactly it; a
    #: secure release needs one. ``origin`` is the data as read, before projection onto it.
    domain: object = field(default=None, repr=False)
    origin: object = field(default=None, repr=False)

    kind = "incidence"
    #: internal (true-data): the columns of records read as items that look like identifiers
    #: (:func:`dpdesk.data.detect.identifier_like`); never in a public file
    likely_identifiers = ()
    record_columns = ()  # the records' columns whose values are the items (when read from records)

    def __post_init__(self) -> None:
        if not sp.isspmatrix_csr(self.matrix):
            self.matrix = sp.csr_matrix(self.matrix)
        labels = np.asarray(self.item_labels, dtype=object)
        if labels.shape != (self.matrix.shape[1],):
            raise ParameterError(
                f"There are {self.matrix.shape[1]} columns but {labels.size} item labels."
            )
        self.item_labels = labels

    # -- shape -------------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def n_items(self) -> int:
        return int(self.matrix.shape[1])

    @property
    def nnz(self) -> int:
        return int(self.matrix.nnz)

    @cached_property
    def binary(self) -> bool:
        data = self.matrix.data
        return bool(data.size == 0 or (data.dtype == np.uint8 and data.max() == 1 and data.min() == 1))

    @cached_property
    def row_counts(self) -> np.ndarray:
        """Number of items of each person (RC_i)."""
        return np.diff(self.matrix.indptr).astype(np.int64)

    @cached_property
    def column_counts(self) -> np.ndarray:
        """True count of each item: the number of people who have it (internal)."""
        return blockwise_bincount(self.matrix.indices, self.n_items)

    @cached_property
    def column_sums(self) -> np.ndarray:
        """Sum of the cell values of each column (equals ``column_counts`` for binary data)."""
        if self.binary:
            return self.column_counts.astype(np.float64)
        return np.bincount(self.matrix.indices, weights=self.matrix.data, minlength=self.n_items)

    # -- the statistics mechanisms ask of any dataset (dpdesk.engine.dataset answers them too) --------
    def prepare_bounding(self, bound, cancel=None, progress=None):
        """Rows within the declared Δ counted, rows over it located (:mod:`dpdesk.privacy.bounding`)."""
        return bound_matrix(self.matrix, bound)

    # -- identity ----------------------------------------------------------------------
    @cached_property
    def fingerprint(self) -> str:
        """sha256 of the item labels (in natural order) and a digest of the multiset of rows.

        Row order, person identifiers, the order of items in the file and the file format
        do not enter it. Each row — the set of its columns in natural label order, with
        values for non-binary data — gets two 64-bit hashes (sums of mixed cell hashes,
        then mixed with the row length), and the digest is three wrapping 64-bit sums over
        all rows of mixes of these: one pass over the matrix in blocks of
        :data:`~dpdesk.data.fingerprint.FINGERPRINT_BLOCK` cells, with temporaries of a few block sizes and no
        sort. It tells datasets apart (as the ledger needs: equal or not) with a chance
        of about 2^-128 of mistaking two different ones that were not built to collide;
        it is not a cryptographic commitment to the rows.
        """
        order = natural_order(list(self.item_labels))
        labels = [str(self.item_labels[j]) for j in order]
        position = None
        if not np.array_equal(order, np.arange(order.size)):
            position = np.empty(self.n_items, dtype=np.int64)
            position[order] = np.arange(self.n_items)
        m = self.matrix
        values = None if self.binary else m.data
        rows = RowsDigest()
        rows.add(m.indptr, m.indices, values, position)
        return incidence_fingerprint(labels, self.n_rows, self.nnz, values is None, rows)

    # -- summaries ---------------------------------------------------------------------
    def summary(self) -> dict:
        """True-data statistics for the steward's eyes only (never in a public report)."""
        rows, cols, nnz = self.n_rows, self.n_items, self.nnz
        # from the row pointers (4 bytes a row at most, not kept) rather than the cached int64 row counts
        longest = int(np.diff(self.matrix.indptr).max()) if rows else 0
        return {
            "rows": rows,
            "columns": cols,
            "nonzeros": nnz,
            "density": nnz / (rows * cols) if rows and cols else 0.0,
            "max_row_count": longest,
            "mean_row_count": nnz / rows if rows else 0.0,
            "avg_column_count": nnz / cols if cols else 0.0,
        }

    def row_length_histogram(self, bins: int = 50) -> tuple[np.ndarray, np.ndarray]:
        """Histogram of items per person (internal), for the wizard's summary page."""
        rc = self.row_counts
        top = int(rc.max()) if rc.size else 1
        edges = np.unique(np.linspace(0, top + 1, min(bins, top + 1) + 1).astype(np.int64))
        # np.histogram's counts for these whole-number edges (it would sort a million row counts
        # in the GUI thread): [e_i, e_i+1) from one bincount; nothing reaches the last edge, top + 1
        running = np.concatenate([[0], np.cumsum(np.bincount(rc, minlength=int(edges[-1]) + 1))])
        counts = running[edges[1:]] - running[edges[:-1]]
        return counts, edges

    def describe(self) -> str:
        return f"{self.name} ({self.n_rows:,} people · {self.n_items:,} items)"


@dataclass(eq=False)
class CellCounts:
    """Counts over a domain of ``domain_size`` cells, stored sparsely.

    ``indices`` are sorted distinct cell numbers in ``[0, domain_size)``, ``counts`` their
    positive counts. When the table comes from attributes, ``attributes`` names them and
    ``domains[k]`` lists the values of attribute ``k``; cell numbers are mixed-radix with
    the last attribute varying fastest. ``domains_declared`` says whether the steward
    declared the domains (public) or they were taken from the data (to be reported).
    """

    indices: np.ndarray
    counts: np.ndarray
    domain_size: int
    attributes: list[str] | None = None
    domains: list[list[str]] | None = None
    name: str = "cells"
    source: dict = field(default_factory=dict)
    domains_declared: bool = False
    order_attribute: str | None = None
    #: the declared cell domain (``dpdesk.data.domain.CellDomain``); records dropped because a
    #: value lay outside it (internal); the table as read, before restriction
    domain: object = field(default=None, repr=False)
    dropped_records: int = 0
    origin: object = field(default=None, repr=False)

    kind = "cells"

    def __post_init__(self) -> None:
        indices = np.asarray(self.indices, dtype=np.int64).ravel()
        counts = np.asarray(self.counts).ravel()
        if indices.shape != counts.shape:
            raise ParameterError("Cell indices and counts must have the same length.")
        m = int(self.domain_size)
        if m < 1:
            raise ParameterError("The domain size must be at least 1.")
        if counts.size and (np.any(counts < 0) or not np.all(np.asarray(counts) == np.round(counts))):
            raise ParameterError("Cell counts must be non-negative whole numbers.")
        counts = counts.astype(np.int64)
        if indices.size and (indices.min() < 0 or indices.max() >= m):
            raise ParameterError(f"Cell indices must lie in 0..{m - 1}.")
        order = np.argsort(indices, kind="stable")
        indices, counts = indices[order], counts[order]
        if indices.size > 1 and np.any(indices[1:] == indices[:-1]):
            # the same cell listed twice: add the counts
            unique, start = np.unique(indices, return_index=True)
            counts = np.add.reduceat(counts, start)
            indices = unique
        keep = counts > 0
        self.indices, self.counts, self.domain_size = indices[keep], counts[keep], m
        if self.domains is not None:
            sizes = [len(values) for values in self.domains]
            if int(np.prod(np.array(sizes, dtype=object))) != m:
                raise ParameterError("The domain size must be the product of the attribute domain sizes.")
        if self.domain is None and self.domains_declared:
            from .domain import HOW_LIST, HOW_RANGE, CellDomain

            if self.domains is not None:
                self.domain = CellDomain(tuple(self.attributes), tuple(tuple(v) for v in self.domains), HOW_LIST,
                                         "declared domains")
            else:
                self.domain = CellDomain(("cell",), None, HOW_RANGE, f"{m:,} cells", cells=m)

    @property
    def n_cells(self) -> int:
        """n: the number of non-zero cells."""
        return int(self.indices.size)

    @property
    def total(self) -> int:
        """‖M‖₁: the number of people counted."""
        return int(self.counts.sum())

    @cached_property
    def fingerprint(self) -> str:
        parts = [b"dpdesk-cells-v1", str(self.domain_size).encode()]
        indices = self.indices
        if self.attributes is not None and self.domains is not None:
            # canonical: attributes as given, each domain in natural order
            parts.append(labels_bytes(self.attributes))
            orders = [natural_order(values) for values in self.domains]
            for values, order in zip(self.domains, orders):
                parts.append(labels_bytes(values[i] for i in order))
            digits = self.decode(indices)
            remapped = []
            for k, order in enumerate(orders):
                rank = np.empty(len(order), dtype=np.int64)
                rank[order] = np.arange(len(order))
                remapped.append(rank[digits[:, k]] if digits.size else digits[:, k])
            indices = self.encode(np.stack(remapped, axis=1)) if indices.size else indices
            order = np.argsort(indices)
            indices, counts = indices[order], self.counts[order]
        else:
            counts = self.counts
        parts.append(np.asarray(indices, dtype="<i8").tobytes())
        parts.append(np.asarray(counts, dtype="<i8").tobytes())
        return sha_parts(*parts)

    @cached_property
    def _radices(self) -> np.ndarray:
        return np.array([len(v) for v in self.domains], dtype=np.int64)

    def decode(self, indices: np.ndarray) -> np.ndarray:
        """Attribute value positions of each cell number (one column per attribute)."""
        indices = np.asarray(indices, dtype=np.int64)
        if self.domains is None:
            return indices.reshape(-1, 1)
        digits = np.empty((indices.size, len(self.domains)), dtype=np.int64)
        rest = indices.copy()
        for k in range(len(self.domains) - 1, -1, -1):
            digits[:, k] = rest % self._radices[k]
            rest //= self._radices[k]
        return digits

    def encode(self, digits: np.ndarray) -> np.ndarray:
        """Cell numbers of attribute value positions (inverse of :meth:`decode`)."""
        digits = np.asarray(digits, dtype=np.int64)
        index = np.zeros(digits.shape[0], dtype=np.int64)
        for k in range(digits.shape[1]):
            index = index * self._radices[k] + digits[:, k]
        return index

    def cell_labels(self, indices: np.ndarray) -> list[str]:
        """Readable names of cells, e.g. ``Private | Bachelors | Male``."""
        if self.domains is None:
            return [str(int(i)) for i in np.asarray(indices)]
        digits = self.decode(indices)
        return [" | ".join(self.domains[k][d] for k, d in enumerate(row)) for row in digits]

    def summary(self) -> dict:
        """True-data statistics (internal). Each person sits in exactly one cell."""
        people, m, n = self.total, self.domain_size, self.n_cells
        return {
            "rows": people,
            "columns": m,
            "nonzeros": n,
            "density": n / m,
            "max_row_count": 1 if people else 0,
            "mean_row_count": 1.0 if people else 0.0,
            "avg_column_count": people / m,
        }

    def describe(self) -> str:
        return f"{self.name} ({self.total:,} people · {self.n_cells:,} of {self.domain_size:,} cells)"


def from_matrix(matrix, item_labels: Sequence[str] | None = None, *, name: str = "matrix") -> Dataset:
    """A :class:`Dataset` from any matrix (dense or sparse): non-zero cells mean "has the item".

    Values other than 0/1 are kept for the non-binary extensions (DPSense §4.4); every
    other mechanism treats a non-zero cell as 1.
    """
    csr = sp.csr_matrix(matrix, copy=True)
    csr.eliminate_zeros()
    csr.sum_duplicates()
    csr.sort_indices()
    if csr.data.size and np.all(csr.data == 1):
        csr.data = np.ones(csr.data.size, dtype=np.uint8)
    elif csr.data.size and np.any(csr.data < 0):
        raise ParameterError("Cell values must not be negative.")
    else:
        csr.data = csr.data.astype(np.float64) if csr.data.size else np.ones(0, dtype=np.uint8)
    if item_labels is None:
        item_labels = [str(j) for j in range(csr.shape[1])]
    labels = [str(label) for label in item_labels]
    if len(set(labels)) != len(labels):
        raise ParameterError("Item labels must be distinct.")
    return Dataset(csr, np.array(labels, dtype=object), name=name, source={"format": "matrix-object"})


def from_cells(indices, counts, domain_size: int, *, name: str = "cells") -> CellCounts:
    """A :class:`CellCounts` from cell numbers, their counts and the domain size m."""
    from .domain import HOW_RANGE, CellDomain

    m = int(domain_size)
    return CellCounts(np.asarray(indices), np.asarray(counts), m, name=name,
                      source={"format": "cells-object"}, domains_declared=True,
                      domain=CellDomain(("cell",), None, HOW_RANGE, f"{m:,} cells", cells=m))


def build_incidence(rows: np.ndarray, cols: np.ndarray, n_rows: int, labels: Sequence[str],
                    *, name: str, source: dict, values: np.ndarray | None = None,
                    path=None) -> Dataset:
    """Assemble a :class:`Dataset` from (row, column) pairs, putting columns in natural order.

    A pair repeated within a row counts once (for values, the largest is kept).
    """
    labels = list(labels)
    order = natural_order(labels)
    index_dtype = np.int32 if len(labels) < 2**31 and rows.size < 2**31 and n_rows < 2**31 else np.int64
    position = np.empty(len(labels), dtype=index_dtype)
    position[order] = np.arange(len(labels), dtype=index_dtype)
    cols = position[cols] if cols.size else np.zeros(0, index_dtype)
    sorted_labels = np.array([labels[j] for j in order], dtype=object)
    if values is None:
        return Dataset(_dedupe_binary(rows, cols, n_rows, len(labels)), sorted_labels, name=name, source=source)
    coo = sp.coo_matrix((np.asarray(values, dtype=np.float64), (rows, cols)), shape=(n_rows, len(labels)))
    csr = coo.tocsr()
    csr.sum_duplicates()
    csr.eliminate_zeros()
    if csr.data.size and np.all(csr.data == 1):
        csr.data = np.ones(csr.data.size, dtype=np.uint8)
    return Dataset(csr, sorted_labels, name=name, source=source)


def _dedupe_binary(rows: np.ndarray, cols: np.ndarray, n_rows: int, n_cols: int) -> sp.csr_matrix:
    """CSR of ones from (row, col) pairs, duplicates within a row collapsed (sorted by row only if needed)."""
    rows = np.asarray(rows)
    if rows.size and np.any(rows[1:] < rows[:-1]):
        order = np.argsort(rows, kind="stable")
        rows, cols = rows[order], cols[order]
        del order
    index_dtype = np.int32 if n_cols < 2**31 and rows.size < 2**31 and n_rows < 2**31 else np.int64
    indptr = np.zeros(n_rows + 1, dtype=index_dtype)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    csr = sp.csr_matrix((np.ones(rows.size, dtype=np.uint8), np.asarray(cols, dtype=index_dtype), indptr),
                        shape=(n_rows, n_cols), copy=False)
    csr.sum_duplicates()  # sorts each row and merges repeats
    csr.data[:] = 1
    return csr


def require_positive_rows(path, n_rows: int) -> None:
    if n_rows == 0:
        raise DataError("the file contains no records", path=path, expected="at least one line of data")
