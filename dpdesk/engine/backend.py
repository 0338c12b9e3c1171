"""The engines: DuckDB embedded (the default) and, in :mod:`.spark`, PySpark.

An engine runs the statistics' SQL (:mod:`.queries`) over a dataset's canonical relation
and hands results back as Arrow. The DuckDB engine:

* has a **memory limit** — ``--memory-limit`` / ``DPDESK_MEMORY_LIMIT`` / half the memory
  available, the same budget as the in-memory loader (:func:`dpdesk.data.textio.memory_budget`)
  — and **spills** what does not fit to a temporary folder under ``DPDESK_HOME``
  (``engine-tmp/``), removed when the engine closes (and, for a process that died, by the
  next engine that starts);
* reports **progress** from DuckDB's own query progress to ``progress(fraction, message)``
  and stops a query within a fraction of a second when the cancel token is raised
  (``interrupt``), raising :class:`~dpdesk.errors.Cancelled`;
* uses only DuckDB's built-in readers (CSV, Parquet): its sqlite/postgres/excel
  extensions download at first use, which an offline machine cannot do
  (``autoinstall_known_extensions`` is off, so nothing is ever fetched).
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from typing import Iterator

from ..errors import Cancelled, DataError, DpdeskError, ParameterError
from ..tasks import CancelToken, ProgressFn, no_progress

from .base import BATCH_ROWS, POLL_SECONDS, Engine, EngineError, clear_stale_spill, first_line, spill_root


class DuckEngine(Engine):
    """DuckDB, embedded and in-process (module notes)."""

    kind = "duckdb"
    dialect = "duckdb"

    def __init__(self, memory_limit=None, threads: int | None = None):
        try:
            import duckdb
        except ImportError:  # pragma: no cover - a core dependency
            raise EngineError("DuckDB is not installed (pip install duckdb): dpdesk needs it for large data.") from None
        from ..data.textio import memory_budget

        self.duckdb = duckdb
        budget = memory_budget(memory_limit)
        self.memory_limit = int(budget.limit)
        root = spill_root()
        root.mkdir(parents=True, exist_ok=True)
        clear_stale_spill(root)
        self.folder = root / f"run-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.folder.mkdir()
        self.con = duckdb.connect(":memory:", config={
            "autoinstall_known_extensions": False, "autoload_known_extensions": False})
        self._lock = threading.Lock()
        self._closed = False
        megabytes = max(self.memory_limit // (1 << 20), 64)
        for statement in (f"SET memory_limit='{megabytes}MB'", f"SET temp_directory='{self._quoted(self.folder)}'",
                          f"SET threads={int(threads or os.cpu_count() or 1)}", "SET preserve_insertion_order=true",
                          "SET enable_progress_bar=true", "SET enable_progress_bar_print=false"):
            self.con.execute(statement)

    @staticmethod
    def _quoted(path) -> str:
        return str(path).replace("'", "''")

    def literal_path(self, path) -> str:
        """A file path as an SQL string literal."""
        return "'" + self._quoted(path) + "'"

    def register(self, name: str, table) -> None:
        """Copy an Arrow table (or record batch reader) into the table ``name`` (seen by every cursor)."""
        with self._lock:
            self.con.register(f"{name}_arrow", table)
            try:
                self.con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_arrow")
            finally:
                self.con.unregister(f"{name}_arrow")

    def unregister(self, name: str) -> None:
        with self._lock:
            self.con.execute(f"DROP TABLE IF EXISTS {name}")

    def _run(self, work, progress: ProgressFn, cancel: CancelToken | None, message: str):
        """Run ``work()`` on a thread while this one reports progress and watches the cancel token."""
        outcome: dict = {}

        def target():
            try:
                outcome["value"] = work()
            except BaseException as error:  # handed to the calling thread
                outcome["error"] = error

        thread = threading.Thread(target=target, name="dpdesk-duckdb", daemon=True)
        thread.start()
        interrupted = False
        while thread.is_alive():
            thread.join(POLL_SECONDS)
            if not thread.is_alive():
                break
            if cancel is not None and cancel.cancelled and not interrupted:
                self.con.interrupt()
                interrupted = True
            try:
                done = self.con.query_progress()
            except Exception:  # pragma: no cover - progress is a nicety
                done = -1
            if done is not None and done >= 0:
                progress(min(done, 100.0) / 100.0, message)
        if interrupted or (cancel is not None and cancel.cancelled):
            raise Cancelled()
        if "error" in outcome:
            raise self._translate(outcome["error"])
        return outcome.get("value")

    def _translate(self, error: BaseException) -> BaseException:
        if isinstance(error, (DpdeskError, KeyboardInterrupt)):
            return error
        if isinstance(error, self.duckdb.InterruptException):
            return Cancelled()
        if isinstance(error, self.duckdb.OutOfMemoryException):
            return DataError(f"the data engine ran out of memory even with spilling to disk "
                             f"({first_line(error)})", expected="a larger --memory-limit or more free disk space")
        if isinstance(error, self.duckdb.Error):
            return DataError(f"the data engine could not read it: {first_line(error)}")
        return error

    def execute(self, sql: str, *, progress: ProgressFn | None = None, cancel: CancelToken | None = None,
                message: str = "Querying the data"):
        if cancel is not None:
            cancel.check()
        with self._lock:
            return self._run(lambda: self.con.sql(sql).to_arrow_table(), progress or no_progress, cancel,
                             message)

    def statement(self, sql: str, *, progress: ProgressFn | None = None, cancel: CancelToken | None = None,
                  message: str = "Preparing the data") -> None:
        """Run a statement that returns nothing (CREATE TABLE … AS …)."""
        if cancel is not None:
            cancel.check()
        with self._lock:
            self._run(lambda: self.con.execute(sql), progress or no_progress, cancel, message)

    def batches(self, sql: str, *, cancel: CancelToken | None = None, rows: int = BATCH_ROWS) -> Iterator:
        if cancel is not None:
            cancel.check()
        cursor = self.con.cursor()  # its own connection to the same database: other queries may run meanwhile
        try:
            try:
                reader = cursor.sql(sql).to_arrow_reader(rows)
            except Exception as error:
                raise self._translate(error) from None
            while True:
                if cancel is not None and cancel.cancelled:
                    cursor.interrupt()
                    raise Cancelled()
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                except Exception as error:
                    raise self._translate(error) from None
                yield batch
        finally:
            cursor.close()

    def baskets_view(self, name: str, path) -> None:
        """The baskets Parquet file as the relation (row = the row's place in the file)."""
        self.statement(f"CREATE VIEW {name} AS SELECT file_row_number AS row, items FROM "
                       f"read_parquet({self.literal_path(path)}, file_row_number=true)")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.con.close()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __del__(self):  # pragma: no cover - a safety net; close() is the rule
        try:
            self.close()
        except Exception:
            pass


def open_engine(kind: str = "duckdb", *, memory_limit=None, spark_master: str | None = None) -> Engine:
    """A new engine of ``kind`` (``duckdb`` or ``spark``); close it when done."""
    if kind == "duckdb":
        return DuckEngine(memory_limit)
    if kind == "spark":
        from .spark import SparkEngine

        return SparkEngine(spark_master or "local[*]", memory_limit=memory_limit)
    raise ParameterError(f"Unknown engine '{kind}'; choose memory, duckdb or spark.")

