"""Incidence data held by an engine: the figures mechanisms need, never the matrix.

:class:`EngineDataset` answers what :class:`dpdesk.data.dataset.Dataset` answers — shape,
labels, column counts, summary, fingerprint — from SQL statistics (:mod:`.queries`), and
gives the mechanisms the pieces of their randomized steps that touch rows.

Randomness stays ours
---------------------
Truncating rows to Δ items, sampling one item per row and sampling rows need random
choices; they are made by dpdesk's samplers with the :class:`RandomSource` given to the
mechanism, never by the engine (whose ``random()`` is no cryptographic generator). The
engine only counts what needs no randomness and hands over the rows that do:

* *Truncation.* A row with at most Δ items is kept whole: its contribution to the
  bounded counts is its items, whatever the random choices — the engine counts those
  rows exactly (every item's count less the long rows' items, which are fetched anyway).
  A row with more than Δ items keeps a uniformly random Δ of them, independently per row
  (:func:`dpdesk.privacy.bounding.sample_kept`).
  So the bounded counts are the exact counts of the rows within Δ plus the counts of the
  sampled subsets of the rows over Δ: the same random variable as truncating the whole
  matrix, because the rows within Δ involve no randomness and the over-Δ rows are
  sampled by the same code with the same draws. Only those rows (5.9% of rows, 32% of
  cells at Δ = 20 on PubMed-shaped data) leave the engine, in Arrow batches, in row order
  with their items in the column order of the in-memory matrix, so a seeded run draws the
  same words and truncates the same way as the in-memory path
  (``tests/engine/test_mechanisms.py`` checks every mechanism's release is identical, and
  ``tests/engine/test_statistics.py`` the distribution of the kept items).
* *One item per row* (GS column sampling) needs every row: the rows within Δ are streamed
  in batches and their item drawn with :func:`uniform_int_stream`, which consumes the
  random words exactly as one vectorised :meth:`RandomSource.uniform_int` call over all of
  them would (first one word per row in row order, then redraws of the rare rejected
  words in row order), holding one batch at a time.
* *Row sampling* (GS-S) flips one coin per row, in chunks that consume the words as one
  :meth:`RandomSource.bernoulli` call would; the engine then returns the chosen rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ..data.fingerprint import RowsDigest, incidence_fingerprint
from ..privacy.bounding import BoundedRows, check_bound
from ..privacy.randomness import RandomSource
from ..tasks import CancelToken, ProgressFn, no_progress
from . import queries
from .relation import Codes, Incidence, fresh_name, list_parts

WORDS_PER_CHUNK = 1 << 20  # random words drawn at a time when a draw spans every row


@dataclass
class LongRows:
    """Rows over a length, fetched from the engine: their row numbers and columns (CSR of those rows only)."""

    rows: np.ndarray
    matrix: sp.csr_matrix  # one row per long row, columns in the dataset's column order, sorted


class EngineDataset:
    """Incidence data in an engine (module notes). ``kind`` is ``incidence``, like :class:`Dataset`."""

    kind = "incidence"
    binary = True
    likely_identifiers = ()  # internal, as Dataset's
    record_columns = ()

    def __init__(self, incidence: Incidence, *, name: str = "dataset", source: dict | None = None,
                 labels: np.ndarray | None = None, mapping: np.ndarray | None = None, domain=None, origin=None):
        self.incidence = incidence
        self.engine = incidence.engine
        self.name = name
        self.source = dict(source or {})
        self.codes: Codes = incidence.codes
        #: column of each code (aligned with ``codes.codes``); None: the natural positions
        self.mapping = mapping
        self.item_labels = np.asarray(labels if labels is not None else self.codes.natural_labels, dtype=object)
        self.domain = domain
        self.origin = origin
        self._cache: dict = {}

    # -- shape ---------------------------------------------------------------------------
    @property
    def relation(self) -> str:
        return self.incidence.relation

    @property
    def n_rows(self) -> int:
        return self.incidence.rows

    @property
    def n_items(self) -> int:
        return int(self.item_labels.size)

    @property
    def nnz(self) -> int:
        return self.incidence.cells

    def _sql(self, sql: str) -> str:
        return queries.translate(sql, self.engine.dialect)

    def _columns(self, codes: np.ndarray) -> np.ndarray:
        return self.codes.columns(codes, self.mapping)

    def _counts(self, table) -> np.ndarray:
        counts = np.zeros(self.n_items, dtype=np.int64)
        codes = table.column("code").to_numpy().astype(np.int64)
        columns = self._columns(codes)
        keep = columns >= 0
        np.add.at(counts, columns[keep], table.column("n").to_numpy().astype(np.int64)[keep])
        return counts

    def item_counts(self, most: int | None = None, *, progress: ProgressFn | None = None,
                    cancel: CancelToken | None = None) -> np.ndarray:
        """People holding each item (of those with at most ``most`` items), in column order."""
        key = ("counts", most)
        if key not in self._cache:
            if most is None and self.incidence.code_counts is not None:  # counted when the source was read
                table = self.incidence.code_counts
            else:
                table = self.engine.execute(self._sql(queries.item_counts(self.relation, most=most)),
                                            progress=progress, cancel=cancel, message="Counting the items")
            self._cache[key] = self._counts(table)
        return self._cache[key]

    @property
    def column_counts(self) -> np.ndarray:
        return self.item_counts()

    @property
    def column_sums(self) -> np.ndarray:
        return self.column_counts.astype(np.float64)

    def length_counts(self, cancel: CancelToken | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(lengths, people): how many people hold each number of items, lengths ascending."""
        if "lengths" not in self._cache:
            table = self.engine.execute(self._sql(queries.length_histogram(self.relation)), cancel=cancel,
                                        message="Counting items per person")
            lengths = table.column("length").to_numpy().astype(np.int64)
            people = table.column("n").to_numpy().astype(np.int64)
            order = np.argsort(lengths)
            self._cache["lengths"] = (lengths[order], people[order])
        return self._cache["lengths"]

    def item_length_counts(self, longer_than: int, cancel: CancelToken | None = None):
        """(columns, lengths, people) of the rows with more than ``longer_than`` items (DPSense's layout)."""
        table = self.engine.execute(self._sql(queries.item_length_counts(self.relation, longer_than=longer_than)),
                                    cancel=cancel, message="Counting items by row length")
        columns = self._columns(table.column("code").to_numpy().astype(np.int64))
        keep = columns >= 0
        return (columns[keep], table.column("length").to_numpy().astype(np.int64)[keep],
                table.column("n").to_numpy().astype(np.int64)[keep])

    @property
    def row_counts(self) -> np.ndarray:
        """Items per person, as a multiset (ascending, not in row order): what the internal report needs."""
        lengths, people = self.length_counts()
        return np.repeat(lengths, people)

    # -- summaries (internal, like Dataset's) ---------------------------------------------
    def summary(self) -> dict:
        rows, cols, nnz = self.n_rows, self.n_items, self.nnz
        lengths, _ = self.length_counts()
        return {
            "rows": rows, "columns": cols, "nonzeros": nnz,
            "density": nnz / (rows * cols) if rows and cols else 0.0,
            "max_row_count": int(lengths[-1]) if lengths.size else 0,
            "mean_row_count": nnz / rows if rows else 0.0,
            "avg_column_count": nnz / cols if cols else 0.0,
        }

    def row_length_histogram(self, bins: int = 50) -> tuple[np.ndarray, np.ndarray]:
        lengths, people = self.length_counts()
        top = int(lengths[-1]) if lengths.size else 1
        edges = np.unique(np.linspace(0, top + 1, min(bins, top + 1) + 1).astype(np.int64))
        counts, edges = np.histogram(lengths, bins=edges, weights=people)
        return counts.astype(np.int64), edges

    def describe(self) -> str:
        return f"{self.name} ({self.n_rows:,} people · {self.n_items:,} items)"

    # -- rows, streamed in row order -------------------------------------------------------
    def _row_batches(self, sql: str, cancel: CancelToken | None):
        """(row numbers, row offsets, columns) per batch: columns of each row sorted, as in the CSR."""
        monotone = self.mapping is None or _increasing(self.mapping[self.mapping >= 0])
        last = -1
        for batch in self.engine.batches(self._sql(sql), cancel=cancel):
            if batch.num_rows == 0:
                continue
            rows = batch.column(0).to_numpy().astype(np.int64)
            if rows[0] <= last or (rows.size > 1 and np.any(np.diff(rows) <= 0)):
                raise RuntimeError("the engine returned rows out of order")  # a bug, not bad input
            last = int(rows[-1])
            offsets, codes = list_parts(batch.column(1))
            codes = codes.astype(np.int64)
            columns = self._columns(codes[: offsets[-1]]) if offsets[-1] else np.zeros(0, np.int64)
            if self.mapping is not None and columns.size and np.any(columns < 0):  # pragma: no cover - projected
                raise RuntimeError("a projected relation holds an item outside its domain")
            if not monotone or (self.mapping is None and not self._natural_codes):
                matrix = sp.csr_matrix((np.ones(columns.size, np.uint8), columns, offsets),
                                       shape=(rows.size, max(self.n_items, 1)))
                matrix.has_sorted_indices = False
                matrix.sort_indices()
                columns = matrix.indices.astype(np.int64)
            yield rows, offsets, columns

    @cached_property
    def _natural_codes(self) -> bool:
        """Whether ascending codes are ascending columns (integer ids: always)."""
        return _increasing(self.codes.position)

    def long_rows(self, longer_than: int, cancel: CancelToken | None = None) -> LongRows:
        """The rows with more than ``longer_than`` items, in row order (a CSR of those rows only)."""
        row_parts, offset_parts, column_parts = [], [], []
        total = 0
        for rows, offsets, columns in self._row_batches(
                queries.rows_longer(self.relation, longer_than, ordered=self.engine.kind != "duckdb"), cancel):
            row_parts.append(rows)
            offset_parts.append(offsets[1:] + total)
            column_parts.append(columns.astype(np.int32 if self.n_items < 2**31 else np.int64))
            total += int(offsets[-1])
        rows = np.concatenate(row_parts) if row_parts else np.zeros(0, np.int64)
        indptr = np.concatenate([[0]] + offset_parts).astype(np.int64)
        columns = np.concatenate(column_parts) if column_parts else np.zeros(0, np.int32)
        matrix = sp.csr_matrix((np.ones(columns.size, np.uint8), columns, indptr),
                               shape=(rows.size, max(self.n_items, 1)))
        return LongRows(rows, matrix)

    def rows_within(self, bound: int, cancel: CancelToken | None = None):
        """Batches (row numbers, offsets, columns) of the non-empty rows with at most ``bound`` items."""
        sql = (f"SELECT row, items FROM {self.relation} WHERE ARRAY_LENGTH(items) BETWEEN 1 AND {int(bound)}"
               + (" ORDER BY row" if self.engine.kind != "duckdb" else ""))
        return self._row_batches(sql, cancel)

    def chosen_rows(self, rows: np.ndarray, cancel: CancelToken | None = None):
        """Batches of the given rows (row numbers ascending)."""
        import pyarrow as pa

        name = fresh_name("chosen")
        self.engine.register(name, pa.table({"row": pa.array(np.asarray(rows, dtype=np.int64))}))
        try:
            yield from self._row_batches(queries.chosen_rows(self.relation, name), cancel)
        finally:
            self.engine.unregister(name)

    # -- the declared domain -------------------------------------------------------------------
    def project(self, domain) -> "EngineDataset":
        """This data with exactly the domain's items as columns (:func:`dpdesk.data.domain.project`)."""
        from dataclasses import replace

        import pandas as pd
        import pyarrow as pa

        labels = np.asarray(domain.labels, dtype=object)
        if labels.size == self.n_items and np.array_equal(labels, self.item_labels):
            projected = EngineDataset(self.incidence, name=self.name, source=self.source, labels=labels,
                                      mapping=self.mapping, origin=self)
            projected._cache = self._cache  # the same figures
            projected.domain = replace(domain, internal={
                "items dropped (not in the declared list)": 0, "item occurrences dropped": 0,
                "people who lost items": 0, "declared items nobody has": int(np.sum(self.column_counts == 0))})
            return projected
        target = pd.Index(labels).get_indexer(list(self.item_labels)).astype(np.int64)  # column → domain position
        own = self.codes.columns(self.codes.codes, self.mapping)
        column_of_code = np.where(own >= 0, target[np.maximum(own, 0)], -1)
        keep = column_of_code >= 0
        name, rel = fresh_name("domain_map"), fresh_name("projected")
        self.engine.register(name, pa.table({"code": pa.array(self.codes.codes[keep]),
                                             "col": pa.array(column_of_code[keep])}))
        try:
            self.engine.statement(
                f"CREATE TABLE {rel} AS SELECT b.row AS row, coalesce(h.items, []::BIGINT[]) AS items FROM "
                f"{self.relation} b LEFT JOIN (SELECT c.row, LIST_SORT(LIST(DISTINCT m.col)) AS items FROM (SELECT row, "
                f"UNNEST(items) AS code FROM {self.relation}) c JOIN {name} m ON c.code = m.code GROUP BY c.row) h "
                f"ON b.row = h.row ORDER BY b.row", message="Applying the declared item list")
            lost = self.engine.execute(
                f"SELECT COUNT(*) AS n FROM {self.relation} b JOIN {rel} p ON b.row = p.row "
                f"WHERE ARRAY_LENGTH(p.items) < ARRAY_LENGTH(b.items)").column("n")[0].as_py()
        finally:
            self.engine.unregister(name)
        figures = self.engine.execute(queries.shape(rel))
        cells = int(figures.column("cells")[0].as_py() or 0)
        size = labels.size
        identity = np.arange(size, dtype=np.int64)
        incidence = Incidence(self.engine, rel, Codes(identity, labels, identity), self.n_rows, cells,
                              self.incidence.source)
        projected = EngineDataset(incidence, name=self.name, source=self.source, labels=labels, origin=self)
        present = np.zeros(size, dtype=bool)
        present[column_of_code[keep]] = True
        projected.domain = replace(domain, internal={
            "items dropped (not in the declared list)": int(np.sum(target < 0)),
            "item occurrences dropped": int(self.nnz - cells),
            "people who lost items": int(lost or 0),
            "declared items nobody has": int(size - present.sum())})
        return projected

    def prepare_bounding(self, bound, cancel: CancelToken | None = None, progress: ProgressFn = no_progress):
        """Counts of the rows within Δ (here) and the rows over Δ (fetched): :func:`prepare_bounding`."""
        return prepare_bounding(self, bound, cancel, progress)

    # -- identity --------------------------------------------------------------------------
    @cached_property
    def fingerprint(self) -> str:
        """:attr:`Dataset.fingerprint` of the same content, computed streaming (no matrix, no sort)."""
        if self.mapping is not None:
            raise RuntimeError("the fingerprint is of the data as read, before projection")  # api uses origin
        if self.incidence.fingerprint is not None:  # stored by dpdesk convert (baskets.seal_baskets)
            return self.incidence.fingerprint
        digest = RowsDigest()
        for rows, offsets, columns in self._row_batches(queries.rows_longer(
                self.relation, -1, ordered=self.engine.kind != "duckdb"), None):
            digest.add(offsets, columns)
        return incidence_fingerprint((str(label) for label in self.codes.natural_labels), self.n_rows, self.nnz,
                                     True, digest)


