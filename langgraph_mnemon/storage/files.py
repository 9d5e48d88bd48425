"""Durable file primitives shared by the file-backed layers (Runtime Memory, Documents).

Commit discipline: every file is written to a temp file beside it and renamed into place, so a
reader sees either the old or the new bytes. Layers rename derived files first and their JSON
authority last; the authority rename is the commit marker.

Locking: a kernel lock on a lock file that is never deleted (deleting it would let two
processes lock different inodes), so a crashed holder releases it at once and there are no stale
locks: ``flock`` on POSIX, an SQLite lock where there is no ``fcntl`` (Windows; see
:mod:`._locks`). Inside a process, threads queue FIFO before they touch the kernel lock.

Errors: every primitive raises :class:`StorageError` (never a bare ``OSError``) with the code
``StorageError.from_os_error`` gives (``storage-full``, ``storage-read-only``, ...) and the file
it was working on; a failed primitive leaves no temp file and no partial append behind.

Links: managed files are opened with ``O_NOFOLLOW`` and managed folders are checked with
``lstat`` (:func:`refuse_symlink`), so nothing is read, written or appended through a symbolic
link. ``rename`` and ``unlink`` act on a link itself, never on what it points to.

Portability: the module imports everywhere. What a system lacks has a fallback, named by the
constants below: no ``O_NOFOLLOW`` (Windows) leaves the ``lstat`` checks; no ``fdatasync``
(macOS, Windows) syncs with ``fsync``; no ``pread`` reads at an offset by seeking; a folder
that cannot be opened (Windows) is not synced after a rename (NTFS journals its metadata); no
``dir_fd`` makes :func:`ensure_dir_below` check each folder it creates with ``lstat``.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from langgraph_mnemon.errors import InvalidInputError, StorageError
from langgraph_mnemon.storage._locks import KernelLock, open_lock

_log = logging.getLogger("langgraph_mnemon.storage")
_TMP_SUFFIX = ".tmp"

NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
"""``os.O_NOFOLLOW`` where the system has it (POSIX), else 0: or it into ``os.open`` flags."""
# Folders open as descriptors only where O_DIRECTORY exists (not on Windows).
_DIRECTORY: int | None = getattr(os, "O_DIRECTORY", None)
_DATASYNC = getattr(os, "fdatasync", os.fsync)

UNWRITABLE = frozenset({"storage-full", "storage-read-only", "storage-permission"})
"""StorageError codes that mean "the disk refused a write": a read can still be answered."""


@contextmanager
def io_errors(action: str, path: Path | str | None = None) -> Iterator[None]:
    """Turn an ``OSError`` raised in the block into a typed :class:`StorageError`.

    ``action`` is a verb phrase ("write USER.md"); ``path`` is named in the message.
    """
    try:
        yield
    except OSError as exc:
        raise StorageError.from_os_error(exc, action, path) from exc


_warned: set[str] = set()


def warn_once(key: str, message: str, *args: object) -> None:
    """Log a warning the first time per ``key`` in this process, later ones at debug level.

    A full or read-only disk would otherwise log the same warning on every read.
    """
    level = logging.DEBUG if key in _warned else logging.WARNING
    _warned.add(key)
    _log.log(level, message, *args)


@contextmanager
def tolerate_unwritable(what: str) -> Iterator[None]:
    """Log and skip a :class:`StorageError` that only says the disk refused a write.

    For writes a read does on the side (projection repair on open, access times): on a full
    or read-only disk the read still answers; damaged data and refused links still raise.
    """
    try:
        yield
    except StorageError as exc:
        if exc.code not in UNWRITABLE:
            raise
        warn_once(f"{what}:{exc.code}", "%s skipped (%s): %s", what, exc.code, exc.message)


def checked_path(value: object, what: str) -> Path:
    """``value`` (a ``str`` or ``Path``) made absolute, or :class:`InvalidInputError`.

    Refuses what no file system call can take: an empty path, a NUL, a lone surrogate.
    """
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise InvalidInputError(f"{what} must be a non-empty path")
    try:
        raw = os.fsencode(value)
    except UnicodeEncodeError:
        raise InvalidInputError(f"{what} contains a lone surrogate; give a valid path") from None
    if b"\0" in raw:
        raise InvalidInputError(f"{what} contains a NUL character; give a valid path")
    return Path(value).expanduser().absolute()


def refuse_symlink(path: Path, what: str) -> None:
    """Raise :class:`StorageError` (``symlink-refused``) when ``path`` is a symbolic link.

    Managed files and folders are never followed through a link: a link could point into
    another storage root (whose files repair would then delete) or anywhere on the disk. A
    missing path is fine; the caller creates it.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError.from_os_error(exc, f"inspect the {what}", path) from None
    if stat.S_ISLNK(mode):
        raise StorageError(
            f"the {what} {path} is a symbolic link; langgraph-mnemon never follows links out "
            "of its storage root. Replace the link with a real folder or file (or point the "
            "root at the real location). Nothing was changed.",
            code="symlink-refused",
        )


