"""A namespaced schema (issue 30, item 7): langgraph-mnemon can share an application's database.

* Every table of ours carries our prefix, the migration bookkeeping too
  (``mnemon_schema_version``), so a foreign ``schema_version`` (Flyway's default table) in the
  same schema neither breaks ``Mnemon.open`` nor is touched by it.
* ``database_schema`` (``MNEMON_DATABASE_SCHEMA``) puts every table, the checkpointer's too, in
  a PostgreSQL schema of its own, created on first setup; the existence checks look in that
  schema only, never at a same-named table further down the search path.
* A database made by the previous release (its bookkeeping table still ``schema_version``),
  built by running that release's own code in a subprocess, opens with this code and keeps
  every item: the table is renamed in the migration transaction (a failing step leaves it as
  it was). A read-only host renames nothing: while a schema step of this release is missing
  (issue 31 added the ``spaces`` expiry columns) it refuses with what to do, and reads the
  database once a writer has opened it.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import psycopg
import pytest
import sqlalchemy as sa
from langgraph.graph import END, START, StateGraph

from langgraph_mnemon import Mnemon, MnemonConfig
from langgraph_mnemon.errors import InvalidInputError, StorageError
from langgraph_mnemon.storage.db import Database, Migration, create_engine

QUIET: dict[str, Any] = {"embedding": {"enabled": False}}
PREVIOUS_RELEASE = "deaae01"  # the last commit whose bookkeeping table is `schema_version`
REPO = Path(__file__).resolve().parents[1]

FLYWAY_DDL = (
    "CREATE TABLE schema_version (installed_rank INTEGER NOT NULL PRIMARY KEY, "
    "version VARCHAR(50), description VARCHAR(200) NOT NULL, type VARCHAR(20) NOT NULL, "
    "script VARCHAR(1000) NOT NULL, checksum INTEGER, installed_by VARCHAR(100) NOT NULL, "
    "installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, execution_time INTEGER NOT "
    "NULL, success BOOLEAN NOT NULL)"
)
FLYWAY_ROW = (
    "INSERT INTO schema_version (installed_rank, version, description, type, script, "
    "checksum, installed_by, execution_time, success) VALUES "
    "(1, '1', 'create orders', 'SQL', 'V1__create_orders.sql', 12345, 'app', 7, TRUE)"
)


class _Count(TypedDict):
    n: int


def _counter_graph(checkpointer: Any) -> Any:
    builder = StateGraph(_Count)
    builder.add_node("inc", lambda state: {"n": state["n"] + 1})
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    return builder.compile(checkpointer=checkpointer)


def _server() -> str:
    url = os.environ.get("MNEMON_TEST_POSTGRES_URL", "").strip()
    if not url:
        pytest.skip("PostgreSQL not configured: set MNEMON_TEST_POSTGRES_URL")
    return url


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def _schema_tables(server: str, schema: str) -> set[str]:
    with psycopg.connect(_plain(server)) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall()
    return {name for (name,) in rows}


@pytest.fixture
def own_schema() -> Iterator[tuple[str, str]]:
    """``(server URL, a schema name that does not exist yet)``; dropped afterwards."""
    server = _server()
    schema = f"mnemon_t_{uuid.uuid4().hex[:12]}"
    try:
        yield server, schema
    finally:
        with psycopg.connect(_plain(server), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


# --- a foreign schema_version ----------------------------------------------------------------


def _rows(db: Database, sql: str) -> list[tuple[Any, ...]]:
    with db.read() as conn:
        return [tuple(row) for row in conn.exec_driver_sql(sql)]


def test_a_foreign_flyway_schema_version_is_left_untouched(
    database_url: str, tmp_path: Path
) -> None:
    app = Database(create_engine(database_url), owns_engine=True)
    with app.write() as conn:
        conn.exec_driver_sql(FLYWAY_DDL)
        conn.exec_driver_sql(FLYWAY_ROW)
    before = _rows(app, "SELECT * FROM schema_version")
    with Mnemon.open(tmp_path / "root", database_url=database_url, **QUIET) as mem:
        mem.store().put(("users", "alice"), "prefs", {"theme": "dark"})
        mem.mnemos.add_node("task-1", "goal", "Ship the release notes")
        graph = _counter_graph(mem.checkpointer())
        assert graph.invoke({"n": 1}, {"configurable": {"thread_id": "t1"}}) == {"n": 2}
        assert mem.store().get(("users", "alice"), "prefs").value == {"theme": "dark"}
    try:
        assert _rows(app, "SELECT * FROM schema_version") == before
        with app.read() as conn:
            columns = {c["name"] for c in sa.inspect(conn).get_columns("schema_version")}
            ours = conn.exec_driver_sql("SELECT DISTINCT component FROM mnemon_schema_version")
            components = {name for (name,) in ours}
        assert "installed_rank" in columns
        assert "component" not in columns
        assert {"mnemos", "spaces"} <= components
    finally:
        app.dispose()


def test_a_schema_version_with_our_columns_but_not_our_components_is_not_adopted(
    database_url: str,
) -> None:
    db = Database(create_engine(database_url), owns_engine=True)
    try:
        with db.write() as conn:
            conn.exec_driver_sql(
                "CREATE TABLE schema_version (component VARCHAR(64), version INTEGER, "
                "description TEXT, applied_at FLOAT, PRIMARY KEY (component, version))"
            )
            conn.exec_driver_sql(
                "INSERT INTO schema_version VALUES ('billing', 3, 'invoices', 1.0)"
            )
        step = Migration("mnemos", 1, "x", lambda conn: None)
        assert [m.version for m in db.setup((step,))] == [1]
        assert _rows(db, "SELECT component, version FROM schema_version") == [("billing", 3)]
        assert _rows(db, "SELECT component, version FROM mnemon_schema_version") == [("mnemos", 1)]
    finally:
        db.dispose()


# --- database_schema ---------------------------------------------------------------------------


def test_database_schema_puts_every_table_in_its_schema(
    own_schema: tuple[str, str], postgres_url: str, tmp_path: Path
) -> None:
    server, schema = own_schema
    # The fixture's URL already sets a search path; the setting wins over it.
    with Mnemon.open(
        tmp_path / "root", database_url=postgres_url, database_schema=schema, **QUIET
    ) as mem:
        mem.store().put(("users", "alice"), "prefs", {"theme": "dark"})
        mem.runtime.add("memory", "Deploys need two approvals.")
        doc = mem.documents.create("Runbook", "Restart the worker, then check the queue.")
        mem.mnemos.add_node("task-1", "goal", "Ship the release notes")
        graph = _counter_graph(mem.checkpointer())
        assert graph.invoke({"n": 1}, {"configurable": {"thread_id": "t1"}}) == {"n": 2}
        assert graph.invoke({"n": 5}, {"configurable": {"thread_id": "t1"}}) == {"n": 6}
        assert schema in mem.status().database_url
    tables = _schema_tables(server, schema)
    expected = {
        "mnemon_schema_version",
        "mnemon_spaces",
        "mnemon_insights",
        "mnemon_runtime_entries",
        "mnemon_documents",
        "mnemos_nodes",
        "mnemos_lg_checkpoints",
        "mnemos_lg_writes",
    }
    assert expected <= tables
    assert all(name.startswith(("mnemon_", "mnemos_")) for name in tables)
    fixture_schema = postgres_url.rsplit("%3D", 1)[1]
    assert _schema_tables(server, fixture_schema) == set()
    # A new host finds everything there again.
    with Mnemon.open(
        tmp_path / "other", database_url=postgres_url, database_schema=schema, **QUIET
    ) as again:
        assert again.store().get(("users", "alice"), "prefs").value == {"theme": "dark"}
        assert [e.content for e in again.runtime.entries("memory")] == [
            "Deploys need two approvals."
        ]
        assert again.documents.get(doc.document.id).title == "Runbook"
        saved = again.checkpointer().get_tuple({"configurable": {"thread_id": "t1"}})
        assert saved.checkpoint["channel_values"]["n"] == 6


@pytest.mark.asyncio
async def test_the_async_checkpointer_works_in_the_schema(
    own_schema: tuple[str, str], tmp_path: Path
) -> None:
    server, schema = own_schema
    mem = Mnemon.open(tmp_path / "root", database_url=server, database_schema=schema, **QUIET)
    try:
        async with mem.acheckpointer() as saver:
            graph = _counter_graph(saver)
            config = {"configurable": {"thread_id": "a1"}}
            assert await graph.ainvoke({"n": 10}, config) == {"n": 11}
            assert (await saver.aget_tuple(config)).checkpoint["channel_values"]["n"] == 11
    finally:
        mem.close()
    assert "mnemos_lg_checkpoints" in _schema_tables(server, schema)


def test_a_same_named_table_further_down_the_search_path_is_not_ours(
    own_schema: tuple[str, str], postgres_url: str, tmp_path: Path
) -> None:
    server, schema = own_schema
    other = postgres_url.rsplit("%3D", 1)[1]  # the fixture's schema: another installation
    with Mnemon.open(tmp_path / "a", database_url=postgres_url, **QUIET) as first:
        first.store().put(("ns",), "k", {"who": "first"})
    with psycopg.connect(_plain(server), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')  # empty: the current schema of the path
    # search_path "<new>, <other>": before, the existence check saw <other>'s tables on the
    # path, created nothing in <new> and wrote into <other>'s tables.
    both = f"{server}?options=-csearch_path%3D{schema}%2C{other}"
    with Mnemon.open(tmp_path / "b", database_url=both, **QUIET) as second:
        assert second.store().get(("ns",), "k") is None
        second.store().put(("ns",), "k", {"who": "second"})
    assert "mnemon_spaces" in _schema_tables(server, schema)
    with Mnemon.open(tmp_path / "a", database_url=postgres_url, **QUIET) as first:
        assert first.store().get(("ns",), "k").value == {"who": "first"}


def test_database_schema_is_checked_at_load(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidInputError, match="database_schema names a PostgreSQL schema"):
        MnemonConfig(database_schema="mnemon")
    for bad in ("Mnemon", "1abc", "pg_mine", "a-b", "x" * 64):
        with pytest.raises(InvalidInputError, match="MNEMON_DATABASE_SCHEMA"):
            MnemonConfig(database_url="postgresql://u@h/db", database_schema=bad)
    monkeypatch.setenv("MNEMON_DATABASE_SCHEMA", "agent_memory")
    cfg = MnemonConfig(database_url="postgresql://u:pw@h/db?sslmode=require")
    assert cfg.resolved_database_url == (
        "postgresql://u:pw@h/db?sslmode=require&options=-csearch_path%3Dagent_memory"
    )


def test_a_missing_schema_is_not_created_by_a_read_only_host(
    own_schema: tuple[str, str], tmp_path: Path
) -> None:
    server, schema = own_schema
    with Mnemon.open(
        tmp_path / "root",
        database_url=server,
        database_schema=schema,
        write_enabled=False,
        **QUIET,
    ) as mem:
        assert mem.store().get(("ns",), "k") is None
        assert mem.mnemos.nodes("task-1") == []
    with psycopg.connect(_plain(server)) as conn:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchall()
    assert found == []


def test_a_role_that_may_not_create_the_schema_is_told_what_to_run(
    own_schema: tuple[str, str], tmp_path: Path
) -> None:
    server, schema = own_schema
    role = f"mnemon_r_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(_plain(server), autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
    try:
        url = server.replace("mnemon:mnemon@", f"{role}:pw@", 1)
        host = Mnemon.open(tmp_path / "root", database_url=url, database_schema=schema)
        with host as mem, pytest.raises(StorageError) as refused:
            mem.checkpointer()
        assert refused.value.code == "storage-permission"
        assert f"CREATE SCHEMA {schema} AUTHORIZATION" in str(refused.value)
    finally:
        with psycopg.connect(_plain(server), autocommit=True) as conn:
            conn.execute(f"DROP ROLE IF EXISTS {role}")


# --- a database made by the previous release ----------------------------------------------------


@pytest.fixture(scope="session")
def previous_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The previous release's package, extracted from this repository's history."""
    target = tmp_path_factory.mktemp("previous-release")
    done = subprocess.run(
        ["git", "-C", str(REPO), "archive", PREVIOUS_RELEASE, "langgraph_mnemon"],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip()
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs the history up to {PREVIOUS_RELEASE}: {why}")
        pytest.skip(f"{PREVIOUS_RELEASE} is not in this checkout (a shallow clone?): {why}")
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        archive.extractall(target, filter="data")
    return target


_OLD_RELEASE_SCRIPT = """
import json, sys
from typing import TypedDict
from langgraph.graph import END, START, StateGraph
import langgraph_mnemon
from langgraph_mnemon import Mnemon

class Count(TypedDict):
    n: int

root, url = sys.argv[1], sys.argv[2]
options = {"embedding": {"enabled": False}}
if url:
    options["database_url"] = url
with Mnemon.open(root, **options) as mem:
    mem.store().put(("users", "alice"), "prefs", {"theme": "dark"})
    mem.runtime.add("memory", "Deploys need two approvals.")
    doc = mem.documents.create("Runbook", "Restart the worker, then check the queue.")
    mem.mnemos.add_node("task-1", "goal", "Ship the release notes")
    builder = StateGraph(Count)
    builder.add_node("inc", lambda state: {"n": state["n"] + 1})
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    graph = builder.compile(checkpointer=mem.checkpointer())
    graph.invoke({"n": 1}, {"configurable": {"thread_id": "t1"}})
    print(json.dumps({"package": langgraph_mnemon.__file__, "doc": doc.document.id}))
"""


def _made_by_previous_release(previous: Path, root: Path, url: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(previous)}
    done = subprocess.run(
        [sys.executable, "-c", _OLD_RELEASE_SCRIPT, str(root), url],
        cwd=previous,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    made = json.loads(done.stdout.strip().splitlines()[-1])
    assert made["package"].startswith(str(previous))  # the previous release's code ran
    return made


def _version_tables(url: str) -> tuple[set[str], list[tuple[Any, ...]]]:
    db = Database(create_engine(url), owns_engine=True)
    try:
        with db.read() as conn:
            names = set(sa.inspect(conn).get_table_names())
            table = (
                "mnemon_schema_version" if "mnemon_schema_version" in names else "schema_version"
            )
            rows = conn.exec_driver_sql(
                f"SELECT component, version, description FROM {table} ORDER BY 1, 2"
            ).all()
        return {n for n in names if "schema_version" in n}, [tuple(r) for r in rows]
    finally:
        db.dispose()


def _url_of(database_url: str, root: Path) -> tuple[str, str]:
    """(the URL the old release is given: "" = its embedded default, the URL to inspect)."""
    if database_url.startswith("sqlite"):
        return "", f"sqlite:///{root / 'mnemon.db'}"
    return database_url, database_url


def _read_only_refuses_it_untouched(root: Path, given: str, url: str) -> None:
    options = {"database_url": given} if given else {}
    with Mnemon.open(root, write_enabled=False, **options, **QUIET) as mem:
        # This release adds steps to Mnemos (the model's window) and the spaces (TTL).
        reads = (lambda: mem.mnemos.nodes("task-1"), lambda: mem.store().get(("users",), "k"))
        for read in reads:
            with pytest.raises(StorageError, match="open it once with writes enabled") as refused:
                read()
            assert refused.value.code == "storage-read-only"
    assert _version_tables(url)[0] == {"schema_version"}


def _a_failing_step_rolls_the_rename_back(url: str) -> None:
    def fails(conn: sa.Connection) -> None:
        raise StorageError("step 1 failed")

    db = Database(create_engine(url), owns_engine=True)
    try:
        with pytest.raises(StorageError, match="step 1 failed"):
            db.setup((Migration("a_new_component", 1, "fails", fails),))
    finally:
        db.dispose()
    assert _version_tables(url)[0] == {"schema_version"}


def _primary_keys(url: str) -> list[tuple[str]]:
    schema = url.rsplit("%3D", 1)[1]
    with psycopg.connect(_plain(url.split("?")[0])) as conn:
        return conn.execute(
            "SELECT conname FROM pg_constraint c JOIN pg_namespace n "
            "ON n.oid = c.connamespace WHERE n.nspname = %s AND contype = 'p' "
            "AND conname LIKE '%%schema_version%%'",
            (schema,),
        ).fetchall()


def test_a_database_of_the_previous_release_opens_and_keeps_everything(
    previous_release: Path, database_url: str, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    given, url = _url_of(database_url, root)
    made = _made_by_previous_release(previous_release, root, given)
    tables, old_rows = _version_tables(url)
    assert tables == {"schema_version"}
    # A read-only host renames nothing (it cannot add this release's steps either); a failing
    # migration step takes the rename back with it (one transaction).
    _read_only_refuses_it_untouched(root, given, url)
    _a_failing_step_rolls_the_rename_back(url)
    options = {"database_url": given} if given else {}
    with Mnemon.open(root, **options, **QUIET) as mem:
        assert mem.store().get(("users", "alice"), "prefs").value == {"theme": "dark"}
        assert [e.content for e in mem.runtime.entries("memory")] == ["Deploys need two approvals."]
        assert mem.documents.read(made["doc"]).startswith("Restart the worker")
        assert [n.content for n in mem.mnemos.nodes("task-1")] == ["Ship the release notes"]
        checkpointer = mem.checkpointer()
        saved = checkpointer.get_tuple({"configurable": {"thread_id": "t1"}})
        assert saved.checkpoint["channel_values"]["n"] == 2
        graph = _counter_graph(checkpointer)
        assert graph.invoke({"n": 7}, {"configurable": {"thread_id": "t1"}}) == {"n": 8}
        mem.store().put(("users", "alice"), "more", {"x": 1})
    tables, new_rows = _version_tables(url)
    assert tables == {"mnemon_schema_version"}
    # Every applied step kept, none applied twice; steps this release adds (new tables) are
    # applied on open.
    assert set(old_rows) <= set(new_rows)
    assert len(set(new_rows)) == len(new_rows)
    if url.startswith("postgresql"):
        assert _primary_keys(url) == [("mnemon_schema_version_pkey",)]
    with Mnemon.open(root, **options, **QUIET) as mem:  # the next open changes nothing
        assert mem.store().get(("users", "alice"), "more").value == {"x": 1}
    assert _version_tables(url) == (tables, new_rows)
    with Mnemon.open(root, write_enabled=False, **options, **QUIET) as mem:  # migrated: reads
        assert mem.store().get(("users", "alice"), "prefs").value == {"theme": "dark"}
        assert [n.content for n in mem.mnemos.nodes("task-1")] == ["Ship the release notes"]
