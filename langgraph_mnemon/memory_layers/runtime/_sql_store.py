"""Runtime Memory on database tables: the twin of :mod:`._file_store` for shared storage.

One :class:`RuntimeTable` serves one *owner* key (``"user:alice"`` holds USER entries,
``"project:billing"`` or ``"project:billing/user:alice"`` MEMORY entries; ``"user:local"`` and
``"project:local"`` for the local scope) over the shared
:class:`~langgraph_mnemon.storage.db.Database` (SQLite or PostgreSQL), so server replicas share
Runtime Memory through one database. Component ``"runtime"``:

* ``mnemon_runtime_entries`` — one row per entry: ``(owner, position)`` and the stored fields.
  ``position`` comes from one counter for the whole database (a PostgreSQL sequence; on SQLite,
  whose writes are serialised anyway, the largest position + 1), so the USER rows of one owner
  and the MEMORY rows of another merge back into the order a single ``memories.json`` keeps.
* ``mnemon_runtime_heads`` — one row per owner: a ``generation`` bumped by every commit and the
  ``revision`` (:func:`~._file_store.revision_of` over the owner's rows, the very hash the file
  backend computes). Reads validate their cache with this one small row.
* ``mnemon_runtime_archive`` — the lines of ``runtime/archived/<target>.jsonl``, in order.

A mutation is one transaction under a per-owner lock (PostgreSQL: a transaction-level advisory
lock; SQLite: the database write lock) taken within ``lock_timeout``; leaving
:meth:`RuntimeTable.lock` commits, an exception rolls everything back. There are no projections
to repair: USER.md / MEMORY.md text is rendered from the rows on demand.

Example:
    >>> table = RuntimeTable(database, "project:billing", lock_timeout=10.0)
    >>> with table.lock():
    ...     state = table.read()
    ...     table.commit(change_entry(state, None, entry), ["memory"])
"""

from __future__ import annotations

import json
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from langgraph_mnemon.errors import InvalidInputError, StorageError
from langgraph_mnemon.memory_layers.runtime._entries import entry_from_json, render_projection
from langgraph_mnemon.memory_layers.runtime._file_store import (
    EMPTY,
    FileState,
    Row,
    RuntimeFile,
    revision_of,
)
from langgraph_mnemon.memory_layers.runtime._models import RuntimeEntry
from langgraph_mnemon.storage.db import (
    Database,
    Migration,
    advisory_lock,
    create_tables,
    upsert,
)

__all__ = [
    "ARCHIVE",
    "ENTRIES",
    "HEADS",
    "METADATA",
    "MIGRATIONS",
    "RuntimeStore",
    "RuntimeTable",
    "check_owner",
    "commit_replaced_target",
    "composite_rows",
    "install",
]

METADATA = sa.MetaData()
_BIG = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_KEY = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")

