"""Read any supported file into memory as a :class:`Dataset` or :class:`CellCounts`
(:func:`dpdesk.load`, in :mod:`dpdesk.loading`, may hand it to an engine instead).

Formats (``format=``):

* ``transactions`` — one person per line, items separated by spaces (FIMI) or a delimiter;
* ``pairs`` — CSV/TSV/Parquet with a person column and an item column (``person=``,
  ``item=``, by name or 0-based position; default the first two), optional ``value=``
  column where non-zero means present;
* ``matrix`` — wide 0/1 CSV, header = item names, optional id column (``id_column=``);
* ``records`` — microdata: with ``attributes=[...]`` the cell counts over those attributes
  (one row is one person), without it the incidence view with one item per attribute value
  of the ``item_columns`` (default: every column); with ``person=`` (a column) the rows
  that share its value are one person, their items taken together;
* ``cells`` — a table of attribute columns and a count column (``count=``).

Files: text (CSV, TSV, FIMI; gzip read transparently), Parquet, Excel workbooks (``.xlsx``;
``sheet=`` by name or 0-based position, :mod:`.spreadsheet`), and SPSS, Stata and SAS files
(``.sav``, ``.dta``, ``.sas7bdat``, ``.xpt``; :mod:`.statfiles`), each recognised by its first bytes.

Common options: ``encoding`` (auto, utf-8, utf-8-sig, latin-1, cp1252), ``delimiter``
(auto, ``,``, ``\\t``, ``;``, ``|``, ``whitespace``), ``header`` (auto, True, False),
``name``, ``column_names`` (names for the columns of a table without a header line). Gzip is
read transparently; CRLF line ends are fine.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import DataError, EmptyData, ParameterError
from ..tasks import CancelToken, ProgressFn, no_progress, scaled
from .dataset import CellCounts, Dataset, build_incidence
from . import readers
from .detect import binary_kind, sniff
from .layout import FORMATS
from .tabular import (columns_needed, matrix_to_dataset, pairs_to_dataset, read_table, records_to_cells,
                      records_to_dataset, table_to_cells)
from .textio import give_back_free_memory, memory_budget, open_source, read_head
from .transactions import parse_transactions, to_csr

OPTION_NAMES = {"encoding", "delimiter", "header", "name", "person", "item", "value", "keep_values",
                "id_column", "attributes", "domains", "count", "memory_limit", "sheet", "item_columns",
                "column_names"}
#: the import options a dataset's ``source`` records (how to read it again), besides path and layout
RECORDED_OPTIONS = ("person", "item", "value", "keep_values", "id_column", "attributes", "domains", "count",
                    "item_columns", "column_names")
#: one sentence: cell counts and several rows per person (the sparse mechanisms' Δ = 1 would not hold)
CELLS_NEED_ONE_ROW = ("Cell counts take each row as one person, so they cannot be made from records in which a "
                      "person may appear on several rows: count one item per attribute value instead (each "
                      "person's rows are then taken together), or give a table with one row per person.")


def check_options(format: str, options: dict) -> None:
    """Refuse combinations of import options that cannot hold, before anything is read."""
    if options.get("attributes") and options.get("item_columns"):
        raise ParameterError("Give the attributes of cell counts or the item columns of one item per value, not "
                             "both (--attributes or --item-columns).")
    if options.get("item_columns") and format not in ("auto", "records"):
        raise ParameterError(f"Item columns are for records (one item per attribute value), not for {format}.")
    if options.get("person") is not None and (format == "cells" or (
            options.get("attributes") and format in ("auto", "records"))):
        raise ParameterError(CELLS_NEED_ONE_ROW)
    if options.get("column_names") is not None:
        from .table import check_column_names

        check_column_names(options["column_names"])
        if options.get("header") is True:
            raise ParameterError("The file's first line holds its column names (header); column names are given "
                                 "only for a file without a header line.")


def _delimiter(option, sniffed_delimiter):
    if option in (None, "auto"):
        return sniffed_delimiter
    if option in ("whitespace", "space", " ", "spaces"):
        return None
    if option in ("tab", "\\t"):
        return "\t"
    if option == "comma":
        return ","
    if option == "semicolon":
        return ";"
    if not isinstance(option, str) or len(option) != 1:
        raise ParameterError(f"The delimiter {option!r} must be one character (or 'whitespace').")
    return option


def read(path, format: str = "auto", *, progress: ProgressFn | None = None,
         cancel: CancelToken | None = None, **options) -> Dataset | CellCounts:
    """Read ``path`` into memory (see the module documentation for formats and options).

    The front door that may hand the file to an engine instead is :func:`dpdesk.loading.load`.
    """
    check_options(format, options)
    progress = progress or no_progress
    unknown = set(options) - OPTION_NAMES
    if unknown:
        raise ParameterError("Unknown import option(s): " + ", ".join(sorted(unknown))
                             + ". Known options: " + ", ".join(sorted(OPTION_NAMES)) + ".")
    if format not in ("auto",) + FORMATS:
        raise ParameterError(f"Unknown format '{format}'; choose one of: auto, " + ", ".join(FORMATS) + ".")
    path = Path(path)
    progress(0.0, "Reading file")
    budget = memory_budget(options.get("memory_limit"))
    source = open_source(path)
    encoding = options.get("encoding", "auto") or "auto"
    sheet = options.get("sheet")
    sniffed = sniff(path, source=source, encoding=encoding, sheet=sheet)
    reader = readers.find(sniffed.kind)  # None: a text file
    if sheet not in (None, "") and not (reader is not None and reader.sheets):
        raise ParameterError(f"The sheet option is for Excel workbooks; {path.name} is {sniffed.a_kind} file.")
    fmt, delimiter, header = layout(sniffed, format, options, path)
    name = options.get("name") or display_name(path)
    source_record = {"path": str(path), "format": fmt, "encoding": sniffed.encoding,
                     "delimiter": "whitespace" if delimiter is None else delimiter, "header": header}
    for key in RECORDED_OPTIONS:
        if key in options and options[key] is not None:
            source_record[key] = options[key]
    if reader is not None and reader.sheets:
        source_record["sheet"] = sniffed.sheet
    if cancel is not None:
        cancel.check()
    if fmt == "transactions" and reader is not None and reader.read_baskets is not None:
        rows, cols, n_rows, labels = reader.read_baskets(source, sheet=sniffed.sheet, header=header, budget=budget,
                                                         cancel=cancel, progress=scaled(progress, 0.05, 0.85))
        progress(0.9, "Building the matrix")
        dataset = build_incidence(rows, cols, n_rows, labels, name=name, source=source_record)
    elif fmt == "transactions":
        if sniffed.binary:
            raise DataError(f"{sniffed.a_kind} file holds a table, which cannot be read as transactions",
                            path=path, expected=f"pairs, matrix, records or cells for {sniffed.a_kind} file")
        lines = parse_transactions(source, delimiter=delimiter, encoding=sniffed.encoding,
                                   automatic=encoding == "auto", header=header, budget=budget,
                                   progress=lambda f, m="": progress(0.05 + 0.85 * f, m), cancel=cancel)
        csr, labels = to_csr(lines)
        del lines
        give_back_free_memory()
        if options.get("delimiter") not in (None, "auto") and csr.shape[0] > 1 and np.all(np.diff(csr.indptr) <= 1):
            _refuse_a_delimiter_that_never_splits(labels, delimiter, path)
        dataset = Dataset(csr, labels, name=name, source=source_record)
    else:
        table = read_table(source, delimiter=delimiter, header=header, encoding=sniffed.encoding,
                           automatic=encoding == "auto", parquet=sniffed.parquet, budget=budget, cancel=cancel,
                           wanted=columns_needed(fmt, options), kind=sniffed.kind, sheet=sniffed.sheet,
                           progress=scaled(progress, 0.05, 0.6), names=given_names(sniffed, options, path))
        progress(0.6, "Checking the table")
        if cancel is not None:
            cancel.check()
        if fmt == "pairs":
            dataset = pairs_to_dataset(table, person=options.get("person", 0), item=options.get("item", 1),
                                       value=options.get("value"), keep_values=bool(options.get("keep_values")),
                                       name=name, source=source_record)
        elif fmt == "matrix":
            dataset = matrix_to_dataset(table, id_column=options.get("id_column", "auto"), name=name, source=source_record)
        elif fmt == "records":
            if options.get("attributes"):
                dataset = records_to_cells(table, attributes=list(options["attributes"]),
                                           domains=options.get("domains"), name=name, source=source_record)
            else:
                dataset = records_to_dataset(table, person=options.get("person"),
                                             item_columns=options.get("item_columns"), name=name,
                                             source=source_record)
        else:
            dataset = table_to_cells(table, count=options.get("count"), attributes=options.get("attributes"),
                                     domains=options.get("domains"), name=name, source=source_record)
    if dataset.kind == "incidence" and dataset.n_rows == 0:
        raise EmptyData("the file contains no people", path=path, expected="at least one line of data")
    progress(1.0, "Loaded")
    return dataset


def given_names(sniffed, options: dict, path) -> list[str] | None:
    """The steward's column names, for a table without a header line (None when not given)."""
    names = options.get("column_names")
    if names is None:
        return None
    if sniffed.named_columns:
        raise ParameterError(f"{Path(path).name} is {sniffed.a_kind} file, which names its columns itself; "
                             "column names are given only for a text table or a sheet without a header line.")
    from .table import check_column_names

    return check_column_names(names)


