"""Parquet files: a table with named columns, read batch by batch into the compact :class:`~.table.Table`.

A reader of :mod:`.readers` (kind ``parquet``): recognised by its magic bytes, sniffed from its
first row group, read with every value as the text it prints as.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from ..errors import DataError
from .layout import COUNT_NAMES, Sniffed
from .readers import TableReader, register
from .table import BYTES_PER_DISTINCT, Table, distinct_names
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
    path = source.path
    try:
        names = distinct_names([str(name) for name in parquet.schema_arrow.names])
        keep = wanted(names) if wanted is not None else None
        keep = names if keep is None else [n for n in names if n in set(keep)]
        n_rows = int(parquet.metadata.num_rows)
        budget.check(n_rows * (4 * len(keep) + 12), path, projected=True)
        positions = [names.index(name) for name in keep]
        codes = {name: np.empty(n_rows, dtype=np.int32) for name in keep}
        index: dict[str, dict[str, int]] = {name: {} for name in keep}
        done, distinct_bytes = 0, 0
        for batch in parquet.iter_batches(batch_size=1 << 18, columns=[parquet.schema_arrow.names[k] for k in positions]):
            rows = batch.num_rows
            if done + rows > n_rows:
                raise DataError("the Parquet file holds more rows than its footer says", path=path)
            for k, name in enumerate(keep):
                local, values = pd.factorize(batch.column(k).to_pandas(), use_na_sentinel=True)
                table = index[name]
                before = len(table)
                texts = [_parquet_text(v) for v in values]
                if local.size and local.min() < 0:
                    texts.append("")  # missing values (code -1) take the last one
                mapped = np.fromiter((table.setdefault(t, len(table)) for t in texts), dtype=np.int64,
                                     count=len(texts))
                if len(table) > before:
                    distinct_bytes += sum(len(t) + BYTES_PER_DISTINCT for t, m in zip(texts, mapped) if m >= before)
                codes[name][done:done + rows] = mapped[local]  # -1 (missing) takes the last: ""
            done += rows
            budget.check((done * (4 * len(keep) + 12) + distinct_bytes) * n_rows / max(done, 1), path,
                         projected=done < n_rows)
    except DataError:
        raise
    except Exception as error:  # pyarrow raises many types for damaged files
        raise _parquet_error(error, path) from None
    if done != n_rows:
        raise DataError("the Parquet file holds fewer rows than its footer says", path=path)
    uniques = {name: np.array(list(index[name]), dtype=object) for name in keep}
    return Table(names, codes, uniques, np.arange(n_rows, dtype=np.int64) + 1, path, n_rows)


def _parquet_text(value) -> str:
    """A Parquet value as text: whole floats without ``.0`` (ids stored as floats), NaN as missing."""
    if isinstance(value, float):
        if value != value:
            return ""
        return str(int(value)) if value.is_integer() else str(value)
    return str(value)


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
register(TableReader(NAMES, {".parquet": "parquet"}, _recognise, _sniff, _read, _misnamed, compressed=True,
                     engines=True))
