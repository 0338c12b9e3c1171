"""Data of any size: the statistics mechanisms need, computed by an analytical engine.

No mechanism needs the person × item matrix; each needs a few aggregates (column counts
after bounding, row-length histograms, cell counts) and, for its random steps, some rows
(:mod:`.dataset`). An engine computes the aggregates out of core and in parallel:

* **DuckDB** (:mod:`.backend`), embedded and in-process — the default for large files:
  nothing to install or start, a memory limit, spilling under ``DPDESK_HOME``, progress
  and Cancel;
* **Spark** (:mod:`.spark`), for data spread over many machines:
  ``dpdesk release … --engine spark --spark-master URL`` computes the statistics on the
  cluster and runs the mechanism locally (the optional extra ``dpdesk[spark]``).

Every statistic is written once, in SQL (:mod:`.queries`, translated for Spark by
SQLGlot — why SQLGlot and not Ibis is said there). Sources (:mod:`.relation`): transaction
text (FIMI, baskets CSV, gzip) and tables (pairs, records, cells) in CSV/TSV/Parquet,
``dpdesk convert`` baskets Parquet files, and SQLite/PostgreSQL queries (:mod:`.sql`).

Which path reads a file (:func:`choose_engine`): a baskets Parquet file (``dpdesk convert``)
goes to DuckDB, which reads it as fast as the in-memory path and in less memory (16 M rows:
an ``lpa`` release in about 4 s, 1.0 GB, against 5–6 s, 1.6 GB). For text, the in-memory
matrix is the faster one whenever it fits (``benchmarks/bench_scale.py``: 16 M rows of text, an ``lpa`` release in
15 s in memory against 27 s through DuckDB), so ``auto`` reads a file in memory when its
decompressed size times :data:`IN_MEMORY_BYTES_PER_BYTE` — the largest peak per byte of
text measured for a release (DPSense-S) — fits in the memory budget (``--memory-limit``,
default half the available memory), and with DuckDB otherwise. A file's size is not a
fact about the people in any useful sense, and the choice changes no published figure:
both paths give the same statistics and, for the same seed, the same release
(``tests/engine/test_mechanisms.py``).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import DataError, ParameterError
from ..tasks import CancelToken, ProgressFn, no_progress
from .backend import open_engine
from .base import ENGINES, Engine, EngineError, EngineUnsupported

#: peak memory of a release on the in-memory path per byte of (decompressed) text: 7.2 measured for
#: DPSense-S at 16 M rows (LPA 2.5, GS 4.1; benchmarks/bench_scale.py), rounded up
IN_MEMORY_BYTES_PER_BYTE = 8
#: the same per cell (person, item) of a baskets Parquet file: 35 measured for DPSense-S at 16 M rows, rounded up
IN_MEMORY_BYTES_PER_CELL = 40
#: a gzip file's decompressed size is taken as at least this many times its own (its stored length wraps at 4 GiB)
GZIP_RATIO = 4
ENGINE_CHOICES = ("auto", "memory") + ENGINES
ENGINE_FORMATS = ("transactions", "pairs", "records")


def check_engine(engine) -> str:
    engine = "auto" if engine in (None, "") else str(engine)
    if engine not in ENGINE_CHOICES:
        raise ParameterError(f"Unknown engine '{engine}'; choose one of: " + ", ".join(ENGINE_CHOICES) + ".")
    return engine


def choose_engine(engine: str, source=None, memory_limit=None) -> str:
    """``memory`` or an engine, for a :class:`~dpdesk.data.textio.Source` — see the module notes."""
    from ..data.textio import memory_budget

    engine = check_engine(engine)
    if engine != "auto":
        return engine
    if _is_baskets(source):  # the engine's own format: DuckDB reads it as fast as memory could, in less room
        return "duckdb"
    return "memory" if in_memory_estimate(source) <= memory_budget(memory_limit).limit else "duckdb"


def _is_baskets(source) -> bool:
    if source.compressed or source.head(4) != b"PAR1":
        return False
    from .baskets import read_baskets_metadata

    return read_baskets_metadata(source.path) is not None


def in_memory_estimate(source) -> int:
    """Bytes a release on the in-memory path may need at its peak, from what the file says of its size.

    Text: its (decompressed) size × :data:`IN_MEMORY_BYTES_PER_BYTE`. Parquet is compressed, so
    its own size says little: a baskets file (``dpdesk convert``) counts its cells
    (:data:`IN_MEMORY_BYTES_PER_CELL` each), another Parquet file its uncompressed size.
    """
    if not source.compressed and source.head(4) == b"PAR1":
        import pyarrow.parquet as pq

        try:
            metadata = pq.ParquetFile(str(source.path)).metadata
        except Exception:  # not readable as Parquet: the loader says why
            return 0
        groups = [metadata.row_group(g) for g in range(metadata.num_row_groups)]
        if (metadata.metadata or {}).get(b"dpdesk.format") is not None:
            cells = sum(group.column(0).num_values for group in groups)
            return int(cells * IN_MEMORY_BYTES_PER_CELL)
        return int(sum(group.total_byte_size for group in groups) * IN_MEMORY_BYTES_PER_BYTE)
    size = source.estimated_size
    if source.compressed:
        size = max(size, GZIP_RATIO * source.size)
    return int(size * IN_MEMORY_BYTES_PER_BYTE)


def scan(path, format: str = "auto", *, engine: str = "duckdb", spark_master: str | None = None,
         progress: ProgressFn | None = None, cancel: CancelToken | None = None, **options):
    """Read ``path`` into an engine: an :class:`~.dataset.EngineDataset` (or ``CellCounts`` for cell tables).

    Options are :func:`dpdesk.load`'s.
    """
    from .sources import read_file

    return read_file(path, format, engine=engine, spark_master=spark_master, progress=progress or no_progress,
                     cancel=cancel, **options)


__all__ = ["ENGINE_CHOICES", "IN_MEMORY_BYTES_PER_BYTE", "Engine", "EngineError", "EngineUnsupported", "check_engine",
           "choose_engine",
           "open_engine", "scan"]
