"""Helpers shared by the bench scripts: corpora, timing, rounds and the databases they run on.

* :class:`Corpus`: synthetic English-like memories (a third function words, the rest from a
  Zipf-distributed vocabulary of invented words), the generator of ``recall_scale.py``,
  ``spaces_scale.py``, ``turn_overhead.py`` and ``serve.py``; :func:`queries` draws queries
  from stored texts.
* :func:`p50`, :func:`percentile`, :func:`rotated` and :func:`measure`: timing, and baselines
  taking turns inside each round.
* :func:`store_value` / :func:`fill`: the ``BaseStore`` items of ``store.py``.
* :func:`floor`: the bare engine's keyword query (FTS5 ``MATCH`` / ``tsv @@ tsquery``).
* PostgreSQL: :func:`plain_url`, :func:`schema_url`, :func:`fresh_database`,
  :func:`pg_durability` and :func:`pg_index_kinds`; SQLite: :func:`sqlite_durability`.

Not a test and not part of the package: the bench scripts import it as ``bench._common``.
"""

from __future__ import annotations

import bisect
import math
import random
import re
import statistics
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import sqlalchemy as sa
from langgraph.store.base import BaseStore, PutOp

from langgraph_mnemon.adapters.providers.mnemos._sql import space_token
from langgraph_mnemon.adapters.providers.text import query_terms
from langgraph_mnemon.storage.db import Database

T = TypeVar("T")

# --- the synthetic corpus ---------------------------------------------------------------------

_SYLLABLES = (
    "ka", "lo", "mi", "ren", "sta", "por", "vel", "dan", "qui", "tor", "ex", "am", "bri", "sel",
    "nu", "gra", "fen", "zo", "lit", "mar", "cor", "pre", "tal", "vis", "ob", "un", "tri", "pel",
    "ras", "hon", "gil", "wen",
)  # fmt: skip

FUNCTION = frozenset(
    ("the", "a", "of", "to", "and", "in", "is", "it", "that", "for", "on", "with", "as", "was",
     "at", "by", "this", "be", "are", "from")
)  # fmt: skip
FUNCTION_WORDS = sorted(FUNCTION)


def vocabulary(size: int, rng: random.Random) -> list[str]:
    """``size`` distinct invented words of 2-4 syllables, sorted."""
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Corpus:
    """Synthetic memories: 8-40 words, a third function words, every tenth with an entity."""

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
        return self.words[min(bisect.bisect(self.cum, self.rng.random()), len(self.words) - 1)]

    def memory(self, index: int) -> dict[str, object]:
        n = self.rng.randint(8, 40)
        text = (
            " ".join(
                self.rng.choice(FUNCTION_WORDS) if self.rng.random() < 0.33 else self.word()
                for _ in range(n)
            ).capitalize()
            + "."
        )
        item: dict[str, object] = {"content": text, "metadata": {"n": index}}
        if index % 10 == 0:
            item["entities"] = [f"{self.word()}-project"]
        return item


def queries(stored: Sequence[str], count: int) -> list[str]:
    """``count`` queries: 2-6 content words of a random stored text plus one unrelated word."""
    corpus = Corpus(seed=13)
    rng = random.Random(11)
    texts = []
    for _ in range(count):
        words = [w for w in rng.choice(stored).rstrip(".").lower().split() if w not in FUNCTION]
        k = rng.randint(2, min(6, len(words)))
        texts.append(" ".join([*rng.sample(words, k), corpus.word()]))
    return texts


