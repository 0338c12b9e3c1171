"""Tables: pairs (person, item[, value]), wide 0/1 matrices, microdata records, cell-count tables.

Tables are read with pandas (all fields as text first, so that nothing is silently
converted), then checked row by row with line numbers in every error.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import DataError, ParameterError
from .dataset import CellCounts, Dataset, build_incidence, natural_order
from .detect import COUNT_NAMES
from .textio import MemoryBudget, Source, TextCheck, memory_budget, read_raw

#: memory of a table read as text, per byte of the text (Python strings in a frame, the lines)
TEXT_TABLE_FACTOR = 30

_PANDAS_LINE = re.compile(r"line (\d+)")


@dataclass
class Table:
    """A table read as text, with the file line number of each row."""

    frame: pd.DataFrame
    line_numbers: np.ndarray
    path: object

    @property
    def columns(self) -> list[str]:
        return [str(c) for c in self.frame.columns]

    def column(self, spec, role: str) -> str:
        """The name of a column given by name or 0-based position."""
        columns = self.columns
        if isinstance(spec, (int, np.integer)) or (isinstance(spec, str) and spec.isdigit() and spec not in columns):
            position = int(spec)
            if not 0 <= position < len(columns):
                raise ParameterError(f"The {role} column position {position} is outside 0..{len(columns) - 1}.")
            return columns[position]
        if spec not in columns:
            raise ParameterError(f"There is no column named '{spec}' for the {role}; the columns are: "
                                 + ", ".join(columns))
        return spec

    def fail(self, row: int, column: str | None, message: str, expected: str | None = None):
        raise DataError(message, path=self.path, line=int(self.line_numbers[row]), column=column,
                        expected=expected)


def read_table(source: Source, *, delimiter: str | None, header: bool, encoding: str, automatic: bool = False,
               parquet: bool = False, require_rectangular: bool = True, budget: MemoryBudget | None = None,
               cancel=None) -> Table:
    """Read a delimited text table (or Parquet) with every field as a string."""
    budget = budget or memory_budget()
    path = source.path
    if parquet:
        return _read_parquet(source, budget)
    # pandas holds every field as a Python string: about this many bytes per byte of text
    budget.check(source.estimated_size * TEXT_TABLE_FACTOR, path, projected=True)
    raw = read_raw(path, budget)
    budget.check(len(raw) * TEXT_TABLE_FACTOR, path, projected=True)
    TextCheck(encoding, path, automatic=automatic).check(raw, final=True)
    codec = "utf-8-sig" if encoding == "utf-8-sig" else encoding
    text = raw.decode(codec, errors="strict")
    del raw
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    line_numbers = np.array([i + 1 for i, line in enumerate(lines) if line.strip()], dtype=np.int64)
    if header:
        if line_numbers.size == 0:
            raise DataError("the file is empty", path=path)
        line_numbers = line_numbers[1:]
    if line_numbers.size == 0:
        raise DataError("the file has a header but no data lines", path=path,
                        expected="at least one line of data after the header")
    sep = r"\s+" if delimiter is None else delimiter
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep, header=0 if header else None, dtype=str,
                            keep_default_na=False, na_filter=False, skipinitialspace=True,
                            skip_blank_lines=True, engine="c" if delimiter is not None else "python")
    except pd.errors.EmptyDataError:
        raise DataError("the file has no data lines", path=path) from None
    except pd.errors.ParserError as error:
        match = _PANDAS_LINE.search(str(error))
        line = int(match.group(1)) if match else None
        if line is not None and header is False:
            pass
        raise DataError("this line has a different number of fields than the lines before it",
                        path=path, line=_physical_line(lines, line, header), expected=_expected_fields(str(error))) from None
    if not header:
        frame.columns = [f"column {k + 1}" for k in range(frame.shape[1])]
    frame.columns = [str(c).strip() for c in frame.columns]
    if frame.shape[0] != line_numbers.size:  # pragma: no cover - defensive
        line_numbers = np.arange(frame.shape[0]) + (2 if header else 1)
    frame = frame.map(str.strip) if frame.size else frame
    if require_rectangular and frame.size:
        # pandas pads short lines with empty fields silently; a table must be rectangular
        counts = np.array([_field_count(lines[n - 1], delimiter) for n in line_numbers])
        short = np.flatnonzero(counts < frame.shape[1])
        if short.size:
            row = int(short[0])
            raise DataError(f"this line has {counts[row]} fields but the table has {frame.shape[1]} columns",
                            path=path, line=int(line_numbers[row]),
                            expected=f"{frame.shape[1]} fields separated by {_name(delimiter)}")
    return Table(frame, line_numbers, path)


def _name(delimiter):
    return {",": "commas", "\t": "tabs", ";": "semicolons", "|": "pipes", None: "spaces"}.get(delimiter, repr(delimiter))


def _field_count(line: str, delimiter: str | None) -> int:
    if delimiter is None:
        return len(line.split())
    if '"' in line:
        import csv

        return len(next(csv.reader([line], delimiter=delimiter)))
    return line.count(delimiter) + 1


def _expected_fields(message: str) -> str | None:
    match = re.search(r"Expected (\d+) fields", message)
    return f"{match.group(1)} fields like the lines before" if match else None


def _physical_line(lines: list[str], reported: int | None, header: bool) -> int | None:
    """pandas counts lines without blank ones; map its number back to the file's line."""
    if reported is None:
        return None
    seen = 0
    for i, line in enumerate(lines):
        if line.strip():
            seen += 1
            if seen == reported:
                return i + 1
    return reported


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


