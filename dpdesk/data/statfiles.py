"""SPSS (``.sav``, ``.zsav``), Stata (``.dta``) and SAS (``.sas7bdat``, ``.xpt``) data files.

These files hold one table: one row per record (a person, for microdata) and named
variables. They are read with pyreadstat (the ReadStat library) in chunks of rows, each
chunk turned into the same compact table as a CSV file (:class:`.tabular.Table`), so the
same ``pairs``, ``matrix``, ``records`` and ``cells`` layouts, checks and error messages apply.
Rows are numbered from 1 in messages ("row 12"): these files have no lines.

* **Value labels** (SPSS, Stata) replace the codes they label (``1`` → ``Female``): a steward and
  a reader of the release know the labels, and they become item labels or attribute values. A
  value without a label stays as its number. SAS keeps its formats in a separate catalog
  (``.sas7bcat``), which is not read: SAS files give their codes.
* **Missing values** — SPSS system-missing and user-defined missing values, Stata's ``.`` and
  ``.a``–``.z``, SAS's ``.`` and special missing values — are missing, exactly as an empty CSV
  field is: a missing person or item is reported with its row number, a 0/1 matrix cell must
  be 0 or 1, and a record's missing attribute is the empty value.
* **Text** is decoded with the encoding the file declares (SPSS, SAS, Stata 14 and later are
  UTF-8 or say what they are); old Stata and SAS transport files may need ``encoding=``.
* A damaged file, or another kind of file under such a name, is a one-line :class:`DataError`
  that names the file.

No Qt here (``docs/ARCHITECTURE.md`` §1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataError, EmptyData
from .textio import MemoryBudget, Source, format_size

#: kind → (what a steward calls it, the pyreadstat function that reads it)
KINDS = {
    "sav": ("SPSS", "read_sav"),
    "dta": ("Stata", "read_dta"),
    "sas7bdat": ("SAS", "read_sas7bdat"),
    "xpt": ("SAS transport (XPORT)", "read_xport"),
}
EXTENSIONS = {".sav": "sav", ".zsav": "sav", ".dta": "dta", ".sas7bdat": "sas7bdat", ".xpt": "xpt"}
#: the first 32 bytes of every SAS7BDAT file
SAS7BDAT_MAGIC = bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xC2, 0xEA, 0x81, 0x60, 0xB3, 0x14, 0x11, 0xCF,
                        0xBD, 0x92, 0x08, 0x00, 0x09, 0xC7, 0x31, 0x8C, 0x18, 0x1F, 0x10, 0x11])
#: the first byte of Stata files before format 117 (versions 102 to 115), then the byte order (1 or 2)
_OLD_STATA = {102, 103, 104, 105, 108, 110, 111, 112, 113, 114, 115}
#: values (rows × variables) parsed per call: pyreadstat holds the interpreter while it parses, so a
#: chunk is kept to a few tens of milliseconds (the window stays responsive while a worker reads)
CHUNK_VALUES = 100_000
#: ReadStat names encodings as iconv does
_ICONV = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8", "latin-1": "ISO-8859-1", "cp1252": "CP1252"}


def kind_of(head: bytes, path=None) -> str | None:
    """``sav``, ``dta``, ``sas7bdat`` or ``xpt`` from a file's first bytes (None: none of these)."""
    if head[:4] in (b"$FL2", b"$FL3"):
        return "sav"
    if head.startswith(b"<stata_dta>"):
        return "dta"
    if head[:32] == SAS7BDAT_MAGIC:
        return "sas7bdat"
    if head.startswith(b"HEADER RECORD*******LIB"):
        return "xpt"
    if path is not None and Path(path).suffix.lower() == ".dta" and len(head) >= 2 and head[0] in _OLD_STATA \
            and head[1] in (1, 2):
        return "dta"
    return None


def kind_name(kind: str) -> str:
    return KINDS[kind][0]


def _iconv(encoding: str | None) -> str | None:
    if encoding in (None, "", "auto", "binary"):
        return None
    return _ICONV.get(encoding.lower(), encoding)


def _call(kind: str, path, *, encoding: str | None = None, **kwargs):
    """A pyreadstat read of ``path``, any failure as a one-line :class:`DataError` naming the file."""
    import pyreadstat

    function = getattr(pyreadstat, KINDS[kind][1])
    extra = {}
    if _iconv(encoding):
        extra["encoding"] = _iconv(encoding)
    if kind in ("sav", "dta") and not kwargs.get("metadataonly"):  # SAS keeps its labels in a separate catalog
        extra.update(apply_value_formats=True, formats_as_category=False)
    try:
        return function(str(path), **kwargs, **extra)
    except MemoryError:
        raise
    except Exception as error:  # noqa: BLE001 - ReadStat, pyreadstat, iconv and pandas errors alike
        raise damaged(kind, path, error) from None


