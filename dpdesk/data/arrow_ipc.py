"""Arrow IPC files (Feather version 2, ``.arrow``/``.feather``): a table with named columns.

A reader of :mod:`.readers` (kind ``arrow``), and the worked example of docs/ARCHITECTURE.md §2
("Adding a reader"): this module and its name in ``readers._MODULES`` are all it took. R's
``arrow::write_feather``, pandas' ``to_feather`` and Polars write these files. Recognised by
their magic bytes (``ARROW1``), read batch by batch into the compact :class:`~.table.Table`
(values as the text they print as, as Parquet's), in memory only: the engines are not asked.
"""

from __future__ import annotations

from ..errors import DataError
from .layout import COUNT_NAMES, Sniffed
from .readers import TableReader, register
from .table import Table, arrow_text, table_from_batches
from .textio import MemoryBudget, Source, open_source

MAGIC = b"ARROW1"
NAMES = {"arrow": ("Arrow IPC (Feather)", "an Arrow IPC (Feather)")}


def _damaged(error: Exception, path) -> DataError:
    first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
    first = "".join(ch if ch.isprintable() else "?" for ch in first).strip(" :") or type(error).__name__
    return DataError(f"the Arrow IPC (Feather) file is damaged ({first})", path=path,
                     expected="a complete Arrow IPC file, as written by write_feather or to_feather")


def _open(source: Source):
    import pyarrow as pa

    try:
        return pa.ipc.open_file(pa.memory_map(str(source.path)))
    except Exception as error:  # pyarrow raises many types for damaged files
        raise _damaged(error, source.path) from None


def _read(source: Source, kind: str, *, header=True, encoding=None, wanted=None, budget: MemoryBudget,
          cancel=None, progress=None, sheet=None, names=None) -> Table:
    reader = _open(source)
    try:
        n_rows = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))  # memory-mapped

        def batches(positions):
            for i in range(reader.num_record_batches):
                if cancel is not None:
                    cancel.check()
                if progress is not None:
                    progress(i / max(reader.num_record_batches, 1), "Reading the Arrow file")
                yield reader.get_batch(i).select(positions)

        return table_from_batches(list(reader.schema.names), n_rows, batches, source.path, budget, wanted,
                                  what="Arrow IPC (Feather) file")
    except DataError:
        raise
    except Exception as error:
        raise _damaged(error, source.path) from None


def _sniff(path, kind: str, *, source: Source | None = None, encoding: str = "auto", sheet=None) -> Sniffed:
    reader = _open(source or open_source(path))
    try:
        columns = [str(name) for name in reader.schema.names]
        first = reader.get_batch(0).slice(0, 20).to_pylist() if reader.num_record_batches else []
    except Exception as error:
        raise _damaged(error, path) from None
    rows = [["" if row[name] is None else arrow_text(row[name]) for name in reader.schema.names] for row in first]
    fmt = "cells" if any(c.lower() in COUNT_NAMES for c in columns) else ("pairs" if len(columns) <= 4 else "records")
    return Sniffed(fmt, None, True, "binary", columns, rows, parquet=False, kind="arrow", names=NAMES["arrow"],
                   header_line=False)


def _recognise(head: bytes, path) -> str | None:
    return "arrow" if head[:6] == MAGIC else None


def _misnamed(path, kind: str):
    return DataError("the file is named like an Arrow IPC (Feather) file but does not start like one: it is damaged, "
                     "another kind of file renamed, or a Feather version 1 file", path=path,
                     expected="an Arrow IPC file (Feather version 2), as written by write_feather or to_feather")


register(TableReader(NAMES, {".arrow": "arrow", ".feather": "arrow"}, "Arrow IPC (Feather) files", _recognise, _sniff,
                     _read, _misnamed))
