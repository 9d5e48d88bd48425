"""The shared SQL database module: engines, pragmas, transactions, versioned migrations."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from langgraph_mnemon.errors import InvalidInputError, StorageError
from langgraph_mnemon.memory_layers.mnemos.schema import METADATA, MIGRATIONS
from langgraph_mnemon.storage.db import (
    SCHEMA_VERSION,
    Database,
    Migration,
    create_async_engine,
    create_engine,
    ensure_sqlite_directory,
    migrate,
    parse_database_url,
    redact_url,
)


def test_urls_are_normalised_to_our_drivers(tmp_path: Path) -> None:
    assert parse_database_url(f"sqlite:///{tmp_path}/a.db").drivername == "sqlite+pysqlite"
    assert parse_database_url(str(tmp_path / "a.db")).database == str(tmp_path / "a.db")
    assert parse_database_url(":memory:").database is None
    assert parse_database_url("sqlite:///x.db", use_async=True).drivername == "sqlite+aiosqlite"
    assert parse_database_url("postgres://u:p@h/db").drivername == "postgresql+psycopg"
    assert parse_database_url("postgresql://u:p@h/db").drivername == "postgresql+psycopg"
    assert "secret" not in redact_url("postgresql+psycopg://u:secret@h/db")


@pytest.mark.parametrize("bad", ["", "   ", "mysql://u@h/db", "not a url://x", 42])
def test_bad_urls_raise_typed_errors(bad: object) -> None:
    with pytest.raises(InvalidInputError):
        parse_database_url(bad)  # type: ignore[arg-type]


def test_sqlite_options_are_validated(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="synchronous"):
        create_engine(tmp_path / "a.db", sqlite_synchronous="SOMETIMES")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="busy_timeout"):
        create_engine(tmp_path / "a.db", busy_timeout_ms=-1)


def test_sqlite_connections_use_wal_busy_timeout_and_foreign_keys(tmp_path: Path) -> None:
    db = Database(create_engine(tmp_path / "a.db", busy_timeout_ms=1234), owns_engine=True)
    with db.read() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 1234
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
    db.dispose()


def test_memory_database_is_shared_by_every_connection() -> None:
    db = Database(create_engine(":memory:"))
    with db.write() as conn:
        conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    seen: list[int] = []

    def read() -> None:
        with db.read() as conn:
            seen.append(conn.exec_driver_sql("SELECT count(*) FROM t").scalar())

    worker = threading.Thread(target=read)
    worker.start()
    worker.join()
    assert seen == [1]


def test_a_failed_write_leaves_rows_as_they_were(tmp_path: Path) -> None:
    db = Database(create_engine(tmp_path / "a.db"))
    with db.write() as conn:
        conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")

    def fail() -> None:
        with db.write() as conn:
            conn.exec_driver_sql("INSERT INTO t VALUES (1)")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        fail()
    with db.read() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM t").scalar() == 0


def test_driver_errors_become_storage_errors(tmp_path: Path) -> None:
    db = Database(create_engine(tmp_path / "a.db"))
    with pytest.raises(StorageError, match="nothing was changed"), db.read() as conn:
        conn.exec_driver_sql("SELECT * FROM no_such_table")


def test_database_rejects_non_engines() -> None:
    with pytest.raises(InvalidInputError):
        Database("sqlite://")  # type: ignore[arg-type]


def test_setup_is_idempotent_and_versioned(database_url: str) -> None:
    ensure_sqlite_directory(database_url)
    db = Database(create_engine(database_url), owns_engine=True)
    first = db.setup(MIGRATIONS)
    assert [(m.component, m.version) for m in first] == [("mnemos", v) for v in (1, 2, 3)]
    assert db.setup(MIGRATIONS) == []
    # a second engine on the same database finds everything applied
    other = Database(create_engine(database_url), owns_engine=True)
    assert other.setup(MIGRATIONS) == []
    with other.read() as conn:
        rows = conn.execute(sa.select(SCHEMA_VERSION.c.component, SCHEMA_VERSION.c.version)).all()
        names = set(sa.inspect(conn).get_table_names())
    assert sorted(tuple(r) for r in rows) == [("mnemos", v) for v in (1, 2, 3)]
    assert {t.name for t in METADATA.sorted_tables} <= names
    db.dispose()
    other.dispose()


def test_a_version_1_database_gains_the_derived_key(tmp_path: Path) -> None:
    """A database made before node derivation: version 2 adds the column, keeps the rows."""
    path = tmp_path / "v1.db"
    db = Database(create_engine(path), owns_engine=True)
    db.setup(MIGRATIONS[:1])
    with db.write() as conn:  # what version 1 created: no derived_key column yet
        conn.execute(sa.text("DROP INDEX ix_mnemos_nodes_derived"))
        conn.execute(sa.text("ALTER TABLE mnemos_nodes DROP COLUMN derived_key"))
        conn.execute(
            sa.text(
                "INSERT INTO mnemos_nodes (id, task_id, type, content, created_at, last_accessed)"
                " VALUES ('n1', 't', 'goal', 'Ship it', 0, 0)"
            )
        )
    db.dispose()
    again = Database(create_engine(path), owns_engine=True)
    assert [m.version for m in again.setup(MIGRATIONS)] == [2, 3]
    with again.read() as conn:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("mnemos_nodes")}
        content = conn.execute(sa.text("SELECT content FROM mnemos_nodes")).scalar_one()
    assert "derived_key" in columns
    assert content == "Ship it"
    again.dispose()


def test_migrations_of_another_component_use_the_same_runner(tmp_path: Path) -> None:
    db = Database(create_engine(tmp_path / "a.db"))
    calls: list[int] = []

    def v1(conn: sa.Connection) -> None:
        calls.append(1)
        conn.exec_driver_sql("CREATE TABLE extra_thing (id INTEGER PRIMARY KEY)")

    def v2(conn: sa.Connection) -> None:
        calls.append(2)
        conn.exec_driver_sql("ALTER TABLE extra_thing ADD COLUMN note TEXT")

    db.setup([*MIGRATIONS, Migration("extra", 1, "table", v1)])
    db.setup([*MIGRATIONS, Migration("extra", 1, "table", v1), Migration("extra", 2, "col", v2)])
    assert calls == [1, 2]


def test_bad_migration_lists_and_newer_databases_are_refused(tmp_path: Path) -> None:
    db = Database(create_engine(tmp_path / "a.db"))
    with pytest.raises(InvalidInputError, match=r"numbered 1\.\.n"):
        db.setup([Migration("x", 2, "gap", lambda conn: None)])
    db.setup(MIGRATIONS)
    with db.write() as conn:
        conn.execute(
            sa.insert(SCHEMA_VERSION).values(
                component="mnemos", version=99, description="future", applied_at=0.0
            )
        )
    fresh = Database(create_engine(tmp_path / "a.db"))
    with pytest.raises(StorageError, match="upgrade langgraph-mnemon"), fresh.write() as conn:
        migrate(conn, MIGRATIONS)


def test_a_failing_migration_applies_nothing(tmp_path: Path) -> None:
    db = Database(create_engine(tmp_path / "a.db"))

    def broken(conn: sa.Connection) -> None:
        conn.exec_driver_sql("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("migration bug")

    with pytest.raises(RuntimeError):
        db.setup([*MIGRATIONS, Migration("broken", 1, "fails", broken)])
    with db.read() as conn:
        names = set(sa.inspect(conn).get_table_names())
    assert "half_done" not in names
    assert "mnemos_nodes" not in names  # the whole setup rolled back


def _setup_in_process(url: str) -> None:
    db = Database(create_engine(url))
    db.setup(MIGRATIONS)
    db.dispose()


def test_concurrent_setup_from_several_processes(database_url: str) -> None:
    ensure_sqlite_directory(database_url)
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_setup_in_process, args=(database_url,)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert [w.exitcode for w in workers] == [0, 0]
    db = Database(create_engine(database_url))
    with db.read() as conn:
        count = conn.execute(sa.select(sa.func.count()).select_from(SCHEMA_VERSION)).scalar()
    assert count == len(MIGRATIONS)  # each step once, though two processes raced
    db.dispose()


@pytest.mark.asyncio
async def test_async_engine_runs_the_same_operations(tmp_path: Path) -> None:
    from langgraph_mnemon.storage.db import AsyncDatabase

    adb = AsyncDatabase(create_async_engine(f"sqlite:///{tmp_path}/a.db"), owns_engine=True)
    applied = await adb.setup(MIGRATIONS)
    assert [m.version for m in applied] == [1, 2, 3]
    assert await adb.setup(MIGRATIONS) == []

    def mode(conn: sa.Connection) -> str:
        return str(conn.exec_driver_sql("PRAGMA journal_mode").scalar())

    assert await adb.run_read(mode) == "wal"
    await adb.dispose()


def _open_and_set_up(url: str, barrier: threading.Barrier, errors: list[BaseException]) -> None:
    barrier.wait()
    try:
        db = Database(create_engine(url))
        db.setup(MIGRATIONS)
        db.dispose()
    except BaseException as exc:
        errors.append(exc)


def test_opening_a_new_file_from_many_connections_at_once(tmp_path: Path) -> None:
    # Connections racing to switch a new file to WAL get SQLITE_BUSY at once (no busy
    # handler); before the fix about one round in eight failed with "database is locked".
    for i in range(50):
        url = f"sqlite:///{tmp_path}/new-{i}.db"
        errors: list[BaseException] = []
        barrier = threading.Barrier(4)
        threads = [
            threading.Thread(target=_open_and_set_up, args=(url, barrier, errors)) for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors, f"round {i}: {errors[0]}"


def test_per_call_logs_stay_bounded(tmp_path: Path) -> None:
    """Mnemos reads before every model call: token readings and the fatigue log are trimmed to
    their newest rows per task, and other tasks keep theirs."""
    from langgraph_mnemon.memory_layers.mnemos import Mnemos
    from langgraph_mnemon.memory_layers.mnemos.schema import FATIGUE_LOG, SIGNALS
    from langgraph_mnemon.memory_layers.mnemos.store import USAGE_KEPT, trim_oldest

    db = Database(create_engine(tmp_path / "m.db"), owns_engine=True)
    mnemos = Mnemos(db)
    for i in range(300):
        mnemos.record_usage("busy", 1_000 + i, call_id=f"llm:{i}")
    mnemos.record_usage("quiet", 5, call_id="llm:q")
    for _ in range(70):
        mnemos.fatigue("busy")

    def count(table: sa.Table, task: str, *where: object) -> int:
        with db.read() as conn:
            query = sa.select(sa.func.count()).select_from(table).where(table.c.task_id == task)
            return conn.execute(query.where(*where)).scalar_one()

    usage = count(SIGNALS, "busy", SIGNALS.c.kind == "usage")
    assert USAGE_KEPT <= usage < USAGE_KEPT + 64  # trimmed every 64th insert
    assert mnemos.fatigue("busy", log=False).tokens_used == 1_299  # the newest survives
    assert count(SIGNALS, "quiet") == 1
    with db.write() as conn:
        assert trim_oldest(conn, FATIGUE_LOG, "busy", 10) == count(FATIGUE_LOG, "busy") - 10
    assert count(FATIGUE_LOG, "busy") == 10
    db.dispose()
