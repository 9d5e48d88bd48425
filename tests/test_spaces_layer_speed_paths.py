"""The Memory Spaces layer's fast paths keep their meaning (issue 18, the layer's share).

* The catalog read of a search is one autocommit statement on PostgreSQL (no BEGIN / COMMIT),
  and its prebuilt statement still sees what a second engine (another process) wrote.
* Pooled PostgreSQL connections are not pinged on every checkout (``pool_pre_ping`` cost a
  ``SELECT 1`` round trip each), yet a search still answers after its pooled backend was
  killed with ``pg_terminate_backend`` (sync and async engines).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.memory_layers.spaces import MemorySpaces, ProviderSearchRequest
from langgraph_mnemon.storage.db import Database, create_async_engine, create_engine

_FACTS = [
    "The staging database is db-stage-2 on port 5433.",
    "Deploys to production happen on Tuesday mornings.",
    "The invoice service retries failed payments three times.",
    "Backups of the analytics cluster run every night at 02:00.",
]


def _spaces(url: str, root: Path) -> tuple[Database, MemorySpaces]:
    db = Database(create_engine(url), owns_engine=True)
    return db, MemorySpaces(db, root=root, providers=[MnemosProvider(db)])


@pytest.fixture
def pg_spaces(postgres_url: str, tmp_path: Path) -> Iterator[tuple[str, Database, MemorySpaces]]:
    db, spaces = _spaces(postgres_url, tmp_path / "a")
    spaces.create_space("Work", space_id="work")
    spaces.remember_many([{"content": f} for f in _FACTS], space_id="work")
    yield postgres_url, db, spaces
    spaces.close()
    db.dispose()


def _contents(spaces: MemorySpaces, query: str) -> list[str]:
    return [r.content for r in spaces.search(query, limit=5).results]


def _terminate(url: str, pid: int) -> None:
    """Kill backend ``pid`` from another connection and wait until it is gone."""
    # Autocommit: pg_stat_activity is a snapshot per transaction, so each poll needs its own.
    other = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with other.connect() as conn:
            assert conn.exec_driver_sql(f"SELECT pg_terminate_backend({pid})").scalar()
            deadline = time.monotonic() + 30  # a loaded machine can take a while to reap it
            sql = f"SELECT 1 FROM pg_stat_activity WHERE pid = {pid}"
            while conn.exec_driver_sql(sql).first() is not None:
                if time.monotonic() > deadline:
                    pytest.fail(f"backend {pid} still in pg_stat_activity 30 s after termination")
                time.sleep(0.01)
    finally:
        other.dispose()
    time.sleep(0.05)  # the FATAL message reaches the client socket


def _pooled_pids(url: str, name: str) -> list[int]:
    """Backend pids of every connection opened with ``application_name=name``."""
    other = sa.create_engine(url)
    try:
        with other.connect() as conn:
            sql = "SELECT pid FROM pg_stat_activity WHERE application_name = :n"
            return list(conn.execute(sa.text(sql), {"n": name}).scalars())
    finally:
        other.dispose()


# ------------------------------------------------------------------ round trips


def test_pg_search_catalog_read_has_no_transaction_and_no_ping(pg_spaces: Any) -> None:
    _, db, spaces = pg_spaces
    expected = _contents(spaces, "staging database port")  # warm: pool, caches
    events = {"begin": 0, "statements": 0, "pings": 0}

    def count(name: str) -> Any:
        return lambda *_a, **_k: events.__setitem__(name, events[name] + 1)

    def begin(conn: sa.Connection) -> None:  # BEGIN reaches the server only off autocommit
        events["begin"] += not conn.connection.dbapi_connection.autocommit

    sa.event.listen(db.engine, "begin", begin)
    sa.event.listen(db.engine, "before_cursor_execute", count("statements"))
    dialect = db.engine.dialect
    real_ping = dialect.do_ping

    def ping(dbapi_connection: Any) -> bool:  # a spy: the real ping still runs
        events["pings"] += 1
        return real_ping(dbapi_connection)

    dialect.do_ping = ping  # type: ignore[method-assign]
    try:
        for _ in range(3):
            assert _contents(spaces, "staging database port") == expected
    finally:
        dialect.do_ping = real_ping  # type: ignore[method-assign]
    assert expected
    assert expected[0] == _FACTS[0]
    assert events["begin"] == 0  # the catalog read and the provider search run in autocommit
    assert events["pings"] == 0  # live idle connections are not pinged
    layer = events["statements"]
    provider = spaces._registry.get("mnemos")
    binding = spaces._catalog.binding(spaces._catalog.get_space("work"))
    events["statements"] = 0
    for _ in range(3):
        request = ProviderSearchRequest(query="staging database port", mode="smart", limit=10)
        provider._search_rows(binding, request)
    # the layer adds exactly one statement per search: the catalog SELECT
    assert layer == events["statements"] + 3


# ------------------------------------------------------------------ catalog freshness


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_catalog_read_sees_a_second_engine_write(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite:///{tmp_path}/m.db"
        if backend == "sqlite"
        else str(request.getfixturevalue("postgres_url"))
    )
    db_a, first = _spaces(url, tmp_path / "a")
    db_b, second = _spaces(url, tmp_path / "a")  # another engine: as another process would
    try:
        first.create_space("Work", space_id="work")
        first.remember_many([{"content": _FACTS[0]}], space_id="work")
        assert _contents(first, "staging database port") == [_FACTS[0]]
        second.create_space("Ops", space_id="ops")
        second.remember_many([{"content": _FACTS[3]}], space_id="ops")
        # the first handle's next search lists the new active space and searches it
        assert [s.id for s in first.list_spaces(active=True)] == ["work", "ops"]
        assert _contents(first, "analytics cluster backups night") == [_FACTS[3]]
        second.update_space("ops", active=False)
        assert [s.id for s in first.list_spaces(active=True)] == ["work"]
        assert _contents(first, "analytics cluster backups night") == []
        assert first.get_space("ops").active is False
    finally:
        first.close()
        second.close()
        db_a.dispose()
        db_b.dispose()


# ------------------------------------------------------------------ recovery after a kill


def test_pg_search_answers_after_its_backend_was_killed(postgres_url: str, tmp_path: Path) -> None:
    name = f"mnemon-kill-{uuid.uuid4().hex[:8]}"
    db, spaces = _spaces(f"{postgres_url}&application_name={name}", tmp_path)
    try:
        spaces.create_space("Work", space_id="work")
        spaces.remember_many([{"content": f} for f in _FACTS], space_id="work")
        expected = _contents(spaces, "staging database port")
        assert expected[0] == _FACTS[0]
        killed = _pooled_pids(postgres_url, name)
        assert killed  # the pool holds its connections
        for pid in killed:
            _terminate(postgres_url, pid)
        assert _contents(spaces, "staging database port") == expected
        fresh = _pooled_pids(postgres_url, name)
        assert fresh  # the pool connected afresh
        assert not set(fresh) & set(killed)
    finally:
        spaces.close()
        db.dispose()


def test_pg_async_engine_recovers_after_its_backend_was_killed(postgres_url: str) -> None:
    async def scenario() -> tuple[int, int, int]:
        engine = create_async_engine(postgres_url)
        try:
            async with engine.connect() as conn:
                first = (await conn.exec_driver_sql("SELECT pg_backend_pid()")).scalar()
            await asyncio.to_thread(_terminate, postgres_url, first)
            async with engine.connect() as conn:
                second = (await conn.exec_driver_sql("SELECT pg_backend_pid()")).scalar()
                answer = (await conn.exec_driver_sql("SELECT 41 + 1")).scalar()
            return first, second, answer
        finally:
            await engine.dispose()

    first, second, answer = asyncio.run(scenario())
    assert second != first
    assert answer == 42


def test_pg_idle_connection_is_pinged_after_the_idle_window(
    pg_spaces: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, db, spaces = pg_spaces
    from langgraph_mnemon.storage import db as db_module

    expected = _contents(spaces, "staging database port")
    monkeypatch.setattr(db_module, "_IDLE_PING_SECONDS", 0.0)  # every checkout is "long idle"
    pings = []
    dialect = db.engine.dialect
    real_ping = dialect.do_ping
    monkeypatch.setattr(dialect, "do_ping", lambda c: pings.append(1) or real_ping(c))
    assert _contents(spaces, "staging database port") == expected
    assert len(pings) >= 1
