"""Background work on QThreads: the core functions run off the GUI thread and report back.

A :class:`Task` runs ``function(*args, progress=..., cancel=..., **kwargs)`` on its own
QThread. Progress, partial results and the outcome arrive as Qt signals in the GUI
thread; ``cancel()`` raises the core's :class:`~dpdesk.tasks.CancelToken`, which the core
checks between chunks of work.
"""

from __future__ import annotations

import time
import traceback
from typing import Any, Callable

from PySide6.QtCore import QObject, QThread, Signal, Slot

from ..errors import Cancelled, DpdeskError
from ..tasks import CancelToken


#: every task whose thread runs: a running task is never garbage, because destroying a running
#: QThread aborts the process ("QThread: Destroyed while thread is still running") — which the
#: garbage collector did when a dialog that owned a task was collected during its export
_RUNNING: set = set()

#: the shortest time between two progress signals: a core that reports every few microseconds must
#: not flood the GUI thread's event queue (each signal is a slot call there); the end always gets through
PROGRESS_INTERVAL = 0.05


def _throttled(signal) -> Callable[..., None]:
    last = [float("-inf")]

    def report(fraction, message="") -> None:
        now = time.monotonic()
        if fraction < 1.0 and now - last[0] < PROGRESS_INTERVAL:
            return
        last[0] = now
        signal.emit(float(fraction), str(message))

    return report


class _Worker(QObject):
    progress = Signal(float, str)
    partial = Signal(object)
    succeeded = Signal(object)
    failed = Signal(object, str)  # exception, formatted traceback ("" for expected errors)
    cancelled = Signal()
    done = Signal()

    def __init__(self, function: Callable, args: tuple, kwargs: dict, token: CancelToken,
                 wants_partial: bool, wants_progress: bool):
        super().__init__()
        self.function, self.args, self.kwargs, self.token = function, args, kwargs, token
        self.wants_partial, self.wants_progress = wants_partial, wants_progress

    @Slot()
    def run(self) -> None:
        kwargs = dict(self.kwargs)
        if self.wants_progress:
            kwargs["progress"] = _throttled(self.progress)
            kwargs["cancel"] = self.token
        if self.wants_partial:
            kwargs["on_result"] = self.partial.emit
        try:
            result = self.function(*self.args, **kwargs)
        except Cancelled:
            self.cancelled.emit()
        except DpdeskError as error:
            self.failed.emit(error, "")
        except Exception as error:  # noqa: BLE001 - shown in a dialog and logged, never lost
            self.failed.emit(error, traceback.format_exc())
        else:
            if self.token.cancelled and getattr(result, "cancelled", False):
                self.cancelled.emit()
            self.succeeded.emit(result)
        finally:
            self.done.emit()


class Task(QObject):
    """One piece of background work. Keep a reference until ``finished`` fires."""

    progress = Signal(float, str)
    partial = Signal(object)
    succeeded = Signal(object)
    failed = Signal(object, str)
    cancelled = Signal()
    finished = Signal()

    def __init__(self, function: Callable[..., Any], *args, partial: bool = False, progress: bool = True,
                 parent: QObject | None = None, **kwargs):
        super().__init__(parent)
        self.token = CancelToken()
        self._thread = QThread()
        self._worker = _Worker(function, args, kwargs, self.token, partial, progress)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        self._worker.progress.connect(self.progress)
        self._worker.partial.connect(self.partial)
        self._worker.succeeded.connect(self.succeeded)
        self._worker.failed.connect(self.failed)
        self._worker.cancelled.connect(self.cancelled)
        self._worker.done.connect(self._thread.quit)
        self._thread.finished.connect(self._on_finished)
        self.running = False

    def start(self) -> "Task":
        self.running = True
        _RUNNING.add(self)
        self._thread.start()
        return self

    def cancel(self) -> None:
        self.token.cancel()

    def wait(self, milliseconds: int = 10_000) -> bool:
        return self._thread.wait(milliseconds)

    def _on_finished(self) -> None:
        self.running = False
        _RUNNING.discard(self)
        self.finished.emit()
