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

Which path reads a file (:func:`choose_engine`): the in-memory matrix is faster below a
few million rows (the issue measured the numpy loader ahead of DuckDB at 1 M rows), so
``auto`` reads files up to :data:`AUTO_ENGINE_BYTES` (decompressed) in memory and larger
ones with DuckDB. A file's size is not a fact about the people in any useful sense, and
the choice changes no published figure: both paths give the same statistics and, for the
same seed, the same release (``tests/engine/test_mechanisms.py``).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import DataError, ParameterError
from ..tasks import CancelToken, ProgressFn, no_progress
from .backend import ENGINES, Engine, EngineError, EngineUnsupported, open_engine

#: files larger than this (decompressed) are read by DuckDB when the engine is ``auto``
AUTO_ENGINE_BYTES = 256 << 20
ENGINE_CHOICES = ("auto", "memory") + ENGINES
ENGINE_FORMATS = ("transactions", "pairs", "records")


def check_engine(engine) -> str:
    engine = "auto" if engine in (None, "") else str(engine)
    if engine not in ENGINE_CHOICES:
        raise ParameterError(f"Unknown engine '{engine}'; choose one of: " + ", ".join(ENGINE_CHOICES) + ".")
    return engine


def choose_engine(engine: str, size: int) -> str:
    """``memory`` or an engine, for a source of ``size`` bytes (decompressed) — see the module notes."""
    engine = check_engine(engine)
    if engine != "auto":
        return engine
    return "duckdb" if size > AUTO_ENGINE_BYTES else "memory"


def scan(path, format: str = "auto", *, engine: str = "duckdb", spark_master: str | None = None,
         progress: ProgressFn | None = None, cancel: CancelToken | None = None, **options):
    """Read ``path`` into an engine: an :class:`~.dataset.EngineDataset` (or ``CellCounts`` for cell tables).

    Options are :func:`dpdesk.load`'s.
    """
    from .sources import read_file

    return read_file(path, format, engine=engine, spark_master=spark_master, progress=progress or no_progress,
                     cancel=cancel, **options)


__all__ = ["AUTO_ENGINE_BYTES", "ENGINE_CHOICES", "Engine", "EngineError", "EngineUnsupported", "check_engine",
           "choose_engine",
           "open_engine", "scan"]
