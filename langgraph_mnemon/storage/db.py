"""The SQL database shared by Mnemos, the ``MnemosSaver`` checkpointer and Memory Spaces.

One code path builds engines for SQLite (the embedded default) and PostgreSQL (psycopg 3), sync
and async, and one runner applies versioned migrations (:mod:`._migrate`). Layers declare their
tables in their own ``MetaData`` and hand :func:`migrate` a tuple of :class:`Migration` steps
tagged with a *component* name (``"mnemos"`` here; Memory Spaces adds its own component the
same way). Applied steps are recorded in the ``mnemon_schema_version`` table (an older
release's ``schema_version`` is adopted on setup), so ``setup()`` is idempotent, and it is safe
to run from several processes at once: SQLite serialises it with ``BEGIN IMMEDIATE`` and
PostgreSQL with a transaction-scoped advisory lock. On PostgreSQL every table goes into the
current schema of the connection (``database_schema`` sets it: see
:func:`langgraph_mnemon.config.url_in_schema`), created on setup when missing.

SQLite connections get ``journal_mode=WAL``, ``busy_timeout``, ``foreign_keys=ON`` and a
configurable ``synchronous`` level (``NORMAL`` by default: with WAL the database cannot be
corrupted by a crash, only the last commits before a power loss may be lost). SQLAlchemy, not the
``sqlite3`` module, emits ``BEGIN``: reads use a deferred transaction and writes
``BEGIN IMMEDIATE``, so two writers queue on the busy timeout instead of failing on a lock
upgrade; the writers of one process queue before that on the file's write gate
(:mod:`._write_gate`), first come first served.

Example:
    >>> db = Database(create_engine("sqlite:///./.mnemon/mnemon.db"))
    >>> with db.write() as conn:
    ...     conn.execute(sa.text("SELECT 1")).scalar()
    1
"""

from __future__ import annotations

import asyncio
import os
import select
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool

from langgraph_mnemon.errors import InvalidInputError, StorageError
from langgraph_mnemon.storage._db_errors import DamagedValue, database_errors, translate
from langgraph_mnemon.storage._ddl import column_names, create_tables
from langgraph_mnemon.storage._dialect import (
    advisory_lock,
    advisory_lock_id,
    insert_ignore,
    upsert,
)
from langgraph_mnemon.storage._migrate import (
    LEGACY_SCHEMA_VERSION,
    SCHEMA_VERSION,
    Migration,
    check_migrations,
    migrate,
    schema_state,
)
from langgraph_mnemon.storage._urls import redact_url
from langgraph_mnemon.storage._write_gate import WriteGate, gate_for
from langgraph_mnemon.storage.files import refuse_symlink

if TYPE_CHECKING:
    # sqlalchemy.ext.asyncio loads the ORM: only the async twins need it, imported on use.
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = [
    "LEGACY_SCHEMA_VERSION",
    "SCHEMA_VERSION",
    "AsyncDatabase",
    "DamagedValue",
    "Database",
    "Migration",
    "SqliteSynchronous",
    "ThreadedAsyncDatabase",
    "advisory_lock",
    "advisory_lock_id",
    "check_migrations",
    "column_names",
    "create_async_engine",
    "create_engine",
    "create_tables",
    "database_errors",
    "ensure_sqlite_directory",
    "insert_ignore",
    "migrate",
    "parse_database_url",
    "read_only_media_url",
    "redact_url",
    "refuse_linked_sqlite",
    "schema_state",
    "sqlite_file",
    "sqlite_write_gate",
    "translate",
    "upsert",
]

SqliteSynchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]
_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
_WRITE_OPTION = "mnemon_write"
_T = TypeVar("_T")

# --------------------------------------------------------------------------------------------
# URLs and engines


