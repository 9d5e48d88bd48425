"""Documents on database tables: the twin of :class:`~._store.DocumentStore` for one owner.

Replicas of a server share Documents through one database (PostgreSQL; SQLite works too). The
service and its helpers use this store exactly as the file store: :meth:`load` gives the
committed :class:`~._state.State`, :meth:`exclusive` is the writer's lock, :meth:`commit`
writes one mutation. The semantics are the files' ones:

* the collection revision is :attr:`State.revision` over the same records, so identical
  Documents have identical revisions on both backends;
* one mutation is one transaction under a per-owner lock (PostgreSQL: a transaction-scoped
  advisory lock; SQLite: the ``BEGIN IMMEDIATE`` write transaction). Reads inside it see the
  latest commit, an exception rolls everything back, and a writer killed mid-commit leaves
  nothing behind (the server drops its transaction). A lock not had in time raises the file
  lock's :class:`StorageError` ("timed out ... waiting for the documents lock", code
  ``storage-error``). PostgreSQL waits ``lock_timeout`` seconds; SQLite waits the engine's
  busy timeout (``mnemos.sqlite_busy_timeout_ms``), which bounds ``BEGIN IMMEDIATE``;
* records and bodies sit in the same row, so there is nothing to repair (:meth:`repair` in
  :mod:`._repair` reports nothing);
* access times move a column forward (one ``UPDATE``), never the record; the next commit folds
  them into the record, as the file store folds ``access.jsonl`` into ``index.json``.

A read checks one head row and reuses the cached state while it is unchanged; bodies are
cached by content hash (they never change under one hash). With the schema absent, reads
answer empty and create nothing; the first write creates the tables.

Paths: nothing is written to disk. :meth:`folder` and :meth:`path_of` give the paths the file
backend would use under the same root, so tool output and plans name the same relative paths
(``documents/active/<slug>-<id8>.md``) whichever backend holds the Documents.

Example:
    >>> docs = Documents("./.mnemon", database=db, owner_key="project:billing")
    >>> docs.create("Runbook", "1. Tag.").document.relative_path
    'documents/active/runbook-1a2b3c4d.md'
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import sqlalchemy as sa
from pydantic import ValidationError
from sqlalchemy.engine import Connection

from langgraph_mnemon.contracts import iso_utc
from langgraph_mnemon.errors import InvalidInputError, StorageError
from langgraph_mnemon.memory_layers.documents._index import SearchIndex, fingerprint
from langgraph_mnemon.memory_layers.documents._models import DocumentRecord, DocumentStatus
from langgraph_mnemon.memory_layers.documents._sql_schema import DOCUMENTS, HEADS, MIGRATIONS
from langgraph_mnemon.memory_layers.documents._state import State
from langgraph_mnemon.memory_layers.documents._store import DocumentStore
from langgraph_mnemon.memory_layers.documents._text import sha256
from langgraph_mnemon.storage.db import Database, advisory_lock, upsert

__all__ = [
    "BodyReader",
    "SqlDocumentStore",
    "SqlWrite",
    "Store",
    "body_reader",
    "make_store",
    "validate_owner_key",
]

SqlWrite = tuple[DocumentRecord, str]
"""``(record, body)``: the row a commit writes."""

BodyReader = Callable[[DocumentRecord], "str | None"]

_LOCK_SCOPE = "mnemon-documents"
_MAX_OWNER_CHARS = 1000
_BODY_CACHE_CHARS = 8 * 1024 * 1024
_IN_BATCH = 500
_ROW_COLUMNS = (
    "position",
    "status",
    "revision",
    "content_hash",
    "size_bytes",
    "last_accessed_at",
    "record",
)


class _Head(NamedTuple):
    generation: str
    access_token: str


def validate_owner_key(value: Any) -> str:
    """An owner key (``"project:local"``, ``"project:billing/user:alice"``), or
    :class:`InvalidInputError`."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(
            "owner_key must be a non-empty string such as 'project:local'; build one with "
            "Scope.project_key()"
        )
    if len(value) > _MAX_OWNER_CHARS or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise InvalidInputError(
            f"owner_key must be at most {_MAX_OWNER_CHARS} characters without control "
            "characters; build one with Scope.project_key()"
        )
    return value


def _token() -> str:
    return uuid.uuid4().hex


def _read_head(conn: Connection, owner: str) -> _Head | None:
    row = conn.execute(
        sa.select(HEADS.c.generation, HEADS.c.access_token).where(HEADS.c.owner == owner)
    ).first()
    return None if row is None else _Head(row[0], row[1])