HEADS = sa.Table(
    "mnemon_runtime_heads",
    METADATA,
    sa.Column("owner", _KEY, primary_key=True),
    sa.Column("generation", sa.BigInteger, nullable=False),
    sa.Column("revision", sa.String(64), nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)
ENTRIES = sa.Table(
    "mnemon_runtime_entries",
    METADATA,
    sa.Column("owner", _KEY, primary_key=True),
    sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("target", sa.String(16), nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("updated_at", sa.Text, nullable=False),
    sa.Column("importance", sa.String(16), nullable=False),
    sa.Column("branches", sa.Text, nullable=True),  # a compact JSON list, or NULL (unscoped)
    sa.Index("ix_mnemon_runtime_entries_position", "position"),
)
ARCHIVE = sa.Table(
    "mnemon_runtime_archive",
    METADATA,
    sa.Column("seq", _BIG, primary_key=True, autoincrement=True),
    sa.Column("owner", _KEY, nullable=False),
    sa.Column("name", sa.String(64), nullable=False),  # "user.jsonl" / "memory.jsonl"
    sa.Column("line", sa.LargeBinary, nullable=False),
    sa.Column("archived_at", sa.Float, nullable=False),
    sa.Index("ix_mnemon_runtime_archive_owner", "owner", "name", "seq"),
)
_POSITIONS = sa.Sequence("mnemon_runtime_position", metadata=METADATA)  # PostgreSQL only


def _create_v1(conn: Connection) -> None:
    create_tables(conn, (HEADS, ENTRIES, ARCHIVE, _POSITIONS))  # the sequence: PostgreSQL only


MIGRATIONS: tuple[Migration, ...] = (
    Migration("runtime", 1, "Runtime Memory entries, heads and archived lines", _create_v1),
)
"""Schema steps of the ``runtime`` component, for ``Database.setup``."""

_LOCK_SCOPE = "mnemon-runtime"
_EMPTY_REVISION = revision_of(())
_MAX_OWNER_CHARS = 512
_ENTRY_COLUMNS = (
    ENTRIES.c.position,
    ENTRIES.c.target,
    ENTRIES.c.content,
    ENTRIES.c.created_at,
    ENTRIES.c.updated_at,
    ENTRIES.c.importance,
    ENTRIES.c.branches,
)


def check_owner(value: Any, what: str) -> str:
    """``value`` as an owner key (``user:<id>``, ``project:<id>``...), or InvalidInputError."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{what} must be a non-empty string such as 'user:local'")
    if len(value) > _MAX_OWNER_CHARS or "\x00" in value or not value.isprintable():
        raise InvalidInputError(
            f"{what} must be printable text of at most {_MAX_OWNER_CHARS} characters "
            "(build it with Scope.user_key / Scope.project_key)"
        )
    return value


# --- the transaction of one mutation ---------------------------------------------------------

_ACTIVE: weakref.WeakKeyDictionary[Database, threading.local] = weakref.WeakKeyDictionary()
_QUEUES: weakref.WeakKeyDictionary[Database, dict[str, threading.Lock]] = (
    weakref.WeakKeyDictionary()
)
_GUARD = threading.Lock()


def _local(db: Database) -> threading.local:
    with _GUARD:
        local = _ACTIVE.get(db)
        if local is None:
            local = _ACTIVE[db] = threading.local()
        return local


def _active(db: Database) -> Connection | None:
    """The connection of a lock this thread holds on ``db`` (reads inside it go through it)."""
    local = _ACTIVE.get(db)
    return getattr(local, "conn", None) if local is not None else None


def _queue(db: Database, owner: str) -> threading.Lock:
    with _GUARD:
        return _QUEUES.setdefault(db, {}).setdefault(owner, threading.Lock())


def _timed_out(db: Database, owners: Sequence[str], timeout: float, who: str) -> StorageError:
    # The message and code of the file lock's timeout (storage.files.locked).
    return StorageError(
        f"timed out after {timeout:g}s waiting for the runtime memory lock "
        f"({', '.join(owners)} in {db.url}); {who} is still writing, retry later"
    )


@contextmanager
def _transaction(db: Database, owners: Sequence[str], timeout: float) -> Iterator[Connection]:
    """One write transaction holding the lock of every owner in ``owners`` (sorted).

    Threads of this process queue on an in-process lock first (fair and cheap), then the
    database lock is taken with what is left of ``timeout``.
    """
    owners = sorted(set(owners))
    deadline = time.monotonic() + timeout
    taken: list[threading.Lock] = []
    try:
        for owner in owners:
            queue = _queue(db, owner)
            if not queue.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
                raise _timed_out(db, owners, timeout, "another thread of this process")
            taken.append(queue)
        # PostgreSQL: READ COMMITTED, so every read after the lock sees the latest commit.
        # SQLite: a deferred BEGIN whose first statement writes (see _wait_sqlite).
        begin = db.write if db.dialect == "postgresql" else db.read
        with _gate(db, owners, deadline, timeout), begin() as conn:
            if db.dialect == "postgresql":
                _wait_postgres(conn, db, owners, deadline, timeout)
            else:
                _wait_sqlite(conn, db, owners, deadline, timeout)
            local = _local(db)
            local.conn = conn
            try:
                yield conn
            finally:
                local.conn = None
    finally:
        for queue in reversed(taken):
            queue.release()


@contextmanager
def _gate(db: Database, owners: Sequence[str], deadline: float, timeout: float) -> Iterator[None]:
    """Pass the SQLite file's in-process write gate (the other writers of this process queue
    there too; see ``storage._write_gate``) within ``timeout``; nothing on PostgreSQL."""
    gate = db.write_gate
    if gate is None:
        yield
        return
    try:
        gate.acquire(deadline=deadline)
    except StorageError:
        raise _timed_out(db, owners, timeout, "another thread of this process") from None
    try:
        yield
    finally:
        gate.release()


def _remaining_ms(deadline: float) -> int:
    return max(int((deadline - time.monotonic()) * 1000), 1)


def _wait_postgres(
    conn: Connection, db: Database, owners: Sequence[str], deadline: float, timeout: float
) -> None:
    wait = f"{_remaining_ms(deadline)}ms"
    conn.execute(sa.select(sa.func.set_config("lock_timeout", wait, True)))  # this txn only
    try:
        for owner in owners:
            advisory_lock(conn, _LOCK_SCOPE, owner)
    except sa.exc.OperationalError as exc:
        if getattr(exc.orig, "sqlstate", None) == "55P03":  # lock_not_available
            raise _timed_out(db, owners, timeout, "another process") from None
        raise


def _wait_sqlite(
    conn: Connection, db: Database, owners: Sequence[str], deadline: float, timeout: float
) -> None:
    """Take SQLite's write lock with our own bound: a no-op UPDATE as the first statement.

    The engine's busy timeout serves every other layer; it is set to what is left of
    ``timeout`` for this one statement only.
    """
    before = conn.exec_driver_sql("PRAGMA busy_timeout").scalar()
    conn.exec_driver_sql(f"PRAGMA busy_timeout = {_remaining_ms(deadline)}")
    try:
        stmt = sa.update(HEADS).where(HEADS.c.owner == owners[0])
        conn.execute(stmt.values(generation=HEADS.c.generation))
    except sa.exc.OperationalError as exc:
        if "locked" in str(exc.orig):
            raise _timed_out(db, owners, timeout, "another process") from None
        raise
    finally:
        with suppress(sa.exc.DBAPIError):
            conn.exec_driver_sql(f"PRAGMA busy_timeout = {int(before or 0)}")


def _allocate(conn: Connection, count: int) -> list[int]:
    """``count`` fresh positions, larger than every position in the database, ascending."""
    if count <= 0:
        return []
    if conn.dialect.name == "postgresql":
        stmt = sa.select(_POSITIONS.next_value()).select_from(sa.func.generate_series(1, count))
        return sorted(int(v) for v in conn.execute(stmt).scalars())
    # SQLite: this runs under the database write lock, so nobody else allocates meanwhile.
    top = conn.execute(sa.select(sa.func.max(ENTRIES.c.position))).scalar() or 0
    return list(range(int(top) + 1, int(top) + count + 1))


# --- one owner's state -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Snapshot:
    key: tuple[int, str]  # (generation, revision) of the head row
    state: FileState
    positions: tuple[int, ...]  # one per row of ``state``


_EMPTY = _Snapshot((0, _EMPTY_REVISION), EMPTY, ())


def _damaged(message: str) -> StorageError:
    return StorageError(message, code="storage-damaged")


class RuntimeTable:
    """The rows of one owner in the ``runtime`` tables, with the interface of
    :class:`~._file_store.RuntimeFile` that :class:`~._service.RuntimeMemory` uses.

    Thread-safe: the cache is replaced whole and validated against the head row; the lock
    state is per thread.

    Args:
        database: the shared database. owner: the owner key (``"user:alice"``...).
        lock_timeout: seconds to wait for the owner's lock.
    """

    directory = None  # no folder: nothing on disk belongs to a table

    def __init__(self, database: Database, owner: str, lock_timeout: float) -> None:
        self.database = database
        self.owner = check_owner(owner, "owner")
        self.lock_timeout = lock_timeout
        self._cache: _Snapshot | None = None
        self._archived: dict[str, tuple[tuple[int, str], bytes | None]] = {}
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"RuntimeTable({self.owner!r} in {self.database.url})"

    def setup(self) -> None:
        """Create the ``runtime`` tables if needed (idempotent; safe across processes).

        Raises:
            StorageError: the database refused (read-only, unreachable...).

        Example:
            >>> RuntimeTable(db, "user:alice", lock_timeout=10).setup()
        """
        if not self.database.is_setup(MIGRATIONS):
            self.database.setup(MIGRATIONS)

    def check_paths(self) -> None:
        """Nothing to check: no path on disk is involved."""

    def repair(self) -> list[str]:
        """Nothing to repair: there are no projections. Always ``[]``."""
        return []

    def projection(self, target: str) -> str:
        """The USER.md / MEMORY.md text of ``target``, rendered from the rows.

        Args:
            target: ``"user"`` or ``"memory"``.

        Returns:
            The entries joined by the delimiter plus a newline (``""`` when there are none).

        Raises:
            StorageError: the rows cannot be read or are damaged.

        Example:
            >>> table.projection("user")
            'Prefers tea.\\n'
        """
        return render_projection([e.content for e in self.read().of(target)])

    # -- reading -----------------------------------------------------------------------------

    def read(self) -> FileState:
        """The committed state of this owner, cached while its head row is unchanged.

        Inside :meth:`lock` it is the state under the lock (plus what :meth:`commit` wrote).
        While the tables do not exist (nothing was ever written) it is empty.

        Returns:
            The :class:`~._file_store.FileState` of the owner's rows, in position order.

        Raises:
            StorageError: the database refused, or the rows do not match their head revision
                (``storage-damaged``: changed outside langgraph-mnemon).

        Example:
            >>> [e.content for e in table.read().of("memory")]
            ['Deploys go through CI.']
        """
        return self._current().state

    def positioned(self, head: tuple[int, str] | None = None) -> list[tuple[int, Row]]:
        """``(position, row)`` of the current state, in order.

        ``head`` is the owner's head key when the caller just read it (see
        :func:`composite_rows`), which spares the validating query.
        """
        snap = self._current(head)
        return list(zip(snap.positions, snap.state.rows, strict=True))

    def read_archived(self, target: str) -> bytes | None:
        """The archived lines of ``target``, as ``archived/<target>.jsonl`` would hold them.

        Args:
            target: ``"user"`` or ``"memory"``.

        Returns:
            The lines joined (each ends with a newline), or None when there are none.

        Raises:
            StorageError: the database refused.

        Example:
            >>> table.read_archived("memory").splitlines()[0].startswith(b'{"archived_at"')
            True
        """
        key = self._current().key
        name = f"{target}.jsonl"
        cached = self._archived.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        stmt = (
            sa.select(ARCHIVE.c.line)
            .where(ARCHIVE.c.owner == self.owner, ARCHIVE.c.name == name)
            .order_by(ARCHIVE.c.seq)
        )
        if key == _EMPTY.key and not self._schema_ready():
            return None
        lines = self._run(lambda conn: [bytes(v) for v in conn.execute(stmt).scalars()])
        data = b"".join(lines) if lines else None
        self._archived[name] = (key, data)
        return data

    def _schema_ready(self) -> bool:
        return self._read_conn() is not None or self.database.ready_for_read(MIGRATIONS)

    def _read_conn(self) -> Connection | None:
        """The transaction a read goes through, or None for a read transaction of its own.

        This thread's locked transaction when it holds this owner's lock (nobody else can
        change the rows), or on SQLite any lock of this thread (one snapshot under the database
        write lock). On PostgreSQL another owner is read in its own REPEATABLE READ snapshot:
        READ COMMITTED could see the head and the rows of two different commits.
        """
        conn = _active(self.database)
        if conn is None or getattr(self._local, "locked", False):
            return conn
        return conn if self.database.dialect != "postgresql" else None

    def _run(self, fn: Any) -> Any:
        conn = self._read_conn()
        return fn(conn) if conn is not None else self.database.run_read(fn)

    def _current(self, head: tuple[int, str] | None = None) -> _Snapshot:
        if getattr(self._local, "locked", False):
            snap = self._local.snap
            if snap is None:
                snap = self._local.snap = self._fetch(_active(self.database))
            return snap  # type: ignore[no-any-return]
        conn = self._read_conn()
        if conn is None and head is None and not self.database.ready_for_read(MIGRATIONS):
            return _EMPTY  # read-only and never set up: nothing stored yet
        return self._fetch(conn, None if conn is not None else head)

    def _head_key(self, conn: Connection) -> tuple[int, str]:
        stmt = sa.select(HEADS.c.generation, HEADS.c.revision).where(HEADS.c.owner == self.owner)
        row = conn.execute(stmt).first()
        return (int(row[0]), str(row[1])) if row is not None else _EMPTY.key

    def _fetch(self, conn: Connection | None, key: tuple[int, str] | None = None) -> _Snapshot:
        """The cached snapshot if the head row still names it (one query), else a reload."""
        if key is None:
            key = self._head_key(conn) if conn is not None else self._single_head()
        cache = self._cache
        if cache is not None and cache.key == key:
            return cache
        snap = self._load(conn) if conn is not None else self.database.run_read(self._load)
        self._cache = snap
        return snap

    def _single_head(self) -> tuple[int, str]:
        return self.database.run_single(self._head_key)  # type: ignore[no-any-return]

    def _load(self, conn: Connection) -> _Snapshot:
        """Head and rows in one snapshot; rows unchanged since the last load are reused."""
        key = self._head_key(conn)
        stmt = sa.select(*_ENTRY_COLUMNS).where(ENTRIES.c.owner == self.owner)
        records = conn.execute(stmt.order_by(ENTRIES.c.position)).all()
        known = {}
        if self._cache is not None:
            known = {
                _record_key(p, r.entry): r
                for p, r in zip(self._cache.positions, self._cache.state.rows, strict=True)
            }
        rows: list[Row | None] = [known.get(tuple(rec)) for rec in records]
        missing = [i for i, row in enumerate(rows) if row is None]
        fresh = FileState.derive(EMPTY, [self._entry(records[i]) for i in missing]).rows
        for i, row in zip(missing, fresh, strict=True):
            rows[i] = row
        state = FileState(tuple(r for r in rows if r is not None))
        if revision_of(state.rows) != key[1]:
            raise _damaged(
                f"runtime memory rows of {self.owner} in {self.database.url} do not match their "
                "head revision (they were changed outside langgraph-mnemon); restore the "
                "database from a backup, or export and re-import this owner"
            )
        return _Snapshot(key, state, tuple(int(rec[0]) for rec in records))

    def _entry(self, record: Any) -> RuntimeEntry:
        position, target, content, created, updated, importance, branches = record
        item: dict[str, Any] = {
            "content": content,
            "created_at": created,
            "updated_at": updated,
            "target": target,
            "importance": importance,
        }
        try:
            if branches is not None:
                item["branches"] = json.loads(branches)
            return entry_from_json(item)
        except (ValueError, TypeError) as exc:
            raise _damaged(
                f"runtime memory row {position} of {self.owner} in {self.database.url} is "
                f"invalid ({exc}); fix or delete that row"
            ) from None

    # -- committing --------------------------------------------------------------------------

    @contextmanager
    def lock(self) -> Iterator[None]:
        """The owner's lock and the transaction of one mutation (commits on leaving).

        Threads of this process queue first; then PostgreSQL takes a transaction-level advisory
        lock on the owner, SQLite its database write lock, both within ``lock_timeout``. An
        exception inside the block rolls back everything :meth:`commit` wrote.

        Example:
            >>> with table.lock():
            ...     table.commit(change_entry(table.read(), None, entry), ["memory"])

        Raises:
            StorageError: the lock was not had within ``lock_timeout`` (the file lock's
                message), or the database refused (typed codes from the database layer).
        """
        self.setup()
        done: _Snapshot | None = None
        try:
            with _transaction(self.database, [self.owner], self.lock_timeout):
                self._local.locked, self._local.snap = True, None
                try:
                    yield
                    done = self._local.snap
                finally:
                    self._local.locked, self._local.snap = False, None
        except BaseException:
            self.forget()  # what this transaction cached never happened
            raise
        if done is not None:
            self._cache = done

    def commit(
        self,
        state: FileState,
        targets: Sequence[str],
        archive: Sequence[tuple[str, bytes]] = (),
        *,
        regroup: bool = False,
    ) -> None:
        """Write the rows that differ from the locked state, ``archive`` lines and the head.

        ``regroup`` is :func:`~._file_store.replace_target`'s commit: the rows of ``targets``
        move after every other row (as they do in ``memories.json``), so they get fresh
        positions; otherwise a row keeps its position and an entry replaced in place takes
        the position of the one it replaces.

        Args:
            state: the owner's new state (derived from :meth:`read` under the same lock).
            targets: the targets whose entries changed.
            archive: ``("<target>.jsonl", line)`` pairs appended to the archived lines.
            regroup: the state came from :func:`~._file_store.replace_target`.

        Raises:
            InvalidInputError: called outside :meth:`lock`.
            StorageError: the database refused (the transaction rolls back on leaving the lock).

        Example:
            >>> with table.lock():
            ...     table.commit(replace_target(table.read(), "memory", kept), ["memory"],
            ...                  archive, regroup=True)
        """
        conn = _active(self.database)
        if conn is None or not getattr(self._local, "locked", False):
            raise InvalidInputError("RuntimeTable.commit() must run inside RuntimeTable.lock()")
        old = self._current()
        positions = _positions(conn, old, state, set(targets) if regroup else set())
        _write_rows(conn, self.owner, old, state, positions)
        if archive:
            now = time.time()
            values = [
                {"owner": self.owner, "name": name, "line": line, "archived_at": now}
                for name, line in archive
            ]
            conn.execute(sa.insert(ARCHIVE), values)
        key = (old.key[0] + 1, revision_of(state.rows))
        _write_head(conn, self.owner, key)
        self._local.snap = _Snapshot(key, state, tuple(positions))

    def forget(self) -> None:
        """Drop the cache (after rows were replaced behind this object)."""
        self._cache = None
        self._archived.clear()


def _record_key(position: int, entry: RuntimeEntry) -> tuple[Any, ...]:
    branches = entry.branches
    stored = None if branches is None else json.dumps(list(branches), separators=(",", ":"))
    return (
        position,
        entry.target,
        entry.content,
        entry.created_at,
        entry.updated_at,
        entry.importance,
        stored,
    )


def _positions(conn: Connection, old: _Snapshot, state: FileState, moved: set[str]) -> list[int]:
    """A strictly increasing position per row of ``state``: kept rows keep theirs, an entry
    replaced in place takes its predecessor's, everything after the first new row is fresh."""
    pos_of = {id(r): p for p, r in zip(old.positions, old.state.rows, strict=True)}
    new_ids = {id(r) for r in state.rows}
    in_place = len(state.rows) == len(old.state.rows)
    slots: list[int | None] = []
    last = None
    for i, row in enumerate(state.rows):
        slot = None if row.entry.target in moved else pos_of.get(id(row))
        if slot is None and in_place and row.entry.target not in moved:
            replaced = old.state.rows[i]
            if id(replaced) not in new_ids:
                slot = old.positions[i]
        if slot is None or (last is not None and slot <= last) or (slots and slots[-1] is None):
            slot = None  # fresh numbers are above every position: the rest must be fresh too
        else:
            last = slot
        slots.append(slot)
    fresh = iter(_allocate(conn, slots.count(None)))
    return [slot if slot is not None else next(fresh) for slot in slots]


