"""PostgreSQL recall of the native provider: same ranking as SQLite and as before, few round trips.

A fixed corpus (a few hundred generated memories in three spaces, some forgotten, with vectors
of a small deterministic embedder defined here) is searched in every mode (basic, keyword,
smart), with and without an embedder, with the dense pool from a full scan and from re-scoring
only, and with category / source filters. The PostgreSQL ranking must be the SQLite ranking and
the one saved in ``tests/data/pg_recall_golden.json`` (ids by the memory's ``metadata.n``,
scores within 1e-6). Regenerate the golden after a deliberate scoring change with
``MNEMON_TEST_POSTGRES_URL=... python tests/test_pg_recall.py --regenerate``.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from langgraph_mnemon.adapters.providers.mnemos import HybridWeights, MnemosProvider
from langgraph_mnemon.memory_layers.spaces import (
    MemorySpaces,
    ProviderSearchRequest,
    RememberItem,
    SpaceBinding,
)
from langgraph_mnemon.storage.db import Database, create_engine

GOLDEN = Path(__file__).parent / "data" / "pg_recall_golden.json"

_WORDS = [
    "garden",
    "deploy",
    "staging",
    "port",
    "database",
    "coffee",
    "morning",
    "meeting",
    "budget",
    "invoice",
    "river",
    "mountain",
    "ticket",
    "release",
    "migration",
    "backup",
    "server",
    "laptop",
    "keyboard",
    "printer",
    "window",
    "kitchen",
    "bicycle",
    "holiday",
    "flight",
    "hotel",
    "museum",
    "concert",
    "guitar",
    "piano",
    "violin",
    "painting",
    "camera",
    "battery",
    "charger",
    "project",
    "deadline",
    "report",
    "review",
    "contract",
    "lawyer",
    "doctor",
    "dentist",
    "appointment",
    "vaccine",
    "recipe",
    "tomato",
    "pasta",
    "cheese",
    "bread",
    "butter",
    "honey",
    "lemon",
    "ginger",
    "pepper",
    "salmon",
    "chicken",
]
_FILLER = [
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "it",
    "that",
    "for",
    "on",
    "with",
    "as",
    "was",
    "at",
    "by",
    "this",
]
_CATEGORIES = ("fact", "decision", "preference", "general", "context")
_SOURCES = ("user", "agent", "external")
_SPACES = ("alpha", "beta", "gamma")


class WordHashEmbedder:
    """Deterministic 64-d word-hash vectors (owned by this test, so the golden does not move
    when the shipped embedders change)."""

    model_id = "test-wordhash-64"
    similarity_range = (0.0, 0.8)

    def _one(self, text: str) -> list[float]:
        vec = np.zeros(64, dtype=np.float32)
        for word in text.lower().replace(".", " ").split():
            digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
            value = int.from_bytes(digest, "little")
            vec[value % 64] += 1.0 if value & 64 else -1.0
        norm = float(np.linalg.norm(vec))
        return (vec / norm if norm else vec).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


def _items(space_index: int, count: int) -> list[RememberItem]:
    rng = random.Random(1000 + space_index)
    items = []
    for n in range(count):
        words = [
            rng.choice(_FILLER) if rng.random() < 0.3 else rng.choice(_WORDS[: 20 + 5 * n % 40])
            for _ in range(rng.randint(4, 18))
        ]
        # Every sixth row asks, every fourth carries a date: the conversation cues rank them.
        end = "?" if n % 6 == 3 else "."
        metadata: dict[str, Any] = {"n": n}
        if n % 4 == 0:
            metadata["date"] = f"2023-{1 + n % 12:02d}-{1 + n % 27:02d}"
        items.append(
            RememberItem(
                content=" ".join(words).capitalize() + f". Note {space_index}-{n}{end}",
                category=_CATEGORIES[n % len(_CATEGORIES)],  # type: ignore[arg-type]
                source=_SOURCES[(n // 2) % len(_SOURCES)],  # type: ignore[arg-type]
                tags=(rng.choice(_WORDS),) if n % 7 == 0 else (),
                entities=(f"{rng.choice(_WORDS)}-team",) if n % 9 == 0 else (),
                metadata=metadata,
            )
        )
    return items


def _queries() -> list[str]:
    rng = random.Random(5)
    out = [" ".join(rng.sample(_WORDS, rng.randint(1, 5))) for _ in range(14)]
    out += ["the of and", "!!!", "zzzunknown garden", "coffee zzzunknown", "Note 1-5"]
    out += ["garden coffee in March 2023", "What about the deploy port on 2023-05-05?"]
    return out


VARIANTS: dict[str, dict[str, Any]] = {
    # A keyword pool of 100 (the default is 50): each engine's own ranker (FTS5 bm25 /
    # ts_rank) cuts the pool before the shared scorer runs, and this corpus's common words
    # would make that cut, not the scorer, decide which rows the two engines rank.
    "keyword-only": {"embedder": False, "weights": HybridWeights(pool=100)},
    "hybrid-scan": {"embedder": True, "weights": HybridWeights(pool=100)},
    # The feedback pass, off by default, still ranks alike on both databases.
    "hybrid-feedback": {"embedder": True, "weights": HybridWeights(pool=100, prf=0.1)},
}
FILTERS: dict[str, dict[str, str]] = {
    "none": {},
    "category": {"category": "fact"},
    "source": {"source": "user"},
}


def _provider(url: str, variant: str) -> tuple[MnemosProvider, Database]:
    db = Database(create_engine(url), owns_engine=True)
    spec = VARIANTS[variant]
    provider = MnemosProvider(
        db,
        embedder=WordHashEmbedder() if spec["embedder"] else None,
        weights=spec["weights"],
        clock=lambda: 1_700_000_000.0,
    )
    return provider, db


def load_corpus(provider: MnemosProvider, variant: str = "") -> list[SpaceBinding]:
    """Write the fixed corpus (120-200 rows a space, every 11th forgotten); space ids end in
    ``variant`` so the variants share one database without sharing spaces."""
    spaces = []
    for index, name in enumerate(_SPACES):
        space = SpaceBinding(id=f"{name}-{variant}" if variant else name, name=name.title())
        receipts = []
        items = _items(index, 120 + 40 * index)
        for start in range(0, len(items), 50):
            receipts += provider.remember_many(space, items[start : start + 50])
        for receipt in receipts[::11]:
            provider.forget(space, receipt["id"])
        spaces.append(space)
    return spaces


def _query_vector(provider: MnemosProvider, request: ProviderSearchRequest) -> Any:
    if request.mode == "smart" and provider.embedder is not None and provider.weights.dense > 0:
        return provider._embed_query(request.query)
    return None


def rankings(provider: MnemosProvider, spaces: list[SpaceBinding], variant: str) -> dict:
    """``{case: [[n, score, matched_via], ...]}`` for every space, query, mode and filter."""
    out: dict[str, list[list[Any]]] = {}
    for space in spaces:
        for query in _queries():
            for mode in ("basic", "keyword", "smart"):
                for fname, filters in FILTERS.items():
                    request = ProviderSearchRequest(query=query, mode=mode, limit=12, **filters)
                    found = provider._search_rows(space, request, _query_vector(provider, request))
                    key = f"{variant}|{space.name}|{mode}|{fname}|{query}"
                    out[key] = [[r.metadata["n"], r.score, r.matched_via] for r in found.results]
    return out


def all_rankings(url: str) -> dict:
    """The rankings of every variant on a fresh corpus at ``url`` (one corpus per variant)."""
    out: dict[str, list[list[Any]]] = {}
    for variant in VARIANTS:
        provider, db = _provider(url, variant)
        try:
            provider.setup()
            out.update(rankings(provider, load_corpus(provider, variant), variant))
        finally:
            db.dispose()
    return out


# Every row holds "note": the OR query matches the whole space, so the keyword pool (100 rows)
# is cut by each engine's own ranker (FTS5 bm25 / ts_rank) before the shared scorer runs. The
# two engines may keep different rows there (as before this change); PostgreSQL must still
# match its golden.
CUT_POOL_QUERIES = frozenset({"Note 1-5"})


def _assert_same(actual: dict, expected: dict, what: str, skip: frozenset[str] = frozenset()):
    assert actual.keys() == expected.keys(), what
    nonempty = 0
    for key, rows in expected.items():
        if key.rsplit("|", 1)[1] in skip:
            continue
        got = actual[key]
        assert [r[0] for r in got] == [r[0] for r in rows], f"{what}: order differs for {key}"
        assert [r[2] for r in got] == [r[2] for r in rows], f"{what}: matched_via for {key}"
        for (_, a, _), (_, b, _) in zip(got, rows, strict=True):
            assert a == pytest.approx(b, abs=1.01e-6), f"{what}: score differs for {key}"
        nonempty += bool(rows)
    assert nonempty > len(expected) // 3, "the corpus must make most searches find rows"


# ------------------------------------------------------------------ tests


def test_postgres_ranking_matches_the_golden(postgres_url: str) -> None:
    expected = json.loads(GOLDEN.read_text())
    _assert_same(all_rankings(postgres_url), expected, "PostgreSQL vs golden")


def test_postgres_ranking_matches_sqlite(postgres_url: str, tmp_path: Path) -> None:
    sqlite = all_rankings(f"sqlite:///{tmp_path}/recall.db")
    _assert_same(all_rankings(postgres_url), sqlite, "PostgreSQL vs SQLite", CUT_POOL_QUERIES)


@contextmanager
def counted(db: Database) -> Iterator[list[str]]:
    """Statements the engine sends while the block runs (a SQLAlchemy cursor listener)."""
    seen: list[str] = []

    def listener(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    sa.event.listen(db.engine, "before_cursor_execute", listener)
    try:
        yield seen
    finally:
        sa.event.remove(db.engine, "before_cursor_execute", listener)


def _table_exists_probe(statement: str) -> bool:
    return "pg_catalog" in statement or "schema_version" in statement


def test_provider_search_is_one_round_trip_on_postgres(postgres_url: str) -> None:
    provider, db = _provider(postgres_url, "hybrid-scan")
    try:
        provider.setup()
        space = load_corpus(provider)[1]
        request = ProviderSearchRequest(query="garden coffee meeting", mode="smart")
        vector = _query_vector(provider, request)
        provider._search_rows(space, request, vector)  # loads the space's vectors once
        for mode in ("smart", "keyword", "basic"):
            request = ProviderSearchRequest(query="garden coffee", mode=mode, category="fact")
            with counted(db) as seen:
                found = provider._search_rows(space, request, _query_vector(provider, request))
            assert found.results, mode
            # One statement (the feedback pass, off by default, would read its terms' document
            # frequencies in one more: below).
            assert len(seen) == 1, (mode, seen)
        feedback, feedback_db = _provider(postgres_url, "hybrid-feedback")
        try:
            request = ProviderSearchRequest(query="garden coffee", mode="smart", category="fact")
            feedback._search_rows(space, request, _query_vector(feedback, request))  # warm up
            with counted(feedback_db) as seen:
                found = feedback._search_rows(space, request, _query_vector(feedback, request))
            assert found.results
            assert len(seen) == 2, seen
            assert "mnemon_space_terms" in seen[-1], seen
        finally:
            feedback_db.dispose()
        # A write from elsewhere changes the space's version: the next search reloads the
        # vectors and still sees the new row (at most five statements on that search: the
        # feedback pass, and the full rows of neighbours that joined the ranking, included).
        other, other_db = _provider(postgres_url, "hybrid-scan")
        try:
            other.remember_many(space, [RememberItem(content="Quince garden coffee")])
        finally:
            other_db.dispose()
        request = ProviderSearchRequest(query="quince", mode="smart")
        with counted(db) as seen:
            found = provider._search_rows(space, request, _query_vector(provider, request))
        assert [r.content for r in found.results][:1] == ["Quince garden coffee"]
        assert len(seen) <= 5, seen
    finally:
        db.dispose()


def test_memory_spaces_search_round_trips_on_postgres(postgres_url: str, tmp_path: Path) -> None:
    db = Database(create_engine(postgres_url), owns_engine=True)
    provider = MnemosProvider(db, embedder=WordHashEmbedder())
    spaces = MemorySpaces(db, root=tmp_path, providers=[provider])
    try:
        space = spaces.create_space("Notes", space_id="notes").space
        assert space is not None
        spaces.remember_many(
            [{"content": f"Garden note {i} about coffee and the river"} for i in range(40)],
            space_id="notes",
        )
        spaces.search("garden coffee", space_ids=["notes"])  # warm: catalog and vectors
        with counted(db) as seen:
            result = spaces.search("garden river coffee", space_ids=["notes"])
        assert result.results
        # The whole layer: the catalog read (one statement) and the provider search (the
        # search statement and the feedback terms' frequencies).
        assert len(seen) <= 3, seen
    finally:
        spaces.close()
        db.dispose()


def _regenerate() -> None:
    import os

    sys.path.insert(0, str(Path(__file__).parent))
    from langgraph_mnemon.testing.postgres import fresh_schema

    server = os.environ["MNEMON_TEST_POSTGRES_URL"]
    with fresh_schema(server) as url:
        data = all_rankings(url)
    GOLDEN.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    print(f"wrote {len(data)} rankings to {GOLDEN}")


if __name__ == "__main__":
    if "--regenerate" in sys.argv:
        _regenerate()
    else:
        print(__doc__)
