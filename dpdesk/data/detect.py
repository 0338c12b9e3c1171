"""Guessing how a file is laid out: format, delimiter, header, encoding, columns.

The guess is shown to the steward in the import wizard (and used by ``dpdesk inspect``)
and every part of it can be overridden. Only the head of the file is looked at: a text
file's first lines (:mod:`.layout` guesses from them), or what the file's reader
(:mod:`.readers`: Parquet, Excel, SPSS, Stata, SAS) shows of its first rows.

When the head does not settle the question — one line that could be a basket or a
header, column names above ragged lines, three words per line that could be baskets or
pairs — :attr:`Sniffed.unsure` says so in words and :attr:`Sniffed.alternatives` lists
the readings; ``dpdesk.load`` (and so the CLI) then refuses with those options instead
of guessing, and the wizard can ask. A first line that looks like column names is never
read as items.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import DataError, EmptyData
from . import readers
from .layout import Sniffed, guess_delimiter, layout_of_rows, split_line
from .textio import HEAD_BYTES, NOT_TEXT_EXPECTED, Source, detect_encoding, head_lines, open_source


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
    if kind is not None:
        reader = readers.reader_for(kind)
        if not reader.compressed and (source or open_source(path)).compressed:
            raise DataError(f"this {readers.names_of(kind)[0]} file is compressed with gzip", path=path,
                            expected="the file itself: uncompress it first (e.g. with gunzip)")
        return reader.sniff(path, kind, source=source, encoding=encoding, sheet=sheet)
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
    sniffed = layout_of_rows(rows, delimiter, encoding_used)
    sniffed.head = head
    return sniffed


def binary_kind(head: bytes, path) -> str | None:
    """What holds the table when it is not text: a kind of :mod:`.readers` ("parquet", "xlsx", "sav", …).

    Decided by the first bytes (and the name, for old Stata files and ZIP archives). A file
    named like one of these whose first bytes are not such a file's, a document or image saved
    as a data file and a ZIP archive that is not a workbook are refused here, with what to do
    instead.
    """
    kind = readers.recognise(head, path)
    if kind is not None:
        return kind
    for magic, what in DOCUMENT_MAGIC:
        if head.startswith(magic):
            raise DataError(f"this is {what}, not a data table", path=path,
                            expected=SQLITE_EXPECTED if magic == SQLITE_MAGIC else NOT_TEXT_EXPECTED)
    if head[:4] == ZIP_MAGIC:
        raise DataError("this is a ZIP archive, not a data file", path=path,
                        expected="the data file inside it (unpack the archive first), or an Excel workbook (.xlsx)")
    named = readers.named_like(path)
    refusal = named[0].misnamed(path, named[1]) if named is not None else None
    if refusal is not None:
        raise refusal
    return None


ZIP_MAGIC = b"PK\x03\x04"
SQLITE_MAGIC = b"SQLite format 3\x00"
SQLITE_EXPECTED = "a query on it: --sql sqlite:///FILE --query \"SELECT …\" (or Read from a database… in the app)"
#: files that are often renamed or saved by mistake as a data file: what they are, said by their first bytes
DOCUMENT_MAGIC = ((b"%PDF-", "a PDF document"), (b"\x89PNG\r\n\x1a\n", "a PNG image"),
                  (b"\xff\xd8\xff", "a JPEG image"), (b"GIF87a", "a GIF image"), (b"GIF89a", "a GIF image"), (b"{\\rtf", "a Rich Text (RTF) document"),
                  (b"%!PS", "a PostScript document"), (b"\x7fELF", "a program"), (SQLITE_MAGIC, "an SQLite database"),
                  (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
                   "an old Microsoft Office file (a Word, Excel or PowerPoint 97–2003 file)"))


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
    if sniffed.binary:
        reader = readers.find(sniffed.kind)
        if reader is not None and reader.preview is not None:
            return reader.preview(sniffed, header=header, sheet=sheet, lines=lines)
        return list(sniffed.columns), [list(r) for r in sniffed.preview[:lines]]
    return preview(sniffed.head, delimiter=delimiter, header=header, encoding=encoding, lines=lines)


def preview(raw: bytes, *, delimiter: str | None, header: bool, encoding: str,
            lines: int = 20) -> tuple[list[str], list[list[str]]]:
    """Column names and the first rows of a text file as the importer would split them (for the wizard)."""
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