class SqlDocumentStore:
    """The Documents of one owner in ``database`` (thread-safe; one transaction a mutation).

    Args:
        database: the shared database.
        owner: the owner key every row carries (``"project:local"`` for the local scope).
        root: the storage root the file backend would use (for display paths only).
        lock_timeout: seconds a writer waits for the owner's lock.
        clock: returns the current time (for timestamps).
    """

    repair_free = True

    def __init__(
        self,
        database: Database,
        owner: str,
        *,
        root: Path,
        lock_timeout: float,
        clock: Callable[[], datetime],
    ) -> None:
        if not isinstance(database, Database):
            raise InvalidInputError(
                f"database must be a langgraph_mnemon.storage.db.Database (got "
                f"{type(database).__name__}); build one with Database(create_engine(url))"
            )
        self.database = database
        self.owner = validate_owner_key(owner)
        self.root = root
        self.lock_timeout = lock_timeout
        self.clock = clock
        self.directory = root / "documents"
        self.index_path = self.directory / "index.json"
        self.lock_path = self.directory / ".index.lock"
        self.access_path = self.directory / "access.jsonl"
        self.recovery_dir = self.directory / ".recovery"
        self.where = f"{database.url} (documents of {owner})"
        # The service's search index is guarded by this, as with the file store.
        self.mutex = threading.RLock()
        self._writer = threading.Lock()  # one writer of this store at a time in the process
        self._local = threading.local()  # the writer's open transaction, per thread
        self._cache_lock = threading.Lock()
        self._state_cache: tuple[_Head, State] | None = None
        self._parsed: dict[str, tuple[str, DocumentRecord]] = {}
        self._bodies: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._body_chars = 0

    def now(self) -> str:
        """The clock's time as a record timestamp (UTC, milliseconds)."""
        return iso_utc(self.clock(), precision="milliseconds")

    # -- paths (what the file backend would use; nothing is written there) --------------------

    def folder(self, status: DocumentStatus) -> Path:
        """The folder the file backend would use for ``status``."""
        return self.directory / status

    def path_of(self, record: DocumentRecord) -> Path:
        """Where the file backend would keep ``record``'s file."""
        return self.folder(record.status) / record.filename

    def check_paths(self) -> None:
        """Nothing to check: no file is managed."""

    # -- the committed state -----------------------------------------------------------------

    def load(self) -> State:
        """The committed state (one head-row query while the cached state is current)."""
        conn = self._tx()
        if conn is not None:
            pending = getattr(self._local, "pending", None)
            return pending if pending is not None else self._read_state(conn)
        if not self.database.ready_for_read(MIGRATIONS):
            return _empty()
        head = self.database.run_single(_read_head, self.owner)
        if head is None:
            return _empty()
        cached = self._state_cache
        if cached is not None and cached[0] == head:
            return cached[1]
        return self.database.run_read(self._read_state)

    def _read_state(self, conn: Connection) -> State:
        head = _read_head(conn, self.owner)
        if head is None:
            return _empty()
        cached = self._state_cache
        if cached is not None and cached[0] == head:
            return cached[1]
        rows = conn.execute(
            sa.select(DOCUMENTS.c.id, DOCUMENTS.c.record, DOCUMENTS.c.last_accessed_at)
            .where(DOCUMENTS.c.owner == self.owner)
            .order_by(DOCUMENTS.c.position)
        ).all()
        records: list[DocumentRecord] = []
        access: dict[str, str] = {}
        for doc_id, text, seen in rows:
            record = self._parse(doc_id, text)
            records.append(record)
            if seen > record.last_accessed_at:
                access[doc_id] = seen
        self._check_unique(records)
        state = State(tuple(records), head.generation, True, access)
        with self._cache_lock:
            self._state_cache = (head, state)
        return state

    def _parse(self, doc_id: str, text: str) -> DocumentRecord:
        """The record of one row (parsed once per distinct JSON text)."""
        hit = self._parsed.get(doc_id)
        if hit is not None and hit[0] == text:
            return hit[1]
        try:
            record = DocumentRecord.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "record"
            raise self._damaged_row(doc_id, f"{loc}: {first['msg']}") from None
        if record.id != doc_id:
            raise self._damaged_row(doc_id, f"the record names document {record.id}")
        with self._cache_lock:
            self._parsed[doc_id] = (text, record)
        return record

    def _check_unique(self, records: Sequence[DocumentRecord]) -> None:
        names: set[tuple[str, str]] = set()
        for record in records:
            key = (record.status, record.filename)
            if key in names:
                raise self._damaged_row(record.id, f"file name {record.filename} is used twice")
            names.add(key)
        if len(self._parsed) > 2 * len(records) + 64:
            keep = {r.id for r in records}
            with self._cache_lock:
                for doc_id in [k for k in self._parsed if k not in keep]:
                    del self._parsed[doc_id]

    def _damaged_row(self, doc_id: str, problem: str) -> StorageError:
        return StorageError(
            f"the database row of document {doc_id} is invalid ({problem}): {self.where}. "
            "Restore the database from a backup or fix the row by hand; mnemon will not "
            "overwrite it.",
            code="storage-damaged",
        )

    # -- bodies ------------------------------------------------------------------------------

    def body_or_none(self, record: DocumentRecord) -> str | None:
        """The verified body of ``record`` (``None`` when no row holds that exact body)."""
        key = (record.id, record.content_hash)
        cached = self._bodies.get(key)
        if cached is not None:
            return cached
        stmt = sa.select(DOCUMENTS.c.body).where(
            DOCUMENTS.c.owner == self.owner,
            DOCUMENTS.c.id == record.id,
            DOCUMENTS.c.content_hash == record.content_hash,
        )
        conn = self._tx()
        if conn is not None:
            body = conn.execute(stmt).scalar()
        elif self.database.ready_for_read(MIGRATIONS):
            body = self.database.run_single(lambda c: c.execute(stmt).scalar())
        else:
            body = None
        if body is None or sha256(body) != record.content_hash:
            return None
        self._keep_body(key, body)
        return body

    def _keep_body(self, key: tuple[str, str], body: str) -> None:
        """Cache a verified body (the oldest dropped past the budget)."""
        if len(body) > _BODY_CACHE_CHARS // 4:
            return
        with self._cache_lock:
            if key in self._bodies:
                self._bodies.move_to_end(key)
                return
            self._bodies[key] = body
            self._body_chars += len(body)
            while self._body_chars > _BODY_CACHE_CHARS:
                _, old = self._bodies.popitem(last=False)
                self._body_chars -= len(old)

    def prefetch(self, records: Sequence[DocumentRecord]) -> dict[str, str]:
        """The verified bodies of ``records`` in batched queries (missing ones left out)."""
        found: dict[str, str] = {}
        wanted = {r.id: r.content_hash for r in records}
        ids = list(wanted)
        if not ids or not self.database.ready_for_read(MIGRATIONS):
            return found

        def fetch(conn: Connection) -> list[Any]:
            rows: list[Any] = []
            for start in range(0, len(ids), _IN_BATCH):
                batch = ids[start : start + _IN_BATCH]
                rows += conn.execute(
                    sa.select(DOCUMENTS.c.id, DOCUMENTS.c.content_hash, DOCUMENTS.c.body).where(
                        DOCUMENTS.c.owner == self.owner, DOCUMENTS.c.id.in_(batch)
                    )
                ).all()
            return rows

        for doc_id, content_hash, body in self.database.run_read(fetch):
            if wanted.get(doc_id) == content_hash and sha256(body) == content_hash:
                found[doc_id] = body
                self._keep_body((doc_id, content_hash), body)
        return found

    def damaged(self, record: DocumentRecord, advice: str) -> StorageError:
        """The error for a body that is missing or does not match its record."""
        del advice  # the file store's advice names files; a database row has its own
        return StorageError(
            f"document {record.id} ({record.filename}) has no body matching its record "
            f"(expected SHA-256 {record.content_hash}) in {self.where}. Restore the database "
            "from a backup; mnemon will not overwrite it.",
            code="storage-damaged",
        )

    def body_for(self, record: DocumentRecord) -> str:
        """The verified body of ``record``; :class:`StorageError` if there is none."""
        body = self.body_or_none(record)
        if body is None:
            raise self.damaged(record, "")
        return body

    # -- the writer's lock -------------------------------------------------------------------

    def _tx(self) -> Connection | None:
        return getattr(self._local, "conn", None)

    def _timed_out(self, waited: float, who: str) -> StorageError:
        # The file lock's error and code: callers treat both backends alike.
        return StorageError(
            f"timed out after {waited:g}s waiting for the documents lock ({self.where}); "
            f"another {who} is still writing, retry later"
        )

    @contextmanager
    def exclusive(self, timeout: float | None = None) -> Iterator[Connection]:
        """The owner's lock inside one write transaction that commits when the block ends.

        Re-entrant in one thread. Raises :class:`StorageError` when the lock is not had
        within ``timeout`` seconds (``lock_timeout`` by default).
        """
        held = self._tx()
        if held is not None:
            yield held
            return
        wait = self.lock_timeout if timeout is None else timeout
        if not self.database.is_setup(MIGRATIONS):
            self.database.setup(MIGRATIONS)  # the first write creates the tables
        started = time.monotonic()
        if not self._writer.acquire(timeout=wait):
            raise self._timed_out(wait, "thread of this process")
        try:
            with self._transaction(started, wait) as conn:
                self._local.conn, self._local.pending = conn, None
                try:
                    yield conn
                finally:
                    pending = self._local.pending
                    self._local.conn = self._local.pending = None
            if pending is not None:  # committed: later reads start from it
                with self._cache_lock:
                    self._state_cache = (_Head(pending.generation, pending.generation), pending)
        finally:
            self._writer.release()

    @contextmanager
    def _transaction(self, started: float, wait: float) -> Iterator[Connection]:
        locked = False
        try:
            with self.database.write() as conn:  # SQLite: BEGIN IMMEDIATE is the lock
                left = max(wait - (time.monotonic() - started), 0.001)
                if conn.dialect.name == "postgresql":
                    # Bounds the advisory-lock wait (and any row wait after it).
                    conn.execute(sa.text(f"SET LOCAL lock_timeout = {max(int(left * 1000), 1)}"))
                    advisory_lock(conn, _LOCK_SCOPE, self.owner)
                locked = True
                yield conn
        except StorageError as exc:
            if not locked and exc.code == "database-locked":
                raise self._timed_out(round(time.monotonic() - started, 3), "process") from None
            raise

    # -- committing --------------------------------------------------------------------------

    def write_of(self, record: DocumentRecord, body: str, in_place: bool) -> SqlWrite:
        """The row a commit writes for ``record`` (``in_place`` matters only to files)."""
        del in_place
        return (record, body)

    def commit(
        self,
        state: State,
        records: Sequence[DocumentRecord],
        *,
        writes: Sequence[SqlWrite] = (),
        removals: Sequence[Any] = (),
    ) -> None:
        """Write the rows that differ from ``state`` and a new head, inside :meth:`exclusive`.

        ``records`` is the whole new index in order; ``writes`` carry the bodies of new or
        changed documents. Access times are folded into the records, as the file store folds
        its journal. ``removals`` (file paths) mean nothing here: a row is replaced whole.
        """
        del removals
        conn = self._tx()
        if conn is None:
            raise RuntimeError("SqlDocumentStore.commit() runs inside exclusive()")
        records = tuple(state.merged(r) for r in records) if state.access else tuple(records)
        bodies = {record.id: body for record, body in writes}
        full, meta = self._changed_rows(state, records, bodies)
        if full:
            stmt = upsert(
                self.database.dialect, DOCUMENTS, ["owner", "id"], (*_ROW_COLUMNS, "body")
            )
            conn.execute(stmt, full)
        if meta:
            conn.execute(_META_UPDATE, meta)
        keep = {r.id for r in records}
        gone = [doc_id for doc_id in state.by_id if doc_id not in keep]
        for start in range(0, len(gone), _IN_BATCH):
            conn.execute(
                sa.delete(DOCUMENTS).where(
                    DOCUMENTS.c.owner == self.owner,
                    DOCUMENTS.c.id.in_(gone[start : start + _IN_BATCH]),
                )
            )
        generation = _token()
        after = State(records, generation, True, {})
        head = {
            "owner": self.owner,
            "generation": generation,
            "access_token": generation,
            "revision": after.revision,
            "updated_at": time.time(),
        }
        conn.execute(upsert(self.database.dialect, HEADS, ["owner"], list(head)[1:]), head)
        self._local.pending = after
        for record in records:
            body = bodies.get(record.id)
            if body is not None:
                self._keep_body((record.id, record.content_hash), body)

    def _changed_rows(
        self, state: State, records: tuple[DocumentRecord, ...], bodies: dict[str, str]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Rows to write whole (with a body) and rows whose record alone changed."""
        full: list[dict[str, Any]] = []
        meta: list[dict[str, Any]] = []
        positions = state.positions
        for position, record in enumerate(records):
            body = bodies.get(record.id)
            if body is None and (
                state.by_id.get(record.id) is record and positions.get(record.id) == position
            ):
                continue  # unchanged
            values = _row(self.owner, position, record)
            if body is not None:
                full.append({**values, "body": body})
            elif record.id in state.by_id:
                meta.append({f"v_{k}": v for k, v in values.items()})
            else:
                raise RuntimeError(f"document {record.id} is new but its body was not given")
        return full, meta

    # -- access times ------------------------------------------------------------------------

    def touch(self, ids: Sequence[str], timeout: float) -> None:
        """Move the last access of ``ids`` to now (one ``UPDATE``; records stay as committed).

        Raises :class:`StorageError` when the lock is not had within ``timeout`` seconds.
        """
        stamp = self.now()
        with self.exclusive(timeout) as conn:
            head = _read_head(conn, self.owner)
            if head is None:
                return
            done = conn.execute(
                sa.update(DOCUMENTS)
                .where(
                    DOCUMENTS.c.owner == self.owner,
                    DOCUMENTS.c.id.in_(list(ids)),
                    DOCUMENTS.c.last_accessed_at < stamp,
                )
                .values(last_accessed_at=stamp)
            )
            if not done.rowcount:
                return
            token = _token()
            conn.execute(
                sa.update(HEADS).where(HEADS.c.owner == self.owner).values(access_token=token)
            )
        self._after_touch(head, _Head(head.generation, token), ids, stamp)

    def _after_touch(self, before: _Head, after: _Head, ids: Sequence[str], stamp: str) -> None:
        """Carry the cached state over to the new access times (when it was current)."""
        with self._cache_lock:
            cached = self._state_cache
            if cached is None or cached[0] != before:
                return
            state = cached[1]
            access = dict(state.access)
            for doc_id in ids:
                record = state.get(doc_id)
                if record is not None and stamp > record.last_accessed_at:
                    access[doc_id] = stamp
            fresh = State(state.records, state.generation, True, access)
            self._state_cache = (after, fresh)


_META_UPDATE = (
    sa.update(DOCUMENTS)
    .where(DOCUMENTS.c.owner == sa.bindparam("v_owner"), DOCUMENTS.c.id == sa.bindparam("v_id"))
    .values({name: sa.bindparam(f"v_{name}") for name in _ROW_COLUMNS})
)


def _row(owner: str, position: int, record: DocumentRecord) -> dict[str, Any]:
    return {
        "owner": owner,
        "id": record.id,
        "position": position,
        "status": record.status,
        "revision": record.revision,
        "content_hash": record.content_hash,
        "size_bytes": record.size_bytes,
        "last_accessed_at": record.last_accessed_at,
        # The index.json line of the record, byte for byte.
        "record": record.model_dump_json(exclude_none=True),
    }


def _empty() -> State:
    return State((), None, True, {})


Store = DocumentStore | SqlDocumentStore


def make_store(
    root: Path,
    database: Database | None,
    owner: str,
    *,
    lock_timeout: float,
    clock: Callable[[], datetime],
    create_below: Path | None = None,
) -> Store:
    """The file store under ``root``, or with ``database`` the tables of ``owner``.

    ``create_below``: the file store's folders are made by the first write, below that root
    (see :class:`~._store.DocumentStore`).
    """
    if database is None:
        return DocumentStore(
            root, lock_timeout=lock_timeout, clock=clock, create_below=create_below
        )
    return SqlDocumentStore(database, owner, root=root, lock_timeout=lock_timeout, clock=clock)


def body_reader(
    store: Store, index: SearchIndex, state: State, include_archived: bool
) -> BodyReader:
    """How a search reads bodies: on the database, the bodies the index still needs come in
    one batched query first (the file store reads each file as before). Hold the mutex."""
    if not isinstance(store, SqlDocumentStore) or (state.generation, include_archived) in (
        index.scopes
    ):
        return store.body_or_none
    needed = []
    for record in state.records:
        if not include_archived and record.status != "active":
            continue
        entry = index.get(record.id)
        if entry is None or entry.fingerprint[:3] != fingerprint(record)[:3]:
            needed.append(record)
    fetched = store.prefetch(needed) if len(needed) > 1 else {}

    def read(record: DocumentRecord) -> str | None:
        body = fetched.get(record.id)
        return body if body is not None else store.body_or_none(record)

    return read
