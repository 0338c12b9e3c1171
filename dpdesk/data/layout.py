"""How the rows of a table look: the layout a file's first rows suggest, and what a column looks like.

Below every reader (:mod:`.readers`) and above none: the text sniffer (:mod:`.detect`) and the
readers of workbooks and data files guess a layout from first rows with the same functions, and
describe it with the same :class:`Sniffed`.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass, field

from ..errors import DataError

FORMATS = ("transactions", "pairs", "matrix", "records", "cells")
DELIMITER_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe", None: "spaces"}
DELIMITER_OPTIONS = {",": ",", "\t": "tab", ";": ";", "|": "|", None: "whitespace"}
COUNT_NAMES = {"count", "counts", "n", "freq", "frequency", "number", "total"}
HEADER_WORDS = {"id", "person", "user", "userid", "user_id", "item", "itemid", "item_id", "count", "customer",
                "product", "value", "weight", "rating", "name", "movieid", "artistid", "timestamp", "basket",
                "transaction", "items"}
_NUMERIC = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")
#: share of a matrix's item cells that must be 0/1 for a file to be taken as a (damaged) matrix
MATRIX_SHARE = 0.75
#: rows looked at to tell whether a column looks like an identifier: the first ones, which the import
#: wizard sees in the file's head as well as the importer does in the whole table
IDENTIFIER_SAMPLE = 1000
#: filled values needed before a column can be called an identifier: in fewer, an attribute with a few dozen
#: values (ages) is mostly distinct too (the 20-row previews of workbooks and data files tell nothing)
IDENTIFIER_MIN_VALUES = 50
#: share of distinct values among a column's filled values from which it looks like an identifier
IDENTIFIER_SHARE = 0.9
#: sample values a column shows in the import wizard
SAMPLE_VALUES = 4


@dataclass
class Alternative:
    """One reading of an ambiguous file: the options that choose it and what it would mean."""

    format: str
    header: bool
    meaning: str

    def options(self, delimiter: str | None, text: bool = True) -> str:
        parts = [f"--format {self.format}", "--header" if self.header else "--no-header"]
        if delimiter is not None and text:
            parts.append(f"--delimiter {DELIMITER_OPTIONS.get(delimiter, delimiter)!s}")
        return " ".join(parts)


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
    #: why the layout is uncertain (None: it is not); the wizard should ask, the CLI refuses
    unsure: str | None = None
    #: the readings the steward can choose from when ``unsure`` (the first is ``format``/``header``)
    alternatives: list[Alternative] = field(default_factory=list)
    #: import options that answer the question when the steward gives them (besides ``format``)
    settled_by: tuple[str, ...] = ()
    #: what holds the table: "text" (CSV, TSV, FIMI…), "parquet", "xlsx" (Excel), or an SPSS, Stata or
    #: SAS file ("sav", "dta", "sas7bdat", "xpt"; :mod:`.statfiles`)
    kind: str = "text"
    #: a workbook's worksheets, the one read (``sheet``), and the first rows of each (as text, for previews)
    sheets: list[str] = field(default_factory=list)
    sheet: str | None = None
    sheet_rows: dict = field(default_factory=dict, repr=False)
    #: the first bytes of a text file (decompressed), for previews: never the whole file
    head: bytes = field(default=b"", repr=False)
    #: the number of rows when the file says it (SPSS, Stata, SAS)
    n_rows: int | None = None
    #: the kind's name in messages, without and with its article (set by the reader that sniffed it)
    names: tuple[str, str] = ("text", "a text")
    #: whether a first line (or row) of column names is the steward's to choose: text and sheets (a reader
    #: of files that name their columns themselves says False)
    header_line: bool = True

    @property
    def binary(self) -> bool:
        """A file that is not text: no delimiter and no text encoding to choose."""
        return self.kind != "text"

    @property
    def named_columns(self) -> bool:
        """The file names its columns itself (Parquet, SPSS, Stata, SAS): there is no header line to choose."""
        return not self.header_line

    @property
    def in_sheets(self) -> bool:
        """The file holds its tables in sheets to choose from (a workbook)."""
        return bool(self.sheets)

    @property
    def kind_name(self) -> str:
        """What holds the table, in words ("text", "SPSS", "Excel workbook"): its reader says (:mod:`.readers`)."""
        return self.names[0]

    @property
    def a_kind(self) -> str:
        """The kind with its article: "an SPSS", "a Stata", "an Excel workbook"."""
        return self.names[1]

    def describe(self) -> str:
        line = "row" if self.binary else "line"
        items = ("one item per cell" if self.kind == "xlsx"
                 else "items separated by " + DELIMITER_NAMES.get(self.delimiter, repr(self.delimiter)))
        what = {
            "transactions": f"one person per {line}, {items}",
            "pairs": f"one (person, item) pair per {line}",
            "matrix": "a 0/1 matrix with one column per item",
            "records": "one record per person with attribute columns",
            "cells": "a table of attribute combinations with their counts",
        }[self.format]
        return f"{self.format}: {what}" + (" (uncertain)" if self.unsure else "")

    def refusal(self, path) -> DataError:
        """The error ``load`` raises for an uncertain layout: the question and each option that answers it."""
        choices = "; ".join(f"{a.meaning}: {a.options(self.delimiter, not self.binary)}" for a in self.alternatives)
        return DataError(f"cannot tell how the file is laid out: {self.unsure}", path=path,
                         expected=f"the layout given with import options — {choices}")


@dataclass
class ColumnLook:
    """What the first rows show of one column: a few of its values and whether it looks like an identifier.

    Computed from the true data, so it is internal: for the steward's eyes (the import wizard,
    a warning on stderr), never for a public file.
    """

    name: str
    samples: list[str]
    identifier: bool

    def note(self) -> str:
        """The warning in words, or ""."""
        return (f"'{self.name}' looks like an identifier, not an attribute: nearly every row has its own value, so "
                "its values would single people out" if self.identifier else "")


def identifier_like(values) -> bool:
    """Whether a column whose first values are ``values`` looks like an identifier (a record number, a
    weight, an exact amount): among its first :data:`IDENTIFIER_SAMPLE` filled values, at least
    :data:`IDENTIFIER_SHARE` are distinct (needs :data:`IDENTIFIER_MIN_VALUES` of them).

    The first rows, not the whole column: the import wizard sees only the file's head, and the
    importer must flag the same columns. An attribute with a few dozen values repeats them within a
    thousand rows (a census's ages: 7% distinct); an identifier does not (Adult's ``fnlwgt``: 99%).
    """
    filled = [v for v in list(values)[:IDENTIFIER_SAMPLE] if v != ""]
    return len(filled) >= IDENTIFIER_MIN_VALUES and len(set(filled)) >= IDENTIFIER_SHARE * len(filled)


def look_at_columns(columns: list[str], rows: list[list[str]]) -> list[ColumnLook]:
    """Each column's first distinct values and identifier flag, from the first ``rows`` (internal)."""
    looks = []
    for k, name in enumerate(columns):
        values = [row[k] if k < len(row) else "" for row in rows[:IDENTIFIER_SAMPLE]]
        samples = list(dict.fromkeys(v for v in values if v != ""))[:SAMPLE_VALUES]
        looks.append(ColumnLook(name, samples, identifier_like(values)))
    return looks


