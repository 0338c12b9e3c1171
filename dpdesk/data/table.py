"""The compact table every reader fills: per kept column, int32 codes into its distinct values.

Every kind of file that holds a table — delimited text, Parquet, an Excel sheet, an SPSS, Stata
or SAS file (each a reader of :mod:`.readers`) — is read into one :class:`Table` through a
:class:`Columns` builder, so that pairs, matrices, records and cell tables have one
implementation (:mod:`.tabular`), one set of checks and one wording of errors; only the
numbering differs (``Table.unit``: "line 12" in text, "row 12" in a workbook or a data file).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from ..errors import DataError, EmptyData, ParameterError
from .textio import MemoryBudget, Source

#: what a distinct value costs in memory (a Python string and its dictionary slot), besides its text
BYTES_PER_DISTINCT = 120


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


class Columns:
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


def delimiters_in_words(delimiter):
    return {",": "commas", "\t": "tabs", ";": "semicolons", "|": "pipes", None: "spaces"}.get(delimiter, repr(delimiter))


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


def arrow_text(value) -> str:
    """A value of an Arrow column (Parquet, Arrow IPC) as text: whole floats without ``.0`` (ids stored as
    floats), NaN as missing."""
    if isinstance(value, float):
        if value != value:
            return ""
        return str(int(value)) if value.is_integer() else str(value)
    return str(value)


def table_from_batches(names: list[str], n_rows: int, batches: Callable, path, budget: MemoryBudget,
                       wanted=None, *, what: str) -> Table:
    """The compact :class:`Table` of a file read as Arrow record batches (Parquet, Arrow IPC).

    ``names``: the file's column names; ``batches(positions)`` yields record batches of the columns at
    those positions; ``n_rows``: the rows the file's metadata promises (checked); ``what``: the file in
    messages ("Parquet file"). Values become the text they print as (:func:`arrow_text`); errors name the
    record as "row N" (such a file has no lines).
    """
    names = distinct_names(names)
    keep = wanted(names) if wanted is not None else None
    keep = names if keep is None else [n for n in names if n in set(keep)]
    budget.check(n_rows * (4 * len(keep) + 12), path, projected=True)
    positions = [names.index(name) for name in keep]
    codes = {name: np.empty(n_rows, dtype=np.int32) for name in keep}
    index: dict[str, dict[str, int]] = {name: {} for name in keep}
    done, distinct_bytes = 0, 0
    for batch in batches(positions):
        rows = batch.num_rows
        if done + rows > n_rows:
            raise DataError(f"the {what} holds more rows than its footer says", path=path)
        for k, name in enumerate(keep):
            local, values = pd.factorize(batch.column(k).to_pandas(), use_na_sentinel=True)
            table = index[name]
            before = len(table)
            texts = [arrow_text(v) for v in values]
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
    if done != n_rows:
        raise DataError(f"the {what} holds fewer rows than its footer says", path=path)
    uniques = {name: np.array(list(index[name]), dtype=object) for name in keep}
    return Table(names, codes, uniques, np.arange(n_rows, dtype=np.int64) + 1, path, n_rows, unit="row")
