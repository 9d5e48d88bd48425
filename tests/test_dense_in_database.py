"""Vectors in the database (issue 32, part 3).

* PostgreSQL with pgvector (``MNEMON_TEST_PGVECTOR_URL``, printed by ``.ci/start-pgvector.sh``;
  required under ``CI=true``): schema step 4 adds and back-fills the ``embedding`` column and an
  HNSW index per model; a smart search takes its dense pool from the index, so a question that
  shares no word with its answer finds it, with nothing held in memory, after a restart too, and
  never from another space.
* SQLite: the in-memory vectors are brought up to date by reading only what changed (counted by
  the cache), and the dense pool has no size limit (60,000 vectors).
* ``status`` says how dense search runs, or why it is off.

The embedder is WordLlama from the weights inside the ``wordllama`` wheel (no download).
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from conftest import service_url
from sqlalchemy import create_engine

from langgraph_mnemon.adapters.embeddings import WordLlamaEmbedder
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.memory_layers.spaces import (
    ProviderSearchRequest,
    RememberItem,
    SpaceBinding,
)
from langgraph_mnemon.memory_layers.spaces.schema import (
    INSIGHTS,
    MIGRATIONS,
    SPACE_STATS,
    VECTORS,
    vector_index_name,
)
from langgraph_mnemon.storage.db import Database
from langgraph_mnemon.testing.postgres import fresh_schema

PGVECTOR_ENV = "MNEMON_TEST_PGVECTOR_URL"
QUESTION = "Which physician treats her knee injury?"
ANSWER = "The orthopedic surgeon operates on a sports patient next month"
_FILLER_WORDS = (
    "budget",
    "meeting",
    "garden",
    "tomato",
    "deploy",
    "backend",
    "nightly",
    "holiday",
    "museum",
    "laptop",
    "contract",
    "guitar",
    "bread",
    "piano",
    "backup",
    "coffee",
    "ticket",
    "invoice",
    "river",
    "bicycle",
    "kitchen",
    "window",
    "paint",
    "library",
    "novel",
    "concert",
    "train",
    "station",
    "cloud",
    "server",
    "report",
    "spreadsheet",
    "lunch",
)


@pytest.fixture(scope="module")
def embedder() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


@pytest.fixture
def pgvector_url() -> Iterator[str]:
    """A fresh schema on the pgvector server (dropped afterwards)."""
    server = service_url(PGVECTOR_ENV, "PostgreSQL with pgvector", ".ci/start-pgvector.sh")
    with fresh_schema(server) as url:
        yield url


def _filler(n: int, seed: int = 7) -> list[RememberItem]:
    rng = random.Random(seed)
    return [
        RememberItem(content=" ".join(rng.sample(_FILLER_WORDS, 6)) + f" {i}") for i in range(n)
    ]


def _search(provider: MnemosProvider, space: SpaceBinding, query: str) -> list[str]:
    request = ProviderSearchRequest(query=query, mode="smart", limit=10)
    vector = provider._embed_query(query, provider.embedder_for(space.id))
    return [r.content for r in provider._search_rows(space, request, vector).results]


def _indexes(db: Database) -> set[str]:
    with db.read() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT indexname FROM pg_indexes WHERE schemaname = ANY(current_schemas(false))"
            )
        ).scalars()
        return set(rows)


# ------------------------------------------------------------------ PostgreSQL with pgvector


def test_schema_step_4_backfills_the_vector_column_and_indexes_each_model(
    pgvector_url: str,
) -> None:
    db = Database(create_engine(pgvector_url), owns_engine=True)
    try:
        db.setup(MIGRATIONS[:3])  # a database of the previous release, with stored vectors
        vectors = np.random.default_rng(1).normal(size=(5, 8)).astype(np.float32)
        with db.write() as conn:
            seqs = []
            for n in range(5):
                seqs.append(
                    conn.execute(
                        INSIGHTS.insert().returning(INSIGHTS.c.seq),
                        {
                            "id": uuid.uuid4().hex,
                            "space_id": "s",
                            "content": f"row {n}",
                            "content_hash": f"h{n}",
                            "created_at": 1.0,
                            "updated_at": 1.0,
                        },
                    ).scalar_one()
                )
            conn.execute(
                VECTORS.insert(),
                [
                    {
                        "insight_seq": seq,
                        "space_id": "s",
                        "model": "m:1",
                        "dim": 8,
                        "vector": vec.tobytes(),
                    }
                    for seq, vec in zip(seqs, vectors, strict=True)
                ],
            )
        applied = db.setup(MIGRATIONS)
        assert [(m.component, m.version) for m in applied] == [("spaces", 4)]
        with db.read() as conn:
            stored = conn.execute(
                sa.text(
                    "SELECT insight_seq, embedding::text FROM mnemon_insight_vectors "
                    "ORDER BY insight_seq"
                )
            ).all()
        assert [s for s, _ in stored] == seqs
        for (_, text), vec in zip(stored, vectors, strict=True):
            got = np.array([float(x) for x in text.strip("[]").split(",")], dtype=np.float32)
            assert np.allclose(got, vec, atol=1e-6)
        assert vector_index_name("m:1", 8) in _indexes(db)
    finally:
        db.dispose()


def test_a_paraphrase_is_found_through_the_hnsw_index(
    pgvector_url: str, embedder: WordLlamaEmbedder
) -> None:
    db = Database(create_engine(pgvector_url), owns_engine=True)
    space = SpaceBinding(id="clinic", name="Clinic")
    other = SpaceBinding(id="other", name="Other")
    try:
        provider = MnemosProvider(db, embedder=embedder)
        filler = _filler(2000)
        for start in range(0, len(filler), 1000):
            provider.remember_many(space, filler[start : start + 1000])
        provider.remember_many(space, [RememberItem(content=ANSWER)])
        # Another space holds a closer answer: it must never leak into this space's results.
        leak = "A knee physician treats injury patients"
        provider.remember_many(other, [RememberItem(content=leak), *_filler(50, 3)])

        found = _search(provider, space, QUESTION)
        assert ANSWER in found
        assert leak not in found
        assert provider._vectors.rows_read == 0  # nothing held in memory on this path
        assert vector_index_name(embedder.model_id, 256) in _indexes(db)
        assert provider.status(space).dense == "pgvector-hnsw"
        # The query plan reads the HNSW index.
        with db.read() as conn:
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    sa.text(
                        "EXPLAIN SELECT insight_seq FROM mnemon_insight_vectors WHERE model = "
                        f"'{embedder.model_id}' AND dim = 256 ORDER BY "
                        "embedding::public.vector(256) OPERATOR(public.<=>) "
                        "CAST(:q AS public.vector(256)) LIMIT 5"
                    ),
                    {"q": "[" + ",".join(["0.1"] * 256) + "]"},
                )
            )
        assert vector_index_name(embedder.model_id, 256) in plan
    finally:
        db.dispose()
    # A new process (a new engine and provider) finds the answer through the same index.
    db = Database(create_engine(pgvector_url), owns_engine=True)
    try:
        again = MnemosProvider(db, embedder=embedder)
        assert ANSWER in _search(again, space, QUESTION)
        assert again._vectors.rows_read == 0
        assert leak not in _search(again, space, QUESTION)
    finally:
        db.dispose()


def test_forget_and_keyed_rank_use_the_database_vectors(
    pgvector_url: str, embedder: WordLlamaEmbedder
) -> None:
    db = Database(create_engine(pgvector_url), owns_engine=True)
    space = SpaceBinding(id="notes", name="Notes")
    try:
        provider = MnemosProvider(db, embedder=embedder)
        receipts = provider.remember_many(space, [RememberItem(content=ANSWER), *_filler(30)])
        assert ANSWER in _search(provider, space, QUESTION)
        provider.forget(space, receipts[0]["id"])
        assert ANSWER not in _search(provider, space, QUESTION)
        ranked = provider.keyed_rank([space], "surgeon patient")
        assert len(ranked) == 30
        assert provider._vectors.rows_read == 0
    finally:
        db.dispose()


def test_postgres_without_pgvector_says_in_process(
    postgres_url: str, embedder: WordLlamaEmbedder
) -> None:
    db = Database(create_engine(postgres_url), owns_engine=True)
    space = SpaceBinding(id="notes", name="Notes")
    try:
        with db.read() as conn:
            has = conn.execute(
                sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            ).scalar()
        if has:
            pytest.skip(
                "needs a PostgreSQL without the vector extension (the server of "
                ".ci/start-postgres.sh); this one offers pgvector"
            )
        provider = MnemosProvider(db, embedder=embedder)
        provider.remember_many(space, [RememberItem(content=ANSWER), *_filler(20)])
        assert ANSWER in _search(provider, space, QUESTION)
        assert provider.status(space).dense.startswith("in-process: ")
    finally:
        db.dispose()


# ------------------------------------------------------------------ SQLite: in memory


def test_the_in_memory_vectors_are_updated_by_what_changed(
    tmp_path: Path, embedder: WordLlamaEmbedder
) -> None:
    url = f"sqlite:///{tmp_path}/m.db"
    db = Database(create_engine(url), owns_engine=True)
    other_db = Database(create_engine(url), owns_engine=True)
    space = SpaceBinding(id="notes", name="Notes")
    try:
        provider = MnemosProvider(db, embedder=embedder)
        provider.remember_many(space, _filler(50))
        assert ANSWER not in _search(provider, space, QUESTION)
        assert provider._vectors.rows_read == 50  # the first search loads the space

        stored = provider.remember_many(space, [RememberItem(content=ANSWER)])
        assert ANSWER in _search(provider, space, QUESTION)
        assert provider._vectors.rows_read == 51  # the new row only

        provider.forget(space, stored[0]["id"])
        assert ANSWER not in _search(provider, space, QUESTION)
        assert provider._vectors.rows_read == 51  # a forgotten row is dropped, nothing read
        cache = provider._vectors.peek(space.id, embedder.model_id, 256)
        assert cache is not None
        assert cache.size == 50

        # Another process (its own engine and provider) writes: this one sees the row.
        writer = MnemosProvider(other_db, embedder=embedder)
        writer.remember_many(space, [RememberItem(content=ANSWER + " again")])
        assert ANSWER + " again" in _search(provider, space, QUESTION)
        assert provider._vectors.rows_read == 52
        # ... and forgets one: gone here too.
        gone = writer.remember_many(space, [RememberItem(content="Bicycle ride")])
        _search(provider, space, QUESTION)
        writer.forget(space, gone[0]["id"])
        _search(provider, space, QUESTION)
        assert cache.size == 51
        assert provider._vectors.rows_read == 53
        assert provider.status(space).dense == "in-process"
    finally:
        db.dispose()
        other_db.dispose()


def test_dense_search_has_no_size_limit(tmp_path: Path, embedder: WordLlamaEmbedder) -> None:
    db = Database(create_engine(f"sqlite:///{tmp_path}/big.db"), owns_engine=True)
    space = SpaceBinding(id="big", name="Big")
    try:
        provider = MnemosProvider(db, embedder=embedder)
        provider.remember_many(space, [RememberItem(content=ANSWER), *_filler(20)])
        count = 60_000
        vectors = np.random.default_rng(3).normal(size=(count, 256)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        now = time.time()
        with db.write() as conn:
            driver = conn.connection.driver_connection
            first = conn.execute(sa.select(sa.func.max(INSIGHTS.c.seq))).scalar_one() + 1
            driver.executemany(
                "INSERT INTO mnemon_insights (seq, id, space_id, content, content_hash, terms, "
                "term_count, created_at, updated_at) VALUES (?, ?, 'big', ?, ?, ?, 2, ?, ?)",
                [
                    (first + i, uuid.uuid4().hex, f"filler {i}", f"f{i}", f"filler n{i}", now, now)
                    for i in range(count)
                ],
            )
            driver.executemany(
                "INSERT INTO mnemon_insight_vectors (insight_seq, space_id, model, dim, vector) "
                "VALUES (?, 'big', ?, 256, ?)",
                [(first + i, embedder.model_id, vectors[i].tobytes()) for i in range(count)],
            )
            conn.execute(
                SPACE_STATS.update()
                .where(SPACE_STATS.c.space_id == "big")
                .values(docs=SPACE_STATS.c.docs + count, version=SPACE_STATS.c.version + 1)
            )
        assert ANSWER in _search(provider, space, QUESTION)
        assert provider._vectors.rows_read == count + 21
    finally:
        db.dispose()


def test_status_says_why_dense_search_is_off(tmp_path: Path) -> None:
    db = Database(create_engine(f"sqlite:///{tmp_path}/m.db"), owns_engine=True)
    space = SpaceBinding(id="notes", name="Notes")
    try:
        provider = MnemosProvider(db)
        provider.remember_many(space, [RememberItem(content="Ada likes tea")])
        assert provider.status(space).dense.startswith("off: no embedder")
        assert provider.dense_mode().startswith("off: ")
    finally:
        db.dispose()
