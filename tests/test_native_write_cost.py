"""What one write of the native provider costs the database: statements and transactions of a
store ``put`` (new key, replacement, delete), one embedder call per bulk write, and a search
right after a bulk load whose plan does not depend on statistics (SQLite and PostgreSQL).

Statements are counted on the real engines: on SQLite by the driver's trace callback (every
statement SQLite runs, also those sent as driver SQL; FTS5's internal statements, which it
reports with a leading ``--``, are left out), on PostgreSQL by SQLAlchemy's
``before_cursor_execute`` event. The counts are exact, so a statement added to the put path
fails here and has to be argued for.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from langgraph.store.base import PutOp

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.embeddings import HashingEmbedder

NS = ("cost", "notes")


class CountingEmbedder(HashingEmbedder):
    """The real hashing embedder, counting its ``embed_documents`` calls and texts."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.calls = 0
        self.texts = 0

    def embed_documents(self, texts: Any) -> list[list[float]]:
        self.calls += 1
        self.texts += len(texts)
        return super().embed_documents(texts)


@pytest.fixture
def mem(database_url: str, tmp_path: Path) -> Iterator[Mnemon]:
    with Mnemon.open(
        tmp_path / "h", database_url=database_url, embedding={"enabled": False}
    ) as host:
        yield host


def _provider(mem: Mnemon) -> Any:
    return mem.spaces.provider("mnemos")


@contextmanager
def _counted(mem: Mnemon) -> Iterator[dict[str, list[str]]]:
    """Statements and write transactions on the provider's engine while the block runs."""
    engine = _provider(mem).db.engine
    seen: dict[str, list[str]] = {"statements": [], "begins": []}

    def on_begin(conn: Any) -> None:
        seen["begins"].append(
            "write" if conn.get_execution_options().get("mnemon_write") else "read"
        )

    def trace(statement: str) -> None:
        # FTS5's own statements: its shadow-table writes (reported with a leading "--") and
        # the config reads of a connection's first use (they name the schema 'main').
        if not statement.startswith("--") and "'main'." not in statement:
            seen["statements"].append(" ".join(statement.split()))

    def on_connect(dbapi: Any, _record: Any) -> None:
        dbapi.set_trace_callback(trace)

    def on_execute(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        seen["statements"].append(" ".join(statement.split()))

    sqlite = engine.dialect.name == "sqlite"
    engine.dispose()  # new connections: each gets the trace callback
    sa.event.listen(engine, "begin", on_begin)
    if sqlite:
        sa.event.listen(engine, "connect", on_connect)
    else:
        sa.event.listen(engine, "before_cursor_execute", on_execute)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "begin", on_begin)
        if sqlite:
            sa.event.remove(engine, "connect", on_connect)
        else:
            sa.event.remove(engine, "before_cursor_execute", on_execute)
        engine.dispose()


# Statements of one put, in order. SQLite: BEGIN IMMEDIATE and COMMIT are statements too;
# PostgreSQL: psycopg's BEGIN / COMMIT are not cursor statements (the begin event counts the
# transaction). With an embedder a put first reads, outside any transaction, whether the key
# already holds the same value (an identical re-put is not embedded again): one statement.
_SQLITE_NEW_KEY = [
    "BEGIN IMMEDIATE",
    "SELECT s.name, s.description",  # the space as cached + the key's live row: one read
    "INSERT INTO mnemon_insights ",
    "INSERT INTO mnemon_insights_fts(rowid",
    "INSERT INTO mnemon_space_terms",  # every term of the row in one statement
    "INSERT INTO mnemon_space_stats",
    "COMMIT",
]
_PG_NEW_KEY = [
    "SELECT pg_advisory_xact_lock",  # the space's writer lock + the space as cached
    "SELECT mnemon_insights.seq",  # the key's live row (after the lock: its own snapshot)
    "INSERT INTO mnemon_insights ",
    "WITH t AS (INSERT INTO mnemon_space_terms",  # the terms and the totals
]


def _expect(seen: list[str], prefixes: list[str]) -> None:
    assert len(seen) == len(prefixes), seen
    for got, want in zip(seen, prefixes, strict=True):
        assert got.startswith(want), (got, want, seen)


def test_a_put_of_a_new_key_is_one_transaction_of_few_statements(mem: Mnemon) -> None:
    store = mem.store()
    store.put(NS, "warm", {"text": "the namespace and its space exist"})
    with _counted(mem) as seen:
        store.put(NS, "fresh", {"text": "alpha beta gamma delta"})
    assert seen["begins"] == ["write"]
    sqlite = _provider(mem).db.dialect == "sqlite"
    _expect(seen["statements"], _SQLITE_NEW_KEY if sqlite else _PG_NEW_KEY)
    assert store.get(NS, "fresh").value == {"text": "alpha beta gamma delta"}


