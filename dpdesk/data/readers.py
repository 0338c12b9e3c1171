"""The readers of files that hold a table but are not text: Parquet, Excel workbooks, SPSS, Stata, SAS.

Each reader is a module of this package that registers a :class:`TableReader`: how it recognises
its files by their first bytes, how it guesses their layout (a :class:`~.layout.Sniffed`), how
it reads their table into the compact :class:`~.table.Table` every format is built from, and
what it says of a file named like its kind whose bytes are not. Text files (CSV, TSV,
transaction lists) are read by :mod:`.tabular` and :mod:`.transactions`.

Adding a reader touches two places: its own module (as ``data/arrow_ipc.py``, calling
:func:`register` at import), and :data:`_MODULES` below, which names it. Nothing else asks which
kind of file a table came from: :mod:`.detect` sniffs through :func:`recognise` and
:meth:`TableReader.sniff`, :mod:`.tabular` reads through :meth:`TableReader.read`, the wizard
and the file dialogs take their names and extensions from here. docs/ARCHITECTURE.md §2 walks
through an example.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

_MODULES = ("parquet", "arrow_ipc", "spreadsheet", "statfiles")  # the readers, in the order they recognise files
_READERS: list["TableReader"] = []
_loaded = False
#: kinds that no registered reader holds: text files, and a database query (dpdesk.engine.sql)
OTHER_NAMES = {"text": ("text", "a text"), "database": ("database query", "a database query")}


@dataclass(frozen=True)
class TableReader:
    """One kind (or family) of binary file that holds a table.

    ``names`` maps each kind to its name in messages, without and with its article
    (``"sav": ("SPSS", "an SPSS")``); ``extensions`` maps file name endings to kinds (file
    dialogs, and the refusal of a misnamed file); ``title`` names the files for a person
    ("SPSS, Stata and SAS files").

    * ``recognise(head, path)`` → the kind, from the file's first bytes (and its name where the
      bytes alone cannot tell); None if it is not this reader's; it may raise a refusal in words
      for a file it knows it cannot read (an old .xls workbook).
    * ``sniff(path, kind, *, source, encoding, sheet)`` → the :class:`~.layout.Sniffed` layout.
    * ``read(source, kind, *, header, encoding, wanted, budget, cancel, progress, sheet, names)``
      → the :class:`~.table.Table` (``encoding`` None: the file says; ``names``: the steward's
      column names for a table without a header line).
    * ``misnamed(path, kind)`` → the error for a file named like ``kind`` whose bytes are not
      (None: look at it as text).
    * ``compressed``: whether a gzip-compressed file of this kind is read (else refused).
    * ``engines``: whether DuckDB and Spark read it too (else it is always read in memory).
    * ``sheets``: whether the file holds several tables to choose from (``--sheet``).
    * ``read_baskets`` (optional): rows of items, for a file that holds baskets rather than a
      table (a sheet with one person per row); ``(rows, cols, n_rows, labels)``.
    * ``preview`` (optional): ``(sniffed, header, sheet, lines)`` → columns and first rows as they
      will be read with these options; by default the sniffed columns and rows.
    """

    names: dict[str, tuple[str, str]]
    extensions: dict[str, str]
    title: str  # the files in a file dialog's list of kinds and in the wizard's words: "Excel workbooks"
    recognise: Callable
    sniff: Callable
    read: Callable
    misnamed: Callable
    compressed: bool = False
    engines: bool = False
    sheets: bool = False
    read_baskets: Callable | None = None
    preview: Callable | None = None


def register(reader: TableReader) -> TableReader:
    """Add a reader (called by its module at import)."""
    taken = {kind for other in _READERS for kind in other.names} | set(OTHER_NAMES)
    if taken & set(reader.names):
        raise ValueError(f"reader kinds {sorted(taken & set(reader.names))} are registered already")
    _READERS.append(reader)
    return reader


def readers() -> list[TableReader]:
    """The registered readers, in the order of :data:`_MODULES`."""
    global _loaded
    if not _loaded:
        _loaded = True
        for name in _MODULES:
            importlib.import_module(f"{__package__}.{name}")
    order = [f"{__package__}.{name}" for name in _MODULES]
    return sorted(_READERS, key=lambda reader: order.index(reader.recognise.__module__)
                  if reader.recognise.__module__ in order else len(order))


def one_extension_per_kind(reader: TableReader) -> list[str]:
    """Each kind's first file name ending (".sav", ".dta", ...), for words rather than dialogs."""
    first: dict[str, str] = {}
    for extension, kind in reader.extensions.items():
        first.setdefault(kind, extension)
    return list(first.values())


def find(kind: str) -> TableReader | None:
    """The reader of a kind (None for text, a database query, or an unknown kind)."""
    for reader in readers():
        if kind in reader.names:
            return reader
    return None


def reader_for(kind: str) -> TableReader:
    reader = find(kind)
    if reader is None:
        raise KeyError(kind)
    return reader


def recognise(head: bytes, path) -> str | None:
    """The kind of a binary table file from its first bytes (None: no reader's)."""
    for reader in readers():
        kind = reader.recognise(head, path)
        if kind is not None:
            return kind
    return None


def named_like(path) -> tuple[TableReader, str] | None:
    """The reader and kind a file's name (its extension) promises, if any."""
    suffix = Path(path).suffix.lower()
    for reader in readers():
        if suffix in reader.extensions:
            return reader, reader.extensions[suffix]
    return None


def names_of(kind: str) -> tuple[str, str]:
    """A kind's name in messages, without and with its article."""
    if kind in OTHER_NAMES:
        return OTHER_NAMES[kind]
    reader = find(kind)
    return reader.names[kind] if reader is not None else (kind, f"a {kind}")


def a_kind(kind: str) -> str:
    return names_of(kind)[1]


def extensions() -> tuple[str, ...]:
    """Every file name ending a registered reader takes (for file dialogs)."""
    return tuple(ext for reader in readers() for ext in reader.extensions)
