"""Baskets Parquet: a transaction file as one Parquet row per person (``dpdesk convert``).

The text is tokenized by the same streaming tokenizer as the in-memory loader
(:mod:`dpdesk.data.transactions`: FIMI whitespace or a delimiter, gzip, BOM, encodings,
integer ids or labels, a header line), so both paths read exactly the same people and
items. Each piece of a few megabytes is written as soon as it is read, so memory stays
at one piece whatever the size of the file:

* one Parquet row per line of the file, in file order (an empty line is a person with no
  items: an empty list);
* ``items``: the person's distinct item codes, ascending (an item repeated on a line
  counts once, as in the loader). In integer mode (every token a plain integer, as in
  FIMI files) the code *is* the item id; otherwise it numbers the labels in order of
  first appearance and the footer's ``dpdesk.labels`` lists them.

The engine reads these files directly (``read_parquet``), which is what makes repeated
work on a large file fast: the text is tokenized once.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import DataError, EmptyData
from ..tasks import CancelToken, ProgressFn, no_progress
from ..data.textio import MemoryBudget, Source, memory_budget
from ..data.transactions import Tokenizer, QuotedFields, parse_transactions
from .relation import list_parts

BASKETS_FORMAT = "dpdesk-baskets-v1"
FORMAT_KEY, LABELS_KEY, FINGERPRINT_KEY = b"dpdesk.format", b"dpdesk.labels", b"dpdesk.fingerprint"
ROWS_PER_GROUP = 1 << 20  # Parquet row groups of about a million people


@dataclass
class BasketsInfo:
    """What a baskets file holds besides its rows: labels (None in integer mode) and its size."""

    path: Path
    labels: list[str] | None  # label mode: the label of each code; integer mode: None (code = id)
    rows: int
    cells: int
    #: the content's fingerprint, stored by ``dpdesk convert`` (:func:`seal_baskets`); None for files made on the way
    fingerprint: str | None = None


class _Restart(Exception):
    """The file turned out to hold labels after integer ids were already written: read it again."""


class _PieceParser(Tokenizer):
    """The loader's tokenizer, handing every complete line on to ``sink`` instead of keeping it."""

    def __init__(self, *args, sink, force_labels: bool = False):
        super().__init__(*args)
        self.sink = sink
        self.carry = np.zeros(0, dtype=np.int64)  # tokens of a line still open at the end of a piece
        self.emitted = False
        if force_labels:
            self.result.integers = False

    def _tokenize(self, chunk: bytes) -> None:
        self._flush()
        super()._tokenize(chunk)

    def _to_labels(self) -> None:
        if self.emitted:
            raise _Restart()  # codes already written are integer ids; start again in label mode
        values = self._distinct_integers()
        super()._to_labels()
        if self.carry.size:
            self.carry = np.searchsorted(values, self.carry).astype(np.int64)

    def _check_memory(self, consumed: int) -> None:
        # only the labels and the table of seen ids are kept: the rows have been written
        self.budget.check(self.label_bytes + self.flags.nbytes, self.path, line=self.lines_before)

    def _flush(self) -> None:
        result = self.result
        if not result.line_counts:
            return
        counts = np.concatenate(result.line_counts).astype(np.int64)
        pieces = [self.carry] + [np.asarray(ids, dtype=np.int64) for ids in result.ids]
        ids = np.concatenate(pieces) if len(pieces) > 1 else self.carry
        result.line_counts.clear()
        result.ids.clear()
        complete = int(counts.sum())
        self.carry = ids[complete:]
        self.sink(counts, ids[:complete], result.integers)
        self.emitted = True

    def _finish(self):
        result = self.result
        if self.pending:  # the last line has no line end: its tokens are the carry
            result.line_counts[-1][-1] += self.pending
            self.pending = 0
        self._flush()
        return super()._finish()