def _write_rows(
    conn: Connection, owner: str, old: _Snapshot, state: FileState, positions: Sequence[int]
) -> None:
    old_pairs = list(zip(old.positions, old.state.rows, strict=True))
    new_pairs = list(zip(positions, state.rows, strict=True))
    before = {(p, id(r)) for p, r in old_pairs}
    after = {(p, id(r)) for p, r in new_pairs}
    gone = [p for p, r in old_pairs if (p, id(r)) not in after]
    added = [(p, r) for p, r in new_pairs if (p, id(r)) not in before]
    if gone:
        conn.execute(
            sa.delete(ENTRIES).where(ENTRIES.c.owner == owner, ENTRIES.c.position.in_(gone))
        )
    if added:
        conn.execute(sa.insert(ENTRIES), [_values(owner, p, r.entry) for p, r in added])


def _values(owner: str, position: int, entry: RuntimeEntry) -> dict[str, Any]:
    key = _record_key(position, entry)
    names = ("position", "target", "content", "created_at", "updated_at", "importance", "branches")
    return {"owner": owner, **dict(zip(names, key, strict=True))}


def _write_head(conn: Connection, owner: str, key: tuple[int, str]) -> None:
    stmt = upsert(conn.dialect.name, HEADS, ["owner"], ["generation", "revision", "updated_at"])
    conn.execute(
        stmt, {"owner": owner, "generation": key[0], "revision": key[1], "updated_at": time.time()}
    )