def _increasing(values: np.ndarray) -> bool:
    return bool(values.size < 2 or np.all(np.diff(values) > 0))


# --- the randomized pieces, consuming words exactly as the in-memory path does ------------------

def uniform_int_stream(source: RandomSource, highs, consume) -> None:
    """``source.uniform_int(concatenated highs)``, batch by batch: the same words, the same values.

    ``highs`` yields arrays of upper limits; ``consume(batch_index, values, pending)``
    receives each batch's values with ``pending`` marking the entries whose first word was
    rejected (about 2⁻⁶⁰ of them); after the last batch, ``consume(None, values, where)``
    receives the redrawn values of those entries and their ``(batch, index)`` places, in
    order. One word per entry first, then the rejected ones again and again, as
    :meth:`RandomSource.uniform_int` does.
    """
    rejected_highs, places = [], []
    for number, high in enumerate(highs):
        high = np.asarray(high, dtype=np.uint64)
        if np.any(high == 0):
            from ..errors import ParameterError

            raise ParameterError("uniform_int needs a positive upper limit")
        with np.errstate(over="ignore"):
            excess = (np.uint64(0) - high) % high
        limit = np.uint64(2**64 - 1) - excess
        words = source.words(high.size)
        ok = words <= limit
        values = (words % high).astype(np.int64)
        pending = np.flatnonzero(~ok)
        if pending.size:
            rejected_highs.append(high[pending])
            places.extend((number, int(i)) for i in pending)
        consume(number, values, pending)
    if not places:
        return
    high = np.concatenate(rejected_highs)
    with np.errstate(over="ignore"):
        limit = np.uint64(2**64 - 1) - (np.uint64(0) - high) % high
    out = np.empty(high.size, dtype=np.int64)
    waiting = np.arange(high.size)
    while waiting.size:
        words = source.words(waiting.size)
        ok = words <= limit[waiting]
        out[waiting[ok]] = (words[ok] % high[waiting[ok]]).astype(np.int64)
        waiting = waiting[~ok]
    consume(None, out, places)