def load(
    spaces: Any,
    space_id: str,
    size: int,
    batch: int,
    extra: Sequence[dict[str, object]] = (),
) -> tuple[float | None, list[str]]:
    """Write ``size`` corpus memories (and ``extra``, spread evenly over the batches) into a
    new native space ``space_id`` through ``remember_many``, ``batch`` at a time, unless the
    space holds that corpus already.

    Args:
        spaces: ``mem.spaces`` (a ``MemorySpaces``).
        space_id: The space; made here, described ``corpus <size>`` once loaded.
        size: Corpus memories (``Corpus()``, the same texts on every run).
        batch: Memories per ``remember_many`` call.
        extra: Items written among the corpus (item ``j`` in batch ``j * batches // len``).

    Returns:
        ``(memories/s, or None when the space was reused; the first five texts of each batch)``.

    Raises:
        SystemExit: the space exists but holds another corpus.
    """
    corpus = Corpus()
    batches = max(1, math.ceil(size / batch))
    spread: dict[int, list[dict[str, object]]] = {}
    for j, item in enumerate(extra):
        spread.setdefault(j * batches // max(1, len(extra)), []).append(item)
    described = f"corpus {size}" + (f" + {len(extra)}" if extra else "")
    known = {s.id: s for s in spaces.list_spaces()}
    if space_id in known and known[space_id].description != described:
        raise SystemExit(f"space {space_id} holds another corpus: use a fresh one")
    reuse = space_id in known
    if not reuse:
        spaces.create_space(space_id, space_id=space_id, description="loading")
    sample: list[str] = []
    began = time.perf_counter()
    for b, start in enumerate(range(0, size, batch)):
        items = [corpus.memory(i) for i in range(start, min(size, start + batch))]
        sample.extend(str(item["content"]) for item in items[:5])
        if not reuse:
            for chunk in (items, spread.get(b, [])):  # extras apart: a call takes <= 1,000
                receipts = spaces.remember_many(chunk, space_id=space_id) if chunk else []
                assert all(r.committed for r in receipts), receipts[0]
    if reuse:
        return None, sample
    rate = (size + len(extra)) / (time.perf_counter() - began)
    spaces.update_space(space_id, description=described)
    return rate, sample


# --- timing -----------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values`` in seconds, as milliseconds."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)] * 1000


def p50(fn: Callable[[int], Any], count: int) -> float:
    """The median in ms of ``count`` calls ``fn(0) ... fn(count - 1)``."""
    times = []
    for i in range(count):
        start = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def rotated(names: Sequence[T], round_no: int) -> list[T]:
    """``names`` started at ``round_no``: each baseline takes each place in turn."""
    shift = round_no % len(names)
    return [*names[shift:], *names[:shift]]


def measure(runs: dict[str, Callable[[str], Any]], texts: list[str], rounds: int) -> dict:
    """p50 / p95 (ms) of every contender per round (rotated order), then the medians.

    A contender that returns a float reports its own time in seconds (the rest is set-up).
    """
    for fn in runs.values():
        for text in texts[:20]:  # warm-up: caches, statement preparation
            fn(text)
    names = list(runs)
    per: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    for r in range(rounds):
        for name in rotated(names, r):
            latencies = []
            for text in texts:
                began = time.perf_counter()
                inner = runs[name](text)
                spent = time.perf_counter() - began
                latencies.append(inner if isinstance(inner, float) else spent)
            per[name].append((percentile(latencies, 0.5), percentile(latencies, 0.95)))
    return {
        n: (statistics.median(p for p, _ in v), statistics.median(q for _, q in v))
        for n, v in per.items()
    }


# --- BaseStore items --------------------------------------------------------------------------

_STORE_TEXT = "deploy pipeline staging database port cache queue worker tenant invoice report "
STORE_WORDS = (_STORE_TEXT + "migration backup alert latency region cluster token budget").split()


def store_value(rng: random.Random, i: int) -> dict[str, Any]:
    """A store item's value: 12 words of a small vocabulary and two filterable fields."""
    text = " ".join(rng.choice(STORE_WORDS) for _ in range(12))
    return {"text": f"item {i}: {text}", "n": i % 97, "kind": ("a", "b", "c")[i % 3]}


def fill(
    store: BaseStore,
    start: int,
    stop: int,
    namespace: Any,
    value: Callable[[random.Random, int], dict[str, Any]] = store_value,
    batch: int = 500,
) -> None:
    """Put keys ``k{start}`` .. ``k{stop - 1}`` through ``store.batch``, ``batch`` at a time;
    ``namespace`` is a tuple or a function of the item number."""
    rng = random.Random(start)
    for lo in range(start, stop, batch):
        ops = [PutOp(namespace(i) if callable(namespace) else namespace, f"k{i}", value(rng, i))
               for i in range(lo, min(stop, lo + batch))]  # fmt: skip
        store.batch(ops)


# --- the bare engine's floor ------------------------------------------------------------------


def floor(db: Database, space_id: str) -> Callable[[str], Any]:
    """The bare engine's OR query over every query term of a space, top 10, one statement."""
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


# --- databases --------------------------------------------------------------------------------

_SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def sqlite_durability(execute: Callable[[str], Any]) -> str:
    """``"WAL + NORMAL"`` style text of a SQLite connection; ``execute(sql)`` returns a scalar."""
    journal = str(execute("PRAGMA journal_mode")).upper()
    level = _SYNCHRONOUS.get(int(execute("PRAGMA synchronous")), "?")
    return f"{journal} + {level}"


def plain_url(url: str) -> str:
    """A SQLAlchemy PostgreSQL URL as psycopg takes it."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def schema_url(url: str, schema: str) -> str:
    """``url`` with ``schema`` first in the search path, then ``public`` (where the ``vector``
    extension's type lives when the server has it)."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}%2Cpublic"


def database_url(url: str, name: str) -> str:
    """``url`` (``scheme://user:pw@host:port/db[?query]``) pointing at database ``name``."""
    head, _, query = url.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{name}" + (f"?{query}" if query else "")


@contextmanager
def fresh_database(url: str, prefix: str = "bench") -> Iterator[str]:
    """Create a database ``{prefix}_<random>`` on ``url``'s server, yield its URL, drop it.

    Raises:
        psycopg.OperationalError: the server cannot be reached.
    """
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(plain_url(url), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url(url, name)
    finally:
        with psycopg.connect(plain_url(url), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def has_vector_extension(url: str) -> bool:
    """Whether ``url``'s server can load pgvector (``CREATE EXTENSION vector``)."""
    import psycopg

    with psycopg.connect(plain_url(url), autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        return row.fetchone() is not None


def create_vector_extension(url: str) -> None:
    """``CREATE EXTENSION IF NOT EXISTS vector`` in ``url``'s database (schema ``public``)."""
    import psycopg

    with psycopg.connect(plain_url(url), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")


def pg_durability(url: str) -> str:
    """The server's ``fsync`` and ``synchronous_commit``, e.g. ``fsync=off, sync_commit=on``."""
    import psycopg

    with psycopg.connect(plain_url(url), autocommit=True) as conn:
        fsync = conn.execute("SHOW fsync").fetchone()[0]  # type: ignore[index]
        commit = conn.execute("SHOW synchronous_commit").fetchone()[0]  # type: ignore[index]
    return f"fsync={fsync}, synchronous_commit={commit}"


def pg_index_kinds(url: str, schema: str | None = None, like: str = "%") -> str:
    """The index methods (btree, gin, hnsw...) on the tables named ``like`` in ``schema``
    (default: the connection's current schema), e.g. ``btree, gin, hnsw``."""
    import psycopg

    with psycopg.connect(plain_url(url), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = COALESCE(%s, current_schema()) "
            "AND tablename LIKE %s",
            (schema, like),
        ).fetchall()
    kinds = {m.group(1).lower() for (d,) in rows if (m := re.search(r" USING (\w+)", d))}
    return ", ".join(sorted(kinds)) or "none"