def read_in_memory_only(path) -> bool:
    """Whether the file is a spreadsheet or an SPSS, Stata or SAS file, which only the memory path reads."""
    kind = binary_kind(read_head(path, 4096), path)
    return kind is not None and not readers.reader_for(kind).engines


def display_name(path: Path) -> str:
    name = path.name
    for suffix in (".gz",):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def _refuse_a_delimiter_that_never_splits(labels, delimiter, path) -> None:
    """A delimiter the steward gave that splits no line, where most "items" hold another one:
    whole baskets would be published as item labels (each a person's list). One item per person
    is possible, so only labels that are mostly lists of another delimiter are refused (a
    person with one item has no delimiter on the line, hence "most", not "all")."""
    sample = [str(label) for label in labels[:1000]]
    given = "whitespace" if delimiter is None else repr(delimiter)
    for other, word in ((";", "semicolon"), (",", "comma"), ("\t", "tab"), ("|", "pipe")):
        if other != delimiter and len(sample) > 1 and sum(other in label for label in sample) * 2 > len(sample):
            raise DataError(f"no line is split by the delimiter given ({given}) but most lines hold a {word}, so "
                            "each person's whole basket would be read as one item", path=path,
                            expected=f"--delimiter {other!r}, or no --delimiter (dpdesk then finds it)")