def is_number(text: str) -> bool:
    return bool(_NUMERIC.match(text))


def split_line(line: str, delimiter: str | None) -> list[str]:
    if delimiter is None:
        return line.split()
    try:
        return [part.strip() for part in next(csv.reader([line], delimiter=delimiter))] if line else []
    except csv.Error:  # a stray quote: show the raw fields
        return [part.strip() for part in line.split(delimiter)]


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


def _header_words(row: list[str]) -> bool:
    return bool({v.strip().lower() for v in row} & HEADER_WORDS)


def guess_header(rows: list[list[str]]) -> bool:
    """A first row whose fields are words where the later rows have numbers is a header."""
    if not rows:
        return False
    if len(rows) == 1:  # a lone line of column names is a header with no data
        return all(not is_number(v) for v in rows[0]) and _header_words(rows[0])
    first, rest = rows[0], rows[1:]
    width = len(first)
    for k in range(width):
        column = [row[k] for row in rest if len(row) > k and row[k] != ""]
        if column and not is_number(first[k]) and first[k] != "" and sum(map(is_number, column)) >= 0.9 * len(column):
            return True
    # all-text tables: the first row's values never appear again and look like names
    if all(not is_number(v) for v in first):
        repeats = sum(1 for k in range(width) for row in rest if len(row) > k and row[k] == first[k])
        if repeats == 0 and _header_words(first):
            return True
    return False