# --- helpers of the service and of export / import -------------------------------------------

RuntimeStore = RuntimeFile | RuntimeTable
"""Where one target's entries live: a ``runtime/`` folder or an owner's rows."""


def commit_replaced_target(
    store: RuntimeStore, state: FileState, target: str, archive: Sequence[tuple[str, bytes]]
) -> None:
    """Commit a :func:`~._file_store.replace_target` state (the target's rows move last)."""
    if isinstance(store, RuntimeTable):
        store.commit(state, [target], archive, regroup=True)
    else:
        store.commit(state, [target], archive)


def composite_rows(user: RuntimeStore, memory: RuntimeStore) -> list[Row]:
    """The rows of both targets in the order one ``memories.json`` would keep them.

    One store: its rows as stored. Two tables: USER rows of one owner and MEMORY rows of the
    other, merged by position. Two folders (``user_root``): USER rows, then MEMORY rows.
    """
    if user is memory:
        return list(memory.read().rows)
    if isinstance(user, RuntimeTable) and isinstance(memory, RuntimeTable):
        heads = _heads_of(user, memory)
        mine = [
            (p, r)
            for table, target in ((user, "user"), (memory, "memory"))
            for p, r in table.positioned(heads.get(table.owner))
            if r.entry.target == target
        ]
        return [r for _, r in sorted(mine, key=lambda pair: pair[0])]
    return user.read().rows_of("user") + memory.read().rows_of("memory")