def parse_database_url(url: str | Path | URL, *, use_async: bool = False) -> URL:
    """Normalise a database address to a SQLAlchemy URL with the driver this package uses.

    Accepts ``sqlite:///path``, ``sqlite://`` (memory), a bare file path or ``":memory:"``,
    and ``postgresql://`` / ``postgres://`` / ``postgresql+psycopg://`` URLs. SQLite gets
    ``pysqlite`` (sync) or ``aiosqlite`` (async); PostgreSQL always gets psycopg 3.
    """
    if isinstance(url, URL):
        parsed = url
    elif isinstance(url, Path):
        parsed = URL.create("sqlite", database=str(url))
    elif isinstance(url, str) and url.strip():
        text = url.strip()
        if text == ":memory:":
            parsed = URL.create("sqlite")
        elif "://" not in text:
            parsed = URL.create("sqlite", database=text)
        else:
            if text.startswith("postgres://"):
                text = "postgresql://" + text.removeprefix("postgres://")
            try:
                parsed = make_url(text)
            except (ArgumentError, ValueError):  # ValueError: a port that is not a number
                raise InvalidInputError(
                    f"cannot parse database URL {redact_url(text)!r}; use "
                    "sqlite:///path/to/file.db or postgresql+psycopg://user:password@host:port/db"
                ) from None
    else:
        raise InvalidInputError(
            "database URL must be a non-empty string such as sqlite:///mnemon.db "
            f"(got {type(url).__name__})"
        )
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        database = parsed.database
        if database and database != ":memory:" and not database.startswith("file:"):
            database = str(Path(database).expanduser())
        return parsed.set(
            drivername="sqlite+aiosqlite" if use_async else "sqlite+pysqlite", database=database
        )
    if backend == "postgresql":
        return parsed.set(drivername="postgresql+psycopg")
    raise InvalidInputError(
        f"unsupported database {backend!r}: use SQLite (sqlite:///path) or PostgreSQL "
        "(postgresql+psycopg://user:password@host:port/dbname)"
    )


def _is_memory(url: URL) -> bool:
    database = url.database or ""
    return database in ("", ":memory:") or "mode=memory" in database


def ensure_sqlite_directory(url: str | Path | URL) -> None:
    """Create the folder of a SQLite database file (a no-op for memory and PostgreSQL)."""
    parsed = parse_database_url(url)
    if parsed.get_backend_name() != "sqlite" or _is_memory(parsed):
        return
    database = parsed.database or ""
    if database.startswith("file:"):
        return
    folder = Path(database).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError.from_os_error(
            exc, "create the folder of the SQLite database", folder
        ) from None


def read_only_media_url(url: str | Path | URL) -> str | Path | URL:
    """``url``, or for a SQLite file that sits on a read-only file system an immutable URI.

    SQLite cannot open a WAL database on read-only media (it must create the ``-shm`` file), so
    a host that only reads (``write_enabled=false``) could not even read it. Nothing can change
    a file on a read-only file system, which makes SQLite's ``immutable`` mode safe there. Any
    other address is returned unchanged.
    """
    parsed = parse_database_url(url)
    path = sqlite_file(parsed)
    if path is None or not path.is_file() or not hasattr(os, "statvfs"):  # statvfs: POSIX
        return url
    try:
        read_only = bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return url
    if not read_only:
        return url
    return parsed.set(
        database=f"file:{path}", query={"mode": "ro", "immutable": "1", "uri": "true"}
    )


def refuse_linked_sqlite(path: Path) -> None:
    """Refuse (``StorageError``, ``symlink-refused``) a SQLite file or a companion file of it
    (``-wal``, ``-shm``, ``-journal``) that is a symbolic link.

    For the database a host manages under its root: a link could point at another root's
    database, and SQLite would follow it.
    """
    for suffix, what in _SQLITE_FILES:
        refuse_symlink(Path(f"{path}{suffix}"), what)


_SQLITE_FILES = (
    ("", "SQLite database"),
    ("-wal", "SQLite write-ahead log"),
    ("-shm", "SQLite shared-memory file"),
    ("-journal", "SQLite rollback journal"),
)