def canonical_rows(counts: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row offsets, codes) of lines given their token counts and tokens: each row's distinct codes, ascending.

    scipy's C++ row sort merges an item repeated on a line, as the loader's ``to_csr`` does.
    """
    indptr = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    if ids.size == 0:
        return indptr, ids.astype(np.int64)
    top = int(ids.max())
    if top < 2**31 - 1 and int(ids.min()) >= 0:
        columns, uniques = ids, None
        width = top + 1
    else:  # huge ids: number them within the piece first
        uniques, columns = np.unique(ids, return_inverse=True)
        width = uniques.size
    index = np.int32 if max(width, ids.size) < 2**31 else np.int64
    matrix = sp.csr_matrix((np.ones(ids.size, dtype=np.uint8), columns.astype(index), indptr.astype(index)),
                           shape=(counts.size, width), copy=False)
    matrix.sum_duplicates()
    codes = matrix.indices.astype(np.int64)
    if uniques is not None:
        codes = uniques[codes]
    return matrix.indptr.astype(np.int64), codes


class _Writer:
    """Rows into a Parquet file, a row group at a time."""

    def __init__(self, path: Path):
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.pa, self.path = pa, path
        self.schema = pa.schema([pa.field("items", pa.list_(pa.int64()))])
        self.writer = pq.ParquetWriter(str(path), self.schema, compression="snappy")
        self.buffered: list = []
        self.buffered_rows = 0
        self.rows = self.cells = 0

    def __call__(self, counts: np.ndarray, ids: np.ndarray, integers: bool) -> None:
        offsets, codes = canonical_rows(counts, ids)
        pa = self.pa
        items = pa.ListArray.from_arrays(pa.array(offsets, type=pa.int64()).cast(pa.int32())
                                         if offsets[-1] < 2**31 else pa.array(offsets),
                                         pa.array(codes, type=pa.int64()))
        if items.type != self.schema.field("items").type:
            items = items.cast(self.schema.field("items").type)
        self.buffered.append(pa.RecordBatch.from_arrays([items], schema=self.schema))
        self.buffered_rows += counts.size
        self.rows += counts.size
        self.cells += codes.size
        if self.buffered_rows >= ROWS_PER_GROUP:
            self.write()

    def append_items(self, items) -> None:
        """Rows given as an Arrow list array of each person's distinct codes, ascending (a relation's ``items``)."""
        pa = self.pa
        if items.type != self.schema.field("items").type:
            items = items.cast(self.schema.field("items").type)
        self.buffered.append(pa.RecordBatch.from_arrays([items], schema=self.schema))
        self.buffered_rows += len(items)
        self.rows += len(items)
        self.cells += len(items.flatten())
        if self.buffered_rows >= ROWS_PER_GROUP:
            self.write()

    def write(self) -> None:
        if self.buffered:
            self.writer.write_table(self.pa.Table.from_batches(self.buffered), row_group_size=ROWS_PER_GROUP)
            self.buffered, self.buffered_rows = [], 0

    def close(self, labels: list[str] | None, fingerprint: str | None = None) -> None:
        self.write()
        metadata = {FORMAT_KEY: BASKETS_FORMAT.encode()}
        if labels is not None:
            metadata[LABELS_KEY] = json.dumps(labels, ensure_ascii=False).encode("utf-8")
        if fingerprint is not None:
            metadata[FINGERPRINT_KEY] = fingerprint.encode("ascii")
        self.writer.add_key_value_metadata(metadata)
        self.writer.close()


def write_baskets(source: Source, out: Path, *, delimiter: str | None, encoding: str, automatic: bool,
                  header: bool, budget: MemoryBudget | None = None, progress: ProgressFn = no_progress,
                  cancel: CancelToken | None = None) -> BasketsInfo:
    """Stream the transaction file ``source`` into the baskets Parquet file ``out`` (module notes).

    Written beside ``out`` and renamed into place at the end, so a failure or Cancel leaves
    nothing behind.
    """
    out = Path(out)
    budget = budget or memory_budget()
    partial = out.with_name(f".{out.name}.{os.getpid()}.part")
    force_labels = False
    try:
        while True:
            writer = _Writer(partial)
            parser = _PieceParser(source, delimiter, encoding, automatic, header, budget, progress, cancel,
                                  sink=writer, force_labels=force_labels)
            try:
                lines = parser.run()
                break
            except _Restart:
                writer.writer.close()
                force_labels = True
            except QuotedFields:
                writer.writer.close()
                lines = parse_transactions(source, delimiter=delimiter, encoding=encoding, automatic=automatic,
                                           header=header, budget=budget, progress=progress, cancel=cancel)
                writer = _Writer(partial)
                _write_parsed(writer, lines)
                break
        labels = None if lines.integers else list(lines.labels)
        writer.close(labels)
        if writer.rows == 0:
            raise EmptyData("the file contains no people", path=source.path, expected="at least one line of data")
        os.replace(partial, out)
    finally:
        if partial.exists():
            partial.unlink()
    return BasketsInfo(out, labels, writer.rows, writer.cells)


def write_relation_baskets(engine, relation: str, labels: list[str], out: Path, *,
                           cancel: CancelToken | None = None) -> BasketsInfo:
    """A canonical relation of ``engine`` (``row``, ``items``) as a baskets Parquet file, streamed in row order.

    ``labels[code]`` is the label of each code. Written beside ``out`` and renamed at the end.
    """
    out = Path(out)
    partial = out.with_name(f".{out.name}.{os.getpid()}.part")
    writer = _Writer(partial)
    try:
        for batch in engine.batches(f"SELECT items FROM {relation} ORDER BY row", cancel=cancel):
            writer.append_items(batch.column(0))
        writer.close(list(labels))
        os.replace(partial, out)
    finally:
        if partial.exists():
            writer.writer.close()
            partial.unlink()
    return BasketsInfo(out, list(labels), writer.rows, writer.cells)


def _write_parsed(writer: _Writer, lines) -> None:
    """Quoted basket files are read whole by the csv module (as the loader does), then written."""
    counts = np.concatenate(lines.line_counts) if lines.line_counts else np.zeros(0, np.int64)
    ids = np.concatenate(lines.ids) if lines.ids else np.zeros(0, np.int64)
    start = token = 0
    while start < counts.size:
        stop = min(start + ROWS_PER_GROUP, counts.size)
        taken = int(counts[start:stop].sum())
        writer(counts[start:stop].astype(np.int64), ids[token:token + taken].astype(np.int64), lines.integers)
        start, token = stop, token + taken


def read_baskets_metadata(path) -> BasketsInfo | None:
    """The labels of a baskets Parquet file, or None when ``path`` is some other Parquet file."""
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(str(path))
    except Exception:
        return None
    metadata = parquet.metadata.metadata or {}
    if metadata.get(FORMAT_KEY) != BASKETS_FORMAT.encode():
        return None
    try:
        labels = json.loads(metadata[LABELS_KEY].decode("utf-8")) if LABELS_KEY in metadata else None
    except (ValueError, UnicodeDecodeError):
        raise DataError("the dpdesk label list in the Parquet footer is damaged", path=path) from None
    fingerprint = metadata.get(FINGERPRINT_KEY, b"").decode("ascii", errors="replace") or None
    if fingerprint is not None and not re.fullmatch(r"[0-9a-f]{64}", fingerprint):
        raise DataError("the dpdesk fingerprint in the Parquet footer is damaged", path=path)
    rows = int(parquet.metadata.num_rows)
    return BasketsInfo(Path(path), labels, rows, -1, fingerprint)


def seal_baskets(staged: Path, out: Path, fingerprint: str, *, cancel: CancelToken | None = None) -> None:
    """Copy the baskets file ``staged`` to ``out``, row group by row group, with ``fingerprint`` in its footer.

    The fingerprint needs every row and the final item numbering, so it cannot be computed
    while the file is first written; ``dpdesk convert`` computes it from the staged file and
    stores it, so that every release from the converted file skips that pass. Written beside
    ``out`` and renamed at the end.
    """
    import pyarrow.parquet as pq

    info = read_baskets_metadata(staged)
    parquet = pq.ParquetFile(str(staged))
    partial = out.with_name(f".{out.name}.{os.getpid()}.part")
    writer = _Writer(partial)
    try:
        for group in range(parquet.num_row_groups):
            if cancel is not None:
                cancel.check()
            writer.append_items(parquet.read_row_group(group, columns=["items"]).column("items").combine_chunks())
        writer.close(info.labels, fingerprint)
        os.replace(partial, out)
    finally:
        if partial.exists():
            writer.writer.close()
            partial.unlink()


def baskets_dataset(path, format: str = "auto", *, name: str | None = None, progress: ProgressFn | None = None,
                    cancel: CancelToken | None = None):
    """A baskets Parquet file read into memory as a :class:`~dpdesk.data.dataset.Dataset` (small data's fast path).

    The columns are the items in natural label order, as the loader and the engine number
    them (:class:`~dpdesk.engine.relation.Codes`), so the figures and the fingerprint are
    those of the transaction file the baskets came from.
    """
    import pyarrow.parquet as pq

    from ..data.dataset import Dataset
    from .relation import Codes

    progress = progress or no_progress
    info = read_baskets_metadata(path)
    if format not in ("auto", "transactions"):
        raise DataError("this is a dpdesk baskets file (dpdesk convert): it holds transactions", path=path,
                        expected="--format transactions or auto")
    parquet = pq.ParquetFile(str(path))
    groups = [parquet.metadata.row_group(g) for g in range(parquet.num_row_groups)]
    # one array for every code, filled a row group at a time (its size from the footer: no concatenation),
    # in 4 bytes a code when the footer's statistics say they fit (the CSR's own index type)
    bound = sum(group.column(0).num_values for group in groups)
    stats = [group.column(0).statistics for group in groups]
    small = all(st is not None and st.has_min_max for st in stats) and \
        all(int(st.min) >= 0 and int(st.max) < 2**31 - 1 for st in stats)
    codes = np.empty(bound, dtype=np.int32 if small else np.int64)
    lengths = np.empty(int(parquet.metadata.num_rows), dtype=np.int64)
    # integer mode: which ids occur (sized by the footer's largest id where it says it)
    seen = np.zeros(int(max(st.max for st in stats)) + 1 if small and stats else 0, dtype=bool)
    cells = rows = 0
    for group in range(len(groups)):
        if cancel is not None:
            cancel.check()
        items = parquet.read_row_group(group, columns=["items"]).column("items").combine_chunks()
        offsets, values = list_parts(items)
        n = len(items)
        lengths[rows:rows + n] = np.diff(offsets)
        if values.size and (int(values.min()) < 0 or (small and int(values.max()) >= 2**31 - 1)):
            raise DataError("an item code of the baskets file is out of range", path=path)
        codes[cells:cells + values.size] = values
        if info.labels is None and values.size:
            top = int(values.max()) + 1
            if top > seen.size:
                seen = np.concatenate([seen, np.zeros(top - seen.size, dtype=bool)])
            seen[values] = True
        cells, rows = cells + values.size, rows + n
        del items, values
        progress(0.9 * (group + 1) / max(len(groups), 1), "Reading the baskets")
    codes, lengths = codes[:cells], lengths[:rows]
    if info.labels is None:  # integer mode: the items are the ids present
        present = np.flatnonzero(seen)
        mapping = Codes.build(present, [str(int(code)) for code in present])
    else:
        if codes.size and (codes.min() < 0 or codes.max() >= len(info.labels)):
            raise DataError("an item code lies outside the label list in the Parquet footer", path=path)
        mapping = Codes.build(np.arange(len(info.labels), dtype=np.int64), list(info.labels))
    index = np.int32 if max(codes.size, mapping.codes.size) < 2**31 else np.int64
    columns = codes.astype(index, copy=False)
    identity = np.array_equal(mapping.codes, np.arange(mapping.codes.size)) and \
        np.array_equal(mapping.position, np.arange(mapping.codes.size))
    if not identity:  # codes → columns in place, a block at a time (ids 0..d−1 in numeric order need nothing)
        for start in range(0, columns.size, 1 << 22):
            columns[start:start + (1 << 22)] = mapping.columns(columns[start:start + (1 << 22)])
    del codes
    indptr = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    matrix = sp.csr_matrix((np.ones(columns.size, dtype=np.uint8), columns, indptr.astype(index)),
                           shape=(lengths.size, mapping.codes.size), copy=False)
    if not np.all(np.diff(mapping.position) > 0):  # codes ascend within a row; columns then need not
        matrix.has_sorted_indices = False
        matrix.sort_indices()
    if lengths.size == 0:
        raise EmptyData("the file contains no people", path=path, expected="at least one line of data")
    display = name or Path(path).name
    progress(1.0, "Loaded")
    dataset = Dataset(matrix, mapping.natural_labels, name=display,
                      source={"path": str(path), "format": "transactions", "parquet": "baskets"})
    if info.fingerprint is not None:
        dataset.fingerprint = info.fingerprint  # computed by dpdesk convert (seal_baskets): fills the cached property
    return dataset
