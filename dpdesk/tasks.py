"""Progress reporting and cancellation for long work, without any GUI toolkit.

The core reports ``progress(fraction, message)`` and calls ``cancel.check()`` between
chunks of work; the GUI runs the same functions on worker threads and wires both to
widgets, the CLI prints or ignores them.
"""

from __future__ import annotations

import threading
from typing import Callable, Optional

from .errors import Cancelled

ProgressFn = Callable[[float, str], None]


class CancelToken:
    """A flag another thread can raise; the work checks it often and stops with :class:`Cancelled`."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled()


def no_progress(fraction: float, message: str = "") -> None:
    """The default progress callback: does nothing."""


def scaled(progress: Optional[ProgressFn], start: float, stop: float) -> ProgressFn:
    """A callback that maps 0..1 of a sub-task onto start..stop of the caller's progress."""
    if progress is None:
        return no_progress

    def report(fraction: float, message: str = "") -> None:
        progress(start + (stop - start) * min(max(fraction, 0.0), 1.0), message)

    return report
