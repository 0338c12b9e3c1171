"""Excel workbooks (``.xlsx``, ``.xlsm``), read with openpyxl in read-only mode, row by row.

A sheet is read like a CSV file: its rows become the same compact table
(:class:`.tabular.Table`) for ``pairs``, ``matrix``, ``records`` and ``cells``, or baskets for
``transactions`` (one person per row, one item per filled cell). What differs from text:

* Messages name the sheet's row (``row 12``) as Excel numbers it.
* Cells hold numbers, dates and booleans: whole numbers are written without ``.0``, dates as
  ISO dates, TRUE/FALSE as 1/0 (:func:`.tabular.value_text`); formulas give the value Excel last
  computed and saved.
* Trailing empty cells cannot be seen in Excel, so a row may end early: the table is as wide as
  its widest row among the first ones (header cells left empty are named ``column K``); a later
  row with a value beyond that is reported with its row number. Blank rows are skipped (in
  ``transactions``, a blank row between baskets is a person with no items, as an empty line is).
* ``sheet`` chooses the sheet, by name or 0-based position; by default the first sheet that
  holds data.

No Qt here (``docs/ARCHITECTURE.md`` §1).
"""

from __future__ import annotations

import warnings
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataError, DpdeskError, EmptyData, ParameterError
from .textio import MemoryBudget, Source, _open_fd

ZIP_MAGIC = b"PK\x03\x04"
EXTENSIONS = (".xlsx", ".xlsm", ".xltx", ".xltm")
#: old binary Excel (.xls) and other OLE2 compound files
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
#: rows handled at a time
BATCH_ROWS = 20_000
#: rows looked at to find the table's width (trailing empty cells are not stored)
WIDTH_ROWS = 100
#: sheets previewed for the wizard
PREVIEW_SHEETS = 50


def is_workbook(head: bytes, path) -> bool:
    """Whether the file is an Excel workbook (a ZIP archive named .xlsx, or holding a workbook)."""
    if head[:4] != ZIP_MAGIC:
        return False
    if Path(path).suffix.lower() in EXTENSIONS:
        return True
    try:
        with zipfile.ZipFile(path) as archive:
            return "xl/workbook.xml" in archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return False


def _damaged(path, error: Exception) -> DataError:
    found = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
    found = "".join(ch if ch.isprintable() else "?" for ch in found).strip(" :.") or type(error).__name__
    return DataError(f"the Excel file is damaged or not an Excel workbook ({found})", path=path,
                     expected="a complete .xlsx workbook as saved by Excel or LibreOffice")


def not_a_workbook(path) -> DataError:
    return DataError("the file is named like an Excel workbook but does not start like one: it is damaged, or "
                     "another kind of file renamed", path=path,
                     expected="a complete .xlsx workbook as saved by Excel or LibreOffice")


def old_excel(path) -> DataError:
    return DataError("this is an old-style Excel file (.xls), which dpdesk does not read", path=path,
                     expected="the workbook saved as .xlsx (Excel: File → Save As → Excel Workbook) or as CSV")


@contextmanager
def workbook(path):
    """The workbook, read-only (streamed), values rather than formulas; any failure a :class:`DataError`."""
    import openpyxl

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # openpyxl warns about styles and extensions it ignores
        handle = _open_fd(Path(path))  # a file object: openpyxl then does not judge the file by its name
        try:
            try:
                book = openpyxl.load_workbook(handle, read_only=True, data_only=True, keep_links=False)
            except MemoryError:
                raise
            except Exception as error:  # noqa: BLE001 - zipfile, XML and openpyxl errors alike
                raise _damaged(path, error) from None
            try:
                yield book
            except (DpdeskError, MemoryError):  # errors with their own message, and Cancel
                raise
            except Exception as error:  # noqa: BLE001 - a damaged sheet shows only while it is read
                raise _damaged(path, error) from None
            finally:
                book.close()
        finally:
            handle.close()


