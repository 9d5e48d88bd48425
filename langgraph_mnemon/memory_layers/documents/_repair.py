"""Repair of the Documents folder after a crash, and the reads that repair first.

Files that differ from ``index.json`` are re-rendered from it (the body is taken from any copy
whose SHA-256 matches the record: the file itself, the other status folder, a recovery link, a
leftover file), files of ours that no record owns are removed, temp files of dead writers are
deleted. A body that cannot be found is reported as unrecoverable and its files are left alone.
A missing ``index.json`` is rebuilt from the files' frontmatter. Symbolic links are never
followed, replaced or removed.

Documents on database tables (:class:`~._sql_store.SqlDocumentStore`) keep each record and its
body in one row written by one transaction: there is nothing to repair, and the functions here
report so; access times go to a column instead of ``access.jsonl``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from langgraph_mnemon.errors import MnemonError, StorageError
from langgraph_mnemon.memory_layers.documents._models import (
    STATUSES,
    DocumentRecord,
    DocumentStatus,
    RepairReport,
)
from langgraph_mnemon.memory_layers.documents._records import record_from_header
from langgraph_mnemon.memory_layers.documents._sql_store import SqlDocumentStore, Store
from langgraph_mnemon.memory_layers.documents._state import State
from langgraph_mnemon.memory_layers.documents._store import DocumentStore, Guard, file_header_id
from langgraph_mnemon.memory_layers.documents._text import parse_document, render_document
from langgraph_mnemon.storage.files import (
    append_durable,
    atomic_write,
    fsync_dir,
    io_errors,
    read_bytes,
    remove_stale_temps,
    unlink_quietly,
    warn_once,
)

__all__ = [
    "body_for_write",
    "load_for_write",
    "looks_consistent",
    "record_access",
    "repair",
    "repair_locked",
]

_ACCESS_FOLD_BYTES = 256 * 1024
_ACCESS_LOCK_SECONDS = 0.25

Scan = dict[str, dict[str, os.DirEntry[str]]]
Copies = dict[str, list[Path]]


def _scan(store: DocumentStore) -> Scan:
    """The ``.md`` files of each status folder by name (hidden files and links left out)."""
    found: Scan = {}
    for status in STATUSES:
        entries: dict[str, os.DirEntry[str]] = {}
        try:
            with os.scandir(store.folder(status)) as it:
                for entry in it:
                    if (
                        entry.name.endswith(".md")
                        and not entry.name.startswith(".")
                        and not entry.is_symlink()  # foreign: never read, replaced or removed
                    ):
                        entries[entry.name] = entry
        except FileNotFoundError:
            pass
        found[status] = entries
    return found


def _has_leftovers(store: DocumentStore) -> bool:
    """Temp files of a writer, a missing status folder, or anything in ``.recovery/``."""
    for status in STATUSES:
        folder = store.folder(status)
        if not folder.is_dir():
            return True
        if any(n.startswith(".") and n.endswith(".tmp") for n in os.listdir(folder)):
            return True
    if any(n.endswith(".tmp") for n in os.listdir(store.directory)):
        return True
    return store.recovery_dir.exists() and any(store.recovery_dir.iterdir())


def looks_consistent(store: DocumentStore) -> bool:
    """A lock-free check: no leftovers and every expected file present with its size."""
    if not store.index_path.exists():
        return False
    state = store.load()
    scan = _scan(store)
    if _has_leftovers(store):
        return False
    expected: set[tuple[str, str]] = set()
    for record in state.records:
        expected.add((record.status, record.filename))
        entry = scan[record.status].get(record.filename)
        try:
            if entry is None or entry.stat().st_size != record.size_bytes:
                return False
        except OSError:
            return False
    for status in STATUSES:
        for name, entry in scan[status].items():
            if (status, name) not in expected and file_header_id(Path(entry.path)) is not None:
                return False
    return True


# --- repair -----------------------------------------------------------------------------------


def repair(store: Store) -> RepairReport:
    """Make the files agree with ``index.json``: a lock-free check first, the lock only when
    something needs repairing. A database store has nothing to repair, nor has a scope's
    folder that its first write has not created yet (nothing is created for a read)."""
    if isinstance(store, SqlDocumentStore):
        return RepairReport()
    store.check_paths()
    if store.create_below is not None and not os.path.lexists(store.directory):
        return RepairReport()
    with io_errors("inspect the documents folder", store.directory):
        if looks_consistent(store):
            return RepairReport()
    with store.exclusive():
        return repair_locked(store)


def repair_locked(store: Store) -> RepairReport:
    """Repair under the lock (the caller holds it); I/O failures become ``StorageError``."""
    if isinstance(store, SqlDocumentStore):
        return RepairReport()
    with io_errors("repair the documents folder", store.directory):
        return _repair_files(store)


def _copies(store: DocumentStore, scan: Scan) -> tuple[Copies, list[Path]]:
    """Every file of ours by document id (the places a committed body may survive), and the
    recovery files."""
    copies: Copies = {}
    for status in STATUSES:
        for entry in scan[status].values():
            doc_id = file_header_id(Path(entry.path))
            if doc_id is not None:
                copies.setdefault(doc_id, []).append(Path(entry.path))
    recovery: list[Path] = []
    if store.recovery_dir.exists():
        recovery = sorted(
            p for p in store.recovery_dir.iterdir() if p.name.endswith(".md") and not p.is_symlink()
        )
        for path in recovery:
            doc_id = file_header_id(path)
            if doc_id is not None:
                copies.setdefault(doc_id, []).append(path)
    return copies, recovery


def _wanted(store: DocumentStore, record: DocumentRecord, copies: Copies) -> bytes | None:
    """The file ``record`` should have, from its own file or another copy with its hash;
    ``b""`` when its file is already right, ``None`` when no copy holds the body."""
    path = store.path_of(record)
    body = store.body_at(path, record.content_hash)
    if body is not None:
        want = render_document(record, body).encode()
        return b"" if read_bytes(path, "document file") == want else want
    for other in (p for p in copies.get(record.id, ()) if p != path):
        body = store.body_at(other, record.content_hash)
        if body is not None:
            return render_document(record, body).encode()
    return None


def _restore(
    store: DocumentStore, state: State, copies: Copies
) -> tuple[list[str], list[str], set[Path]]:
    """Re-render every stale file; returns (rewritten ids, unrecoverable ids, expected paths)."""
    rewritten: list[str] = []
    unrecoverable: list[str] = []
    expected: set[Path] = set()
    for record in state.records:
        path = store.path_of(record)
        expected.add(path)
        if os.path.islink(path):  # a foreign link sits where the file belongs: leave it
            unrecoverable.append(record.id)
            continue
        want = _wanted(store, record, copies)
        if want is None:
            unrecoverable.append(record.id)
        elif want:
            atomic_write(path, want)
            rewritten.append(record.id)
    return rewritten, unrecoverable, expected


def _remove_strays(
    store: DocumentStore,
    copies: Copies,
    recovery: list[Path],
    expected: set[Path],
    keep_ids: set[str],
) -> list[str]:
    """Delete files of ours that no record owns and used recovery copies; returns the paths."""
    removed: list[str] = []
    for doc_id, paths in copies.items():
        if doc_id in keep_ids:
            continue
        for path in paths:
            if path not in expected:
                unlink_quietly(path)
                removed.append(str(path.relative_to(store.root)))
    for path in recovery:
        doc_id = file_header_id(path)
        if doc_id is not None and doc_id not in keep_ids:
            unlink_quietly(path)
    return removed


def _repair_files(store: DocumentStore) -> RepairReport:
    for folder in (store.directory, store.folder("active"), store.folder("archived")):
        remove_stale_temps(folder)
    if store.recovery_dir.exists():
        remove_stale_temps(store.recovery_dir)
    rebuilt = False
    if not store.index_path.exists():
        rebuilt = _rebuild_index(store)
    state = store.load()
    copies, recovery = _copies(store, _scan(store))
    rewritten, unrecoverable, expected = _restore(store, state, copies)
    keep_ids = set(unrecoverable)
    if rebuilt:
        # Files the rebuild could not read stay where they are for a human to look at.
        keep_ids |= {d for d in copies if d not in state.by_id}
    removed = _remove_strays(store, copies, recovery, expected, keep_ids)
    for folder in (store.folder("active"), store.folder("archived")):
        fsync_dir(folder)
    return RepairReport(
        rewritten=tuple(rewritten),
        removed=tuple(removed),
        unrecoverable=tuple(unrecoverable),
        rebuilt_index=rebuilt,
    )


def _rebuild_index(store: DocumentStore) -> bool:
    """Write ``index.json`` from the frontmatter of the files present (or an empty one)."""
    records: list[DocumentRecord] = []
    seen: set[str] = set()
    for status in STATUSES:  # active first: an active copy wins over an archived one
        for entry in sorted(_scan(store)[status].values(), key=lambda e: e.name):
            record = _record_from_file(store, Path(entry.path), status)
            if record is not None and record.id not in seen:
                seen.add(record.id)
                records.append(record)
    store.write_index(records)
    return bool(records)


def _record_from_file(
    store: DocumentStore, path: Path, status: DocumentStatus
) -> DocumentRecord | None:
    try:
        header, body = parse_document((read_bytes(path, "document file") or b"").decode())
        return record_from_header(header, body, path.name, status, store.now)
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, MnemonError):
        return None


# --- under the lock: reads and folds that repair first -------------------------------------


def load_for_write(store: Store) -> State:
    """The committed state under the lock; rebuilds a missing index first."""
    state = store.load()
    if not state.exists:
        repair_locked(store)
        state = store.load()
    return state


def body_for_write(
    store: Store, state: State, record: DocumentRecord
) -> tuple[State, DocumentRecord, str]:
    """Under the lock: the committed body, repairing a crashed writer's leftovers first."""
    body = store.body_or_none(record)
    if body is None and isinstance(store, SqlDocumentStore):
        raise store.damaged(record, "")
    if body is None:
        repair_locked(store)
        state = store.load()
        record = state.record(record.id)
        return state, record, store.body_for(record)
    return state, record, body


