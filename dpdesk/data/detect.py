"""Guessing how a file is laid out: format, delimiter, header, encoding, columns.

The guess is shown to the steward in the import wizard (and used by ``dpdesk inspect``)
and every part of it can be overridden.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .textio import detect_encoding, head_lines, is_parquet, read_raw

FORMATS = ("transactions", "pairs", "matrix", "records", "cells")
DELIMITER_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe", None: "spaces"}
COUNT_NAMES = {"count", "counts", "n", "freq", "frequency", "number", "total"}
_NUMERIC = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")


@dataclass
class Sniffed:
    """What the file looks like, as far as its first lines tell."""

    format: str
    delimiter: str | None  # None: runs of spaces/tabs
    header: bool
    encoding: str
    columns: list[str] = field(default_factory=list)
    preview: list[list[str]] = field(default_factory=list)
    parquet: bool = False
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        what = {
            "transactions": "one person per line, items separated by " + DELIMITER_NAMES.get(self.delimiter, repr(self.delimiter)),
            "pairs": "one (person, item) pair per line",
            "matrix": "a 0/1 matrix with one column per item",
            "records": "one record per person with attribute columns",
            "cells": "a table of attribute combinations with their counts",
        }[self.format]
        return f"{self.format}: {what}"


def is_number(text: str) -> bool:
    return bool(_NUMERIC.match(text))


def split_line(line: str, delimiter: str | None) -> list[str]:
    if delimiter is None:
        return line.split()
    return [part.strip() for part in next(csv.reader([line], delimiter=delimiter))] if line else []


def guess_delimiter(lines: list[str]) -> str | None:
    """The delimiter that splits the sample lines most consistently (None: whitespace)."""
    lines = [line for line in lines if line.strip()]
    if not lines:
        return None
    best, best_score = None, 0.0
    for candidate in ("\t", ",", ";", "|"):
        counts = [line.count(candidate) for line in lines]
        if not any(counts):
            continue
        present = sum(1 for c in counts if c > 0) / len(counts)
        mode, frequency = Counter(counts).most_common(1)[0]
        score = present + frequency / len(counts) + (0.01 if mode > 0 else 0)
        if score > best_score:
            best, best_score = candidate, score
    return best


def guess_header(rows: list[list[str]]) -> bool:
    """A first row whose fields are words where the later rows have numbers is a header."""
    header_words = {"id", "person", "user", "userid", "item", "itemid", "count", "customer", "product",
                    "value", "weight", "rating", "name", "movieid", "artistid"}
    if not rows:
        return False
    if len(rows) == 1:  # a lone line of column names is a header with no data
        return all(not is_number(v) for v in rows[0]) and bool({v.strip().lower() for v in rows[0]} & header_words)
    first, rest = rows[0], rows[1:]
    width = len(first)
    for k in range(width):
        column = [row[k] for row in rest if len(row) > k and row[k] != ""]
        if column and not is_number(first[k]) and first[k] != "" and sum(map(is_number, column)) >= 0.9 * len(column):
            return True
    # all-text tables: the first row's values never appear again and look like names
    if all(not is_number(v) for v in first):
        repeats = sum(1 for k in range(width) for row in rest if len(row) > k and row[k] == first[k])
        lowered = {v.strip().lower() for v in first}
        if repeats == 0 and lowered & header_words:
            return True
    return False


def sniff(path: str | Path, *, raw: bytes | None = None, encoding: str = "auto",
          lines: int = 200) -> Sniffed:
    """Look at the start of a file and guess its layout (see :class:`Sniffed`)."""
    path = Path(path)
    raw = read_raw(path) if raw is None else raw
    if is_parquet(raw):
        import io

        import pyarrow.parquet as pq

        table = pq.read_table(io.BytesIO(raw))
        frame = table.slice(0, 20).to_pandas()
        columns = [str(c) for c in frame.columns]
        preview = [[str(v) for v in row] for row in frame.itertuples(index=False)]
        fmt = "cells" if any(c.lower() in COUNT_NAMES for c in columns) else ("pairs" if len(columns) <= 4 else "records")
        return Sniffed(fmt, None, True, "binary", columns, preview, parquet=True)
    encoding_used = detect_encoding(raw, encoding, path)  # checks the whole file
    head = raw[: 1 << 20]
    if len(raw) > len(head) and head.rfind(b"\n") > 0:
        head = head[: head.rfind(b"\n") + 1]
    codec = "utf-8-sig" if encoding_used == "utf-8-sig" else encoding_used
    sample = head_lines(head.decode(codec, errors="replace"), lines)
    nonblank = [line for line in sample if line.strip()]
    delimiter = guess_delimiter(nonblank)
    rows = [split_line(line, delimiter) for line in nonblank[:50]]
    if delimiter is None:
        fmt, header = "transactions", False
    else:
        widths = Counter(len(row) for row in rows)
        constant = len(widths) == 1 or (widths.most_common(1)[0][1] >= 0.98 * len(rows) and len(rows) > 50)
        header = guess_header(rows) if constant else False
        body = rows[1:] if header else rows
        width = widths.most_common(1)[0][0]
        if not constant:
            fmt = "transactions"
        elif header and any(name.strip().lower() in COUNT_NAMES for name in rows[0]):
            fmt = "cells"
        elif width >= 3 and _zero_one(body):
            fmt = "matrix"
        elif width <= 4:
            fmt = "pairs"
        else:
            fmt = "records"
    columns = rows[0] if header and rows else [f"column {k + 1}" for k in range(max((len(r) for r in rows), default=0))]
    preview = rows[1:21] if header else rows[:20]
    return Sniffed(fmt, delimiter, header, encoding_used, columns, preview)


def _zero_one(rows: list[list[str]]) -> bool:
    """All values 0/1, allowing a first identifier column."""
    if not rows:
        return False
    def ok(values):
        return all(v in ("0", "1") for v in values)
    if all(ok(row) for row in rows):
        return True
    return all(ok(row[1:]) for row in rows) and len(rows[0]) >= 3


def preview(raw: bytes, *, delimiter: str | None, header: bool, encoding: str, lines: int = 20,
            parquet: bool = False) -> tuple[list[str], list[list[str]]]:
    """Column names and the first rows as the importer would split them (for the wizard)."""
    if parquet:
        import io

        import pyarrow.parquet as pq

        frame = pq.read_table(io.BytesIO(raw)).slice(0, lines).to_pandas()
        return [str(c) for c in frame.columns], [[str(v) for v in row] for row in frame.itertuples(index=False)]
    head = raw[: 1 << 16]
    if len(raw) > len(head) and head.rfind(b"\n") > 0:
        head = head[: head.rfind(b"\n") + 1]
    codec = "utf-8-sig" if encoding in ("auto", "utf-8-sig") else encoding
    text_lines = [line for line in head_lines(head.decode(codec, errors="replace"), lines + 1)]
    rows = [split_line(line, delimiter) for line in text_lines if line.strip() or delimiter is None]
    if header and rows:
        columns, rows = rows[0], rows[1:]
    else:
        width = max((len(r) for r in rows), default=0)
        columns = [f"column {k + 1}" for k in range(width)]
    return columns, rows[:lines]