def test_with_an_embedder_a_put_adds_the_hint_read_and_the_vector_row(mem: Mnemon) -> None:
    store = mem.store()
    embedder = CountingEmbedder()
    _provider(mem).embedder = embedder
    # The warm put also makes the once-per-process reads (does the database have pgvector?
    # its index for this model): what follows is what every further put costs.
    store.put(NS, "warm", {"text": "the namespace and its space exist"})
    with _counted(mem) as seen:
        store.put(NS, "fresh", {"text": "alpha beta gamma delta"})
    assert embedder.calls == 2
    assert seen["begins"] == ["write"]  # the hint read runs outside a transaction
    if _provider(mem).db.dialect == "sqlite":
        want = ["SELECT store_key, content", *_SQLITE_NEW_KEY[:-1]]
        _expect(seen["statements"], [*want, "INSERT INTO mnemon_insight_vectors", "COMMIT"])
    else:  # the hint runs on a driver connection, outside SQLAlchemy's events
        _expect(seen["statements"], [*_PG_NEW_KEY, "INSERT INTO mnemon_insight_vectors"])


def test_a_replacement_retires_the_old_row_from_its_stored_terms(mem: Mnemon) -> None:
    store = mem.store()
    store.put(NS, "k", {"text": "zebra crossing"})
    with _counted(mem) as seen:
        store.put(NS, "k", {"text": "yak herding"})
    assert seen["begins"] == ["write"]
    if _provider(mem).db.dialect == "sqlite":
        _expect(
            seen["statements"],
            [
                "BEGIN IMMEDIATE",
                "SELECT s.name, s.description",
                "UPDATE mnemon_insights SET deleted_at",
                "INSERT INTO mnemon_insights_fts(mnemon_insights_fts, rowid",  # FTS5 'delete'
                "DELETE FROM mnemon_insight_vectors",
                *_SQLITE_NEW_KEY[2:],
            ],
        )
    else:
        _expect(
            seen["statements"],
            [*_PG_NEW_KEY[:2], "WITH d AS (UPDATE mnemon_insights", *_PG_NEW_KEY[2:]],
        )
    assert store.get(NS, "k").value == {"text": "yak herding"}
    engine = _provider(mem).db.engine
    with engine.connect() as conn:  # the old row's terms left the statistics
        terms = dict(conn.execute(sa.text("SELECT term, df FROM mnemon_space_terms")).all())
    assert terms.get("zebra", 0) == 0
    assert terms["yak"] == 1


def test_a_delete_is_one_transaction(mem: Mnemon) -> None:
    store = mem.store()
    store.put(NS, "k", {"text": "soon gone"})
    with _counted(mem) as seen:
        store.delete(NS, "k")
    assert seen["begins"] == ["write"]
    if _provider(mem).db.dialect == "sqlite":
        _expect(
            seen["statements"],
            [
                "BEGIN IMMEDIATE",
                "SELECT s.name, s.description",
                "UPDATE mnemon_insights SET deleted_at",
                "INSERT INTO mnemon_insights_fts(mnemon_insights_fts, rowid",
                "DELETE FROM mnemon_insight_vectors",
                "INSERT INTO mnemon_space_terms",
                "INSERT INTO mnemon_space_stats",
                "COMMIT",
            ],
        )
    else:
        _expect(
            seen["statements"],
            [*_PG_NEW_KEY[:2], "WITH d AS (UPDATE mnemon_insights", _PG_NEW_KEY[3]],
        )
    assert store.get(NS, "k") is None


def test_a_bulk_put_is_one_embedder_call_and_one_transaction(mem: Mnemon) -> None:
    store = mem.store()
    embedder = CountingEmbedder()
    _provider(mem).embedder = embedder
    store.put(NS, "warm", {"text": "the namespace and its space exist"})  # once-per-process reads
    ops = [PutOp(NS, f"k{i}", {"text": f"item {i} about tea"}) for i in range(120)]
    with _counted(mem) as seen:
        store.batch(ops)
    assert (embedder.calls, embedder.texts) == (2, 121)
    assert seen["begins"] == ["write"]
    assert len(store.search(NS, limit=500)) == 121
    with _provider(mem).db.engine.connect() as conn:  # keyed rows are not a conversation
        temporal = conn.execute(
            sa.text("SELECT count(*) FROM mnemon_insight_edges WHERE edge_type = 'temporal'")
        ).scalar()
    assert temporal == 0