def refuse_symlinks(paths: Iterable[tuple[Path, str]]) -> None:
    """:func:`refuse_symlink` for each ``(path, what)``: one ``lstat`` per managed path."""
    for path, what in paths:
        refuse_symlink(path, what)


def read_bytes(path: Path, what: str) -> bytes | None:
    """The bytes of the managed file ``path`` (never through a link), ``None`` when missing.

    Raises :class:`StorageError` naming ``what`` (``symlink-refused`` for a link).
    """
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError.from_os_error(exc, f"read the {what}", path) from exc
    with io_errors(f"read the {what}", path), os.fdopen(fd, "rb") as fh:
        return fh.read()


def temp_path_for(path: Path) -> Path:
    return path.with_name(f".{path.name}.{secrets.token_hex(6)}{_TMP_SUFFIX}")


def write_temp(path: Path, data: bytes, *, fsync: bool = True) -> Path:
    """Write ``data`` to a fresh temp file beside ``path`` (mode 0600) and return its path.

    On any failure the temp file is removed and :class:`StorageError` names ``path``.
    """
    tmp = temp_path_for(path)
    with io_errors(f"write {path.name}", path):
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            _DATASYNC(fd)
    except BaseException as exc:
        os.close(fd)
        discard(tmp)
        if isinstance(exc, OSError):
            raise StorageError.from_os_error(exc, f"write {path.name}", path) from exc
        raise
    os.close(fd)
    return tmp


def pread(fd: int, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes of ``fd`` from ``offset`` (``os.pread``, or seek and read).

    Example:
        >>> pread(fd, 1, 0)  # doctest: +SKIP
        b"{"
    """
    if hasattr(os, "pread"):
        return os.pread(fd, size, offset)
    os.lseek(fd, offset, os.SEEK_SET)  # Windows: the descriptor is not shared between threads
    return os.read(fd, size)


def fsync_dir(directory: Path) -> None:
    """Make renames inside ``directory`` durable (a no-op where folders cannot be opened)."""
    if _DIRECTORY is None:
        return
    with io_errors("sync the folder", directory):
        fd = os.open(directory, os.O_RDONLY | _DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (temp + fsync + rename + directory fsync)."""
    tmp = write_temp(path, data, fsync=fsync)
    try:
        os.replace(tmp, path)
    except BaseException as exc:
        discard(tmp)
        if isinstance(exc, OSError):
            raise StorageError.from_os_error(exc, f"replace {path.name}", path) from exc
        raise
    if fsync:
        fsync_dir(path.parent)


def append_durable(path: Path, data: bytes, *, fsync: bool = True) -> int | None:
    """Append ``data`` to ``path`` (fsynced unless ``fsync=False``); return its size before.

    ``None`` means this call created the file. A previous writer killed mid-append may have
    left a torn last line; a newline is written first so the torn line stays a separate,
    skippable record. A failed append is undone (the file is truncated back, or removed if
    this call created it) and raises :class:`StorageError`; the file is byte-identical.
    """
    existed = os.path.lexists(path)
    with io_errors(f"append to {path.name}", path):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | NOFOLLOW, 0o600)
    size = 0
    try:
        size = os.fstat(fd).st_size
        if size and pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        os.close(fd)
        if not existed:
            discard(path)
        if isinstance(exc, OSError):
            raise StorageError.from_os_error(exc, f"append to {path.name}", path) from exc
        raise
    os.close(fd)
    return size if existed else None