def record_access(store: Store, ids: Sequence[str]) -> bool:
    """Record an access of ``ids`` in ``access.jsonl``; fold the journal when it is large.

    Access times only order LRU archiving, so the line is not fsynced: a power loss may
    forget recent accesses, never documents. A line torn by a crash is skipped on read.
    Returns False (with a warning logged once) when the access could not be recorded.
    On the database the access moves a column forward under the same short lock wait.
    """
    if isinstance(store, SqlDocumentStore):
        return _record_access_sql(store, ids)
    line = json.dumps({"at": store.now(), "ids": list(ids)}) + "\n"
    try:
        # A search never waits long for a writer in another process: it skips recording.
        store.check_paths()  # never append through a link put there after open
        with Guard(store, timeout=min(store.lock_timeout, _ACCESS_LOCK_SECONDS)):
            before = append_durable(store.access_path, line.encode(), fsync=False) or 0
            if before + len(line) > _ACCESS_FOLD_BYTES:
                state = load_for_write(store)
                store.commit(state, state.records)
    except (OSError, StorageError) as exc:
        # Best effort: a full or read-only disk, or a link, costs the LRU order, not the read.
        warn_once(
            f"access times {store.access_path}",
            "documents access times not recorded (%s): %s",
            store.access_path,
            exc,
        )
        return False
    return True


def _record_access_sql(store: SqlDocumentStore, ids: Sequence[str]) -> bool:
    try:
        # A search never waits long for a writer elsewhere: it skips recording.
        store.touch(ids, timeout=min(store.lock_timeout, _ACCESS_LOCK_SECONDS))
    except StorageError as exc:
        warn_once(
            f"access times {store.where}",
            "documents access times not recorded (%s): %s",
            store.where,
            exc,
        )
        return False
    return True