def _heads_of(*tables: RuntimeTable) -> dict[str, tuple[int, str]]:
    """The head keys of ``tables`` in one query (a read of two owners costs one round trip);
    ``{}`` when they do not share a database, a lock of this thread is open, or nothing exists."""
    db = tables[0].database
    if any(t.database is not db for t in tables) or _active(db) is not None:
        return {}
    if not db.ready_for_read(MIGRATIONS):
        return {}
    owners = [t.owner for t in tables]
    stmt = sa.select(HEADS.c.owner, HEADS.c.generation, HEADS.c.revision)

    def heads(conn: Connection) -> dict[str, tuple[int, str]]:
        found = conn.execute(stmt.where(HEADS.c.owner.in_(owners))).all()
        keys = {o: _EMPTY.key for o in owners}
        keys.update({str(o): (int(g), str(r)) for o, g, r in found})
        return keys

    return db.run_single(heads)


def install(
    tables: Sequence[RuntimeTable],
    rows: Sequence[tuple[RuntimeTable, Row]],
    archives: Mapping[tuple[str, str], bytes],
) -> None:
    """Replace every row, archived line and head of ``tables``' owners, in one transaction.

    ``rows`` are ``(table, row)`` in the combined order to keep (positions follow it across
    owners); ``archives`` maps ``(owner, "<target>.jsonl")`` to the file's bytes.

    Raises:
        InvalidInputError: tables of different databases.
        StorageError: a lock was not had in time, or the database refused; nothing changed.
    """
    db = tables[0].database
    if any(t.database is not db for t in tables):
        raise InvalidInputError("install() takes tables of one database")
    tables[0].setup()
    owners = sorted({t.owner for t in tables})
    timeout = max(t.lock_timeout for t in tables)
    try:
        with _transaction(db, owners, timeout) as conn:
            generations = {o: _head_generation(conn, o) for o in owners}
            conn.execute(sa.delete(ENTRIES).where(ENTRIES.c.owner.in_(owners)))
            conn.execute(sa.delete(ARCHIVE).where(ARCHIVE.c.owner.in_(owners)))
            fresh = _allocate(conn, len(rows))
            values = [_values(t.owner, p, r.entry) for p, (t, r) in zip(fresh, rows, strict=True)]
            if values:
                conn.execute(sa.insert(ENTRIES), values)
            lines = [
                {"owner": owner, "name": name, "line": line, "archived_at": time.time()}
                for (owner, name), data in sorted(archives.items())
                for line in data.splitlines(keepends=True)
            ]
            if lines:
                conn.execute(sa.insert(ARCHIVE), lines)
            for owner in owners:
                own = [r for t, r in rows if t.owner == owner]
                _write_head(conn, owner, (generations[owner] + 1, revision_of(own)))
    finally:
        for table in tables:
            table.forget()


def _head_generation(conn: Connection, owner: str) -> int:
    stmt = sa.select(HEADS.c.generation).where(HEADS.c.owner == owner)
    value = conn.execute(stmt).scalar()
    return int(value) if value is not None else 0