def _check_sqlite_options(busy_timeout_ms: int, sqlite_synchronous: str) -> None:
    if isinstance(busy_timeout_ms, bool) or not isinstance(busy_timeout_ms, int):
        raise InvalidInputError("busy_timeout_ms must be an integer number of milliseconds")
    if not 0 <= busy_timeout_ms <= 600_000:
        raise InvalidInputError("busy_timeout_ms must be between 0 and 600000")
    if sqlite_synchronous not in _SYNCHRONOUS:
        raise InvalidInputError(f"sqlite_synchronous must be one of {', '.join(_SYNCHRONOUS)}")


def _pragma(cursor: Any, pragma: str, busy_timeout_ms: int) -> None:
    """Run ``pragma``, waiting out "database is locked" up to the busy timeout.

    Switching a new database to WAL takes an exclusive lock and SQLite answers a concurrent
    switch (another process opening the same new file) with SQLITE_BUSY at once, without the
    busy handler; so the wait happens here.
    """
    deadline = time.monotonic() + busy_timeout_ms / 1000
    delay = 0.005
    while True:
        try:
            cursor.execute(pragma)
            return
        except Exception as exc:  # sqlite3's, or the async driver's adapted OperationalError
            if "database is locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


# The busy timeout each SQLite engine was built with: its write gate's timeout.
_BUSY_TIMEOUT_MS: weakref.WeakKeyDictionary[Engine, int] = weakref.WeakKeyDictionary()
_DEFAULT_BUSY_TIMEOUT_MS = 5000


def _install_sqlite_hooks(
    engine: Engine, *, memory: bool, busy_timeout_ms: int, synchronous: str
) -> None:
    _BUSY_TIMEOUT_MS[engine] = busy_timeout_ms
    pragmas = [f"PRAGMA busy_timeout = {busy_timeout_ms}", "PRAGMA foreign_keys = ON"]
    if not memory:
        pragmas.append("PRAGMA journal_mode = WAL")
    pragmas.append(f"PRAGMA synchronous = {synchronous}")

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # SQLAlchemy emits BEGIN itself (see _on_begin); the driver must not.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            for pragma in pragmas:
                _pragma(cursor, pragma, busy_timeout_ms)
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(_WRITE_OPTION, False)
        cursor = conn.connection.cursor()
        try:
            cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        finally:
            cursor.close()


# A pooled server connection is pinged on checkout only when it may be dead: its socket has
# input while idle (a terminated backend or a restarted server sends its FATAL message and
# closes the socket), or it sat idle longer than this (a silently dropped network path).
# ``pool_pre_ping`` instead costs a ``SELECT 1`` round trip on every checkout.
_IDLE_PING_SECONDS = 30.0
_IDLE_SINCE = "mnemon_idle_since"


def _socket_has_input(dbapi_connection: Any) -> bool:
    """Whether the idle connection's socket is readable (or cannot be polled at all)."""
    try:
        fd = getattr(dbapi_connection, "driver_connection", dbapi_connection).fileno()
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])
    except Exception:  # a closed or broken connection: let the ping decide
        return True


def _install_liveness(engine: Engine) -> None:
    """Replace ``pool_pre_ping``: ping a checked-out connection only when it may be dead, and
    hand the pool a :class:`~sqlalchemy.exc.DisconnectionError` (it then connects afresh)."""

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get(_IDLE_SINCE)
        if since is None:  # just connected
            return
        idle = time.monotonic() - since
        if idle < _IDLE_PING_SECONDS and not _socket_has_input(dbapi_connection):
            return
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except Exception:
            alive = False
        if not alive:
            raise sa.exc.DisconnectionError("the pooled database connection is gone")


