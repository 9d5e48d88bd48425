"""Start-up that costs nothing it does not need (issue 28): what the import, ``mnemon --help``
and a refused ``mnemon serve`` load, and migrations that create a schema in one batch.

Deterministic checks only (which modules a fresh process loaded, which statements a migration
sent); the timings are ``bench/startup.py``'s.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from server_support import free_port

from langgraph_mnemon.errors import StorageError
from langgraph_mnemon.memory_layers.mnemos.schema import METADATA as MNEMOS_METADATA
from langgraph_mnemon.memory_layers.mnemos.schema import MIGRATIONS as MNEMOS_MIGRATIONS
from langgraph_mnemon.storage.db import Database, Migration, create_engine, create_tables

# Never loaded by importing the package or by `mnemon --help`: database dialects and drivers,
# providers and their clients, LangGraph server, LangChain.
HEAVY = (
    "sqlalchemy.dialects.postgresql",
    "sqlalchemy.orm",
    "sqlalchemy.ext.asyncio",
    "psycopg",
    "chromadb",
    "mem0",
    "httpx",
    "langgraph_api",
    "langchain_core",
    "langgraph_mnemon.adapters.providers",
    "langgraph_mnemon.server",
)


def _loaded(code: str, *args: str, env: dict[str, str] | None = None) -> tuple[list[str], str]:
    """Run ``code`` in a fresh interpreter; it prints ``sys.modules`` as its last line."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env or _clean_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    *output, modules = done.stdout.rstrip("\n").split("\n")
    return json.loads(modules), "\n".join(output)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMON_")}
    return {**env, **extra}


