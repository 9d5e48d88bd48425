"""Benchmark: the BaseStore facade (``mem.store()``) against LangGraph's own stores.

Stores: ours on SQLite and on PostgreSQL, ``InMemoryStore``, ``SqliteStore`` and
``PostgresStore``, all with the SAME embedder (our default WordLlama embedder, wrapped for
LangGraph as ``index={"dims": ..., "embed": ...}``). ``SqliteStore`` runs on ``pysqlite3``
with ``sqlite-vec`` (its vector search needs a SQLite that loads extensions). pgvector is not
available here, so ``PostgresStore`` runs without an index: it is compared on put / get /
list_namespaces / filtered search (its "search" row is a filtered listing), never on vector
search.

Per size (items in one namespace): each store is filled once (batches of 500), then
``--rounds`` rounds run in rotated store order; every figure is the median over the rounds of
each round's p50. Rows: put (a new key) and get (a random existing key), search with a query
(limit 10), list_namespaces (2,000 items over 100 namespaces, filled at the first size) and
bulk ingest (one ``batch`` of 500 puts, items/s). Ratios: ours / the LangGraph store of the
same database (below 1.0 = ours faster; bulk ingest: ours / theirs, above 1.0 = ours faster).

    python bench/store.py [--sizes 2000,20000] [--rounds 3] [--postgres URL]
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
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.embeddings import WordLlamaEmbedder

_TEXT = "deploy pipeline staging database port cache queue worker tenant invoice report "
_WORDS = (_TEXT + "migration backup alert latency region cluster token budget").split()
NS = ("bench", "main")


def _value(rng: random.Random, i: int) -> dict[str, Any]:
    text = " ".join(rng.choice(_WORDS) for _ in range(12))
    return {"text": f"item {i}: {text}", "n": i % 97, "kind": ("a", "b", "c")[i % 3]}


def _p50(fn: Callable[[int], Any], count: int) -> float:
    times = []
    for i in range(count):
        start = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _fill(store: BaseStore, start: int, stop: int, namespace: Any = NS) -> None:
    rng = random.Random(start)
    for lo in range(start, stop, 500):
        ops = [PutOp(namespace(i) if callable(namespace) else namespace, f"k{i}", _value(rng, i))
               for i in range(lo, min(stop, lo + 500))]  # fmt: skip
        store.batch(ops)


@contextmanager
def _stores(args: argparse.Namespace, embedder: WordLlamaEmbedder) -> Iterator[dict[str, Any]]:
    dims = len(embedder.embed_query("probe"))
    index = {"dims": dims, "embed": lambda texts: embedder.embed_documents(list(texts))}
    tmp = Path(tempfile.mkdtemp(prefix="mnemon-store-bench-"))
    out: dict[str, Any] = {"InMemoryStore": InMemoryStore(index={**index, "fields": ["$"]})}
    with ExitStack() as stack:
        ours = stack.enter_context(Mnemon.open(tmp / "ours"))
        out["ours SQLite"] = ours.store()
        import pysqlite3  # loads extensions (sqlite-vec) where the stdlib sqlite3 may not
        from langgraph.store.sqlite import SqliteStore

        conn = pysqlite3.connect(str(tmp / "ss.db"), check_same_thread=False, isolation_level=None)
        # Equal durability: ours runs WAL + synchronous=NORMAL (the default sqlite_synchronous).
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        sqlite_store = SqliteStore(conn, index={**index, "fields": ["$"]})
        sqlite_store.setup()
        out["SqliteStore"] = sqlite_store
        if args.postgres:
            out.update(stack.enter_context(_postgres(args.postgres, tmp)))
        yield out


@contextmanager
def _postgres(url: str, tmp: Path) -> Iterator[dict[str, Any]]:
    import psycopg
    from langgraph.store.postgres import PostgresStore
    from psycopg.rows import dict_row

    plain = url.replace("postgresql+psycopg://", "postgresql://")
    schemas = [f"bench_{uuid.uuid4().hex[:8]}" for _ in range(3)]
    admin = psycopg.connect(plain, autocommit=True)
    for schema in schemas:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        conn = psycopg.connect(
            plain, autocommit=True, prepare_threshold=0, row_factory=dict_row,
            options=f"-csearch_path={schemas[0]}",
        )  # fmt: skip
        theirs = PostgresStore(conn)  # no pgvector here: no index
        theirs.setup()
        ours_url = f"{url}?options=-csearch_path%3D{schemas[1]}"
        bare_url = f"{url}?options=-csearch_path%3D{schemas[2]}"
        with (
            Mnemon.open(tmp / "ours-pg", database_url=ours_url) as host,
            Mnemon.open(
                tmp / "ours-pg-bare", database_url=bare_url, embedding={"enabled": False}
            ) as bare,
        ):
            # PostgresStore without pgvector never embeds: the like-for-like row is ours with
            # embeddings off; the embedding row stays beside it.
            yield {
                "ours PostgreSQL": host.store(),
                "ours PostgreSQL, no embedder": bare.store(),
                "PostgresStore": theirs,
            }
        conn.close()
    finally:
        for schema in schemas:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
        admin.close()


def _round(
    store: BaseStore, name: str, size: int, rng: random.Random, big: bool = False
) -> dict[str, float]:
    vector = name not in ("PostgresStore", "ours PostgreSQL, no embedder")
    fresh = uuid.uuid4().hex[:6]
    got: dict[str, float] = {}
    got["put"] = _p50(lambda i: store.put(NS, f"p{fresh}{i}", _value(rng, i)), 40)
    got["get"] = _p50(lambda i: store.get(NS, f"k{rng.randrange(size)}"), 100)
    if big:
        return got
    queries = [" ".join(rng.sample(_WORDS, 3)) for _ in range(15)]
    if vector:
        got["search"] = _p50(lambda i: store.search(NS, query=queries[i], limit=10), 15)
    got["filtered search"] = _p50(
        lambda i: store.search(NS, filter={"kind": "b", "n": {"$gte": 50}}, limit=10), 15
    )
    got["list_namespaces"] = _p50(lambda i: store.list_namespaces(prefix=("lns",)), 30)
    ops = [PutOp(("bulk", fresh), f"b{i}", _value(rng, i)) for i in range(500)]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,20000", help="Items in the namespace.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", default=os.environ.get("MNEMON_TEST_POSTGRES_URL"))
    parser.add_argument(
        "--big", action="store_true",
        help="put/get only at 200,000 items, ours SQLite vs SqliteStore (constant-time check)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.big:
        args.sizes, args.postgres = "200000", None
    sizes = [int(s) for s in args.sizes.split(",")]
    embedder = WordLlamaEmbedder()
    began = time.perf_counter()
    table: dict[tuple[str, str, int], float] = {}
    with _stores(args, embedder) as stores:
        if args.big:
            stores = {n: stores[n] for n in ("ours SQLite", "SqliteStore")}
        names = list(stores)
        for name in names if not args.big else ():  # list_namespaces: 2,000 items, 100 ns
            _fill(stores[name], 0, 2000, lambda i: ("lns", f"u{i % 100}"))
        filled = 0
        for size in sizes:
            for name in names:
                _fill(stores[name], filled, size)
            filled = size
            per: dict[str, list[dict[str, float]]] = {n: [] for n in names}
            for r in range(args.rounds):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    per[name].append(_round(stores[name], name, size, random.Random(r), args.big))
            for name in names:
                for row in ROWS:
                    values = [g[row] for g in per[name] if row in g]
                    if values:
                        table[(row, name, size)] = statistics.median(values)
    _print(table, sizes, [n for n in names], time.perf_counter() - began, args)


def _print(
    table: dict[tuple[str, str, int], float],
    sizes: list[int],
    names: list[str],
    took: float,
    args: argparse.Namespace,
) -> None:
    pairs = [(a, b) for a, b in PAIRS if a in names and b in names]
    head = ["op @ items"] + [n for n in names if n != "InMemoryStore"] + ["InMemoryStore"]
    head += [f"{a} / {b}" for a, b in pairs]
    print(f"| {' | '.join(head)} |")
    print("|" + "---|" + "---:|" * (len(head) - 1))
    for row in ROWS:
        for size in sizes:
            cells = [f"{row} @{size // 1000}k"]
            for name in head[1 : 1 + len(names)]:
                value = table.get((row, name, size))
                cells.append(
                    "–" if value is None else f"{value:,.2f}" if value < 1000 else f"{value:,.0f}"
                )
            for a, b in pairs:
                x, y = table.get((row, a, size)), table.get((row, b, size))
                cells.append("–" if x is None or y is None else f"{x / y:.2f}×")
            print(f"| {' | '.join(cells)} |")
    print(
        f"\np50 ms (bulk ingest: items/s), median of {args.rounds} rotated rounds, one process; "
        f"same WordLlama embedder everywhere; SqliteStore on pysqlite3 + sqlite-vec; both SQLite "
        "stores at WAL + synchronous=NORMAL; "
        f"PostgresStore without pgvector (not installable here): no query-search row for it. "
        '"ours PostgreSQL, no embedder" = embedding.enabled=false (PostgresStore embeds '
        "nothing). "
        f"Run took {took:.0f} s: python bench/store.py --sizes {args.sizes} --rounds {args.rounds}"
        f"{' --big' if args.big else ''}"
    )


if __name__ == "__main__":
    main()