def create_engine(
    url: str | Path | URL,
    *,
    busy_timeout_ms: int = 5000,
    sqlite_synchronous: SqliteSynchronous = "NORMAL",
    echo: bool = False,
) -> Engine:
    """A sync SQLAlchemy engine for SQLite (pysqlite) or PostgreSQL (psycopg 3).

    A SQLite memory database gets a single shared connection, so every caller sees the same
    data. The folder of a SQLite file is not created here (see :func:`ensure_sqlite_directory`).
    Pooled connections are not reset on check-in: use them through :class:`Database`, whose
    transactions always end in a commit or a rollback.
    """
    parsed = parse_database_url(url)
    if parsed.get_backend_name() == "sqlite":
        _check_sqlite_options(busy_timeout_ms, sqlite_synchronous)
        memory = _is_memory(parsed)
        kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False}}
        if memory:
            kwargs["poolclass"] = StaticPool
        engine = sa.create_engine(parsed, echo=echo, pool_reset_on_return=None, **kwargs)
        _install_sqlite_hooks(
            engine, memory=memory, busy_timeout_ms=busy_timeout_ms, synchronous=sqlite_synchronous
        )
        return engine
    engine = sa.create_engine(parsed, echo=echo, pool_reset_on_return=None)
    _install_liveness(engine)
    return engine


def create_async_engine(
    url: str | Path | URL,
    *,
    busy_timeout_ms: int = 5000,
    sqlite_synchronous: SqliteSynchronous = "NORMAL",
    echo: bool = False,
) -> AsyncEngine:
    """The async twin of :func:`create_engine` (aiosqlite / psycopg 3 async).

    Create it inside the event loop that will use it; it opens no connection until first use.
    """
    # Deferred: sqlalchemy.ext.asyncio loads the ORM, which sync callers never need.
    from sqlalchemy.ext.asyncio import create_async_engine as _sa_create_async_engine

    parsed = parse_database_url(url, use_async=True)
    if parsed.get_backend_name() == "sqlite":
        _check_sqlite_options(busy_timeout_ms, sqlite_synchronous)
        memory = _is_memory(parsed)
        kwargs: dict[str, Any] = {}
        if memory:
            kwargs["poolclass"] = StaticPool
        engine = _sa_create_async_engine(parsed, echo=echo, pool_reset_on_return=None, **kwargs)
        _install_sqlite_hooks(
            engine.sync_engine,
            memory=memory,
            busy_timeout_ms=busy_timeout_ms,
            synchronous=sqlite_synchronous,
        )
        return engine
    engine = _sa_create_async_engine(parsed, echo=echo, pool_reset_on_return=None)
    _install_liveness(engine.sync_engine)
    return engine


# --------------------------------------------------------------------------------------------
# Database handles

_SETUP_DONE: weakref.WeakKeyDictionary[Engine, set[tuple[str, int]]] = weakref.WeakKeyDictionary()


_E = TypeVar("_E", "Engine", "AsyncEngine")


def _reader(engine: _E) -> _E:
    """Reads see one snapshot: SQLite's deferred transaction does that already, PostgreSQL
    needs REPEATABLE READ (READ COMMITTED would let a concurrent prune slip between the
    statements of one read)."""
    if engine.dialect.name == "postgresql":
        return engine.execution_options(isolation_level="REPEATABLE READ")
    return engine


def _autocommit(engine: _E) -> _E | None:
    if engine.dialect.name == "postgresql":
        return engine.execution_options(isolation_level="AUTOCOMMIT")
    return None


def _migration_keys(migrations: Sequence[Migration]) -> set[tuple[str, int]]:
    return {(m.component, m.version) for m in migrations}


def sqlite_file(url: URL) -> Path | None:
    """The file of a SQLite database URL (None for memory databases and PostgreSQL)."""
    if url.get_backend_name() != "sqlite" or _is_memory(url):
        return None
    database = url.database or ""
    return None if database.startswith("file:") else Path(database)