def header_like(rows: list[list[str]]) -> bool:
    """Whether the first line of a line-per-person file looks like column names, not items.

    Words above lines of numbers, or known column names ("user", "item", …) that never
    appear again: either way the line is not a basket.
    """
    if len(rows) < 2 or not rows[0] or any(is_number(v) for v in rows[0]):
        return False
    rest = [v for row in rows[1:] for v in row if v != ""]
    if rest and sum(map(is_number, rest)) >= 0.9 * len(rest):
        return True
    seen_later = {v for row in rows[1:] for v in row}
    return _header_words(rows[0]) and not seen_later & set(rows[0])


def layout_of_rows(rows: list[list[str]], delimiter: str | None, encoding: str) -> Sniffed:
    """The format and header that ``rows`` (the head, split) suggest, with any doubt spelled out."""
    unsure, alternatives, settled_by = None, [], ()
    if delimiter is None:
        fmt, header = "transactions", header_like(rows)
        if header:
            unsure = f"the first line looks like column names ({', '.join(rows[0][:5])})"
            alternatives = [Alternative("transactions", True, "baskets below a header line"),
                            Alternative("pairs", True, "a table with a header")]
            settled_by = ("header",)
    else:
        widths = Counter(len(row) for row in rows)
        width = widths.most_common(1)[0][0] if widths else 0
        constant = len(widths) == 1 or (widths.most_common(1)[0][1] >= 0.98 * len(rows) and len(rows) > 50)
        header = guess_header(rows) if constant else header_like(rows)
        body = rows[1:] if header else rows
        if len(rows) == 1 and not header:
            fmt = "transactions"
            unsure = (f"there is only one line ({', '.join(rows[0][:5])}{', …' if len(rows[0]) > 5 else ''}); "
                      "it could be one person's items or a table row")
            alternatives = [Alternative("transactions", False, "one person with these items"),
                            Alternative("pairs", False, "one (person, item) pair")]
        elif not constant:
            fmt = "transactions"
            if header:
                unsure = (f"the first line looks like column names ({', '.join(rows[0][:5])}) but the lines have "
                          "different numbers of fields")
                alternatives = [Alternative("transactions", True, "baskets below a header line"),
                                Alternative("pairs", True, "a table with a header (its ragged lines are reported)")]
                settled_by = ("header",)
        elif header and any(name.strip().lower() in COUNT_NAMES for name in rows[0]):
            fmt = "cells"
        elif width >= 3 and looks_like_matrix(body):
            fmt = "matrix"  # a matrix, even with a few bad values (which the import then reports)
        elif width <= 4:
            fmt = "pairs"
            if not header and width >= 3 and not all(is_number(row[k]) for row in body for k in range(2, width)):
                unsure = (f"each line has {width} fields and no header: they could be baskets of {width} items "
                          "or (person, item, …) rows")
                alternatives = [Alternative("pairs", False, "(person, item, …) rows"),
                                Alternative("transactions", False, f"one person per line with {width} items")]
        else:
            fmt = "records"
    columns = rows[0] if header and rows else [f"column {k + 1}" for k in range(max((len(r) for r in rows), default=0))]
    preview = rows[1:21] if header else rows[:20]
    sniffed = Sniffed(fmt, delimiter, header, encoding, columns, preview, unsure=unsure,
                      alternatives=alternatives, settled_by=settled_by)
    if fmt == "transactions" and header:
        sniffed.notes.append("the first line looks like column names and is not read as items")
    return sniffed


def looks_like_matrix(rows: list[list[str]]) -> bool:
    """Mostly 0/1 item cells: every item column at least half 0/1, and ≥ MATRIX_SHARE of all item cells.

    A few other values do not make a matrix a table of pairs: the import then reports them
    (line and column) instead of reading the file the wrong way.
    """
    if not rows:
        return False
    width = max(len(row) for row in rows)
    first_is_item = all(row and row[0] in ("0", "1") for row in rows)
    columns = [[row[k] for row in rows if len(row) > k] for k in range(0 if first_is_item else 1, width)]
    if len(columns) < 2:
        return False
    shares = [sum(1 for v in column if v in ("0", "1")) / max(len(column), 1) for column in columns]
    cells = sum(len(column) for column in columns)
    overall = sum(share * len(column) for share, column in zip(shares, columns)) / max(cells, 1)
    return min(shares) >= 0.5 and overall >= MATRIX_SHARE