def _among(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_item28_importing_mnemon_loads_no_dialect_driver_provider_or_server() -> None:
    modules, _ = _loaded(
        "import json, sys\n"
        "from langgraph_mnemon import Mnemon, MnemonConfig\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    assert "langgraph_mnemon.host" in modules
    assert _among(modules, HEAVY) == []
    # The Mnemos service loads with the first task operation, not with the host.
    assert "langgraph_mnemon.memory_layers.mnemos._service" not in modules


def test_item28_the_first_status_loads_no_provider_client() -> None:
    modules, _ = _loaded(
        "import json, sys, tempfile\n"
        "from langgraph_mnemon import Mnemon\n"
        "with Mnemon.open(tempfile.mkdtemp()) as mem:\n"
        "    assert mem.status().spaces is not None\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    # Every configured provider is registered, none has imported its client library.
    for provider, package in (("chroma", "chromadb"), ("mem0", "mem0")):
        if importlib.util.find_spec(package) is not None:
            assert f"langgraph_mnemon.adapters.providers.{provider}" in modules
    clients = ("chromadb", "mem0", "qdrant_client", "langchain_core", "httpx", "psycopg")
    assert _among(modules, (*clients, "sqlalchemy.dialects.postgresql")) == []


def test_item28_mnemon_help_loads_no_host_layers_or_server() -> None:
    modules, output = _loaded(
        "import json, sys\n"
        "from langgraph_mnemon.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    assert "Usage: mnemon" in output
    assert "serve" in output
    layers = ("langgraph_mnemon.host", "langgraph_mnemon.memory_layers", "langgraph_mnemon.storage")
    # The lazy-export helper is plain standard library: the CLI package binds its __getattr__.
    light = {"langgraph_mnemon.storage", "langgraph_mnemon.storage.lazy"}
    loaded = _among(modules, (*HEAVY, *layers, "sqlalchemy", "pydantic_settings"))
    assert [m for m in loaded if m not in light] == []


def _serve_importing(root: Path, port: int, **env: str) -> tuple[int, list[str], set[str]]:
    """``mnemon serve`` under ``-X importtime``: exit code, its own stderr lines, modules."""
    command = [sys.executable, "-X", "importtime", "-m", "langgraph_mnemon.cli"]
    done = subprocess.run(
        [*command, "--root", str(root), "serve", "--port", str(port)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_clean_env(**env),
    )
    lines = done.stderr.splitlines()
    imported = {
        line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")
    }
    own = [line for line in lines if not line.startswith("import time:")]
    return done.returncode, own, imported


def test_item28_serve_refuses_a_busy_port_before_loading_the_host_or_server(
    tmp_path: Path,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, stderr, imported = _serve_importing(tmp_path / "r", port)
    assert code == 1
    assert len(stderr) == 1, stderr
    assert stderr[0].startswith(f"mnemon: error: port {port} on 127.0.0.1 is already in use")
    assert "langgraph_mnemon.cli" in imported  # the import log is there
    heavy = ("langgraph_api", "langgraph_mnemon.host", "langgraph_mnemon.server._host")
    assert _among(sorted(imported), (*heavy, "langgraph_mnemon.memory_layers", "langgraph")) == []
    assert not (tmp_path / "r").exists()  # nothing was opened or launched


def test_item28_serve_refuses_a_bad_setting_before_loading_the_host_or_server(
    tmp_path: Path,
) -> None:
    code, stderr, imported = _serve_importing(tmp_path / "r", free_port(), MNEMON_TIMEOUT_MS="5")
    assert code == 1
    assert len(stderr) == 1, stderr
    assert stderr[0].startswith("mnemon: error: invalid mnemon configuration: timeout_ms")
    assert "[env MNEMON_TIMEOUT_MS]" in stderr[0]
    heavy = ("langgraph_api", "langgraph_mnemon.host", "langgraph_mnemon.memory_layers")
    assert _among(sorted(imported), heavy) == []
    assert not (tmp_path / "r").exists()


# --- migrations: one transaction, the DDL of a step in one batch ------------------------------


def _statements(engine: sa.Engine) -> list[str]:
    sent: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    sa.event.listen(engine, "before_cursor_execute", record)
    return sent


def _schema(conn: sa.Connection) -> list[tuple[Any, ...]]:
    """Tables, columns and indexes as the database describes them (not mnemon_schema_version)."""
    if conn.dialect.name == "sqlite":
        objects = (
            "SELECT type, name, sql FROM sqlite_master "
            "WHERE name NOT LIKE '%schema_version%' ORDER BY name"
        )
        queries = [objects]
    else:
        columns = (
            "SELECT table_name, column_name, data_type, is_nullable, column_default, "
            "collation_name FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND table_name <> 'mnemon_schema_version' ORDER BY 1, 2"
        )
        indexes = (
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename <> 'mnemon_schema_version' ORDER BY 1"
        )
        queries = [columns, indexes]
    return [tuple(row) for query in queries for row in conn.exec_driver_sql(query)]


def test_item28_a_fresh_schema_is_one_transaction_and_one_ddl_batch(
    database_url: str, tmp_path: Path
) -> None:
    db = Database(create_engine(database_url), owns_engine=True)
    sent = _statements(db.engine)
    begins: list[bool] = []
    sa.event.listen(db.engine, "begin", lambda conn: begins.append(True))
    try:
        assert [m.version for m in db.setup(MNEMOS_MIGRATIONS)] == [1, 2, 3]
        assert len(begins) == 1  # every step and its schema_version rows in one transaction
        creates = [s for s in sent if "CREATE TABLE mnemos_" in s]
        if db.dialect == "postgresql":
            assert len(creates) == 1  # the nine tables and their indexes: one round trip
            assert creates[0].count("CREATE TABLE") == len(MNEMOS_METADATA.tables)
        assert not any("PRAGMA main.table_info" in s for s in sent)  # no per-table probes
        assert sum(s.startswith("INSERT INTO mnemon_schema_version") for s in sent) == 1
        # The same schema SQLAlchemy's own create_all makes (tables, columns, indexes).
        with db.write() as conn:
            made = _schema(conn)
            MNEMOS_METADATA.drop_all(conn)
            MNEMOS_METADATA.create_all(conn)
            assert _schema(conn) == made
        assert db.setup(MNEMOS_MIGRATIONS) == []
    finally:
        db.dispose()


def test_item28_create_tables_skips_existing_tables_and_a_failed_step_leaves_nothing(
    database_url: str,
) -> None:
    metadata = sa.MetaData()
    first = sa.Table("startup_first", metadata, sa.Column("id", sa.Integer, primary_key=True))
    second = sa.Table(
        "startup_second",
        metadata,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Index("ix_startup_second_name", "name"),
    )
    db = Database(create_engine(database_url), owns_engine=True)
    try:
        with db.write() as conn:
            assert len(create_tables(conn, [first])) == 1
            sent = create_tables(conn, [first, second], then=["SELECT 1"])
        assert [s.split("(")[0].strip() for s in sent] == [
            "CREATE TABLE startup_second",
            "CREATE INDEX ix_startup_second_name ON startup_second",
            "SELECT 1",
        ]

        def fails(conn: sa.Connection) -> None:
            raise StorageError("step 2 failed")

        steps = (
            Migration("startup", 1, "a table", lambda conn: create_tables(conn, [first, second])),
            Migration("startup", 2, "fails", fails),
        )
        with db.write() as conn:
            for table in (second, first):
                table.drop(conn)
        with pytest.raises(StorageError, match="step 2 failed"):
            db.setup(steps)
        with db.read() as conn:
            inspector = sa.inspect(conn)
            assert not inspector.has_table("startup_first")
            assert not inspector.has_table("mnemon_schema_version")
    finally:
        db.dispose()


def test_item28_lazy_exports_load_once_and_refuse_unknown_names() -> None:
    import langgraph_mnemon
    import langgraph_mnemon.adapters.providers as providers

    store_provider = providers.StoreProvider  # a relative source (".store")
    assert vars(providers)["StoreProvider"] is store_provider  # kept: no second lookup
    assert langgraph_mnemon.Mnemon.__module__ == "langgraph_mnemon.host"
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        _ = langgraph_mnemon.Nope