def undo_append(path: Path, before: int | None) -> None:
    """Best effort: put ``path`` back to its size ``before`` an :func:`append_durable`."""
    if before is None:
        discard(path)
        return
    with contextlib.suppress(OSError):
        os.truncate(path, before)


def has_stale_temps(directory: Path) -> bool:
    """True when ``directory`` holds temp files (a dead writer's, or a live one's mid-commit)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StorageError.from_os_error(exc, "list the folder", directory) from exc
    return any(n.startswith(".") and n.endswith(_TMP_SUFFIX) for n in names)


def remove_stale_temps(directory: Path) -> int:
    """Delete temp files left by writers that died before their rename. Call under the lock."""
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    except OSError as exc:
        raise StorageError.from_os_error(exc, "list the folder", directory) from exc
    for entry in entries:
        if entry.name.startswith(".") and entry.name.endswith(_TMP_SUFFIX):
            unlink_quietly(Path(entry.path))
            removed += 1
    return removed


def ensure_dir(directory: Path) -> None:
    with io_errors("create the folder", directory):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)


def ensure_dir_below(anchor: Path, directory: Path) -> None:
    """Create ``directory`` below ``anchor`` one folder at a time, never through a link.

    Each missing folder is made (mode 0700) relative to its parent's open descriptor, then
    opened with ``O_NOFOLLOW``: a symbolic link anywhere between ``anchor`` and ``directory``
    is refused (``symlink-refused``) instead of followed, even one that appears while the
    folders are being made. ``anchor`` itself is created as :func:`ensure_dir` does; a
    ``directory`` outside ``anchor`` falls back to :func:`ensure_dir`.

    Raises:
        StorageError: a folder on the way is a link (``symlink-refused``) or not a folder, or
            the disk refused (``storage-full``, ``storage-read-only``, ...).

    Example:
        >>> ensure_dir_below(Path(".mnemon"), Path(".mnemon/scopes/projects/x/runtime"))
    """
    try:
        parts = directory.relative_to(anchor).parts
    except ValueError:
        ensure_dir(directory)
        return
    ensure_dir(anchor)
    if _DIRECTORY is None or os.open not in os.supports_dir_fd:
        _ensure_dir_checked(anchor, parts)
        return
    with io_errors("create the folder", directory):
        fd = os.open(anchor, os.O_RDONLY | _DIRECTORY)
        current = anchor
        try:
            for part in parts:
                current = current / part
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o700, dir_fd=fd)
                try:
                    child = os.open(part, os.O_RDONLY | _DIRECTORY | NOFOLLOW, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a link says ENOTDIR here
                        refuse_symlink(current, "folder")
                    raise
                os.close(fd)
                fd = child
        finally:
            os.close(fd)


def _ensure_dir_checked(anchor: Path, parts: tuple[str, ...]) -> None:
    """:func:`ensure_dir_below` without descriptors (Windows): ``lstat`` each folder made."""
    current = anchor
    for part in parts:
        current = current / part
        refuse_symlink(current, "folder")
        with io_errors("create the folder", current), contextlib.suppress(FileExistsError):
            os.mkdir(current, 0o700)
        refuse_symlink(current, "folder")  # a link put there meanwhile


def unlink_quietly(path: Path) -> None:
    """Remove ``path`` (a link itself, never its target); a missing file is fine."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StorageError.from_os_error(exc, f"remove {path.name}", path) from exc


def discard(path: Path) -> bool:
    """Best effort :func:`unlink_quietly` for clean-up paths: never raises; True if removed."""
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


