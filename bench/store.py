"""Benchmark: the BaseStore facade (``mem.store()``) against LangGraph's own stores.

Stores: ours on SQLite and on PostgreSQL, ``InMemoryStore``, ``SqliteStore`` and
``PostgresStore``, all with the SAME embedder (our default WordLlama embedder, wrapped for
LangGraph as ``index={"dims": ..., "embed": ...}``). ``SqliteStore`` runs on ``pysqlite3``
with ``sqlite-vec`` (its vector search needs a SQLite that loads extensions).

Equal durability: ours sets ``journal_mode=WAL`` and ``synchronous=NORMAL`` on its SQLite
connections; ``SqliteStore`` sets nothing (SQLite's default: a rollback journal and ``FULL``),
so the bench sets WAL + NORMAL on its connection, reads both back and refuses to run when they
differ. The table's first rows state each column's durability and indexing.

PostgreSQL: with ``--pgvector URL`` (default ``MNEMON_TEST_PGVECTOR_URL``), a server that has
the ``vector`` extension, ``PostgresStore`` runs WITH its pgvector index (HNSW, cosine) and ours
runs on the same server: the "search" rows then compare the two query searches (target ≤ 1.5x
at 20k). Without it, ``--postgres URL`` (default ``MNEMON_TEST_POSTGRES_URL``) runs
``PostgresStore`` without an index: it embeds nothing, has no query-search row, and the
"no embedder" column (ours with ``embedding.enabled=false``) is the like-for-like pair.

Per size (items in one namespace): each store is filled once (batches of 500), then
``--rounds`` rounds run in rotated store order; every figure is the median over the rounds of
each round's p50. Rows: put (a new key) and get (a random existing key), search with a query
(limit 10), filtered search, list_namespaces (2,000 items over 100 namespaces, filled at the
first size) and bulk ingest (one ``batch`` of 500 puts, items/s). Ratios: ours / the LangGraph
store of the same database (below 1.0 = ours faster; bulk ingest: ours / theirs in items/s,
above 1.0 = ours faster). Targets (issue 32): put ≤ 2x at 2k and 20k, bulk ingest ≥ 1.0x,
PostgreSQL query search ≤ 1.5x PostgresStore HNSW at 20k.

    python bench/store.py [--sizes 2000,20000] [--rounds 3] [--postgres URL] [--pgvector URL]
    python bench/store.py --big        # put / get at 200,000 items, SQLite only
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import (
    STORE_WORDS,
    create_vector_extension,
    fill,
    has_vector_extension,
    p50,
    pg_durability,
    pg_index_kinds,
    plain_url,
    rotated,
    schema_url,
    sqlite_durability,
    store_value,
)
from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.embeddings import WordLlamaEmbedder

NS = ("bench", "main")


@dataclass
class Column:
    """One store under test: what it is, how durable its writes are, how it is indexed."""

    store: BaseStore
    durability: str
    indexing: str | Callable[[], str]  # a callable is read once the store is filled
    query: bool = True  # whether it embeds (has a query-search row)


def _sqlite_columns(tmp: Path, stack: ExitStack, index: dict[str, Any]) -> dict[str, Column]:
    import pysqlite3  # loads extensions (sqlite-vec) where the stdlib sqlite3 may not
    from langgraph.store.sqlite import SqliteStore

    ours = stack.enter_context(Mnemon.open(tmp / "ours"))
    with ours.database.engine.connect() as conn:
        mine = sqlite_durability(lambda sql: conn.exec_driver_sql(sql).scalar())
    raw = pysqlite3.connect(str(tmp / "ss.db"), check_same_thread=False, isolation_level=None)
    raw.execute("PRAGMA journal_mode=WAL")  # ours' durability, for an equal comparison
    raw.execute("PRAGMA synchronous=NORMAL")
    theirs = sqlite_durability(lambda sql: raw.execute(sql).fetchone()[0])
    if mine != theirs:
        raise SystemExit(f"unequal durability: ours {mine}, SqliteStore {theirs}")
    sqlite_store = SqliteStore(raw, index={**index, "fields": ["$"]})
    sqlite_store.setup()
    return {
        "ours SQLite": Column(
            ours.store(), f"SQLite {mine}", "FTS5 + B-trees; vectors: in-process index"
        ),
        "SqliteStore": Column(
            sqlite_store, f"SQLite {theirs}", "B-tree on prefix; vectors: sqlite-vec exact scan"
        ),
    }


@contextmanager
def _stores(args: argparse.Namespace, embedder: WordLlamaEmbedder) -> Iterator[dict[str, Column]]:
    dims = len(embedder.embed_query("probe"))
    index = {"dims": dims, "embed": lambda texts: embedder.embed_documents(list(texts))}
    tmp = Path(tempfile.mkdtemp(prefix="mnemon-store-bench-"))
    memory = InMemoryStore(index={**index, "fields": ["$"]})
    out = {"InMemoryStore": Column(memory, "process memory (none)", "dict; vectors: exact scan")}
    with ExitStack() as stack:
        out.update(_sqlite_columns(tmp, stack, index))
        server = args.pgvector or args.postgres
        if server:
            out.update(stack.enter_context(_postgres(server, tmp, index, bool(args.pgvector))))
        yield out


def _pg_indexing(url: str, like: str, vectors: str) -> Callable[[], str]:
    def describe() -> str:
        kinds = pg_index_kinds(url, like=like)
        return f"{kinds}; vectors: {'pgvector HNSW' if 'hnsw' in kinds else vectors}"

    return describe


@contextmanager
def _postgres(
    server: str, tmp: Path, index: dict[str, Any], vector: bool
) -> Iterator[dict[str, Column]]:
    """Ours and ``PostgresStore`` on one server, each in its own schema (dropped after)."""
    import psycopg
    from langgraph.store.postgres import PostgresStore
    from psycopg.rows import dict_row

    if vector and not has_vector_extension(server):
        raise SystemExit("--pgvector: that server has no 'vector' extension")
    if vector:
        create_vector_extension(server)  # in public, where every schema below sees its type
    names = ("theirs", "ours", "bare") if not vector else ("theirs", "ours")
    schemas = {n: f"bench_{n}_{uuid.uuid4().hex[:8]}" for n in names}
    urls = {n: schema_url(server, s) for n, s in schemas.items()}
    durability = f"PostgreSQL {pg_durability(server)}"
    admin = psycopg.connect(plain_url(server), autocommit=True)
    for schema in schemas.values():
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        with ExitStack() as stack:
            conn = stack.enter_context(
                psycopg.connect(
                    plain_url(urls["theirs"]),
                    autocommit=True,
                    prepare_threshold=0,
                    row_factory=dict_row,
                )
            )
            their_index = {**index, "fields": ["$"], "ann_index_config": {"kind": "hnsw"}}
            theirs = PostgresStore(conn, index=their_index) if vector else PostgresStore(conn)
            theirs.setup()
            host = stack.enter_context(Mnemon.open(tmp / "ours-pg", database_url=urls["ours"]))
            out = {
                "ours PostgreSQL": Column(
                    host.store(), durability, _pg_indexing(urls["ours"], "mnemon%", "in process")
                ),
                "PostgresStore": Column(
                    theirs, durability, _pg_indexing(urls["theirs"], "store%", "none"), vector
                ),
            }
            if not vector:  # PostgresStore embeds nothing here: ours without an embedder too
                bare = stack.enter_context(
                    Mnemon.open(
                        tmp / "ours-pg-bare",
                        database_url=urls["bare"],
                        embedding={"enabled": False},
                    )
                )
                out["ours PostgreSQL, no embedder"] = Column(
                    bare.store(), durability, _pg_indexing(urls["bare"], "mnemon%", "none"), False
                )
            yield out
    finally:
        for schema in schemas.values():
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
        admin.close()


def _round(column: Column, size: int, rng: random.Random, big: bool = False) -> dict[str, float]:
    store = column.store
    fresh = uuid.uuid4().hex[:6]
    got: dict[str, float] = {}
    got["put"] = p50(lambda i: store.put(NS, f"p{fresh}{i}", store_value(rng, i)), 40)
    got["get"] = p50(lambda i: store.get(NS, f"k{rng.randrange(size)}"), 100)
    if big:
        return got
    queries = [" ".join(rng.sample(STORE_WORDS, 3)) for _ in range(15)]
    if column.query:
        got["search"] = p50(lambda i: store.search(NS, query=queries[i], limit=10), 15)
    got["filtered search"] = p50(
        lambda i: store.search(NS, filter={"kind": "b", "n": {"$gte": 50}}, limit=10), 15
    )
    got["list_namespaces"] = p50(lambda i: store.list_namespaces(prefix=("lns",)), 30)
    ops = [PutOp(("bulk", fresh), f"b{i}", store_value(rng, i)) for i in range(500)]
    start = time.perf_counter()
    store.batch(ops)  # SqliteStore has no async API: the sync batch for everyone
    got["bulk ingest items/s"] = 500 / (time.perf_counter() - start)
    return got


ROWS = ("put", "get", "search", "filtered search", "list_namespaces", "bulk ingest items/s")
PAIRS = (
    ("ours SQLite", "SqliteStore"),
    ("ours PostgreSQL", "PostgresStore"),
    ("ours PostgreSQL, no embedder", "PostgresStore"),
)
TARGETS = {
    "put": "SQLite ≤ 2×",
    "search": "PostgreSQL vs HNSW ≤ 1.5× @20k",
    "bulk ingest items/s": "SQLite ≥ 1.0×",
}


def _measure(
    columns: dict[str, Column], sizes: list[int], args: argparse.Namespace
) -> dict[tuple[str, str, int], float]:
    """Fill, then ``args.rounds`` rotated rounds per size; the median of each row's p50."""
    names = list(columns)
    table: dict[tuple[str, str, int], float] = {}
    for name in names if not args.big else ():  # list_namespaces: 2,000 items, 100 ns
        fill(columns[name].store, 0, 2000, lambda i: ("lns", f"u{i % 100}"))
    filled = 0
    for size in sizes:
        for name in names:
            fill(columns[name].store, filled, size, NS)
        filled = size
        per: dict[str, list[dict[str, float]]] = {n: [] for n in names}
        for r in range(args.rounds):
            for name in rotated(names, r):
                per[name].append(_round(columns[name], size, random.Random(r), args.big))
        for name in names:
            for row in ROWS:
                values = [g[row] for g in per[name] if row in g]
                if values:
                    table[(row, name, size)] = statistics.median(values)
    for column in columns.values():  # filled: the indexes exist now
        if callable(column.indexing):
            column.indexing = column.indexing()
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,20000", help="Items in the namespace.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", default=os.environ.get("MNEMON_TEST_POSTGRES_URL"))
    parser.add_argument(
        "--pgvector",
        default=os.environ.get("MNEMON_TEST_PGVECTOR_URL"),
        help="a PostgreSQL server with the vector extension: PostgresStore runs with HNSW "
        "there, and ours beside it (replaces --postgres)",
    )
    parser.add_argument(
        "--big", action="store_true",
        help="put/get only at 200,000 items, ours SQLite vs SqliteStore (constant-time check)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.big:
        args.sizes, args.postgres, args.pgvector = "200000", None, None
    sizes = [int(s) for s in args.sizes.split(",")]
    embedder = WordLlamaEmbedder()
    began = time.perf_counter()
    with _stores(args, embedder) as columns:
        if args.big:
            columns = {n: columns[n] for n in ("ours SQLite", "SqliteStore")}
        table = _measure(columns, sizes, args)
    _print(table, sizes, columns, time.perf_counter() - began, args)


def _cell(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.2f}" if value < 1000 else f"{value:,.0f}"


def _print(
    table: dict[tuple[str, str, int], float],
    sizes: list[int],
    columns: dict[str, Column],
    took: float,
    args: argparse.Namespace,
) -> None:
    names = [n for n in columns if n != "InMemoryStore"] + ["InMemoryStore"]
    names = [n for n in names if n in columns]
    pairs = [(a, b) for a, b in PAIRS if a in columns and b in columns]
    head = ["op @ items", *names, *(f"{a} / {b}" for a, b in pairs), "target"]
    print(f"| {' | '.join(head)} |")
    print("|---|" + "---:|" * (len(head) - 2) + "---|")
    for label in ("durability", "indexing"):
        cells = [label, *(str(getattr(columns[n], label)) for n in names)]
        same = "equal" if label == "durability" else "–"
        cells += [same] * len(pairs) + ["equal durability" if same == "equal" else "–"]
        print(f"| {' | '.join(cells)} |")
    for row in ROWS:
        for size in sizes:
            cells = [f"{row} @{size // 1000}k", *(_cell(table.get((row, n, size))) for n in names)]
            for a, b in pairs:
                x, y = table.get((row, a, size)), table.get((row, b, size))
                cells.append("–" if x is None or y is None else f"{x / y:.2f}×")
            print(f"| {' | '.join([*cells, TARGETS.get(row, '–')])} |")
    if args.pgvector:
        pg = "PostgreSQL columns on the pgvector server, PostgresStore with its HNSW index"
    elif args.postgres:
        pg = "PostgresStore without pgvector (no index, embeds nothing): no query-search row"
    else:
        pg = "PostgreSQL not run"
    flags = (" --pgvector URL" if args.pgvector else "") + (" --big" if args.big else "")
    print(
        f"\np50 ms (bulk ingest: items/s), median of {args.rounds} rotated rounds, one process; "
        "same WordLlama embedder everywhere; SqliteStore on pysqlite3 + sqlite-vec, set to "
        f"WAL + NORMAL like ours. {pg}. Run took {took:.0f} s: "
        f"python bench/store.py --sizes {args.sizes} --rounds {args.rounds}{flags}"
    )


if __name__ == "__main__":
    main()