def _sheet(book, sheet, path):
    sheets = book.worksheets
    names = [ws.title for ws in sheets]
    if not sheets:
        raise DataError("the workbook has no worksheets", path=path, expected="a sheet with a table")
    if sheet is None or sheet == "":
        return sheets[0]
    if isinstance(sheet, str) and sheet in names:
        return sheets[names.index(sheet)]
    if isinstance(sheet, (int, np.integer)) and not isinstance(sheet, bool) or (isinstance(sheet, str) and sheet.isdigit()):
        position = int(sheet)
        if 0 <= position < len(sheets):
            return sheets[position]
    raise ParameterError(f"The workbook has no sheet '{sheet}'; its sheets are: " + ", ".join(names)
                         + " (give a name or a 0-based position).")


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _used(row) -> int:
    """How many cells of ``row`` count: up to its last non-blank cell."""
    width = len(row)
    while width and _blank(row[width - 1]):
        width -= 1
    return width


def _rows(ws):
    """(row number, values) of every row of the sheet, numbered as Excel numbers them."""
    ws.reset_dimensions()  # some writers store a wrong size; read what is there
    return enumerate(ws.iter_rows(values_only=True), start=1)


def _size(ws) -> int | None:
    try:
        rows = ws.max_row
    except Exception:  # noqa: BLE001 - an unsized sheet
        return None
    return rows if isinstance(rows, int) and rows > 0 else None


@dataclass
class WorkbookPreview:
    """The worksheets of a workbook and the first rows of each (as text, blank rows skipped)."""

    sheets: list[str]
    rows: dict[str, list[list[str]]] = field(default_factory=dict)
    chosen: str | None = None  # the first sheet that holds data

    def sheet_rows(self, sheet=None) -> list[list[str]]:
        name = self.name(sheet)
        return self.rows.get(name, []) if name is not None else []

    def name(self, sheet=None) -> str | None:
        if sheet in (None, ""):
            return self.chosen
        if isinstance(sheet, str) and sheet in self.sheets:
            return sheet
        if str(sheet).isdigit() and int(sheet) < len(self.sheets):
            return self.sheets[int(sheet)]
        return None


def preview(path, lines: int = 21, cancel=None) -> WorkbookPreview:
    """The first ``lines`` non-blank rows of each worksheet (up to :data:`PREVIEW_SHEETS` sheets)."""
    from .tabular import value_text

    with workbook(path) as book:
        sheets = book.worksheets
        found = WorkbookPreview([ws.title for ws in sheets])
        for ws in sheets[:PREVIEW_SHEETS]:
            if cancel is not None:
                cancel.check()
            rows = []
            for _, row in _rows(ws):
                used = _used(row)
                if used:
                    rows.append([value_text(v) for v in row[:used]])
                    if len(rows) >= lines:
                        break
            found.rows[ws.title] = rows
            if rows and found.chosen is None:
                found.chosen = ws.title
    if not found.sheets:
        raise DataError("the workbook has no worksheets", path=path, expected="a sheet with a table")
    if found.chosen is None:
        raise EmptyData("every sheet of the workbook is empty", path=path, expected="a sheet with a table")
    return found


def _fraction(number: int, total: int | None) -> float:
    return min(number / total, 1.0) if total else 0.5


