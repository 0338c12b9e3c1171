"""Parquet files: a table with named columns, read batch by batch into the compact :class:`~.table.Table`.

A reader of :mod:`.readers` (kind ``parquet``): recognised by its magic bytes, sniffed from its
first row group, read with every value as the text it prints as.
"""

from __future__ import annotations

import io

from ..errors import DataError
from .layout import COUNT_NAMES, Sniffed
from .readers import TableReader, register
from .table import Table, table_from_batches
from .textio import MemoryBudget, Source, is_parquet, memory_budget, open_source, read_raw

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


def read_parquet(source: Source, budget: MemoryBudget, wanted=None) -> Table:
    """A Parquet table, batch by batch, into the same compact codes (values as the text they print as)."""
    parquet = _parquet_file(source, budget)
    try:
        names = [str(name) for name in parquet.schema_arrow.names]
        return table_from_batches(
            names, int(parquet.metadata.num_rows),
            lambda positions: parquet.iter_batches(batch_size=1 << 18,
                                                   columns=[parquet.schema_arrow.names[k] for k in positions]),
            source.path, budget, wanted, what="Parquet file")
    except DataError:
        raise
    except Exception as error:  # pyarrow raises many types for damaged files
        raise _parquet_error(error, source.path) from None


def _recognise(head: bytes, path) -> str | None:
    return "parquet" if is_parquet(head) else None


def _sniff(path, kind: str, *, source: Source | None = None, encoding: str = "auto", sheet=None) -> Sniffed:
    columns, rows = parquet_preview(source or open_source(path))
    fmt = "cells" if any(c.lower() in COUNT_NAMES for c in columns) else ("pairs" if len(columns) <= 4 else "records")
    return Sniffed(fmt, None, True, "binary", columns, rows, parquet=True, kind="parquet", names=NAMES["parquet"],
                   header_line=False)


def _read(source: Source, kind: str, *, header=True, encoding=None, wanted=None, budget: MemoryBudget,
          cancel=None, progress=None, sheet=None, names=None) -> Table:
    return read_parquet(source, budget, wanted)


def _misnamed(path, kind: str):
    return None  # a file named .parquet that is not one is looked at as text


NAMES = {"parquet": ("Parquet", "a Parquet")}
register(TableReader(NAMES, {".parquet": "parquet"}, "Parquet files", _recognise, _sniff, _read, _misnamed,
                     compressed=True, engines=True))
