"""What every engine is: the :class:`Engine` interface, its errors and its spill folder.

Below both engines (:mod:`.backend`'s DuckDB, :mod:`.spark`'s PySpark), so neither imports the other.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Iterator

from ..errors import DpdeskError, ParameterError
from ..tasks import CancelToken, ProgressFn

ENGINES = ("duckdb", "spark")
POLL_SECONDS = 0.1  # how often a running query's progress and the cancel token are looked at
BATCH_ROWS = 1 << 17  # rows per Arrow batch handed back to Python


class EngineError(DpdeskError):
    """The engine could not run (a missing optional package, a query that failed)."""

    title = "The data engine failed"


class EngineUnsupported(ParameterError):
    """A layout or option the engine does not read (``auto`` then reads the file in memory)."""


def spill_root() -> Path:
    from ..paths import user_data_dir

    return user_data_dir() / "engine-tmp"


def clear_stale_spill(root: Path) -> None:
    """Remove spill folders of engines whose process is gone (named run-PID-…)."""
    if not root.is_dir():
        return
    for entry in root.iterdir():
        parts = entry.name.split("-")
        if len(parts) < 3 or parts[0] != "run" or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid != os.getpid() and not process_alive(pid):
            shutil.rmtree(entry, ignore_errors=True)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (or may: when in doubt, yes — a folder kept is harmless).

    POSIX asks with signal 0. Windows must not: there ``os.kill(pid, 0)`` sends Ctrl+C
    (CTRL_C_EVENT is 0) to the process group, which would stop another dpdesk mid-release; it
    opens the process and reads its exit code instead.
    """
    if sys.platform == "win32":
        import ctypes

        query, still_active = 0x1000, 259  # PROCESS_QUERY_LIMITED_INFORMATION, STILL_ACTIVE
        kernel32 = ctypes.windll.kernel32
        handle = kernel32.OpenProcess(query, False, pid)
        if not handle:
            return kernel32.GetLastError() == 5  # access denied: it exists
        try:
            code = ctypes.c_ulong()
            return not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)) or code.value == still_active
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


class Engine:
    """What every backend offers the statistics (see :mod:`.queries`)."""

    kind = ""
    dialect = "duckdb"

    def execute(self, sql: str, *, progress: ProgressFn | None = None, cancel: CancelToken | None = None,
                message: str = "Querying the data"):
        """Run ``sql`` and return its result as a ``pyarrow.Table``."""
        raise NotImplementedError

    def batches(self, sql: str, *, cancel: CancelToken | None = None) -> Iterator:
        """Run ``sql`` and yield its result as ``pyarrow.RecordBatch`` es, in the order the query gives."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
