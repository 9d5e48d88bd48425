"""A pytest plugin that runs LangGraph's own store test suites against ``mem.store()``.

LangGraph's store suites build their stores through the peers' constructors
(``SqliteStore.from_conn_string``, ``AsyncSqliteStore.from_conn_string``,
``PostgresStore.from_conn_string``, ``AsyncPostgresStore.from_conn_string`` and
``InMemoryStore(...)``). Loaded before those suites are imported (``-p``), this plugin makes
every one of them open a fresh :class:`~langgraph_mnemon.Mnemon` host instead and hand out its
:class:`~langgraph_mnemon.store.MnemonStore`, with the suite's ``index`` and ``ttl`` settings:

* a SQLite target (``":memory:"`` or a file) becomes an embedded host in a new folder;
* a PostgreSQL URI becomes a host on that database (``postgres://`` is read as psycopg).

Connection-only options (``pipeline``, ``pool_config``) have no counterpart and are dropped.
``scripts/langgraph_store_suites.py`` loads this plugin, picks the suites and leaves out the
tests of the peers' internals.

Example:
    >>> # python -m pytest -p langgraph_mnemon.testing.langgraph_suites tests/test_store.py
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from typing import Any

from langgraph_mnemon.host import Mnemon
from langgraph_mnemon.store import Done, MnemonStore

__all__ = ["open_store", "store_in_place"]

# id(store) -> (its host, the host's folder, the store): closed with the suite's context.
_OPEN: dict[int, tuple[Mnemon, str, MnemonStore]] = {}
_ROOTS_ENV = "MNEMON_SUITE_ROOTS"


def _database_url(target: str) -> str | None:
    """Our database URL for a suite's connection string; ``None`` means embedded SQLite."""
    for scheme in ("postgres://", "postgresql://"):
        if target.startswith(scheme):
            return "postgresql+psycopg://" + target.removeprefix(scheme)
    return None


def open_store(
    target: str = ":memory:", *, index: Any = None, ttl: Any = None, **_connection: Any
) -> MnemonStore:
    """A fresh host's store standing in for a peer store opened on ``target``.

    Args:
        target: the suite's connection string: ``":memory:"``, a file path or a PostgreSQL URI.
        index: the suite's index configuration, passed on unchanged.
        ttl: the suite's TTL configuration, passed on unchanged.
        **_connection: connection-only options of the peers (``pipeline``, ``pool_config``).

    Returns:
        The new host's store; the host is closed by :func:`close_all` (run at exit).
    """
    root = tempfile.mkdtemp(prefix="mnemon-suite-", dir=os.environ.get(_ROOTS_ENV))
    url = _database_url(target)
    settings: dict[str, Any] = {"database_url": url} if url else {}
    mem = Mnemon.open(root, **settings)
    options = {name: value for name, value in (("index", index), ("ttl", ttl)) if value}
    store = mem.store(**options)
    _OPEN[id(store)] = (mem, root, store)
    return store


def close_all() -> None:
    """Close every host this plugin opened and remove its folder."""
    for key in list(_OPEN):
        _close(_OPEN[key][2])


atexit.register(close_all)


class _FixtureCursor:
    """What the PostgreSQL suites' fixtures reach for on their store: ``store._cursor()`` to
    drop their migration table before a second ``setup()``. That statement has nothing to do
    here; any other statement would read or change the peer's tables, so it is refused (the
    tests that do it are left out by the script)."""

    def __enter__(self) -> _FixtureCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    async def __aenter__(self) -> _FixtureCursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def execute(self, statement: str, *args: Any) -> Any:
        if statement.strip().upper() != "DROP TABLE IF EXISTS STORE_MIGRATIONS":
            raise NotImplementedError(f"the peer's tables are not here: {statement[:60]!r}")
        return Done()  # awaitable too: the async fixture awaits it


def _with_fixture_shims(store: MnemonStore) -> MnemonStore:
    """The PostgreSQL suites' fixtures read ``MIGRATIONS`` and call ``_cursor()``."""
    store.MIGRATIONS = []  # type: ignore[attr-defined]
    store._cursor = _FixtureCursor  # type: ignore[attr-defined]
    return store


def _close(store: MnemonStore) -> None:
    """Close the host behind ``store`` now (a suite drops its database right after)."""
    entry = _OPEN.pop(id(store), None)
    if entry is None:
        return
    with contextlib.suppress(Exception):  # the suite has its verdict; closing must not mask it
        entry[0].close()
    shutil.rmtree(entry[1], ignore_errors=True)


@contextlib.contextmanager
def _sync_store(target: str, **options: Any) -> Iterator[MnemonStore]:
    store = _with_fixture_shims(open_store(target, **options))
    try:
        yield store
    finally:
        _close(store)


@contextlib.asynccontextmanager
async def _async_store(target: str, **options: Any) -> AsyncIterator[MnemonStore]:
    store = _with_fixture_shims(open_store(target, **options))
    try:
        yield store
    finally:
        _close(store)


def _from_conn_string(opener: Any) -> Any:
    def from_conn_string(cls: type, target: str, *args: Any, **options: Any) -> Any:
        return opener(target, **options)

    return classmethod(from_conn_string)


def store_in_place() -> None:
    """Point the peers' constructors at :func:`open_store` (idempotent)."""
    import langgraph.store.memory as memory

    memory.InMemoryStore = lambda **options: open_store(":memory:", **options)  # type: ignore[misc]
    peers = [
        ("langgraph.store.sqlite", "SqliteStore", _sync_store),
        ("langgraph.store.sqlite.aio", "AsyncSqliteStore", _async_store),
        ("langgraph.store.postgres", "PostgresStore", _sync_store),
        ("langgraph.store.postgres.aio", "AsyncPostgresStore", _async_store),
    ]
    for module_name, class_name, opener in peers:
        try:
            module = __import__(module_name, fromlist=[class_name])
        except ImportError:  # that peer is not installed: its suite cannot be collected anyway
            continue
        getattr(module, class_name).from_conn_string = _from_conn_string(opener)


def pytest_configure(config: Any) -> None:
    """Replace the peers before the suites import them."""
    store_in_place()


def pytest_unconfigure(config: Any) -> None:
    """Close the hosts when the run ends."""
    close_all()