def damaged(kind: str, path, error: Exception) -> DataError:
    """The error for a file pyreadstat cannot read: what it is, what was found, what to do."""
    name = kind_name(kind)
    found = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
    found = "".join(ch if ch.isprintable() else "?" for ch in found).strip(" :.") or type(error).__name__
    if "encoding" in found.lower() or "convert string" in found.lower() or isinstance(error, UnicodeError):
        return DataError(f"the text in this {name} file cannot be decoded ({found})", path=path,
                         expected="the file's text encoding given with --encoding (e.g. latin-1 or cp1252)")
    return DataError(f"the file is damaged or incomplete, or it is not in {name} format (ReadStat: {found})",
                     path=path, expected=f"a complete {name} file ({_extensions(kind)}) as saved by {_saved_by(kind)}")


def _extensions(kind: str) -> str:
    return ", ".join(ext for ext, k in EXTENSIONS.items() if k == kind)


def _saved_by(kind: str) -> str:
    return {"sav": "SPSS or PSPP", "dta": "Stata", "sas7bdat": "SAS", "xpt": "SAS (XPORT)"}[kind]


def not_this_kind(path, kind: str) -> DataError:
    """The error for a file named like ``kind`` whose first bytes are not such a file's."""
    name = kind_name(kind)
    return DataError(f"the file is named like a {name} file but does not start like one: it is damaged, or another "
                     "kind of file renamed", path=path, expected=f"a complete {name} file as saved by {_saved_by(kind)}")


@dataclass
class StatPreview:
    """What the first rows of a data file show: variable names, rows as text, and facts for the wizard."""

    kind: str
    columns: list[str]
    rows: list[list[str]]
    n_rows: int | None
    encoding: str
    labelled: list[str] = field(default_factory=list)  # variables with value labels
    variable_labels: dict[str, str] = field(default_factory=dict)


def preview(path, kind: str, lines: int = 20, encoding: str | None = None) -> StatPreview:
    """Variable names and the first ``lines`` rows as the importer reads them (labels applied)."""
    from .tabular import value_text

    frame, meta = _call(kind, path, row_limit=max(lines, 1), encoding=encoding)
    columns = [str(c) for c in meta.column_names]
    rows = [[value_text(v) for v in row] for row in frame.itertuples(index=False)][:lines]
    labels = getattr(meta, "variable_value_labels", None) or {}
    names = getattr(meta, "column_names_to_labels", None) or {}
    return StatPreview(kind, columns, rows, getattr(meta, "number_rows", None),
                       str(getattr(meta, "file_encoding", None) or "declared by the file"),
                       labelled=[c for c in columns if labels.get(c)],
                       variable_labels={str(k): str(v) for k, v in names.items() if v})


def read_statfile(source: Source, kind: str, *, encoding: str | None = None, wanted=None,
                  budget: MemoryBudget, cancel=None, progress=None):
    """The file's table (:class:`.tabular.Table`, rows numbered from 1), in chunks of rows.

    ``wanted(names)`` names the variables to keep (None: all); ``progress`` and ``cancel`` are
    heard between chunks.
    """
    from .tabular import _Columns, value_text

    path = source.path
    name = kind_name(kind)
    if source.compressed:
        raise DataError(f"this {name} file is compressed with gzip", path=path,
                        expected=f"the {name} file itself: uncompress it first (e.g. with gunzip)")
    _, meta = _call(kind, path, metadataonly=True, encoding=encoding)
    names = [str(c) for c in meta.column_names]
    if not names:
        raise DataError(f"the {name} file has no variables", path=path, expected="at least one variable (column)")
    total = getattr(meta, "number_rows", None)
    if total == 0:
        raise EmptyData(f"the {name} file holds no records", path=path, expected="at least one row of data")
    columns = _Columns(source, budget, wanted, True, "utf-8")
    columns.raw_keys, columns.unit = False, "row"
    columns.start(names, 0)
    kept = [names[k] for k in columns.keep]
    step = max(500, CHUNK_VALUES // max(len(names), 1))
    done = 0
    while True:
        if cancel is not None:
            cancel.check()
        frame, _ = _call(kind, path, row_offset=done, row_limit=step, usecols=kept, encoding=encoding)
        count = len(frame)
        if count == 0:
            break
        for k, column in enumerate(kept):
            columns.add_objects(k, frame[column].to_numpy(dtype=object), value_text)
        del frame
        fraction = min((done + count) / total, 1.0) if total else 0.5
        columns.add_lines(np.arange(done + 1, done + count + 1, dtype=np.int64),
                          int(source.size * fraction) if total else source.size)
        done += count
        if progress is not None:
            progress(fraction, f"Read {done:,} rows of the {name} file" + (f" (of {total:,})" if total else ""))
        if count < step or (total and done >= total):
            break
    if done == 0:
        raise EmptyData(f"the {name} file holds no records", path=path, expected="at least one row of data")
    if total and done < total:
        raise DataError(f"the {name} file ends after {done:,} of its {total:,} rows: it is incomplete", path=path,
                        expected=f"a complete {name} file ({format_size(source.size)} read)")
    return columns.table()
