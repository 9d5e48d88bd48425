"""Recall latency of one native Memory Space at 100k memories, against the bare engine's floor.

Synthetic English-like memories (a third function words, the rest from a Zipf-distributed
vocabulary of 20,000 invented words; 8-40 words each; every tenth with an entity) are
written through ``MemorySpaces.remember_many`` (the normal write path) in batches of 1,000,
once without vectors and once with WordLlama vectors (the default embedder), each corpus in its
own space. Queries are 2-6 words taken from random stored memories plus one unrelated word.

Per corpus and round, in rotated order (same process, same queries):

* ``floor`` — the bare engine: the OR of every query term, ranked by the engine, top 10
  (SQLite: an FTS5 ``MATCH`` ordered by ``bm25()``; PostgreSQL: ``tsv @@ tsquery`` ordered by
  ``ts_rank``), one autocommit statement through the same engine and pool;
* ``provider`` — ``MnemosProvider._search_rows`` (smart mode, limit 10; the query vector is
  embedded before the clock starts);
* ``spaces`` — ``MemorySpaces.search`` (the whole layer: catalog, provider, fusion, quality
  policy, coverage recovery; embedding included).

The table gives the median over rounds of each p50 / p95, their ratio to the floor and, for
``spaces``, to ``provider`` (the Memory Spaces layer's own share of a recall).
Goals (issue 18): ``spaces`` p95 ≤ 1.1x the floor at 100k and ≤ 25 ms on PostgreSQL.

Run:  python bench/recall_scale.py --keep /var/tmp/recall-scale          (SQLite)
      python bench/recall_scale.py --keep /var/tmp/recall-scale \
          --database-url postgresql+psycopg://user:pw@host:port/db        (PostgreSQL)
      python bench/recall_scale.py --quick                                (10k, a smoke run)

``--keep DIR`` keeps the corpus (the SQLite file in DIR; on PostgreSQL a schema named after
DIR's last part, ``recall_scale`` by default) and reuses it on the next run when it holds the
corpus. Prints one Markdown table and exits. Not a test.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import floor, load, measure, pg_durability, queries, schema_url
from langgraph_mnemon.adapters.embeddings import WordLlamaEmbedder
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.memory_layers.spaces import MemorySpaces, ProviderSearchRequest
from langgraph_mnemon.storage.db import Database, create_engine


def _database(url: str | None, keep: Path | None, tmp: str) -> Database:
    """The bench database: a SQLite file (kept in ``keep``) or a PostgreSQL schema."""
    if url is None or url.startswith("sqlite"):
        folder = keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        return Database(create_engine(f"sqlite:///{folder}/recall_scale.db"), owns_engine=True)
    schema = (keep.name if keep else f"recall_scale_{random.randrange(1 << 30)}").replace("-", "_")
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    engine.dispose()
    return Database(create_engine(schema_url(url, schema)), owns_engine=True)


def _drop_schema(db: Database) -> None:
    if db.dialect == "postgresql":
        schema = db.engine.url.query["options"].split("=", 1)[1].split(",")[0]
        with db.engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def contenders(
    db: Database, spaces: MemorySpaces, provider: MnemosProvider, space_id: str
) -> dict[str, Callable[[str], Any]]:
    space = spaces._catalog.binding(spaces._catalog.get_space(space_id))

    def direct(text: str) -> Any:
        request = ProviderSearchRequest(query=text, mode="smart", limit=10)
        vector = provider._embed_query(text) if provider.embedder is not None else None
        began = time.perf_counter()
        provider._search_rows(space, request, vector)
        return time.perf_counter() - began

    return {
        "floor": floor(db, space_id),
        "provider": direct,
        "spaces": lambda text: spaces.search(text, space_ids=[space_id]),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", default=None, help="PostgreSQL URL; default SQLite")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--keep", type=Path, default=None, help="keep and reuse the corpus here")
    parser.add_argument("--no-vectors", action="store_true", help="skip the WordLlama corpus")
    parser.add_argument("--quick", action="store_true", help="10k memories, 100 queries")
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.queries = 10_000, 100
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        db = _database(args.database_url, args.keep, tmp)
        try:
            for dense in (False, True)[: 1 if args.no_vectors else 2]:
                provider = MnemosProvider(db, embedder=WordLlamaEmbedder() if dense else None)
                spaces = MemorySpaces(db, root=args.keep or tmp, providers=[provider])
                space_id = f"scale-{args.size}-{'wordllama' if dense else 'keyword'}"
                began = time.perf_counter()
                rate, stored = load(spaces, space_id, args.size, args.batch)
                loaded = time.perf_counter() - began
                texts = queries(stored, args.queries)
                runs = contenders(db, spaces, provider, space_id)
                rows.append((dense, rate, loaded, measure(runs, texts, args.rounds)))
                spaces.close()
        finally:
            if args.keep is None:
                _drop_schema(db)
            db.dispose()
    _table(db.dialect, args, rows)


def _table(dialect: str, args: argparse.Namespace, rows: list) -> None:
    print(
        f"| {dialect} {args.size:,} memories | vectors | load s (memories/s) | path "
        "| p50 ms | p95 ms | p50 / floor | p95 / floor | p50 / provider | p95 / provider |"
    )
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for dense, rate, loaded, result in rows:
        kind = "WordLlama (hybrid)" if dense else "none (keyword)"
        load_text = f"{loaded:.0f} ({rate:,.0f}/s)" if rate else f"{loaded:.0f} (reused)"
        f50, f95 = result["floor"]
        v50, v95 = result["provider"]
        for name, (p50, p95) in result.items():
            # the spaces row against the provider row is the Memory Spaces layer's own share
            versus = f"{p50 / v50:.2f}x | {p95 / v95:.2f}x" if name == "spaces" else "- | -"
            print(
                f"| {args.size:,} | {kind} | {load_text} | {name} | {p50:.2f} | {p95:.2f} "
                f"| {p50 / f50:.2f}x | {p95 / f95:.2f}x | {versus} |"
            )
    durability = (
        f"PostgreSQL {pg_durability(args.database_url)}"
        if dialect == "postgresql"
        else "SQLite WAL + NORMAL (ours' default)"
    )
    index = "tsvector GIN" if dialect == "postgresql" else "FTS5"
    print(
        f"\nmedian of {args.rounds} rounds (rotated order), {args.queries} queries, limit 10. "
        f"Durability: {durability}. Indexing: {index} keyword index for every path; vectors "
        "(WordLlama rows): the native provider's own (the floor uses none)."
    )


if __name__ == "__main__":
    main()
