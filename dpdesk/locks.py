"""Exclusive locks on files, between processes, on Linux and Windows.

One lock is an open lock file whose first byte is locked: ``fcntl.flock`` on POSIX,
``msvcrt.locking`` on Windows. The operating system drops the lock when the process ends,
so a crashed release never leaves a lock behind (a lock *file* may stay; it is harmless).

``msvcrt.locking`` in blocking mode gives up after ten tries a second apart, so a blocking
lock on Windows polls the non-blocking form instead, with no time limit, as ``flock`` waits.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path

try:  # POSIX
    import fcntl
except ImportError:  # Windows
    fcntl = None
try:  # Windows (imported on its own, so that this module imports everywhere and a system
    import msvcrt  # with neither is told so when it locks, not when dpdesk starts)
except ImportError:
    msvcrt = None

_POLL_SECONDS = 0.05


class LockBusy(Exception):
    """The lock is held by another process (or another handle of this one)."""


def acquire(path: str | Path, *, blocking: bool = True):
    """Open ``path`` (created if missing) and lock it; returns the handle to pass to :func:`release`.

    ``blocking=False`` raises :class:`LockBusy` at once when another holder has it.
    """
    if fcntl is None and msvcrt is None:
        raise OSError(f"this system offers no file locking (neither fcntl nor msvcrt), so {path} cannot be locked")
    handle = open(path, "a+b")
    try:
        if fcntl is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                raise LockBusy(str(path)) from None
        else:
            handle.seek(0)
            while True:
                try:
                    msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
                    break
                except OSError:
                    if not blocking:
                        raise LockBusy(str(path)) from None
                    time.sleep(_POLL_SECONDS)
    except BaseException:
        handle.close()
        raise
    return handle


def release(handle) -> None:
    """Unlock and close a handle from :func:`acquire` (closing alone would also unlock it)."""
    if handle is None or handle.closed:
        return
    try:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_UN)
        else:
            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
    except OSError:
        pass
    finally:
        handle.close()


@contextmanager
def held(path: str | Path, *, blocking: bool = True):
    """``with held(path):`` — the lock for the duration of the block."""
    handle = acquire(path, blocking=blocking)
    try:
        yield handle
    finally:
        release(handle)


def lock_path(folder: str | Path, key: str) -> Path:
    """A lock file in ``folder`` (created if missing) for a key of any characters."""
    import hashlib

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    # UTF-8 whatever the file system's encoding (os.fsencode fails on "·" in an ASCII locale);
    # surrogatepass: a path's undecodable bytes (surrogates) hash too
    return folder / (hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32] + ".lock")
