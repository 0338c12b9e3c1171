"""The front door of import: ``dpdesk.load`` reads a file in memory or hands it to an engine.

It sits above both floors it chooses between (docs/ARCHITECTURE.md §1): the readers of
:mod:`dpdesk.data` (in memory) and the engines of :mod:`dpdesk.engine` (DuckDB, Spark), which
themselves read with the data floor's detection and options. Formats and options: see
:mod:`dpdesk.data.loader`.
"""

from __future__ import annotations

from pathlib import Path

from .data import loader
from .data.dataset import CellCounts, Dataset
from .engine import EngineUnsupported, choose_engine, scan
from .engine.baskets import baskets_dataset, read_baskets_metadata
from .tasks import CancelToken, ProgressFn

AUTO = (None, "", "auto")


def load(path, format: str = "auto", *, progress: ProgressFn | None = None,
         cancel: CancelToken | None = None, engine: str = "auto", spark_master: str | None = None,
         **options) -> Dataset | CellCounts:
    """Read ``path`` (formats and options: :mod:`dpdesk.data.loader`).

    ``engine``: ``memory`` (the matrix in memory), ``duckdb`` or ``spark`` (the data stays
    in an analytical engine, :mod:`dpdesk.engine`), or ``auto``: in memory when the file
    fits in the memory budget with room for a release, else DuckDB when it reads the
    layout (:func:`dpdesk.engine.choose_engine`).
    """
    loader.check_options(format, options)  # before anything is read
    chosen = choose_engine(engine, loader.open_source(Path(path)), options.get("memory_limit"))
    if chosen != "memory" and engine in AUTO and loader.read_in_memory_only(path):
        chosen = "memory"  # spreadsheets and SPSS/Stata/SAS files: no engine reads them
    if chosen == "memory" and read_baskets_metadata(path) is not None:  # a file made by dpdesk convert
        return baskets_dataset(path, format, name=options.get("name"), progress=progress, cancel=cancel)
    if chosen != "memory":
        try:
            return scan(path, format, engine=chosen, spark_master=spark_master, progress=progress, cancel=cancel,
                        **options)
        except EngineUnsupported:
            if engine not in AUTO:
                raise
    return loader.read(path, format, progress=progress, cancel=cancel, **options)


def reload(source: dict, **overrides) -> Dataset | CellCounts:
    """Import again from a recorded ``source`` dict (used by project files)."""
    options = {k: v for k, v in source.items() if k in loader.OPTION_NAMES}
    options.update(overrides)
    return load(source["path"], format=source.get("format", "auto"), **options)