def sqlite_write_gate(engine: Engine) -> WriteGate | None:
    """The in-process write gate of a SQLite file engine (see :mod:`._write_gate`); None for
    PostgreSQL, memory databases (their one shared connection is locked already) and URIs.

    Args:
        engine: a sync engine (an async engine's ``sync_engine``).

    Returns:
        The gate every write transaction on that file passes in this process, or None.
    """
    path = sqlite_file(engine.url)
    if path is None:
        return None
    timeout_ms = _BUSY_TIMEOUT_MS.get(engine, _DEFAULT_BUSY_TIMEOUT_MS)
    return gate_for(str(path), timeout_ms=timeout_ms)


class Database:
    """A sync engine plus read / write transaction helpers that speak in typed errors.

    ``write()`` opens ``BEGIN IMMEDIATE`` on SQLite. Any exception rolls the transaction back;
    driver errors surface as :class:`~langgraph_mnemon.errors.StorageError` (with a code: see
    :mod:`._db_errors`) and values the driver cannot bind as
    :class:`~langgraph_mnemon.errors.InvalidInputError`.

    Reads never create the schema: layers ask :meth:`ready_for_read` and answer empty while it
    is absent (no SQLite file, no tables, no ``schema_version`` rows are created). With
    ``read_only=True`` (a host with ``write_enabled=false``) an outdated schema is not migrated
    on read either; :meth:`setup` stays an explicit write.
    """

    def __init__(
        self, engine: Engine, *, owns_engine: bool = False, read_only: bool = False
    ) -> None:
        if not isinstance(engine, Engine):
            raise InvalidInputError(
                f"Database() takes a SQLAlchemy Engine (got {type(engine).__name__}); "
                "build one with create_engine(url)"
            )
        self.engine = engine
        self.dialect: str = engine.dialect.name
        self.owns_engine = owns_engine
        self.read_only = bool(read_only)
        self._writer = engine.execution_options(**{_WRITE_OPTION: True})
        self._reader = _reader(engine)
        self._single = _autocommit(engine)
        # One shared connection (SQLite memory): transactions of different threads must not
        # interleave on it.
        self._lock: AbstractContextManager[Any] = (
            threading.RLock() if isinstance(engine.pool, StaticPool) else nullcontext()
        )
        # A SQLite file: this process's writers queue on one gate per file, not in SQLite's
        # busy handler (see storage._write_gate).
        self.write_gate = sqlite_write_gate(engine)
        self._gate: AbstractContextManager[Any] = self.write_gate or nullcontext()

    @property
    def url(self) -> str:
        """The database URL with the password masked."""
        return redact_url(self.engine.url)

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection inside a read transaction (deferred on SQLite)."""
        try:
            with self._lock, self._reader.begin() as conn:
                yield conn
        except database_errors() as exc:
            raise translate(exc, self.engine.url) from exc

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A connection inside a write transaction that commits on success.

        On a SQLite file the transaction first passes the file's in-process write gate, so
        this process's writers take turns instead of racing in SQLite's busy handler.

        Raises:
            StorageError: ``database-locked`` when another process held SQLite's lock past
                the busy timeout, or a writer of this process held the gate that long.
        """
        try:
            with self._gate, self._lock, self._writer.begin() as conn:
                yield conn
        except database_errors() as exc:
            raise translate(exc, self.engine.url) from exc

    def run_read(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(conn, *args)`` in a read transaction."""
        with self.read() as conn:
            return fn(conn, *args)

    def run_single(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(conn, *args)`` for a read that is one statement: autocommit on PostgreSQL (no
        BEGIN / COMMIT round trips; one statement is one snapshot), a read transaction on
        SQLite."""
        if self._single is None:
            return self.run_read(fn, *args)
        try:
            with self._lock, self._single.connect() as conn:
                return fn(conn, *args)
        except database_errors() as exc:
            raise translate(exc, self.engine.url) from exc

    def run_write(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(conn, *args)`` in a write transaction."""
        with self.write() as conn:
            return fn(conn, *args)

    def is_setup(self, migrations: Sequence[Migration]) -> bool:
        """Whether ``migrations`` were applied through this engine already."""
        return _migration_keys(migrations) <= _SETUP_DONE.get(self.engine, set())

    def setup(self, migrations: Sequence[Migration]) -> list[Migration]:
        """Create or migrate the schema (idempotent, safe across processes).

        A ``read_only`` handle whose schema is current opens no write transaction for it (a
        read-only role or read-only media could not), but an absent schema is created.
        """
        if self.is_setup(migrations) or (self.read_only and self.ready_for_read(migrations)):
            return []
        with self.write() as conn:
            done = migrate(conn, migrations)
        _SETUP_DONE.setdefault(self.engine, set()).update(_migration_keys(migrations))
        return done

    def ready_for_read(self, migrations: Sequence[Migration]) -> bool:
        """Whether the tables of ``migrations`` exist, found out without creating anything.

        False while the schema is absent (a missing SQLite file is not even opened), so a read
        can answer empty. An outdated schema is migrated first, unless ``read_only``: then
        :class:`StorageError` says to open it once with writes enabled.
        """
        if self.is_setup(migrations):
            return True
        path = sqlite_file(self.engine.url)
        if path is not None and not path.exists():
            return False
        with self.read() as conn:
            state = schema_state(conn, migrations, legacy_is_current=self.read_only)
        if state == "absent":
            return False
        if state == "outdated":
            if self.read_only:
                raise StorageError(
                    f"the database schema at {self.url} is older than this langgraph-mnemon "
                    "and writes are switched off (write_enabled: false); open it once with "
                    "writes enabled to migrate it",
                    code="storage-read-only",
                )
            self.setup(migrations)
        _SETUP_DONE.setdefault(self.engine, set()).update(_migration_keys(migrations))
        return True

    def dispose(self) -> None:
        """Close pooled connections (the engine stays usable and reconnects on demand)."""
        self.engine.dispose()


class AsyncDatabase:
    """The async twin of :class:`Database`.

    Operations are plain functions over a sync :class:`~sqlalchemy.engine.Connection`; they run
    through :meth:`sqlalchemy.ext.asyncio.AsyncConnection.run_sync`, so the I/O goes through the
    async driver (aiosqlite / psycopg async) and never blocks the event loop, and the sync and
    async code paths share every SQL statement.
    """

    def __init__(self, engine: AsyncEngine, *, owns_engine: bool = False) -> None:
        from sqlalchemy.ext.asyncio import AsyncEngine  # deferred: it loads the ORM

        if not isinstance(engine, AsyncEngine):
            raise InvalidInputError(
                f"AsyncDatabase() takes a SQLAlchemy AsyncEngine (got {type(engine).__name__}); "
                "build one with create_async_engine(url)"
            )
        self.engine = engine
        self.dialect: str = engine.dialect.name
        self.owns_engine = owns_engine
        self._writer = engine.execution_options(**{_WRITE_OPTION: True})
        self._reader = _reader(engine)
        self._single = _autocommit(engine)
        self.write_gate = sqlite_write_gate(engine.sync_engine)

    @property
    def url(self) -> str:
        """The database URL with the password masked."""
        return redact_url(self.engine.url)

    @asynccontextmanager
    async def _gated(self) -> AsyncIterator[None]:
        """Hold the file's write gate (SQLite) without blocking the loop: the wait runs on a
        worker thread, and a cancelled wait hands the gate back once it is granted."""
        gate = self.write_gate
        if gate is None:
            yield
            return
        token = object()
        waiting = asyncio.get_running_loop().run_in_executor(None, gate.acquire, token)
        try:
            await asyncio.shield(waiting)
        except asyncio.CancelledError:
            waiting.add_done_callback(lambda done: _release_granted(gate, token, done))
            raise
        try:
            yield
        finally:
            gate.release(token)

    @asynccontextmanager
    async def _begin(self, engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
        try:
            async with engine.begin() as conn:
                yield conn
        except database_errors() as exc:
            raise translate(exc, self.engine.url) from exc

    async def run_read(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run ``fn(conn, *args)`` in a read transaction."""
        async with self._begin(self._reader) as conn:
            return await conn.run_sync(fn, *args)

    async def run_write(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run ``fn(conn, *args)`` in a write transaction that commits on success (on a
        SQLite file after the file's in-process write gate, as :meth:`Database.write`)."""
        async with self._gated(), self._begin(self._writer) as conn:
            return await conn.run_sync(fn, *args)

    async def run_single(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(conn, *args)`` for a one-statement read (autocommit on PostgreSQL)."""
        if self._single is None:
            return await self.run_read(fn, *args)
        try:
            async with self._single.connect() as conn:
                return await conn.run_sync(fn, *args)
        except database_errors() as exc:
            raise translate(exc, self.engine.url) from exc

    def is_setup(self, migrations: Sequence[Migration]) -> bool:
        """Whether ``migrations`` were applied through this engine already."""
        return _migration_keys(migrations) <= _SETUP_DONE.get(self.engine.sync_engine, set())

    async def setup(self, migrations: Sequence[Migration]) -> list[Migration]:
        """Create or migrate the schema (idempotent, safe across processes)."""
        if self.is_setup(migrations):
            return []
        done = await self.run_write(migrate, migrations)
        _SETUP_DONE.setdefault(self.engine.sync_engine, set()).update(_migration_keys(migrations))
        return done

    async def dispose(self) -> None:
        """Close pooled connections."""
        await self.engine.dispose()


def _release_granted(gate: WriteGate, token: object, done: asyncio.Future[None]) -> None:
    """Give back a gate granted to a waiter that was cancelled meanwhile."""
    if not done.cancelled() and done.exception() is None:
        gate.release(token)


class ThreadedAsyncDatabase:
    """Async access to a sync :class:`Database`: each transaction runs whole on a worker thread.

    This is how the async checkpointer talks to SQLite. SQLite has no network I/O and aiosqlite
    is itself a thread per connection that every statement hops to and back (measured ~75 µs
    per statement); running the transaction body on one worker thread instead costs one hop per
    transaction and never blocks the event loop either. The operations are the same functions
    :class:`AsyncDatabase` runs.
    """

    def __init__(self, database: Database) -> None:
        if not isinstance(database, Database):
            raise InvalidInputError(
                f"ThreadedAsyncDatabase() takes a Database (got {type(database).__name__})"
            )
        self.database = database
        self.engine = database.engine
        self.dialect: str = database.dialect
        self.owns_engine = database.owns_engine

    @property
    def url(self) -> str:
        """The database URL with the password masked."""
        return self.database.url

    async def run_read(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run ``fn(conn, *args)`` in a read transaction on a worker thread."""
        return await asyncio.to_thread(self.database.run_read, fn, *args)

    async def run_write(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run ``fn(conn, *args)`` in a write transaction on a worker thread."""
        return await asyncio.to_thread(self.database.run_write, fn, *args)

    async def run_single(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run a one-statement read on a worker thread."""
        return await asyncio.to_thread(self.database.run_single, fn, *args)

    def is_setup(self, migrations: Sequence[Migration]) -> bool:
        """Whether ``migrations`` were applied through this engine already."""
        return self.database.is_setup(migrations)

    async def setup(self, migrations: Sequence[Migration]) -> list[Migration]:
        """Create or migrate the schema (idempotent, safe across processes)."""
        if self.is_setup(migrations):
            return []
        return await asyncio.to_thread(self.database.setup, migrations)

    async def dispose(self) -> None:
        """Close pooled connections."""
        await asyncio.to_thread(self.database.dispose)