def bernoulli_rows(source: RandomSource, n: int, rate: float) -> np.ndarray:
    """Rows 0..n−1 chosen with probability ``rate``: ``flatnonzero(source.bernoulli(full(n, rate)))``, in chunks."""
    chosen = []
    for start in range(0, n, WORDS_PER_CHUNK):
        size = min(WORDS_PER_CHUNK, n - start)
        coins = source.uniform01(size) < rate
        chosen.append(np.flatnonzero(coins) + start)
    return np.concatenate(chosen) if chosen else np.zeros(0, np.int64)


def prepare_bounding(data: EngineDataset, bound, cancel: CancelToken | None = None,
                     progress: ProgressFn = no_progress) -> BoundedRows:
    """Counts of the rows within Δ (engine) and the rows over Δ (fetched), as ``prepare_bound`` splits them."""
    bound = check_bound(bound)
    progress(0.1, "Fetching the rows over the bound")
    long = data.long_rows(bound, cancel=cancel)
    progress(0.6, "Counting the rows within the bound")
    # the rows within Δ hold every item occurrence the long rows do not: one pass fewer than counting them apart
    base = data.item_counts(cancel=cancel) - np.bincount(long.matrix.indices, minlength=data.n_items)
    lengths = np.diff(long.matrix.indptr).astype(np.int64)
    total = int(lengths.sum())
    dtype = np.int32 if total < 2**31 else np.int64
    block_starts = (np.cumsum(lengths) - lengths).astype(np.int64)
    progress(1.0, "Ready")
    return BoundedRows(bound, long.rows, base, np.arange(total, dtype=dtype), lengths, block_starts, over=long.matrix)


