"""Guessing how a file is laid out: format, delimiter, header, encoding, columns.

The guess is shown to the steward in the import wizard (and used by ``dpdesk inspect``)
and every part of it can be overridden. Only the head of the file is looked at.

When the head does not settle the question — one line that could be a basket or a
header, column names above ragged lines, three words per line that could be baskets or
pairs — :attr:`Sniffed.unsure` says so in words and :attr:`Sniffed.alternatives` lists
the readings; ``dpdesk.load`` (and so the CLI) then refuses with those options instead
of guessing, and the wizard can ask. A first line that looks like column names is never
read as items.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataError, EmptyData
from .textio import HEAD_BYTES, Source, detect_encoding, head_lines, is_parquet, open_source

FORMATS = ("transactions", "pairs", "matrix", "records", "cells")
#: what each kind of file is called in messages and in the wizard
KIND_NAMES = {"text": "text", "parquet": "Parquet", "xlsx": "Excel workbook", "sav": "SPSS", "dta": "Stata",
              "sas7bdat": "SAS", "xpt": "SAS transport (XPORT)", "database": "database query"}
#: extensions of the files that are not text (for file dialogs and messages)
BINARY_EXTENSIONS = (".parquet", ".xlsx", ".xlsm", ".sav", ".zsav", ".dta", ".sas7bdat", ".xpt")
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

    @property
    def binary(self) -> bool:
        """A file that is not text: no delimiter and no text encoding to choose."""
        return self.kind != "text"

    @property
    def named_columns(self) -> bool:
        """The file names its columns itself (Parquet, SPSS, Stata, SAS): there is no header line to choose."""
        return self.kind not in ("text", "xlsx")

    @property
    def kind_name(self) -> str:
        return KIND_NAMES.get(self.kind, self.kind)

    @property
    def a_kind(self) -> str:
        """The kind with its article: "an SPSS", "a Stata", "an Excel workbook"."""
        return a_kind(self.kind)

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


def sniff(path: str | Path, *, raw: bytes | None = None, encoding: str = "auto", lines: int = 200,
          source: Source | None = None, sheet=None) -> Sniffed:
    """Look at the start of a file and guess its layout (see :class:`Sniffed`).

    ``raw`` may be the file's content or just its head; without it the head is read. A
    workbook's ``sheet`` (name or 0-based position; default: the first that holds data)
    is the one whose layout is guessed.
    """
    path = Path(path)
    if raw is None:
        source = source or open_source(path)
        raw = source.head()
        whole = source.estimated_size <= len(raw) if not source.compressed else len(raw) < HEAD_BYTES
    else:
        whole = len(raw) < HEAD_BYTES
    raw = raw[:HEAD_BYTES]
    kind = binary_kind(raw, path)
    if kind not in (None, "parquet"):
        if (source or open_source(path)).compressed:
            raise DataError(f"this {KIND_NAMES[kind]} file is compressed with gzip", path=path,
                            expected="the file itself: uncompress it first (e.g. with gunzip)")
        return _sniff_sheet(path, sheet) if kind == "xlsx" else _sniff_statfile(path, kind, encoding)
    if is_parquet(raw):
        from .tabular import parquet_preview

        columns, preview = parquet_preview(source or open_source(path))
        fmt = "cells" if any(c.lower() in COUNT_NAMES for c in columns) else ("pairs" if len(columns) <= 4 else "records")
        return Sniffed(fmt, None, True, "binary", columns, preview, parquet=True, kind="parquet")
    if whole and not raw.strip():
        raise EmptyData("the file is empty", path=path, expected="at least one line of data")
    encoding_used = detect_encoding(raw, encoding, path)
    head = raw
    if not whole and head.rfind(b"\n") > 0:
        head = head[: head.rfind(b"\n") + 1]  # whole lines only
    codec = "utf-8" if encoding_used == "utf-8-sig" else encoding_used
    text = head.decode(codec, errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    sample = head_lines(text, lines)
    nonblank = [line for line in sample if line.strip()]
    delimiter = guess_delimiter(nonblank)
    rows = [split_line(line, delimiter) for line in nonblank[:50]]
    sniffed = _layout(rows, delimiter, encoding_used)
    sniffed.head = head
    return sniffed


def a_kind(kind: str) -> str:
    name = KIND_NAMES.get(kind, kind)
    return ("an " if name.startswith(("Excel", "SPSS")) else "a ") + name


def binary_kind(head: bytes, path) -> str | None:
    """What holds the table when it is not text: "parquet", "xlsx", "sav", "dta", "sas7bdat" or "xpt".

    Decided by the first bytes (and the name, for old Stata files and ZIP archives). A file
    named like one of these whose first bytes are not such a file's, an old binary Excel file
    and a ZIP archive that is not a workbook are refused here, with what to do instead.
    """
    from . import spreadsheet, statfiles

    if is_parquet(head):
        return "parquet"
    if spreadsheet.is_workbook(head, path):
        return "xlsx"
    kind = statfiles.kind_of(head, path)
    if kind is not None:
        return kind
    suffix = Path(path).suffix.lower()
    if head[:8] == spreadsheet.OLE_MAGIC and suffix in (".xls", ".xlsx", ".xlsm", ".xlt"):
        raise spreadsheet.old_excel(path)
    for magic, what in DOCUMENT_MAGIC:
        if head.startswith(magic):
            from .textio import NOT_TEXT_EXPECTED

            raise DataError(f"this is {what}, not a data table", path=path,
                            expected=SQLITE_EXPECTED if magic == SQLITE_MAGIC else NOT_TEXT_EXPECTED)
    if head[:4] == spreadsheet.ZIP_MAGIC:
        raise DataError("this is a ZIP archive, not a data file", path=path,
                        expected="the data file inside it (unpack the archive first), or an Excel workbook (.xlsx)")
    if suffix in spreadsheet.EXTENSIONS:
        raise spreadsheet.not_a_workbook(path)
    if suffix in statfiles.EXTENSIONS:
        raise statfiles.not_this_kind(path, statfiles.EXTENSIONS[suffix])
    return None


SQLITE_MAGIC = b"SQLite format 3\x00"
SQLITE_EXPECTED = "a query on it: --sql sqlite:///FILE --query \"SELECT …\" (or Read from a database… in the app)"
#: files that are often renamed or saved by mistake as a data file: what they are, said by their first bytes
DOCUMENT_MAGIC = ((b"%PDF-", "a PDF document"), (b"\x89PNG\r\n\x1a\n", "a PNG image"),
                  (b"\xff\xd8\xff", "a JPEG image"), (b"GIF87a", "a GIF image"), (b"GIF89a", "a GIF image"), (b"{\\rtf", "a Rich Text (RTF) document"),
                  (b"%!PS", "a PostScript document"), (b"\x7fELF", "a program"), (SQLITE_MAGIC, "an SQLite database"),
                  (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
                   "an old Microsoft Office file (a Word, Excel or PowerPoint 97–2003 file)"))


def _sniff_sheet(path: Path, sheet=None) -> Sniffed:
    """A workbook: the layout of its chosen sheet, from the first rows, guessed as for CSV."""
    from .spreadsheet import preview as workbook_preview

    found = workbook_preview(path)
    name = found.name(sheet)
    if name is None:
        from ..errors import ParameterError

        raise ParameterError(f"The workbook has no sheet '{sheet}'; its sheets are: " + ", ".join(found.sheets)
                             + " (give a name or a 0-based position).")
    return sheet_sniffed(found.sheets, found.rows, name)


def sheet_sniffed(sheets: list[str], sheet_rows: dict, name: str) -> Sniffed:
    """The layout of one sheet of a workbook, from its first rows (already read: no reading here)."""
    rows = sheet_table(sheet_rows.get(name, []))
    if not rows:
        return Sniffed("pairs", None, True, "binary", [], [], kind="xlsx", sheets=list(sheets), sheet=name,
                       sheet_rows=sheet_rows, notes=[f"the sheet '{name}' is empty"])
    sniffed = _layout(rows, ",", "binary")
    sniffed.delimiter = None
    sniffed.kind, sniffed.sheets, sniffed.sheet, sniffed.sheet_rows = "xlsx", list(sheets), name, sheet_rows
    if sniffed.format == "transactions" and sniffed.header:
        sniffed.notes = ["the first row looks like column names and is not read as items"]
    if len(sheets) > 1:
        sniffed.notes.append(f"the workbook has {len(sheets)} sheets; reading '{name}'")
    return sniffed


def sheet_table(rows: list[list[str]]) -> list[list[str]]:
    """A sheet's first rows as a table: rows that end early (empty cells are not stored) padded with
    empty values, unless the rows are ragged like baskets (then they are left as they are)."""
    if not rows:
        return rows
    widths = [len(row) for row in rows]
    width = max(widths)
    full = sum(w == width for w in widths)
    nearly = sum(w >= width - 1 for w in widths)  # a table whose last column is sometimes empty
    if full >= 0.8 * len(rows) or (widths[0] == width and nearly >= 0.8 * len(rows)):
        return [row + [""] * (width - len(row)) for row in rows]
    return rows


def _sniff_statfile(path: Path, kind: str, encoding: str = "auto") -> Sniffed:
    """An SPSS, Stata or SAS file: its variables name the columns; the layout from the first rows."""
    from .statfiles import preview as statfile_preview

    found = statfile_preview(path, kind, encoding=None if encoding in (None, "auto") else encoding)
    columns, rows = found.columns, found.rows
    if any(c.strip().lower() in COUNT_NAMES for c in columns):
        fmt = "cells"
    elif len(columns) >= 3 and _looks_like_matrix(rows):
        fmt = "matrix"
    elif len(columns) <= 4:
        fmt = "pairs"
    else:
        fmt = "records"
    sniffed = Sniffed(fmt, None, True, "binary" if encoding in (None, "auto") else encoding, columns, rows,
                      kind=kind, n_rows=found.n_rows)
    if found.labelled:
        shown = ", ".join(found.labelled[:5]) + (", …" if len(found.labelled) > 5 else "")
        sniffed.notes.append(f"value labels are read in place of codes ({shown})")
    return sniffed


def look(path, *, encoding: str = "auto", sheet=None, progress=None, cancel=None) -> Sniffed:
    """:func:`sniff` for the import wizard's worker: reads only the head (and a workbook's first rows)."""
    if progress is not None:
        progress(0.0, f"Looking at {Path(path).name}")
    source = open_source(path)
    if cancel is not None:
        cancel.check()
    sniffed = sniff(path, source=source, encoding=encoding, sheet=sheet)
    if cancel is not None:
        cancel.check()
    if progress is not None:
        progress(1.0, "Done")
    return sniffed


def preview_table(sniffed: Sniffed, *, delimiter: str | None = None, header: bool = True, encoding: str = "auto",
                  sheet=None, lines: int = 20) -> tuple[list[str], list[list[str]]]:
    """Column names and first rows of a sniffed file as they will be read with these options (no reading)."""
    if sniffed.kind == "xlsx":
        name = sheet if sheet in sniffed.sheet_rows else sniffed.sheet
        rows = sheet_table(sniffed.sheet_rows.get(name, []))
        if header and rows:
            width = max(len(r) for r in rows)
            columns = [c or f"column {k + 1}" for k, c in enumerate(rows[0] + [""] * (width - len(rows[0])))]
            return columns, rows[1:lines + 1]
        width = max((len(r) for r in rows), default=0)
        return [f"column {k + 1}" for k in range(width)], rows[:lines]
    if sniffed.binary:
        return list(sniffed.columns), [list(r) for r in sniffed.preview[:lines]]
    return preview(sniffed.head, delimiter=delimiter, header=header, encoding=encoding, lines=lines)


def _layout(rows: list[list[str]], delimiter: str | None, encoding: str) -> Sniffed:
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
        elif width >= 3 and _looks_like_matrix(body):
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


def _looks_like_matrix(rows: list[list[str]]) -> bool:
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


def preview(raw: bytes, *, delimiter: str | None, header: bool, encoding: str, lines: int = 20,
            parquet: bool = False, path=None) -> tuple[list[str], list[list[str]]]:
    """Column names and the first rows as the importer would split them (for the wizard)."""
    if parquet:
        from .tabular import parquet_preview

        return parquet_preview(open_source(path), lines) if path is not None else _parquet_bytes_preview(raw, lines)
    head = raw[: max(1 << 16, 1024 * lines)]  # a preview for the eyes needs little; identifier looks more
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


def _parquet_bytes_preview(raw: bytes, lines: int):
    import io

    import pyarrow.parquet as pq

    try:
        frame = pq.read_table(io.BytesIO(raw)).slice(0, lines).to_pandas()
    except Exception as error:  # pyarrow raises many types for damaged files
        raise DataError(f"the Parquet file cannot be read ({str(error).splitlines()[0][:200]})") from None
    return [str(c) for c in frame.columns], [[str(v) for v in row] for row in frame.itertuples(index=False)]
