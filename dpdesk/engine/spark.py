"""The Spark engine: the same statistics (:mod:`.queries`, translated by SQLGlot) on a cluster.

``dpdesk release DATA --engine spark --spark-master spark://host:7077 …`` computes the
statistics on the cluster and runs the mechanism here, on the driver; only aggregates
and the rows the samplers need (:mod:`.dataset`) come back. PySpark is the optional extra
``dpdesk[spark]`` (about 300 MB, and a Java runtime); without it ``--engine spark`` says so
in one line before anything is read (:func:`require_pyspark`). docs/SPARK.md says how to
run a release against a cluster.

The cluster reads baskets Parquet files (``dpdesk convert``) from a path every executor
can reach (HDFS, S3, a shared folder); text transaction files are converted here first,
which suits ``local[*]`` and a shared folder. Spark runs with ANSI mode on (overflow is an
error, never a wrap) and its scratch space in dpdesk's spill folder.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid

from ..errors import Cancelled, DataError, DpdeskError
from ..tasks import CancelToken, ProgressFn, no_progress
from .base import POLL_SECONDS, Engine, EngineError, first_line, spill_root


def require_pyspark() -> None:
    """One line when Spark cannot run here: no pyspark, or no Java runtime."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise EngineError("--engine spark needs PySpark: install dpdesk[spark] (pip install pyspark) and a Java "
                          "runtime (e.g. Debian's openjdk-17-jre-headless).") from None
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        raise EngineError("--engine spark needs a Java runtime (e.g. Debian's openjdk-17-jre-headless) or JAVA_HOME.")


class SparkEngine(Engine):
    """A Spark session on ``master`` (module notes)."""

    kind = "spark"
    dialect = "spark"
    #: Spark has one session per process (getOrCreate): it stops when the last engine using it closes
    _users = 0
    _users_lock = threading.Lock()

    def __init__(self, master: str, memory_limit=None):
        require_pyspark()
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None and active.sparkContext.master != master:
            # getOrCreate would silently hand back the running session, on the other master
            raise EngineError(f"Spark already runs on {active.sparkContext.master} in this process; "
                              f"{master} needs a new dpdesk process.")
        root = spill_root()
        root.mkdir(parents=True, exist_ok=True)
        self.folder = root / f"run-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.folder.mkdir()
        builder = (SparkSession.builder.master(master).appName("dpdesk")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")  # progress goes to our callback
                   .config("spark.sql.ansi.enabled", "true")
                   .config("spark.local.dir", str(self.folder))
                   .config("spark.sql.session.timeZone", "UTC")
                   .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
        if memory_limit:
            from ..data.textio import parse_memory_size

            builder = builder.config("spark.driver.memory", f"{parse_memory_size(memory_limit) >> 20}m")
        try:
            self.spark = builder.getOrCreate()
        except Exception as error:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise EngineError(f"Spark could not start on {master}: {first_line(error)}") from None
        self.spark.sparkContext.setLogLevel("ERROR")
        with SparkEngine._users_lock:
            SparkEngine._users += 1
        self._closed = False

    def literal_path(self, path) -> str:
        return "'" + str(path).replace("'", "\\'") + "'"

    def _run(self, work, progress: ProgressFn, cancel: CancelToken | None, message: str):
        outcome: dict = {}
        group = f"dpdesk-{uuid.uuid4().hex[:8]}"
        context = self.spark.sparkContext

        def target():
            try:
                context.setJobGroup(group, message, interruptOnCancel=True)
                outcome["value"] = work()
            except BaseException as error:
                outcome["error"] = error

        thread = threading.Thread(target=target, name="dpdesk-spark", daemon=True)
        thread.start()
        cancelled = False
        tracker = context.statusTracker()
        while thread.is_alive():
            thread.join(POLL_SECONDS)
            if cancel is not None and cancel.cancelled and not cancelled:
                context.cancelJobGroup(group)
                cancelled = True
            stages = [tracker.getStageInfo(s) for job in tracker.getJobIdsForGroup(group)
                      for s in (tracker.getJobInfo(job).stageIds if tracker.getJobInfo(job) else [])]
            stages = [s for s in stages if s is not None and s.numTasks]
            if stages:
                progress(sum(s.numCompletedTasks for s in stages) / sum(s.numTasks for s in stages), message)
        if cancelled:
            raise Cancelled()
        if "error" in outcome:
            error = outcome["error"]
            if isinstance(error, DpdeskError):
                raise error
            raise DataError(f"the Spark engine could not read it: {first_line(error)}") from None
        return outcome.get("value")

    def execute(self, sql: str, *, progress: ProgressFn | None = None, cancel: CancelToken | None = None,
                message: str = "Querying the data"):
        if cancel is not None:
            cancel.check()
        return self._run(lambda: self.spark.sql(sql).toArrow(), progress or no_progress, cancel, message)

    def statement(self, sql: str, *, progress: ProgressFn | None = None, cancel: CancelToken | None = None,
                  message: str = "Preparing the data") -> None:
        for part in [p for p in sql.split(";") if p.strip()]:
            self._run(lambda part=part: self.spark.sql(part), progress or no_progress, cancel, message)

    def batches(self, sql: str, *, cancel: CancelToken | None = None, rows: int = 1 << 17):
        table = self.execute(sql, cancel=cancel)
        yield from table.to_batches(max_chunksize=rows)

    def register(self, name: str, table) -> None:
        import pyarrow as pa

        if isinstance(table, pa.RecordBatchReader):
            table = table.read_all()
        self.spark.createDataFrame(table).createOrReplaceTempView(name)  # Arrow directly (Spark ≥ 4)

    def unregister(self, name: str) -> None:
        self.spark.catalog.dropTempView(name)

    def baskets_view(self, name: str, path) -> None:
        """The baskets Parquet file as the relation (row = the row's place in the file)."""
        self.statement(f"CREATE OR REPLACE TEMPORARY VIEW {name} AS SELECT _metadata.row_index AS row, items "
                       f"FROM parquet.`{path}`")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with SparkEngine._users_lock:
            SparkEngine._users -= 1
            last = SparkEngine._users == 0
        try:
            if last:
                self.spark.stop()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