def kept_by_row(prepared: BoundedRows, source: RandomSource) -> np.ndarray:
    """Kept cells of the over-bound rows, one row of Δ positions per over-bound row (as GS's ``_kept_by_row``)."""
    from ..privacy.bounding import sample_kept

    kept = sample_kept(prepared, source)  # ascending: a row's Δ cells together, rows in order
    return kept.reshape(prepared.over_rows.size, prepared.bound)


def column_sample(data: EngineDataset, prepared: BoundedRows, source: RandomSource,
                  cancel: CancelToken | None = None) -> tuple[np.ndarray, np.ndarray]:
    """GS's truncated counts c and counts c_s of one uniform item per truncated row (module notes)."""
    d = data.n_items
    over = prepared.over
    kept = kept_by_row(prepared, source)
    counts = prepared.base_counts + np.bincount(over.indices[kept.ravel()], minlength=d)
    sample = np.zeros(d, dtype=np.int64)
    batches = []
    waiting: dict = {}

    def highs():
        for rows, offsets, columns in data.rows_within(prepared.bound, cancel):
            batches.append((offsets, columns))
            yield np.diff(offsets)

    def consume(number, values, pending):
        nonlocal sample
        if number is None:  # the redrawn values of rejected first words
            for value, place in zip(values, pending):
                offsets, columns = waiting[place]
                sample[columns[offsets[0] + value]] += 1
            return
        offsets, columns = batches.pop()
        take = np.ones(values.size, dtype=bool)
        take[pending] = False
        picked = columns[offsets[:-1][take] + values[take]]
        sample += np.bincount(picked, minlength=d)
        for i in pending:
            waiting[(number, int(i))] = (offsets[i:i + 2], columns)

    uniform_int_stream(source, highs(), consume)
    picked_over = kept[np.arange(kept.shape[0]), source.uniform_int(prepared.bound, kept.shape[0])]
    sample += np.bincount(over.indices[picked_over], minlength=d)
    return counts, sample


def row_sample(data: EngineDataset, prepared: BoundedRows, rate: float, source: RandomSource,
               cancel: CancelToken | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """GS-S's truncated counts c, counts c_s of the rows sampled at ``rate``, and how many rows were sampled."""
    d = data.n_items
    over = prepared.over
    kept = kept_by_row(prepared, source)
    counts = prepared.base_counts + np.bincount(over.indices[kept.ravel()], minlength=d)
    chosen = bernoulli_rows(source, data.n_rows, rate)
    is_over = np.isin(chosen, prepared.over_rows)
    sample = np.zeros(d, dtype=np.int64)
    within = chosen[~is_over]
    if within.size:
        for rows, offsets, columns in data.chosen_rows(within, cancel):
            sample += np.bincount(columns, minlength=d)
    over_chosen = np.isin(prepared.over_rows, chosen)
    sample += np.bincount(over.indices[kept[over_chosen].ravel()], minlength=d)
    return counts, sample, int(chosen.size)
