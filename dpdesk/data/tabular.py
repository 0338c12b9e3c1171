"""Tables: pairs (person, item[, value]), wide 0/1 matrices, microdata records, cell-count tables.

Tables are read as text (so that nothing is silently converted) and kept compact: each
column as int32 codes into its distinct values, in order of first appearance — about 4
bytes per field, whatever the text — and only the columns a format needs. The file is
streamed in pieces cut at line ends and tokenized with numpy on the bytes (linear in the
piece, whatever the lines); a file with quoted fields is read with the csv module
instead, which handles quotes, delimiters and line ends inside fields. Every line must
have as many fields as the first; every error names the file's line.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from ..errors import DataError, EmptyData, ParameterError
from .dataset import CellCounts, Dataset, build_incidence, natural_order
from .detect import COUNT_NAMES, IDENTIFIER_SAMPLE, identifier_like
from .textio import (MAX_FIELD_BYTES, MemoryBudget, Source, TextCheck, checked_text, format_size, memory_budget,
                     read_raw)

#: text read at a time
TABLE_PIECE_BYTES = 4 << 20
#: what a distinct value costs in memory (a Python string and its dictionary slot), besides its text
BYTES_PER_DISTINCT = 120
_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[9, 11, 12, 13, 32]] = True


def resolve_column(columns: list[str], spec, role: str) -> str:
    """The name of a column given by name or 0-based position."""
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool) or (
            isinstance(spec, str) and spec.isdigit() and spec not in columns):
        position = int(spec)
        if not 0 <= position < len(columns):
            raise ParameterError(f"The {role} column position {position} is outside 0..{len(columns) - 1}.")
        return columns[position]
    if not isinstance(spec, str) or spec not in columns:
        raise ParameterError(f"There is no column named '{spec}' for the {role}; the columns are: "
                             + ", ".join(columns))
    return spec


@dataclass
class Table:
    """A table read as text: per kept column, int32 codes into its distinct values, and each row's line."""

    names: list[str]
    codes: dict[str, np.ndarray]
    uniques: dict[str, np.ndarray]  # object arrays of str, in order of first appearance
    line_numbers: np.ndarray
    path: object
    n_rows: int = 0
    #: what ``line_numbers`` count: the file's lines (text), or rows (a spreadsheet's, a data file's records)
    unit: str = "line"

    @property
    def columns(self) -> list[str]:
        return list(self.names)

    def column(self, spec, role: str) -> str:
        return resolve_column(self.names, spec, role)

    def coded(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(codes, distinct values)`` of a column: ``values[codes]`` is the column."""
        return self.codes[name], self.uniques[name]

    def values(self, name: str) -> np.ndarray:
        codes, uniques = self.coded(name)
        return uniques[codes] if uniques.size else np.full(codes.size, "", dtype=object)

    def values_head(self, name: str, rows: int) -> list[str]:
        """The values of a column's first ``rows`` rows."""
        codes, uniques = self.coded(name)
        return [str(uniques[c]) for c in codes[:rows]]

    def first_row(self, name: str, bad_values: np.ndarray) -> int | None:
        """The first row whose value is one of the distinct values flagged in ``bad_values`` (bools)."""
        if not np.any(bad_values):
            return None
        rows = np.flatnonzero(bad_values[self.codes[name]])
        return int(rows[0]) if rows.size else None

    def fail(self, row: int, column: str | None, message: str, expected: str | None = None):
        number = int(self.line_numbers[row]) if row < self.line_numbers.size else None
        where = {"line": number} if self.unit == "line" else {"row": number}
        raise DataError(message, path=self.path, column=column, expected=expected, **where)


# --- reading ------------------------------------------------------------------------------------

class _Quoted(Exception):
    """A quote in a delimited table: read it again with the csv module (quotes may hold anything)."""


class _Columns:
    """What is kept while reading: per kept column, pieces of int32 codes and the value → code dictionary."""

    def __init__(self, source: Source, budget: MemoryBudget, wanted, header: bool, encoding: str,
                 names: list[str] | None = None):
        self.source, self.path, self.budget, self.wanted, self.header = source, source.path, budget, wanted, header
        self.given = names  # the steward's names for a table without a header line
        self.codec = "utf-8" if encoding == "utf-8-sig" else encoding
        self.raw_keys = True  # values as bytes (plain reading), or as text (the csv module)
        self.names: list[str] | None = None
        self.width = 0
        self.keep: list[int] = []
        self.codes: list[list[np.ndarray]] = []
        self.index: list[dict[str, int]] = []
        self.lines: list[np.ndarray] = []
        self.rows = 0
        self.distinct_bytes = 0
        self.unit = "line"  # what the numbers given to add_lines count (see Table.unit)

    def start(self, first: list[str], line: int) -> None:
        """The first non-blank line: the header (names) or the first row (its width)."""
        self.width = len(first)
        if self.given is not None:
            if len(self.given) != self.width:
                raise DataError(f"{len(self.given)} column names were given but the table has {self.width} columns",
                                path=self.path, expected=f"{self.width} names, one for each column, in order")
            names = list(self.given)
        else:
            names = [f.strip() for f in first] if self.header else [f"column {k + 1}" for k in range(self.width)]
        self.names = distinct_names(names)
        chosen = self.wanted(self.names) if self.wanted is not None else None
        chosen = set(self.names if chosen is None else chosen)
        self.keep = [k for k, name in enumerate(self.names) if name in chosen]
        self.codes = [[] for _ in self.keep]
        self.index = [{} for _ in self.keep]

    def wrong_width(self, count: int, line: int, delimiter) -> None:
        raise DataError(f"this line has {count} fields but the table has {self.width} columns", path=self.path,
                        line=line, expected=f"{self.width} fields separated by {delimiters_in_words(delimiter)}")

    def add(self, column: int, values, line_numbers: np.ndarray | None = None) -> None:
        """Codes for the values of kept column number ``column`` (values: a list of str or bytes)."""
        local, uniques = pd.factorize(np.array(values, dtype=object)) if len(values) else (np.zeros(0, np.int64), [])
        table = self.index[column]
        before = len(table)
        # plain tables: the trimmed bytes are the key (decoded once per distinct value at the end)
        keys = uniques if self.raw_keys else (u.strip() for u in uniques)
        mapped = np.fromiter((table.setdefault(u, len(table)) for u in keys), dtype=np.int64, count=len(uniques))
        if len(table) > before:
            self.distinct_bytes += sum(len(uniques[k]) + BYTES_PER_DISTINCT for k in np.flatnonzero(mapped >= before))
        self.codes[column].append(mapped.astype(np.int32)[local] if local.size else np.zeros(0, np.int32))

    def add_objects(self, column: int, values, text: Callable[[object], str]) -> None:
        """Codes for values that are not text yet (a spreadsheet's cells, a data file's values).

        Only the distinct values are turned into text (``text``); missing values (None, NaN)
        become the empty text, as an empty field of a CSV file does.
        """
        local, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
        texts = [text(u) for u in uniques]
        if local.size and local.min() < 0:
            local = np.where(local < 0, len(texts), local)
            texts.append("")
        table = self.index[column]
        before = len(table)
        mapped = np.fromiter((table.setdefault(t, len(table)) for t in texts), dtype=np.int64, count=len(texts))
        if len(table) > before:
            self.distinct_bytes += sum(len(t) + BYTES_PER_DISTINCT for t, m in zip(texts, mapped) if m >= before)
        self.codes[column].append(mapped.astype(np.int32)[local] if local.size else np.zeros(0, np.int32))

    def add_lines(self, numbers: np.ndarray, consumed: int) -> None:
        self.lines.append(numbers.astype(np.int64))
        self.rows += int(numbers.size)
        so_far = self.rows * (4 * len(self.keep) + 8) + self.distinct_bytes
        expected = max(self.source.estimated_size, consumed, 1)
        if consumed < expected:
            self.budget.check(so_far * expected / max(consumed, 1), self.path, projected=True)
        self.budget.check(so_far, self.path, line=int(numbers[-1]) if numbers.size else None)

    def table(self) -> Table:
        if self.names is None:
            raise EmptyData("the file has no data lines", path=self.path, expected="at least one line of data")
        if self.rows == 0:
            raise EmptyData("the file has a header but no data lines" if self.header else "the file has no data lines",
                            path=self.path, expected="at least one line of data after the header" if self.header
                            else "at least one line of data")
        codes, uniques = {}, {}
        for k, position in enumerate(self.keep):
            name = self.names[position]
            codes[name] = np.concatenate(self.codes[k]) if self.codes[k] else np.zeros(0, np.int32)
            self.codes[k] = []
            try:
                uniques[name] = np.array([key.decode(self.codec) if self.raw_keys else key for key in self.index[k]],
                                         dtype=object)
            except UnicodeDecodeError as error:  # checked piece by piece already; the file changed meanwhile?
                raise DataError(f"a value cannot be decoded as {self.codec} ({error.reason})", path=self.path) from None
        lines = np.concatenate(self.lines) if self.lines else np.zeros(0, np.int64)
        return Table(self.names, codes, uniques, lines, self.path, self.rows, unit=self.unit)


def read_table(source: Source, *, delimiter: str | None, header: bool, encoding: str, automatic: bool = False,
               parquet: bool = False, budget: MemoryBudget | None = None, cancel=None,
               wanted: Callable[[list[str]], list[str] | None] | None = None, kind: str = "text",
               sheet=None, progress=None, names: list[str] | None = None) -> Table:
    """Read a table with every field as a string, within ``budget``: delimited text, Parquet, an
    Excel sheet (``kind="xlsx"``, ``sheet``) or an SPSS, Stata or SAS file (``kind`` "sav", "dta",
    "sas7bdat", "xpt"; :mod:`.statfiles`).

    ``wanted(columns)`` names the columns to keep (None: all), given the table's column names.
    ``progress(fraction, message)`` hears how far the reading is. ``names`` are the steward's names
    for the columns of a text table or a sheet without a header line.
    """
    budget = budget or memory_budget()
    if parquet or kind == "parquet":
        return _read_parquet(source, budget, wanted)
    if kind == "xlsx":
        from .spreadsheet import read_sheet

        return read_sheet(source, sheet=sheet, header=header, wanted=wanted, budget=budget, cancel=cancel,
                          progress=progress, names=names)
    if kind != "text":
        from .statfiles import read_statfile

        return read_statfile(source, kind, encoding=None if automatic else encoding, wanted=wanted, budget=budget,
                             cancel=cancel, progress=progress)
    columns = _Columns(source, budget, wanted, header, encoding, names)
    try:
        _read_plain(source, delimiter, encoding, automatic, columns, cancel, progress)
    except _Quoted:
        columns = _Columns(source, budget, wanted, header, encoding, names)
        columns.raw_keys = False
        _read_quoted(source, delimiter, encoding, automatic, columns, cancel, progress)
    return columns.table()


def _reading(progress, consumed: int, total: int) -> None:
    """Tell ``progress`` how much of a text table has been read."""
    if progress is not None:
        progress(min(consumed / max(total, 1), 1.0), f"Reading the table: {format_size(consumed)}")


def check_column_names(names) -> list[str]:
    """The steward's names for a table's columns: each a non-empty text, no two alike (trimmed)."""
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise ParameterError("Give the column names as a list (on the command line: --column-names a,b,c).")
    names = [str(name).strip() for name in names]
    empty = [k + 1 for k, name in enumerate(names) if not name]
    if empty:
        raise ParameterError(f"Column {empty[0]} has no name: give every column a name.")
    seen: dict[str, int] = {}
    for k, name in enumerate(names):
        if name in seen:
            raise ParameterError(f"Columns {seen[name] + 1} and {k + 1} are both named '{name}': give each column "
                                 "its own name.")
        seen[name] = k
    return names


def distinct_names(names: list[str]) -> list[str]:
    """Column names made distinct (``a``, ``a.1``), as pandas would."""
    seen: dict[str, int] = {}
    result = []
    for name in names:
        if name in seen:
            seen[name] += 1
            candidate = f"{name}.{seen[name]}"
            while candidate in seen:
                seen[name] += 1
                candidate = f"{name}.{seen[name]}"
            seen[candidate] = 0
            result.append(candidate)
        else:
            seen[name] = 0
            result.append(name)
    return result


def _read_plain(source: Source, delimiter, encoding, automatic, columns: _Columns, cancel, progress=None) -> None:
    """A table without quotes, in pieces cut at line ends, tokenized with numpy on the bytes."""
    path = source.path
    check = TextCheck(encoding, path, automatic=automatic)
    delim = None if delimiter is None else ord(delimiter)
    carry, line_offset, first = b"", 0, True
    with source.open() as reader:
        while True:
            if cancel is not None:
                cancel.check()
            piece = reader.read(TABLE_PIECE_BYTES)
            final = not piece
            if first and piece:
                first = False
                if piece.startswith(b"\xef\xbb\xbf") and encoding == "utf-8-sig":
                    check.check(piece[:3])
                    piece = piece[3:]
            if delim is not None and b'"' in piece:
                raise _Quoted()
            buffer = carry + piece if carry else piece
            cut = len(buffer) if final else buffer.rfind(b"\n") + 1
            chunk, carry = buffer[:cut], buffer[cut:]
            if len(carry) > max(64 * MAX_FIELD_BYTES, columns.budget.limit // 8):
                raise DataError(f"a line is longer than {format_size(len(carry))}", path=path, line=line_offset + 1,
                                expected="a table with one row per line")
            if chunk:
                check.check(chunk, final=final)
                line_offset = _table_piece(chunk, delim, line_offset, columns, reader.position)
                _reading(progress, reader.position, source.estimated_size)
            if final:
                break


def _fields(c: np.ndarray, delim) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of every field, blanks trimmed (empty fields kept), in order (linear)."""
    if delim is None:  # runs of non-blank bytes
        solid = (~_WHITESPACE[c] & (c != 10)).view(np.int8)
        edges = np.diff(solid, prepend=np.int8(0), append=np.int8(0))
        return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    separators = np.flatnonzero((c == delim) | (c == 10))
    if c.size and c[-1] != 10:
        separators = np.append(separators, c.size)  # the last line has no line end
    starts = np.concatenate([[0], separators[:-1] + 1]) if separators.size else separators
    ends = separators.copy()
    blank = _WHITESPACE[c]
    for _ in range(8):  # a space or two around fields ("a, b"): a few cheap steps on the fields concerned
        lead = np.flatnonzero((starts < ends) & blank[np.minimum(starts, c.size - 1)])
        trail = np.flatnonzero((starts < ends) & blank[np.maximum(ends - 1, 0)])
        if lead.size == 0 and trail.size == 0:
            return starts, ends
        starts[lead] += 1
        ends[trail] -= 1
        ends = np.maximum(ends, starts)
    # long runs of blanks: the first and last non-blank byte of each field, by binary search (still linear)
    content = np.flatnonzero(~blank & (c != delim) & (c != 10))
    first = np.searchsorted(content, starts)
    last = np.searchsorted(content, ends) - 1
    filled = first <= last
    if content.size == 0:
        return starts, starts.copy()
    trimmed_starts = np.where(filled, content[np.minimum(first, content.size - 1)], starts)
    trimmed_ends = np.where(filled, content[np.maximum(last, 0)] + 1, trimmed_starts)
    return trimmed_starts, trimmed_ends


def _table_piece(chunk: bytes, delim, line_offset: int, columns: _Columns, consumed: int) -> int:
    """One piece of whole lines: check every line's width, keep the wanted columns' values, return the line count."""
    path = columns.path
    c = np.frombuffer(chunk, dtype=np.uint8)
    newlines = np.flatnonzero(c == 10)
    line_ends = np.append(newlines, c.size) if (c.size and c[-1] != 10) else newlines
    starts, ends = _fields(c, delim)
    lengths = ends - starts
    if lengths.size and int(lengths.max()) > MAX_FIELD_BYTES:
        k = int(np.argmax(lengths))
        raise DataError(f"a field is longer than {MAX_FIELD_BYTES:,} bytes", path=path,
                        line=line_offset + int(np.searchsorted(newlines, starts[k])) + 1,
                        expected="short values separated by " + delimiters_in_words(None if delim is None else chr(delim)))
    line_of = np.searchsorted(line_ends, starts)  # the line of each field (a field never holds a line end)
    counts = np.bincount(line_of, minlength=line_ends.size)
    # blank lines (only spaces and the like) are skipped: no field, or one empty field and no delimiter
    has_content = np.zeros(line_ends.size, dtype=bool)
    has_content[line_of[ends > starts]] = True
    data_lines = np.flatnonzero(has_content | (counts > 1))
    if columns.names is None and data_lines.size:
        head = int(data_lines[0])
        fields = np.flatnonzero(line_of == head)
        columns.start([chunk[starts[k]:ends[k]].decode(columns.codec, errors="replace") for k in fields],
                      line_offset + head + 1)
        if columns.header:
            data_lines = data_lines[1:]
    if data_lines.size:
        wrong = np.flatnonzero(counts[data_lines] != columns.width)
        if wrong.size:
            line = int(data_lines[wrong[0]])
            columns.wrong_width(int(counts[line]), line_offset + line + 1, None if delim is None else chr(delim))
        is_data = np.zeros(line_ends.size, dtype=bool)
        is_data[data_lines] = True
        chosen = np.flatnonzero(is_data[line_of])  # the data fields, row after row, `width` per row
        for k, position in enumerate(columns.keep):
            take = chosen[position::columns.width]
            columns.add(k, _field_bytes(c, starts[take], ends[take]))
        columns.add_lines(data_lines + line_offset + 1, consumed)
    return line_offset + int(line_ends.size)


def _field_bytes(c: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[bytes]:
    """The fields' bytes: copied out with one LF after each, then split in C (fields never hold a LF)."""
    if starts.size == 0:
        return []
    marks = np.zeros(c.size + 1, dtype=np.int8)
    marks[starts] += 1  # starts are distinct, and so are ends (an empty field has start = end: 0)
    marks[ends] -= 1
    keep = np.cumsum(marks, dtype=np.int8).astype(bool)
    keep[ends] = True
    joined = np.append(c, np.uint8(10))
    joined[ends] = 10
    values = joined[keep].tobytes().split(b"\n")
    values.pop()
    return values


def _read_quoted(source: Source, delimiter, encoding, automatic, columns: _Columns, cancel, progress=None) -> None:
    """A table with quoted fields: the csv module (exact for quotes, delimiters and line ends in fields)."""
    with checked_text(source, encoding, automatic=automatic) as text:
        reader = csv.reader(text, delimiter=delimiter)
        previous = 0
        batch: list[list[str]] = []
        numbers: list[int] = []
        try:
            for record in reader:
                start, previous = previous + 1, reader.line_num
                if not record or (len(record) == 1 and not record[0].strip()):
                    continue  # a blank line
                if max(len(f) for f in record) > MAX_FIELD_BYTES:
                    raise DataError(f"a field is longer than {MAX_FIELD_BYTES:,} characters", path=source.path,
                                    line=start)
                if columns.names is None:
                    columns.start(record, start)
                    if columns.header:
                        continue
                if len(record) != columns.width:
                    columns.wrong_width(len(record), start, delimiter)
                batch.append(record)
                numbers.append(start)
                if len(batch) >= 65536:
                    if cancel is not None:
                        cancel.check()
                    _add_records(columns, batch, numbers, text)
                    _reading(progress, text.buffer.raw.position, source.estimated_size)
                    batch, numbers = [], []
            _add_records(columns, batch, numbers, text)
        except csv.Error as error:
            raise DataError(f"malformed quoted field ({error})", path=source.path, line=reader.line_num) from None


def _add_records(columns: _Columns, batch: list[list[str]], numbers: list[int], text) -> None:
    if not batch:
        return
    for k, position in enumerate(columns.keep):
        columns.add(k, [record[position] for record in batch])
    columns.add_lines(np.array(numbers, dtype=np.int64), text.buffer.raw.position)


def delimiters_in_words(delimiter):
    return {",": "commas", "\t": "tabs", ";": "semicolons", "|": "pipes", None: "spaces"}.get(delimiter, repr(delimiter))


def _parquet_error(error: Exception, path) -> DataError:
    first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
    first = "".join(ch if ch.isprintable() else "?" for ch in first).strip(" :") or type(error).__name__
    return DataError(f"the Parquet file is damaged or not Parquet ({first})", path=path,
                     expected="a complete Parquet file")


def _parquet_file(source: Source, budget: MemoryBudget):
    """A ``pyarrow.parquet.ParquetFile`` for the source (decompressed into memory when it is .gz)."""
    import pyarrow.parquet as pq

    try:
        if source.compressed:
            return pq.ParquetFile(io.BytesIO(read_raw(source.path, budget)))
        return pq.ParquetFile(str(source.path))
    except DataError:
        raise
    except Exception as error:  # pyarrow raises many types for damaged files
        raise _parquet_error(error, source.path) from None


def parquet_preview(source: Source, lines: int = 20, budget: MemoryBudget | None = None):
    """Column names and the first rows of a Parquet file, read from its first row group only."""
    budget = budget or memory_budget()
    parquet = _parquet_file(source, budget)
    try:
        columns = [str(name) for name in parquet.schema_arrow.names]
        if parquet.metadata.num_row_groups == 0:
            return columns, []
        budget.check(parquet.metadata.row_group(0).total_byte_size * 4, source.path, projected=True)
        frame = parquet.read_row_group(0).slice(0, lines).to_pandas()
    except DataError:
        raise
    except Exception as error:
        raise _parquet_error(error, source.path) from None
    return columns, [[str(v) for v in row] for row in frame.itertuples(index=False)]


def _read_parquet(source: Source, budget: MemoryBudget, wanted=None) -> Table:
    """A Parquet table, batch by batch, into the same compact codes (values as the text they print as)."""
    parquet = _parquet_file(source, budget)
    path = source.path
    try:
        names = distinct_names([str(name) for name in parquet.schema_arrow.names])
        keep = wanted(names) if wanted is not None else None
        keep = names if keep is None else [n for n in names if n in set(keep)]
        n_rows = int(parquet.metadata.num_rows)
        budget.check(n_rows * (4 * len(keep) + 12), path, projected=True)
        positions = [names.index(name) for name in keep]
        codes = {name: np.empty(n_rows, dtype=np.int32) for name in keep}
        index: dict[str, dict[str, int]] = {name: {} for name in keep}
        done, distinct_bytes = 0, 0
        for batch in parquet.iter_batches(batch_size=1 << 18, columns=[parquet.schema_arrow.names[k] for k in positions]):
            rows = batch.num_rows
            if done + rows > n_rows:
                raise DataError("the Parquet file holds more rows than its footer says", path=path)
            for k, name in enumerate(keep):
                local, values = pd.factorize(batch.column(k).to_pandas(), use_na_sentinel=True)
                table = index[name]
                before = len(table)
                texts = [_parquet_text(v) for v in values]
                if local.size and local.min() < 0:
                    texts.append("")  # missing values (code -1) take the last one
                mapped = np.fromiter((table.setdefault(t, len(table)) for t in texts), dtype=np.int64,
                                     count=len(texts))
                if len(table) > before:
                    distinct_bytes += sum(len(t) + BYTES_PER_DISTINCT for t, m in zip(texts, mapped) if m >= before)
                codes[name][done:done + rows] = mapped[local]  # -1 (missing) takes the last: ""
            done += rows
            budget.check((done * (4 * len(keep) + 12) + distinct_bytes) * n_rows / max(done, 1), path,
                         projected=done < n_rows)
    except DataError:
        raise
    except Exception as error:  # pyarrow raises many types for damaged files
        raise _parquet_error(error, path) from None
    if done != n_rows:
        raise DataError("the Parquet file holds fewer rows than its footer says", path=path)
    uniques = {name: np.array(list(index[name]), dtype=object) for name in keep}
    return Table(names, codes, uniques, np.arange(n_rows, dtype=np.int64) + 1, path, n_rows)


def _parquet_text(value) -> str:
    """A Parquet value as text: whole floats without ``.0`` (ids stored as floats), NaN as missing."""
    if isinstance(value, float):
        if value != value:
            return ""
        return str(int(value)) if value.is_integer() else str(value)
    return str(value)


def value_text(value) -> str:
    """A spreadsheet cell's or a data file's value as the text a CSV file would hold.

    Whole numbers without ``.0`` (identifiers are often stored as floats), booleans as 1/0 (a
    0/1 matrix may hold TRUE/FALSE), dates as ISO dates (with the time only when there is
    one), text trimmed as CSV fields are; missing values (None, NaN, NaT) as the empty text.
    """
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if value != value:
            return ""
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, str):
        return value.strip()
    if value is pd.NaT or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, _dt.datetime):
        if (value.hour, value.minute, value.second, value.microsecond) == (0, 0, 0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    try:
        if pd.isna(value):
            return ""
    except (TypeError, ValueError):
        pass
    return str(value).strip()


def columns_needed(fmt: str, options: dict) -> Callable[[list[str]], list[str] | None]:
    """Which columns a format reads (given the table's names): the rest are never kept."""
    def wanted(names: list[str]) -> list[str] | None:
        if fmt == "pairs":
            specs = [(options.get("person", 0), "person"), (options.get("item", 1), "item")]
            if options.get("value") is not None:
                specs.append((options["value"], "value"))
            return [resolve_column(names, spec, role) for spec, role in specs]
        if fmt == "records" and options.get("attributes"):
            return [resolve_column(names, a, "attribute") for a in options["attributes"]]
        if fmt == "records" and options.get("item_columns"):
            chosen = [resolve_column(names, c, "item") for c in options["item_columns"]]
            person = options.get("person")
            return chosen + ([resolve_column(names, person, "person")] if person is not None else [])
        if fmt == "cells" and options.get("attributes"):
            count = options.get("count")
            named = [c for c in names if c.strip().lower() in COUNT_NAMES]
            count_col = resolve_column(names, count, "count") if count is not None else (named[0] if named else names[-1])
            return [count_col] + [resolve_column(names, a, "attribute") for a in options["attributes"]]
        return None
    return wanted


# --- pairs -----------------------------------------------------------------------------

def _missing(table: Table, column: str, role: str) -> None:
    codes, uniques = table.coded(column)
    row = table.first_row(column, uniques == "")
    if row is not None:
        table.fail(row, column, f"the {role} is missing", expected=f"{'an' if role[0] in 'aeiou' else 'a'} {role} identifier")


def _numbers(uniques: np.ndarray) -> np.ndarray:
    return pd.to_numeric(pd.Series(uniques, dtype=object), errors="coerce").to_numpy(dtype=np.float64)


def pairs_to_dataset(table: Table, *, person=0, item=1, value=None, keep_values: bool = False,
                     name: str, source: dict) -> Dataset:
    person_col = table.column(person, "person")
    item_col = table.column(item, "item")
    if person_col == item_col:
        raise ParameterError("The person and item columns must be different.")
    source = {**source, "person column": person_col, "item column": item_col}  # what `inspect` names
    _missing(table, person_col, "person")
    _missing(table, item_col, "item")
    # codes number values in order of first appearance: people and items named in the file
    # exist even when their value is 0 (an empty row, a zero count)
    rows, people = table.coded(person_col)
    cols, labels = table.coded(item_col)
    n_rows = int(people.size)
    weights = None
    if value is not None:
        value_col = table.column(value, "value")
        value_codes, value_uniques = table.coded(value_col)
        numbers_of = _numbers(value_uniques)
        row = table.first_row(value_col, ~np.isfinite(numbers_of))
        if row is not None:
            table.fail(row, value_col, f"'{table.values(value_col)[row]}' is not a number",
                       expected="a number (non-zero means the person has the item)")
        numbers = numbers_of[value_codes]
        present = numbers != 0
        rows, cols, numbers = rows[present], cols[present], numbers[present]
        if keep_values:
            row = table.first_row(value_col, numbers_of < 0)
            if row is not None:
                table.fail(row, value_col, "a negative value", expected="values of at least 0")
            weights = numbers
    return build_incidence(rows, cols, n_rows, [str(x) for x in labels], name=name, source=source, values=weights)


# --- wide 0/1 matrix --------------------------------------------------------------------

ID_NAMES = {"", "id", "person", "user", "userid", "row", "customer", "record", "name"}


def matrix_to_dataset(table: Table, *, id_column="auto", name: str, source: dict) -> Dataset:
    columns = table.columns
    if id_column == "auto":
        first = columns[0] if columns else None
        id_col = None
        if first is not None and (first.strip().lower() in ID_NAMES
                                  or not set(table.uniques[first].tolist()) <= {"0", "1"}):
            id_col = first
    elif id_column is None or id_column is False:
        id_col = None
    else:
        id_col = table.column(id_column, "id")
    item_cols = [c for c in columns if c != id_col]
    if not item_cols:
        raise DataError("the matrix has no item columns", path=table.path, expected="one column per item")
    labels = [str(c) for c in item_cols]
    if len(set(labels)) != len(labels):
        raise DataError("two item columns have the same name", path=table.path, line=1)
    # the first bad cell in reading order: the earliest row, then the leftmost column
    first_bad = None
    for k, column in enumerate(item_cols):
        uniques = table.uniques[column]
        row = table.first_row(column, ~np.isin(uniques, ["0", "1"]))
        if row is not None and (first_bad is None or row < first_bad[0]):
            first_bad = (row, k)
    if first_bad is not None:
        row, k = first_bad
        shown = table.values(item_cols[k])[row]
        table.fail(row, item_cols[k], f"the value '{shown}' is not 0 or 1" if shown != "" else "the value is missing",
                   expected="0 or 1 in every item column")
    rows_list, cols_list = [], []
    for k, column in enumerate(item_cols):
        codes, uniques = table.coded(column)
        one = np.flatnonzero(uniques == "1")
        if one.size:
            rows_k = np.flatnonzero(codes == one[0]).astype(np.int32)
            rows_list.append(rows_k)
            cols_list.append(np.full(rows_k.size, k, dtype=np.int32))
    rows = np.concatenate(rows_list) if rows_list else np.zeros(0, np.int32)
    cols = np.concatenate(cols_list) if cols_list else np.zeros(0, np.int32)
    return build_incidence(rows, cols, table.n_rows, labels, name=name, source=source)


# --- records and cell tables ------------------------------------------------------------

def item_label(column: str, value) -> str:
    """The item of a record's attribute value: ``column=value``, one label per (column, value).

    Unique by construction: a column name holding ``=`` (or starting with a quote) is quoted,
    CSV-style, so that column ``a`` with value ``b=c`` (``a=b=c``) and column ``a=b`` with value
    ``c`` (``"a=b"=c``) are different items — were they one, a person would hold it twice and
    its count would move by 2 between neighbours, where every mechanism assumes 1.
    """
    if "=" in column or column.startswith('"'):
        column = '"' + column.replace('"', '""') + '"'
    return f"{column}={value}"


def record_item_columns(columns: list[str], item_columns=None, person=None,
                        resolve=None) -> tuple[list[str], str | None]:
    """(the columns whose values become items, the person column or None) of records read as items.

    ``item_columns`` (names or positions) are the steward's choice; without it every column but
    the person's. The person column identifies a person who may be on several rows: it is never
    an item itself.
    """
    resolve = resolve or (lambda spec, role: resolve_column(columns, spec, role))
    person_col = resolve(person, "person") if person is not None else None
    if item_columns:
        chosen = [resolve(c, "item") for c in item_columns]
        if len(set(chosen)) != len(chosen):
            raise ParameterError("A column is listed twice in the item columns.")
        if person_col in chosen:
            raise ParameterError(f"'{person_col}' is the person column: it says who is who, so its values cannot "
                                 "also be items. Leave it out of the item columns.")
    else:
        chosen = [c for c in columns if c != person_col]
    if not chosen:
        raise ParameterError("No column is left to count: name at least one item column besides the person column.")
    return chosen, person_col


def identifier_columns(table: Table, columns: list[str]) -> list[str]:
    """The columns that look like identifiers (:func:`.detect.identifier_like`, on the first rows).

    Computed from the true data: internal, for the steward's eyes only.
    """
    return [c for c in columns if identifier_like(table.values_head(c, IDENTIFIER_SAMPLE))]


def records_to_dataset(table: Table, *, person=None, item_columns=None, name: str, source: dict) -> Dataset:
    """One item per attribute value ("workclass=Private"): the incidence view of records.

    Without ``person`` every row is one person. With a ``person`` column the rows that share its
    value are one person, and their items are taken together (a person holds an item once, however
    many of their rows have it), as the rows of pairs are grouped by person: the person is one row
    of the incidence matrix, so adding or removing them changes each count by at most 1 and, after
    the declared bound Δ (``privacy/bounding.py``), at most Δ counts — what the noise assumes.

    ``dataset.likely_identifiers`` lists the item columns that look like identifiers (internal).
    """
    columns, person_col = record_item_columns(table.columns, item_columns, person, table.column)
    if person_col is not None:
        _missing(table, person_col, "person")
        record_rows, people = table.coded(person_col)
        n = int(people.size)
        source = {**source, "person column": person_col}
    else:
        n = table.n_rows
        record_rows = np.arange(n, dtype=np.int32)
    cols = np.empty((table.n_rows, len(columns)), dtype=np.int32)
    labels: list[str] = []
    for k, column in enumerate(columns):
        codes, uniques = table.coded(column)
        cols[:, k] = codes + len(labels)
        labels.extend(item_label(column, u) for u in uniques)
    rows = np.repeat(record_rows.astype(np.int32), len(columns))
    dataset = build_incidence(rows, cols.ravel(), n, labels, name=name, source=source)
    dataset.record_columns = tuple(columns)
    dataset.likely_identifiers = identifier_columns(table, columns)
    return dataset


def _domains(table: Table, attributes: list[str], declared: dict | None):
    digits, domains = [], []
    declared = declared or {}
    for column in attributes:
        codes, uniques = table.coded(column)
        if column in declared:
            domain = [str(v) for v in declared[column]]
            if len(set(domain)) != len(domain):
                raise ParameterError(f"The declared domain of '{column}' lists a value twice.")
            lookup = {v: i for i, v in enumerate(domain)}
            # a value outside the declared domain drops its record (counted, internal): refusing
            # would itself reveal that some record holds such a value
            rank = np.array([lookup.get(str(v), -1) for v in uniques], dtype=np.int64)
        else:
            values = [str(u) for u in uniques]
            order = natural_order(values)
            rank = np.empty(len(values), dtype=np.int64)
            rank[order] = np.arange(len(values))
            domain = [values[i] for i in order]
        digits.append(rank[codes] if rank.size else np.zeros(codes.size, np.int64))
        domains.append(domain)
    return digits, domains


def _encode(digits: list[np.ndarray], domains: list[list[str]]) -> tuple[np.ndarray, int]:
    size = 1
    for domain in domains:
        size *= len(domain)
    if size >= 2**62:
        raise ParameterError(f"The attributes span {size:.3g} cells, more than dpdesk can index (2^62).")
    index = np.zeros(digits[0].size if digits else 0, dtype=np.int64)
    for codes, domain in zip(digits, domains):
        index = index * len(domain) + codes
    return index, size


def _inside(digits: list[np.ndarray]) -> np.ndarray:
    """Records whose every value lies in its attribute's (declared) domain."""
    keep = np.ones(digits[0].size if digits else 0, dtype=bool)
    for codes in digits:
        keep &= codes >= 0
    return keep


def records_to_cells(table: Table, *, attributes, domains=None, name: str, source: dict) -> CellCounts:
    attrs = [table.column(a, "attribute") for a in attributes]
    if len(set(attrs)) != len(attrs):
        raise ParameterError("An attribute is listed twice.")
    digits, domain_values = _domains(table, attrs, domains)
    keep = _inside(digits)
    index, size = _encode([codes[keep] for codes in digits], domain_values)
    cells, counts = np.unique(index, return_counts=True)
    return CellCounts(cells, counts, size, attributes=attrs, domains=domain_values, name=name,
                      source=source, domains_declared=bool(domains) and all(a in domains for a in attrs),
                      dropped_records=int(keep.size - keep.sum()))


def table_to_cells(table: Table, *, count=None, attributes=None, domains=None, name: str, source: dict) -> CellCounts:
    columns = table.columns
    if count is None:
        named = [c for c in columns if c.strip().lower() in COUNT_NAMES]
        count_col = named[0] if named else columns[-1]
    else:
        count_col = table.column(count, "count")
    attrs = [table.column(a, "attribute") for a in attributes] if attributes else [c for c in columns if c != count_col]
    if not attrs:
        raise DataError("the count table has no attribute columns", path=table.path,
                        expected="attribute columns and a count column")
    count_codes, count_uniques = table.coded(count_col)
    numbers_of = _numbers(count_uniques)
    bad_of = ~np.isfinite(numbers_of) | (numbers_of < 0) | (numbers_of != np.round(numbers_of))
    row = table.first_row(count_col, bad_of)
    if row is not None:
        shown = table.values(count_col)[row]
        number = numbers_of[count_codes[row]]
        problem = ("a negative count" if np.isfinite(number) and number < 0
                   else "not a whole number" if np.isfinite(number) else "not a number")
        table.fail(row, count_col, f"'{shown}' is {problem}", expected="a whole number of people, 0 or more")
    numbers = numbers_of[count_codes]
    digits, domain_values = _domains(table, attrs, domains)
    keep = _inside(digits)
    index, size = _encode([codes[keep] for codes in digits], domain_values)
    return CellCounts(index, numbers[keep].astype(np.int64), size, attributes=attrs, domains=domain_values,
                      name=name, source=source,
                      domains_declared=bool(domains) and all(a in domains for a in attrs),
                      dropped_records=int(numbers[~keep].sum()))
