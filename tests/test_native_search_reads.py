"""The native provider's merged search reads give what the separate reads gave, on SQLite and
PostgreSQL: statistics with document frequencies, neighbours with their terms, the row
envelope; and the step-by-step search (``_search.search``) ranks as the provider does."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from langgraph_mnemon.adapters.embeddings import HashingEmbedder
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider, _search, _sql
from langgraph_mnemon.adapters.providers.text import query_terms
from langgraph_mnemon.memory_layers.spaces import (
    ProviderSearchRequest,
    RememberItem,
    SpaceBinding,
)
from langgraph_mnemon.storage.db import Database, create_engine, ensure_sqlite_directory

SPACE = SpaceBinding(id="reads", name="Reads")
TEXTS = [
    "Alice: I went hiking in the Alps last summer.",
    "Bob: Did the tea shop near the station open again?",
    "Alice: My sister adopted a kitten in May.",
    "Bob: We planned a trip to the Alps for the winter.",
    "Alice: The kitten sleeps on the warm windowsill.",
    "Carol: I painted the lighthouse at dawn.",
]


@pytest.fixture
def provider(database_url: str) -> Iterator[MnemosProvider]:
    ensure_sqlite_directory(database_url)
    db = Database(create_engine(database_url), owns_engine=True)
    native = MnemosProvider(db, embedder=HashingEmbedder(64))
    items = [
        RememberItem(content=t, tags=["chat"] if i % 2 else [], metadata={"turn": i})
        for i, t in enumerate(TEXTS)
    ]
    native.remember_many(SPACE, items)
    native.remember(SpaceBinding(id="other", name="Other"), RememberItem(content="Alps kitten"))
    yield native
    db.dispose()


def _seqs(native: MnemosProvider) -> list[int]:
    with native.db.read() as conn:
        return sorted(_sql.live_seqs(conn, SPACE.id, time.time()))


def test_stats_and_frequencies_match_the_separate_reads(provider: MnemosProvider) -> None:
    terms = query_terms("Alice kitten Alps unknownword", 64)
    with provider.db.read() as conn:
        merged = _sql.stats_and_frequencies(conn, SPACE.id, terms)
        separate = (
            _sql.space_stats(conn, SPACE.id),
            _sql.document_frequencies(conn, SPACE.id, terms),
        )
        empty = _sql.stats_and_frequencies(conn, "no-such-space", terms)
    assert merged == separate
    assert merged[0] is not None
    assert merged[0][0] == len(TEXTS)
    assert set(merged[1]) == {t for t in terms if t != "unknownword"}
    assert empty == (None, {})


def test_neighbour_terms_match_neighbours_then_terms(provider: MnemosProvider) -> None:
    seqs = _seqs(provider)
    top, now = [seqs[0], seqs[2], seqs[-1]], time.time()
    with provider.db.read() as conn:
        near, found, asking = _sql.neighbour_terms(conn, SPACE.id, top, now, set(top))
        expected = _sql.neighbour_seqs(conn, SPACE.id, top, now)
        missing = {s for pair in expected.values() for s in pair} - set(top)
        terms = _sql.terms_by_seq(conn, SPACE.id, sorted(missing), None, now)
    assert near == expected
    assert found == terms
    # The rows that ask, among the listed rows and the rows before them.
    texts = dict(zip(seqs, TEXTS, strict=True))
    listed = set(top) | {s for seq in top for s in near[seq] if s < seq}
    assert asking == {s for s in listed if texts[s].rstrip().endswith("?")} == {seqs[1]}
    assert near[seqs[0]] == (seqs[1],)  # the first row has no previous one
    assert near[seqs[-1]] == (seqs[-2],)  # the other space's row is not a neighbour


def test_full_rows_carry_the_envelope(provider: MnemosProvider) -> None:
    seqs = _seqs(provider)
    with provider.db.read() as conn:
        rows = _sql.full_rows(conn, seqs)
    records = [_sql.insight(rows[s], SPACE) for s in seqs]
    assert [r.content for r in records] == TEXTS
    assert [r.tags for r in records] == [["chat"] if i % 2 else [] for i in range(len(TEXTS))]
    assert [r.metadata for r in records] == [{"turn": i} for i in range(len(TEXTS))]
    assert all(r.entities == [] and r.category == "general" for r in records)


@pytest.mark.parametrize("query", ["Alice kitten", "trip to the Alps", "lighthouse at dawn"])
def test_step_by_step_search_ranks_as_the_provider(provider: MnemosProvider, query: str) -> None:
    request = ProviderSearchRequest(query=query, limit=5)
    shown = provider.search(SPACE, request).results
    vector = provider._embed_query(query)
    context = _search.SearchContext(
        provider.weights, provider.embedder, provider._vectors, time.time()
    )
    with provider.db.read() as conn:
        stepped = _search.search(
            conn, SPACE, request, query_terms(query, 64), vector, context
        ).results
    assert shown, query
    assert [(r.id, r.score) for r in stepped] == [(r.id, r.score) for r in shown]
    # Searched twice with the provider's split rows kept: the same answer.
    assert [(r.id, r.score) for r in provider.search(SPACE, request).results] == [
        (r.id, r.score) for r in shown
    ]