class _FifoQueue:
    """A ticket lock: threads of one process take the file lock in arrival order."""

    __slots__ = ("_abandoned", "_cond", "_next_ticket", "_serving")

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._next_ticket = 0
        self._serving = 0
        self._abandoned: set[int] = set()

    def acquire(self, deadline: float) -> bool:
        with self._cond:
            ticket = self._next_ticket
            self._next_ticket += 1
            while self._serving != ticket:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    # Leave the queue; the ticket is skipped when its turn comes.
                    self._abandoned.add(ticket)
                    return False
                self._cond.wait(remaining)
            return True

    def release(self) -> None:
        with self._cond:
            self._serving += 1
            while self._serving in self._abandoned:
                self._abandoned.discard(self._serving)
                self._serving += 1
            self._cond.notify_all()


_queues: dict[str, _FifoQueue] = {}
_queues_guard = threading.Lock()


def _queue_for(path: Path) -> _FifoQueue:
    # Keyed by the path as given: the kernel lock is what excludes; the queue only orders
    # threads, so two spellings of one path cost fairness, never safety.
    key = str(path)
    queue = _queues.get(key)
    if queue is None:
        with _queues_guard:
            queue = _queues.setdefault(key, _FifoQueue())
    return queue


def _reset_after_fork() -> None:
    # A forked child must not inherit tickets held by threads that do not exist in it.
    global _queues_guard
    _queues.clear()
    _queues_guard = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX; Windows does not fork
    os.register_at_fork(after_in_child=_reset_after_fork)


@contextmanager
def locked(lock_path: Path, *, timeout: float, what: str) -> Iterator[None]:
    """Hold the in-process queue and the kernel lock on ``lock_path`` for the block.

    Raises :class:`StorageError` naming ``what`` when the lock is not had within ``timeout`` s.
    """
    deadline = time.monotonic() + timeout
    queue = _queue_for(lock_path)
    if not queue.acquire(deadline):
        raise StorageError(
            f"timed out after {timeout:g}s waiting for the {what} lock ({lock_path}); "
            "another thread of this process is still writing, retry later"
        )
    try:
        lock = _kernel_lock(lock_path, deadline, what)
        if lock is None:
            raise StorageError(
                f"timed out after {timeout:g}s waiting for the {what} lock ({lock_path}); "
                "another process is still writing, retry later"
            )
        try:
            yield
        finally:
            with contextlib.suppress(OSError):  # closing releases it in any case
                lock.release()
            lock.close()
    finally:
        queue.release()


def _kernel_lock(lock_path: Path, deadline: float, what: str) -> KernelLock | None:
    """Take the kernel lock; return it, or ``None`` past ``deadline``."""
    with io_errors(f"open the {what} lock file", lock_path):
        if not NOFOLLOW:
            refuse_symlink(lock_path, f"{what} lock file")
        lock = open_lock(os.open(lock_path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o600), lock_path)
    try:
        if lock.try_acquire():
            return lock
    except BaseException as exc:
        lock.close()
        if isinstance(exc, OSError):
            raise StorageError.from_os_error(exc, f"lock the {what}", lock_path) from exc
        raise
    # Contended: wait in a blocking call so the kernel wakes us the moment the holder lets go
    # (sleep-polling loses the race to the holder's next commit and starves). A helper thread
    # makes the wait bounded; if we stop waiting first, it releases the lock it later gets.
    waiter = _LockWaiter(lock)
    threading.Thread(target=waiter.run, name="mnemon-flock", daemon=True).start()
    return lock if waiter.wait(deadline - time.monotonic()) else None


class _LockWaiter:
    __slots__ = ("_acquired", "_cancelled", "_guard", "_lock")

    def __init__(self, lock: KernelLock) -> None:
        self._lock = lock
        self._guard = threading.Lock()
        self._acquired = threading.Event()
        self._cancelled = False

    def run(self) -> None:
        try:
            self._lock.acquire()
        except OSError:
            with self._guard:
                self._cancelled = True
            self._lock.close()
            return
        with self._guard:
            if not self._cancelled:
                self._acquired.set()
                return
        self._lock.release()
        self._lock.close()

    def wait(self, timeout: float) -> bool:
        if self._acquired.wait(max(timeout, 0)):
            return True
        with self._guard:
            if self._acquired.is_set():
                return True
            if self._cancelled:  # the waiter failed and closed the lock file
                return False
            self._cancelled = True  # the waiter thread now owns and closes the lock file
            return False
