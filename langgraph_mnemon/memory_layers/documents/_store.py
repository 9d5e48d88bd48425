"""The files of the Documents layer: the committed index, the access journal, bodies, commits.

``index.json`` is the only authority and the commit marker: new files are written to temp files,
fsynced and renamed, ``index.json`` is renamed last, and files the commit makes obsolete are
deleted only after it. A file about to be overwritten in place is first hard-linked into
``documents/.recovery/`` so the committed body survives a crash between the two renames.
Reads take only the in-process mutex; writers hold the cross-process lock (:class:`Guard`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from langgraph_mnemon.contracts import iso_utc
from langgraph_mnemon.errors import StorageError
from langgraph_mnemon.memory_layers.documents._models import (
    DocumentRecord,
    DocumentStatus,
    IndexFile,
)
from langgraph_mnemon.memory_layers.documents._state import Journal, State, fold_access_lines
from langgraph_mnemon.memory_layers.documents._text import (
    file_body,
    header_id,
    render_document,
    sha256,
)
from langgraph_mnemon.storage.files import (
    NOFOLLOW,
    atomic_write,
    discard,
    ensure_dir,
    ensure_dir_below,
    fsync_dir,
    io_errors,
    locked,
    pread,
    read_bytes,
    refuse_symlinks,
    unlink_quietly,
    warn_once,
    write_temp,
)

__all__ = ["DocumentStore", "Guard", "Write", "file_header_id", "parse_index"]

_log = logging.getLogger(__name__)
_HEADER_BYTES = 256

Write = tuple[Path, bytes, bool]
"""``(path, data, in_place)``: ``in_place`` means ``path`` holds the committed copy."""


def parse_index(raw: bytes, where: str) -> tuple[DocumentRecord, ...]:
    """The records of an ``index.json``; :class:`StorageError` naming ``where`` if invalid."""
    try:
        parsed = IndexFile.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "file"
        raise StorageError(
            f"documents index.json is invalid ({loc}: {first['msg']}; "
            f"{exc.error_count()} problem(s)): {where}. Restore it from a backup or fix it "
            "by hand; mnemon will not overwrite it.",
            code="storage-damaged",
        ) from None
    seen: set[str] = set()
    names: set[tuple[str, str]] = set()
    for record in parsed.documents:
        if record.id in seen or (record.status, record.filename) in names:
            raise StorageError(
                f"documents index.json lists document {record.id} or file "
                f"{record.filename} twice: {where}. Remove the duplicate by hand; mnemon "
                "will not overwrite the file.",
                code="storage-damaged",
            )
        seen.add(record.id)
        names.add((record.status, record.filename))
    return parsed.documents


def file_header_id(path: Path) -> str | None:
    """The document id in a file's frontmatter, or ``None`` when the file is not one of ours."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW)  # a link is not one of ours
    except OSError:
        return None
    try:
        head = os.read(fd, _HEADER_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    return header_id(head)


class DocumentStore:
    """The files under ``<root>/documents/`` and the caches that spare re-reading them.

    Args:
        root: the storage root.
        lock_timeout: seconds a writer waits for the cross-process lock.
        clock: returns the current time (for timestamps).
        create_below: the storage root when ``root`` is a scope's folder below it: the folders
            are then made by the first write only (:meth:`exclusive`), below that root and
            never through a link; until then the store reads as empty and repair creates
            nothing. ``None`` (the local scope): repair on open creates them.
    """

    def __init__(
        self,
        root: Path,
        *,
        lock_timeout: float,
        clock: Callable[[], datetime],
        create_below: Path | None = None,
    ) -> None:
        self.root = root
        self.create_below = create_below
        self.lock_timeout = lock_timeout
        self.clock = clock
        self.directory = root / "documents"
        self.index_path = self.directory / "index.json"
        self.lock_path = self.directory / ".index.lock"
        self.access_path = self.directory / "access.jsonl"
        self.recovery_dir = self.directory / ".recovery"
        self.mutex = threading.RLock()
        self._index_cache: tuple[Any, tuple[DocumentRecord, ...]] | None = None
        self._journal = Journal()
        self._journal.reset(None)
        self._state_cache: tuple[Any, State] | None = None
        self._lines: dict[str, tuple[DocumentRecord, bytes]] = {}

    def now(self) -> str:
        """The clock's time as a record timestamp (UTC, milliseconds)."""
        return iso_utc(self.clock(), precision="milliseconds")

    # -- paths -------------------------------------------------------------------------------

    def folder(self, status: DocumentStatus) -> Path:
        return self.directory / status

    def path_of(self, record: DocumentRecord) -> Path:
        return self.folder(record.status) / record.filename

    def check_paths(self) -> None:
        """One ``lstat`` per managed path: refuse the root if any of them is a symbolic link."""
        refuse_symlinks(
            [
                (self.directory, "documents folder"),
                (self.index_path, "documents index.json"),
                (self.folder("active"), "documents active folder"),
                (self.folder("archived"), "documents archived folder"),
                (self.recovery_dir, "documents .recovery folder"),
                (self.access_path, "documents access.jsonl"),
                (self.lock_path, "documents lock file"),
            ]
        )

    def exclusive(self) -> Guard:
        """The writer's lock, with the folders created (after the link check)."""
        self.check_paths()  # before a folder or the lock file is created through a link
        for folder in (self.directory, self.folder("active"), self.folder("archived")):
            if self.create_below is None:
                ensure_dir(folder)
            else:
                ensure_dir_below(self.create_below, folder)
        return Guard(self)

    # -- the committed state -----------------------------------------------------------------

    def load(self) -> State:
        """The committed state (cached until ``index.json`` or ``access.jsonl`` changes)."""
        with self.mutex:
            index_key, records, exists = self._read_index()
            if self._journal.index_key != index_key:
                self._journal.reset(None)
                self._journal.index_key = index_key
            access_generation, access = self._read_access()
            key = (index_key, access_generation)
            cached = self._state_cache
            if cached is not None and cached[0] == key:
                return cached[1]
            state = State(records, index_key, exists, access)
            self._state_cache = (key, state)
            return state

    def _read_index(self) -> tuple[Any, tuple[DocumentRecord, ...], bool]:
        try:
            fd = os.open(self.index_path, os.O_RDONLY | NOFOLLOW)
        except FileNotFoundError:
            return None, (), False
        except OSError as exc:
            raise StorageError.from_os_error(
                exc, "read documents index.json", self.index_path
            ) from exc
        try:
            with io_errors("read documents index.json", self.index_path):
                st = os.fstat(fd)
                key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
                cached = self._index_cache
                if cached is not None and cached[0] == key:
                    return key, cached[1], True
                with os.fdopen(fd, "rb", closefd=False) as fh:
                    raw = fh.read()
        finally:
            os.close(fd)
        records = parse_index(raw, str(self.index_path))
        self._index_cache = (key, records)
        return key, records, True

    def _journal_tail(self) -> bytes | None:
        """The bytes appended to ``access.jsonl`` since the last read (``None``: no journal)."""
        journal = self._journal
        try:
            fd = os.open(self.access_path, os.O_RDONLY | NOFOLLOW)
        except OSError as exc:
            if not isinstance(exc, FileNotFoundError):
                # Advisory data: a link put there after open, or an unreadable file, is skipped.
                warn_once(f"read {self.access_path}", "access times not read: %s", exc)
            return None
        try:
            st = os.fstat(fd)
            if st.st_ino != journal.ino or st.st_size < journal.offset:
                journal.reset(st.st_ino)
            if st.st_size > journal.offset:
                return pread(fd, st.st_size - journal.offset, journal.offset)
            return b""
        finally:
            os.close(fd)

    def _read_access(self) -> tuple[int, dict[str, str]]:
        """Read the complete lines appended to ``access.jsonl`` since the last call."""
        journal = self._journal
        data = self._journal_tail()
        if data is None:
            if journal.ino is not None:
                journal.reset(None)
            assert journal.latest is not None
            return journal.generation, journal.latest
        latest = journal.latest
        assert latest is not None
        journal.offset += fold_access_lines(data, latest)
        return journal.generation, latest

    # -- bodies ------------------------------------------------------------------------------

    def body_at(self, path: Path, content_hash: str) -> str | None:
        """The body of the file at ``path`` if its SHA-256 is ``content_hash``, else ``None``.

        A symbolic link is never read through (``None``, as for a missing file).
        """
        try:
            text = (read_bytes(path, "document file") or b"").decode()
        except (StorageError, UnicodeDecodeError):
            return None
        body = file_body(text)  # the hash check below vouches for the whole body
        return body if body is not None and sha256(body) == content_hash else None

    def body_or_none(self, record: DocumentRecord) -> str | None:
        return self.body_at(self.path_of(record), record.content_hash)

    def damaged(self, record: DocumentRecord, advice: str) -> StorageError:
        """The error for a body that is missing or does not match (a link is refused first)."""
        refuse_symlinks([(self.path_of(record), "document file")])
        return StorageError(
            f"document file {self.path_of(record)} is missing or does not match index.json "
            f"(expected SHA-256 {record.content_hash}). {advice}",
            code="storage-damaged",
        )

    def body_for(self, record: DocumentRecord) -> str:
        """The verified body of ``record``; :class:`StorageError` if it cannot be read."""
        body = self.body_or_none(record)
        if body is None:
            raise self.damaged(
                record,
                "Run `mnemon docs list` to repair, or restore the file from a backup; mnemon "
                "will not overwrite it.",
            )
        return body

    # -- committing --------------------------------------------------------------------------

    def write_of(self, record: DocumentRecord, body: str, in_place: bool) -> Write:
        """The commit write of ``record``'s rendered file."""
        return (self.path_of(record), render_document(record, body).encode(), in_place)

    def encode_index(self, records: Sequence[DocumentRecord]) -> bytes:
        """``index.json`` for ``records``: one line per record, unchanged lines reused."""
        lines = []
        cache = self._lines
        for record in records:
            hit = cache.get(record.id)
            if hit is None or hit[0] is not record:
                hit = (record, record.model_dump_json(exclude_none=True).encode())
                cache[record.id] = hit
            lines.append(hit[1])
        if len(cache) > 2 * len(records) + 64:
            keep = {r.id for r in records}
            for doc_id in [k for k in cache if k not in keep]:
                del cache[doc_id]
        body = b"\n" + b",\n".join(lines) + b"\n" if lines else b""
        return b'{"version":1,"documents":[' + body + b"]}\n"

    def write_index(self, records: Sequence[DocumentRecord]) -> None:
        """Write ``index.json`` directly (a rebuild, when there is no committed index)."""
        atomic_write(self.index_path, self.encode_index(records))

    def commit(
        self,
        state: State,
        records: Sequence[DocumentRecord],
        *,
        writes: Sequence[Write] = (),
        removals: Sequence[Path] = (),
    ) -> None:
        """Write ``writes`` then ``index.json`` (the commit marker), then delete ``removals``.

        Each write is ``(path, data, in_place)``; ``in_place`` means ``path`` holds the committed
        copy of the same document, which is hard-linked into ``.recovery/`` until the index is
        renamed. Hold the lock. On an exception before the index rename, every file is put back
        and an I/O failure is raised as a typed :class:`StorageError` naming the file.
        """
        self.check_paths()
        # Folds access.jsonl into the index.
        records = tuple(state.merged(r) for r in records) if state.access else tuple(records)
        temps: list[Path] = []
        placed: list[tuple[Path, Path | None]] = []
        index_temp: Path | None = None
        try:
            staged = []
            for path, data, in_place in writes:
                staged.append((write_temp(path, data), path, in_place))
                temps.append(staged[-1][0])
            index_temp = write_temp(self.index_path, self.encode_index(records))
            temps.append(index_temp)
            self._place(staged, placed)
            with io_errors("replace documents index.json", self.index_path):
                os.replace(index_temp, self.index_path)
        except BaseException:
            if index_temp is not None and not os.path.lexists(index_temp):
                raise  # interrupted after the commit marker: leftovers are repair's job
            self._put_back(temps, placed)
            raise
        self._after_commit(records, placed, removals)

    def _place(
        self, staged: Sequence[tuple[Path, Path, bool]], placed: list[tuple[Path, Path | None]]
    ) -> None:
        """Rename the staged temp files into place (recording each in ``placed``), then fsync."""
        for tmp, path, in_place in staged:
            keep = self._preserve(path) if in_place else None
            with io_errors(f"replace {path.name}", path):
                os.replace(tmp, path)
            placed.append((path, keep))
        for folder in {path.parent for _, path, _ in staged}:
            fsync_dir(folder)

    def _put_back(self, temps: Sequence[Path], placed: Sequence[tuple[Path, Path | None]]) -> None:
        """Best effort after a failed commit: temp files gone, replaced files restored."""
        for tmp in temps:
            discard(tmp)
        for path, keep in reversed(placed):
            try:
                if keep is not None:
                    os.replace(keep, path)
                else:
                    os.unlink(path)
            except OSError as exc:
                _log.warning("documents: %s left for repair on open: %s", path, exc)

    def _after_commit(
        self,
        records: tuple[DocumentRecord, ...],
        placed: Sequence[tuple[Path, Path | None]],
        removals: Sequence[Path],
    ) -> None:
        """Clean-up once ``index.json`` is renamed: the commit is visible, so nothing here may
        report it as failed; what cannot be done is logged and left to repair."""
        try:
            fsync_dir(self.directory)
            st = os.stat(self.index_path)
            self._index_cache = ((st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size), records)
            unlink_quietly(self.access_path)  # folded into the index just written
            for path in removals:
                unlink_quietly(path)
            for folder in {p.parent for p in removals}:
                fsync_dir(folder)
            for _, keep in placed:
                if keep is not None:
                    unlink_quietly(keep)
        except (OSError, StorageError) as exc:
            self._index_cache = None
            _log.warning(
                "documents committed; clean-up left to repair (%s): %s", self.directory, exc
            )

    def _preserve(self, path: Path) -> Path | None:
        """Hard-link the committed file at ``path`` into ``.recovery/`` (copy if links fail)."""
        if not path.exists():
            return None
        ensure_dir(self.recovery_dir)
        keep = self.recovery_dir / f"{path.parent.name}-{path.name}"
        unlink_quietly(keep)
        try:
            os.link(path, keep)
        except OSError:
            atomic_write(keep, read_bytes(path, "document file") or b"")
        fsync_dir(self.recovery_dir)
        return keep


class Guard:
    """The kernel lock on ``documents/.index.lock`` (FIFO across threads), then the cache mutex.

    Readers only ever take the mutex, briefly, so they never wait for another process.
    """

    __slots__ = ("_file", "_store", "_timeout")

    def __init__(self, store: DocumentStore, timeout: float | None = None) -> None:
        self._store = store
        self._file: Any = None
        self._timeout = store.lock_timeout if timeout is None else timeout

    def __enter__(self) -> None:
        self._file = locked(self._store.lock_path, timeout=self._timeout, what="documents")
        self._file.__enter__()
        try:
            self._store.mutex.acquire()
        except BaseException:
            self._file.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: Any) -> None:
        try:
            self._store.mutex.release()
        finally:
            self._file.__exit__(*exc)