def layout(sniffed, format: str, options: dict, path) -> tuple[str, str | None, bool]:
    """(format, delimiter, header) from the detector's guess and the steward's options.

    An uncertain guess the options do not settle is refused, with the options that would.
    """
    fmt = sniffed.format if format == "auto" else format
    if (options.get("attributes") or options.get("item_columns")) and format == "auto" and fmt in ("pairs", "matrix"):
        fmt = "records"
    delimiter = _delimiter(options.get("delimiter", "auto"), sniffed.delimiter)
    header_option = options.get("header", "auto")
    header = sniffed.header if header_option in (None, "auto") else bool(header_option)
    if options.get("column_names") is not None:
        header = False  # names given by the steward: the first line is data
    if format == "auto" and sniffed.unsure and not _settled(sniffed, options):
        raise sniffed.refusal(path)
    return fmt, delimiter, header


def _settled(sniffed, options: dict) -> bool:
    """Whether the steward's options answer the detector's question (e.g. a given header or delimiter)."""
    if "header" in sniffed.settled_by and options.get("column_names") is not None:
        return True  # names given for the columns: there is no header line
    return any(options.get(key) not in (None, "auto") for key in sniffed.settled_by)


def unit_of_privacy(source: dict, kind: str = "incidence") -> dict:
    """Who one person is in this data, in one sentence for the public report (and the column, if any).

    Made from the declared import options only (the layout and the person column the steward
    named), never from the data, so it is the same for neighbouring datasets.
    """
    fmt = source.get("format")
    workbook = str(source.get("path", "")).lower().endswith((".xlsx", ".xlsm"))
    row = "row of the query's result" if source.get("sql") else (
        "line of the data file" if fmt == "transactions" and not workbook else "row of the data file")
    person = source.get("person column")
    if fmt == "cells" or (kind == "cells" and fmt != "records"):
        return {"statement": "Each person is counted once, in one cell of the table of counts."}
    if person is not None and fmt in ("pairs", "records"):
        return {"statement": f"One person is one value of the column '{person}': a person may appear on several "
                             "rows, and all the rows with their value are taken together (an item counts once per "
                             "person).", "person_column": person}
    if fmt == "transactions":
        return {"statement": f"One person is one {row}, which holds all of their items."}
    if kind == "cells":
        return {"statement": f"One person is one {row}: nobody appears on more than one row, so each person is "
                             "counted in one cell."}
    return {"statement": f"One person is one {row}: nobody appears on more than one row."}