def read_sheet(source: Source, *, sheet=None, header: bool, wanted=None, budget: MemoryBudget, cancel=None,
               progress=None, names: list[str] | None = None):
    """A worksheet as a :class:`.tabular.Table` (rows numbered as in Excel); ``names``: the steward's
    names for the columns of a sheet without a header row."""
    from .tabular import _Columns, value_text

    path = source.path
    if source.compressed:
        raise DataError("this Excel file is compressed with gzip", path=path,
                        expected="the .xlsx file itself: uncompress it first (an .xlsx file is compressed already)")
    with workbook(path) as book:
        ws = _sheet(book, sheet, path)
        total = _size(ws)
        columns = _Columns(source, budget, wanted, header, "utf-8", names)
        columns.raw_keys, columns.unit = False, "row"
        first: list[tuple[int, tuple]] = []  # the first rows, until the table's width is known
        batch: list[tuple] = []
        numbers: list[int] = []
        where = f"sheet '{ws.title}'"

        def flush(last: int) -> None:
            if not batch:
                return
            for k, position in enumerate(columns.keep):
                columns.add_objects(k, [row[position] if position < len(row) else None for row in batch], value_text)
            columns.add_lines(np.array(numbers, dtype=np.int64), int(source.size * _fraction(last, total)))
            batch.clear()
            numbers.clear()
            if cancel is not None:
                cancel.check()
            if progress is not None:
                progress(_fraction(last, total), f"Read {columns.rows:,} rows of {where}")

        def begin() -> None:
            width = max(_used(row) for _, row in first)
            names = [value_text(v) for v in first[0][1][:width]] if header else []
            names = [name or f"column {k + 1}" for k, name in enumerate(names + [""] * (width - len(names)))]
            columns.start(names if header else [""] * width, first[0][0])
            for number, row in first[1:] if header else first:
                add(number, row)

        def add(number: int, row: tuple) -> None:
            used = _used(row)
            if used > columns.width:
                raise DataError(f"this row has a value in column {_letters(used)}, beyond the table's "
                                f"{columns.width} columns", path=path, row=number,
                                expected=f"a table of {columns.width} columns on {where}, nothing to its right")
            batch.append(row)
            numbers.append(number)
            if len(batch) >= BATCH_ROWS:
                flush(number)

        last = 0
        for number, row in _rows(ws):
            last = number
            if not _used(row):
                continue
            if columns.names is None:
                first.append((number, row))
                if len(first) >= WIDTH_ROWS:
                    begin()
                continue
            add(number, row)
        if columns.names is None and first:
            begin()
        flush(last)
        if columns.names is None:
            raise EmptyData(f"{where} is empty", path=path, expected="a table: a header row and rows of data")
        if columns.rows == 0:
            raise DataError(f"{where} has a header row but no data rows" if header else f"{where} has no data rows",
                            path=path, expected="rows of data below the header" if header else "rows of data")
        return columns.table()


def _letters(count: int) -> str:
    """Excel's name of column number ``count`` (1 → A, 27 → AA)."""
    name = ""
    while count:
        count, rest = divmod(count - 1, 26)
        name = chr(65 + rest) + name
    return name


def read_baskets(source: Source, *, sheet=None, header: bool, budget: MemoryBudget, cancel=None, progress=None):
    """``transactions`` from a sheet: one person per row, one item per filled cell.

    Returns ``(rows, cols, n_rows, labels)`` for :func:`.dataset.build_incidence`. A blank row
    between baskets is a person with no items; blank rows after the last basket are not people.
    """
    from .tabular import BYTES_PER_DISTINCT, value_text

    path = source.path
    if source.compressed:
        raise DataError("this Excel file is compressed with gzip", path=path,
                        expected="the .xlsx file itself: uncompress it first")
    with workbook(path) as book:
        ws = _sheet(book, sheet, path)
        total = _size(ws)
        index: dict[str, int] = {}
        rows_parts, cols_parts = [], []
        rows, cols = [], []
        people, blank, skipped_header, distinct = 0, 0, not header, 0
        last = 0
        for number, row in _rows(ws):
            last = number
            items = [value_text(v) for v in row if not _blank(v)]
            if not items:
                blank += people > 0
                continue
            if not skipped_header:
                skipped_header = True  # column names are not items
                continue
            people += blank
            blank = 0
            for item in items:
                code = index.get(item)
                if code is None:
                    code = index[item] = len(index)
                    distinct += len(item) + BYTES_PER_DISTINCT
                rows.append(people)
                cols.append(code)
            people += 1
            if len(rows) >= 1 << 18 or number % BATCH_ROWS == 0:
                rows_parts.append(np.array(rows, dtype=np.int32))
                cols_parts.append(np.array(cols, dtype=np.int32))
                rows, cols = [], []
                held = 8 * sum(part.size for part in rows_parts) + distinct
                budget.check(held / max(_fraction(number, total), 1e-3) if total else held, path, projected=bool(total))
                if cancel is not None:
                    cancel.check()
                if progress is not None:
                    progress(_fraction(number, total), f"Read {people:,} baskets of sheet '{ws.title}'")
        rows_parts.append(np.array(rows, dtype=np.int32))
        cols_parts.append(np.array(cols, dtype=np.int32))
        if progress is not None:
            progress(1.0, f"Read {people:,} baskets of sheet '{ws.title}'")
    if people == 0:
        raise DataError(f"sheet '{ws.title}' holds no baskets", path=path, expected="one person per row, items in cells")
    labels = [None] * len(index)
    for label, code in index.items():
        labels[code] = label
    return np.concatenate(rows_parts), np.concatenate(cols_parts), people, labels