def test_remember_many_is_one_embedder_call_and_one_transaction(mem: Mnemon) -> None:
    space = mem.spaces.create_space(name="Bulk", description="bulk writes").space
    assert space is not None
    # The space's first write also activates it in the catalog (a transaction of its own).
    mem.spaces.remember_many([{"content": "first note"}], space_id=space.id)
    embedder = CountingEmbedder()
    _provider(mem).embedder = embedder
    items = [
        {"content": f"Note {i} on the river garden", "entities": ["Ada", f"P{i % 4}"]}
        for i in range(150)
    ]
    with _counted(mem) as seen:
        receipts = mem.spaces.remember_many(items, space_id=space.id)
    assert (embedder.calls, embedder.texts) == (1, 150)
    assert seen["begins"].count("write") == 1  # (and a read of the catalog)
    assert all(r.status == "committed" for r in receipts)
    # Entity neighbours: one probe of the entity index per entity of the batch (PostgreSQL:
    # all of them in one statement; SQLite: one driver statement each, no round trips).
    reads = [s for s in seen["statements"] if "FROM mnemon_insight_entities x" in s]
    sqlite = _provider(mem).db.dialect == "sqlite"
    assert len(reads) == (5 if sqlite else 1), reads
    again = mem.spaces.remember_many(items[:3], space_id=space.id)  # duplicates are skipped
    assert embedder.calls == 2
    assert [r.status for r in again] == ["committed"] * 3
    engine = _provider(mem).db.engine
    with engine.connect() as conn:
        live = conn.execute(
            sa.text("SELECT count(*) FROM mnemon_insights WHERE space_id = :s"), {"s": space.id}
        ).scalar()
    assert live == 151  # the first note and the 150, no duplicate


def test_bulk_entity_edges_link_each_row_to_the_recent_rows_of_its_entities(mem: Mnemon) -> None:
    space = mem.spaces.create_space(name="Edges", description="entity edges").space
    assert space is not None
    mem.spaces.remember_many(
        [{"content": f"first batch note {i}", "entities": ["Ada"]} for i in range(7)],
        space_id=space.id,
    )
    mem.spaces.remember_many(
        [{"content": "second batch note", "entities": ["ada "]}], space_id=space.id
    )
    engine = _provider(mem).db.engine
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT i.content FROM mnemon_insight_edges e JOIN mnemon_insights i "
                "ON i.id = e.source_id WHERE e.edge_type = 'entity' AND e.target_id = "
                "(SELECT id FROM mnemon_insights WHERE content = 'second batch note')"
            )
        ).scalars()
        sources = sorted(rows)
    # At most five: the five newest rows naming the entity (same key after normalising).
    assert sources == [f"first batch note {i}" for i in range(2, 7)]


def _plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _plan_nodes(child)


def test_a_search_after_a_bulk_load_reads_rows_by_key_before_any_analyse(
    postgres_url: str, tmp_path: Path
) -> None:
    """Right after a bulk load (tables never analysed), the search statement's reads of
    candidate rows, neighbours and their terms are index probes, at most one row per probe:
    no scan of the whole space whatever the planner guesses."""
    with Mnemon.open(tmp_path / "h", database_url=postgres_url) as host:
        _provider(host).embedder = CountingEmbedder()
        store = host.store()
        store.put(NS, "warm", {"text": "tables exist"})
        engine = _provider(host).db.engine
        with engine.begin() as conn:
            for table in ("mnemon_insights", "mnemon_space_terms", "mnemon_space_stats"):
                conn.execute(sa.text(f"ALTER TABLE {table} SET (autovacuum_enabled = false)"))
        words = ["river", "garden", "coffee", "budget", "ticket", "release", "backup", "server"]
        ops = [
            PutOp(NS, f"k{i}", {"text": f"{words[i % 8]} {words[(i * 3) % 8]} note {i}"})
            for i in range(600)
        ]
        store.batch(ops)
        captured: list[tuple[str, Any]] = []

        def grab(_c: Any, _cur: Any, statement: str, params: Any, *_: Any) -> None:
            if "WITH qt AS" in statement:
                captured.append((statement, params))

        sa.event.listen(engine, "before_cursor_execute", grab)
        try:
            assert store.search(NS, query="river coffee", limit=10)
        finally:
            sa.event.remove(engine, "before_cursor_execute", grab)
        statement, params = captured[-1]
        raw = engine.raw_connection()
        try:
            cursor = raw.cursor()
            analysed = cursor.execute(
                "SELECT count(*) FROM pg_stat_user_tables "
                "WHERE relid = 'mnemon_insights'::regclass "
                "AND (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL)"
            ).fetchone()[0]
            assert analysed == 0  # the point of the test: no statistics yet
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, params)
            plan = cursor.fetchone()[0]
        finally:
            raw.rollback()  # the pool does not reset connections on check-in
            raw.close()
        plan = plan if isinstance(plan, list) else json.loads(plan)
        probes = [
            node
            for node in _plan_nodes(plan[0]["Plan"])
            if node.get("Relation Name") == "mnemon_insights"
            and str(node.get("Alias", "")).startswith(("i", "n"))
        ]
        assert probes
        for node in probes:
            assert node["Node Type"] in ("Index Scan", "Index Only Scan"), node["Node Type"]
            assert node["Actual Rows"] <= 1, node