def _read_parquet(source: Source, budget: MemoryBudget) -> Table:
    parquet = _parquet_file(source, budget)
    try:
        size = parquet.metadata.serialized_size + sum(parquet.metadata.row_group(k).total_byte_size
                                                       for k in range(parquet.metadata.num_row_groups))
        budget.check(size * TEXT_TABLE_FACTOR / 2, source.path, projected=True)
        frame = parquet.read().to_pandas()
    except DataError:
        raise
    except Exception as error:  # pyarrow raises many types for damaged files
        raise _parquet_error(error, source.path) from None
    frame = frame.astype(object).where(frame.notna(), "")
    frame = frame.map(lambda v: "" if v == "" else (str(int(v)) if isinstance(v, float) and float(v).is_integer() else str(v)))
    frame.columns = [str(c) for c in frame.columns]
    return Table(frame, np.arange(frame.shape[0]) + 1, source.path)


# --- pairs -----------------------------------------------------------------------------

def pairs_to_dataset(table: Table, *, person=0, item=1, value=None, keep_values: bool = False,
                     name: str, source: dict) -> Dataset:
    person_col = table.column(person, "person")
    item_col = table.column(item, "item")
    if person_col == item_col:
        raise ParameterError("The person and item columns must be different.")
    frame = table.frame
    persons = frame[person_col].to_numpy(dtype=object)
    items = frame[item_col].to_numpy(dtype=object)
    for values, column, role in ((persons, person_col, "person"), (items, item_col, "item")):
        missing = np.flatnonzero(values == "")
        if missing.size:
            table.fail(int(missing[0]), column, f"the {role} is missing", expected=f"a {role} identifier")
    # people and items named in the file exist even when their value is 0 (an empty row, a zero count)
    rows, _ = pd.factorize(persons, sort=False)
    cols, labels = pd.factorize(items, sort=False)
    n_rows = int(rows.max()) + 1 if rows.size else 0
    weights = None
    if value is not None:
        value_col = table.column(value, "value")
        numbers = pd.to_numeric(frame[value_col], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(numbers))
        if bad.size:
            table.fail(int(bad[0]), value_col, f"'{frame[value_col].iloc[int(bad[0])]}' is not a number",
                       expected="a number (non-zero means the person has the item)")
        present = numbers != 0
        rows, cols, numbers = rows[present], cols[present], numbers[present]
        if keep_values:
            if np.any(numbers < 0):
                row = int(np.flatnonzero(numbers < 0)[0])
                table.fail(row, value_col, "a negative value", expected="values of at least 0")
            weights = numbers
    return build_incidence(np.asarray(rows, np.int64), np.asarray(cols, np.int64), n_rows,
                           [str(x) for x in labels], name=name, source=source, values=weights)


# --- wide 0/1 matrix --------------------------------------------------------------------

ID_NAMES = {"", "id", "person", "user", "userid", "row", "customer", "record", "name"}


