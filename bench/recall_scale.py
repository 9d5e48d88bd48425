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
import math
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph_mnemon.adapters.embeddings import WordLlamaEmbedder
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.adapters.providers.mnemos._sql import space_token
from langgraph_mnemon.adapters.providers.text import query_terms
from langgraph_mnemon.memory_layers.spaces import MemorySpaces, ProviderSearchRequest
from langgraph_mnemon.storage.db import Database, create_engine

_SYLLABLES = (
    "ka", "lo", "mi", "ren", "sta", "por", "vel", "dan", "qui", "tor", "ex", "am", "bri", "sel",
    "nu", "gra", "fen", "zo", "lit", "mar", "cor", "pre", "tal", "vis", "ob", "un", "tri", "pel",
    "ras", "hon", "gil", "wen",
)  # fmt: skip


_FUNCTION = frozenset(
    ("the", "a", "of", "to", "and", "in", "is", "it", "that", "for", "on", "with", "as", "was",
     "at", "by", "this", "be", "are", "from")
)  # fmt: skip
_FUNCTION_WORDS = sorted(_FUNCTION)


def vocabulary(size: int, rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Corpus:
    def __init__(self, seed: int = 7, vocab: int = 20_000) -> None:
        self.rng = random.Random(seed)
        # Function words take a third of the tokens (as in English); content words follow a
        # Zipf law whose head is a few percent of the tokens.
        self.words = vocabulary(vocab, self.rng)
        weights = [1.0 / (rank + 30) for rank in range(len(self.words))]
        total = sum(weights)
        self.cum: list[float] = []
        acc = 0.0
        for w in weights:
            acc += w / total
            self.cum.append(acc)

    def word(self) -> str:
        import bisect

        return self.words[min(bisect.bisect(self.cum, self.rng.random()), len(self.words) - 1)]

    def memory(self, index: int) -> dict[str, object]:
        n = self.rng.randint(8, 40)
        text = (
            " ".join(
                self.rng.choice(_FUNCTION_WORDS) if self.rng.random() < 0.33 else self.word()
                for _ in range(n)
            ).capitalize()
            + "."
        )
        item: dict[str, object] = {"content": text, "metadata": {"n": index}}
        if index % 10 == 0:
            item["entities"] = [f"{self.word()}-project"]
        return item


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)] * 1000


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
    sep = "&" if "?" in url else "?"
    return Database(create_engine(f"{url}{sep}options=-csearch_path%3D{schema}"), owns_engine=True)


def _drop_schema(db: Database) -> None:
    if db.dialect == "postgresql":
        schema = db.engine.url.query["options"].split("=", 1)[1]
        with db.engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def load(spaces: MemorySpaces, space_id: str, size: int, batch: int) -> tuple[float | None, list]:
    """Write the corpus into ``space_id`` unless it is there already; ``(memories/s or None
    when reused, five stored texts per batch)``."""
    corpus = Corpus()
    items = [corpus.memory(i) for i in range(size)]
    sample = [str(items[i]["content"]) for s in range(0, size, batch) for i in range(s, s + 5)]
    known = {s.id: s for s in spaces.list_spaces()}
    if space_id in known and known[space_id].description == f"corpus {size}":
        return None, sample
    if space_id in known:
        raise SystemExit(f"space {space_id} holds another corpus: use a fresh --keep folder")
    spaces.create_space(space_id, space_id=space_id, description="loading")
    began = time.perf_counter()
    for start in range(0, size, batch):
        receipts = spaces.remember_many(items[start : start + batch], space_id=space_id)
        assert all(r.committed for r in receipts)
    rate = size / (time.perf_counter() - began)
    spaces.update_space(space_id, description=f"corpus {size}")
    return rate, sample


def queries(stored: list[str], count: int) -> list[str]:
    corpus = Corpus(seed=13)
    rng = random.Random(11)
    texts = []
    for _ in range(count):
        words = [w for w in rng.choice(stored).rstrip(".").lower().split() if w not in _FUNCTION]
        k = rng.randint(2, min(6, len(words)))
        texts.append(" ".join([*rng.sample(words, k), corpus.word()]))
    return texts


def floor(db: Database, space_id: str) -> Callable[[str], Any]:
    """The bare engine's OR query over every query term, top 10."""
    if db.dialect == "sqlite":
        token = space_token(space_id)
        sql = (
            "SELECT rowid FROM mnemon_insights_fts WHERE mnemon_insights_fts MATCH ? "
            "ORDER BY bm25(mnemon_insights_fts) LIMIT 10"
        )

        def run(conn: Any, text: str) -> Any:
            match = " OR ".join(f'"{token}{t}"' for t in query_terms(text))
            return conn.exec_driver_sql(sql, (match,)).all()

    else:
        stmt = sa.text(
            "SELECT seq FROM mnemon_insights WHERE space_id = :s AND tsv @@ CAST(:q AS tsquery) "
            "ORDER BY ts_rank(tsv, CAST(:q AS tsquery)) DESC LIMIT 10"
        )

        def run(conn: Any, text: str) -> Any:
            q = " | ".join(f"'{t}'" for t in query_terms(text))
            return conn.execute(stmt, {"s": space_id, "q": q}).all()

    return lambda text: db.run_single(run, text)


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


def measure(runs: dict[str, Callable[[str], Any]], texts: list[str], rounds: int) -> dict:
    """p50 / p95 of every contender per round (rotated order), then the medians."""
    for fn in runs.values():
        for text in texts[:20]:  # warm-up: caches, statement preparation
            fn(text)
    names = list(runs)
    per: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            latencies = []
            for text in texts:
                began = time.perf_counter()
                inner = runs[name](text)
                spent = time.perf_counter() - began
                latencies.append(inner if isinstance(inner, float) else spent)
            per[name].append((_percentile(latencies, 0.5), _percentile(latencies, 0.95)))
    return {
        n: (statistics.median(p for p, _ in v), statistics.median(q for _, q in v))
        for n, v in per.items()
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
    print(f"\nmedian of {args.rounds} rounds (rotated order), {args.queries} queries, limit 10")


if __name__ == "__main__":
    main()
