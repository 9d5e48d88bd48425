"""Kernel locks on a lock file: ``flock`` where ``fcntl`` exists, an SQLite lock elsewhere.

Both kinds are held by the operating system for an open file and let go the moment their
process dies, so no lock is ever stale, and both exclude a second holder in the same process as
well as in another one. POSIX systems use ``flock(2)`` on a descriptor of the lock file. Where
there is no ``fcntl`` module (Windows), an exclusive SQLite transaction on the same lock file
does the job: SQLite locks with the system's own primitive (``LockFileEx`` on Windows), reads
the empty lock file as an empty database and writes nothing to it. The kind is fixed per
platform, so every process on one machine uses the same one (the two kinds do not see each
other).

Example:
    >>> lock = open_lock(fd, path)  # doctest: +SKIP
    >>> lock.try_acquire() or lock.acquire()  # doctest: +SKIP
    >>> lock.release(); lock.close()  # doctest: +SKIP
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path
from typing import Protocol

try:
    import fcntl
except ImportError:  # Windows: no fcntl; the SQLite lock below stands in
    fcntl = None  # type: ignore[assignment]

__all__ = ["KernelLock", "kind", "open_lock"]

# How long one blocking SQLite attempt waits before it tries again (its busy handler polls).
_SQLITE_WAIT_MS = 1000


class KernelLock(Protocol):
    """One open lock file: try, wait for, give back the exclusive lock; close the file."""

    def try_acquire(self) -> bool:
        """Take the lock if it is free; False at once when another holder has it."""
        ...

    def acquire(self) -> None:
        """Take the lock, waiting as long as it takes (raises ``OSError`` on failure)."""
        ...

    def release(self) -> None:
        """Give the lock back (the file stays open)."""
        ...

    def close(self) -> None:
        """Close the lock file (releasing a lock still held)."""
        ...


def kind() -> str:
    """Which kernel lock this process uses: ``"flock"`` or ``"sqlite"`` (no ``fcntl``).

    Example:
        >>> kind() in ("flock", "sqlite")
        True
    """
    return "flock" if fcntl is not None else "sqlite"


def open_lock(fd: int, path: Path) -> KernelLock:
    """The kernel lock over the lock file ``path``, whose descriptor ``fd`` the lock now owns.

    Args:
        fd: a read-write descriptor of ``path`` (opened without following a link).
        path: the lock file (never written, never deleted).

    Returns:
        A :class:`KernelLock`; its ``close()`` closes ``fd`` too.

    Raises:
        OSError: the SQLite lock could not open the file (``fd`` is closed then).
    """
    if fcntl is not None:
        return _Flock(fd)
    try:
        return _SqliteLock(fd, path)
    except BaseException:
        os.close(fd)
        raise


class _Flock:
    """``flock(2)`` on a descriptor: the lock belongs to this open file description."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def try_acquire(self) -> bool:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def acquire(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def release(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        os.close(self._fd)


class _SqliteLock:
    """An exclusive SQLite transaction on the lock file, one connection per open lock.

    The descriptor stays open beside the connection (it is what the caller opened without
    following a link); the connection is used by one thread at a time, hence not bound to one.
    """

    __slots__ = ("_db", "_fd")

    def __init__(self, fd: int, path: Path) -> None:
        self._fd = fd
        try:
            self._db = sqlite3.connect(
                path, timeout=0, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise _os_error(exc, path) from exc

    def _begin(self, wait_ms: int) -> bool:
        try:
            self._db.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
            self._db.execute("BEGIN EXCLUSIVE")
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY:
                return False
            raise _os_error(exc, None) from exc
        return True

    def try_acquire(self) -> bool:
        return self._begin(0)

    def acquire(self) -> None:
        while not self._begin(_SQLITE_WAIT_MS):
            pass  # still held elsewhere: wait again

    def release(self) -> None:
        try:
            self._db.execute("ROLLBACK")  # the transaction wrote nothing
        except sqlite3.Error as exc:
            raise _os_error(exc, None) from exc

    def close(self) -> None:
        try:
            self._db.close()  # releases a lock still held
        except sqlite3.Error as exc:
            raise _os_error(exc, None) from exc
        finally:
            os.close(self._fd)


def _os_error(exc: sqlite3.Error, path: Path | None) -> OSError:
    # The callers turn OSError into StorageError; SQLite's own errors would escape that.
    return OSError(errno.EIO, f"SQLite lock: {exc}", None if path is None else str(path))