def matrix_to_dataset(table: Table, *, id_column="auto", name: str, source: dict) -> Dataset:
    frame = table.frame
    columns = table.columns
    if id_column == "auto":
        first = columns[0] if columns else None
        id_col = None
        if first is not None and (first.strip().lower() in ID_NAMES or not frame[first].isin(["0", "1"]).all()):
            id_col = first
    elif id_column is None or id_column is False:
        id_col = None
    else:
        id_col = table.column(id_column, "id")
    item_cols = [c for c in columns if c != id_col]
    if not item_cols:
        raise DataError("the matrix has no item columns", path=table.path, expected="one column per item")
    values = frame[item_cols].to_numpy(dtype=object)
    ok = (values == "0") | (values == "1")
    if not ok.all():
        row, col = map(int, np.argwhere(~ok)[0])
        shown = values[row, col]
        table.fail(row, item_cols[col], f"the value '{shown}' is not 0 or 1" if shown != "" else "the value is missing",
                   expected="0 or 1 in every item column")
    ones = values == "1"
    rows, cols = np.nonzero(ones)
    labels = [str(c) for c in item_cols]
    if len(set(labels)) != len(labels):
        raise DataError("two item columns have the same name", path=table.path, line=1)
    return build_incidence(rows.astype(np.int64), cols.astype(np.int64), frame.shape[0], labels,
                           name=name, source=source)


# --- records and cell tables ------------------------------------------------------------

def records_to_dataset(table: Table, *, name: str, source: dict) -> Dataset:
    """One item per attribute value ("workclass=Private"): the incidence view of records."""
    frame = table.frame
    rows_list, cols_list, labels = [], [], []
    n = frame.shape[0]
    for k, column in enumerate(table.columns):
        codes, uniques = pd.factorize(frame[column].to_numpy(dtype=object), sort=False)
        rows_list.append(np.arange(n, dtype=np.int64))
        cols_list.append(codes.astype(np.int64) + len(labels))
        labels.extend(f"{column}={u}" for u in uniques)
    rows = np.concatenate(rows_list) if rows_list else np.zeros(0, np.int64)
    cols = np.concatenate(cols_list) if cols_list else np.zeros(0, np.int64)
    order = np.argsort(rows, kind="stable")
    return build_incidence(rows[order], cols[order], n, labels, name=name, source=source)


def _domains(table: Table, attributes: list[str], declared: dict | None):
    digits, domains = [], []
    declared = declared or {}
    for column in attributes:
        values = table.frame[column].to_numpy(dtype=object)
        if column in declared:
            domain = [str(v) for v in declared[column]]
            if len(set(domain)) != len(domain):
                raise ParameterError(f"The declared domain of '{column}' lists a value twice.")
            lookup = {v: i for i, v in enumerate(domain)}
            # a value outside the declared domain drops its record (counted, internal): refusing
            # would itself reveal that some record holds such a value
            codes = np.fromiter((lookup.get(str(v), -1) for v in values), dtype=np.int64, count=values.size)
        else:
            codes, uniques = pd.factorize(values, sort=False)
            uniques = [str(u) for u in uniques]
            order = natural_order(uniques)
            rank = np.empty(len(uniques), dtype=np.int64)
            rank[order] = np.arange(len(uniques))
            domain = [uniques[i] for i in order]
            codes = rank[codes]
        digits.append(np.asarray(codes, dtype=np.int64))
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
    raw_counts = table.frame[count_col].to_numpy(dtype=object)
    numbers = pd.to_numeric(pd.Series(raw_counts), errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(numbers) | (numbers < 0) | (numbers != np.round(numbers)))
    if bad.size:
        row = int(bad[0])
        shown = raw_counts[row]
        problem = ("a negative count" if np.isfinite(numbers[row]) and numbers[row] < 0
                   else "not a whole number" if np.isfinite(numbers[row]) else "not a number")
        table.fail(row, count_col, f"'{shown}' is {problem}", expected="a whole number of people, 0 or more")
    digits, domain_values = _domains(table, attrs, domains)
    keep = _inside(digits)
    index, size = _encode([codes[keep] for codes in digits], domain_values)
    return CellCounts(index, numbers[keep].astype(np.int64), size, attributes=attrs, domains=domain_values,
                      name=name, source=source,
                      domains_declared=bool(domains) and all(a in domains for a in attrs),
                      dropped_records=int(numbers[~keep].sum()))
