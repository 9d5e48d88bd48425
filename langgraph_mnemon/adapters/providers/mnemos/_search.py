"""One search of the native provider, step by step, inside the caller's read transaction.

1. space statistics and the query terms' document frequencies;
2. candidates: the keyword pool (``basic``: rows holding every term; otherwise the rarest
   terms' postings) and, in smart mode with a query vector, the dense pool;
3. every candidate scored in Python (:class:`._ranking.HybridScorer`), so SQLite and
   PostgreSQL give the same scores;
4. smart mode: a share of the best temporal neighbour's score added;
5. the best rows read in full and returned as :class:`MemoryRecord` results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from sqlalchemy.engine import Connection

from langgraph_mnemon.adapters.providers.mnemos._ranking import (
    HybridScorer,
    HybridWeights,
    Score,
    VectorCache,
    VectorCaches,
    apply_neighbour_boost,
    matched_via,
    neighbour_candidates,
    prune_terms,
    ranked_seqs,
    similarity_range,
)
from langgraph_mnemon.adapters.providers.mnemos._sql import (
    document_frequencies,
    full_rows,
    insight,
    lexical_pool,
    neighbour_seqs,
    space_stats,
    terms_by_seq,
    vector_rows,
)
from langgraph_mnemon.memory_layers.spaces import (
    Embedder,
    ProviderSearchRequest,
    ProviderSearchResult,
    SpaceBinding,
)

__all__ = ["MAX_QUERY_TERMS", "SearchContext", "search"]

MAX_QUERY_TERMS = 64


@dataclass(frozen=True)
class SearchContext:
    """What a search needs from its provider: its weights, embedder and vector caches."""

    weights: HybridWeights
    embedder: Embedder | None
    caches: VectorCaches


def search(
    conn: Connection,
    space: SpaceBinding,
    request: ProviderSearchRequest,
    terms: list[str],
    query_vector: np.ndarray | None,
    context: SearchContext,
) -> ProviderSearchResult:
    """Ranked rows of one space for the analysed query ``terms`` (see the module docstring)."""
    stats = space_stats(conn, space.id)
    if stats is None:
        return ProviderSearchResult(results=[])
    docs, total_terms, version = stats
    df = document_frequencies(conn, space.id, terms)
    pool = _keyword_pool(conn, space.id, request, terms, df, context.weights)
    cache, dense = _dense_pool(conn, space.id, version, request, query_vector, context)
    candidates = list(dict.fromkeys([*pool, *dense]))
    if not candidates:
        hint = None if terms else "the query has no searchable words"
        return ProviderSearchResult(results=[], hint=hint)
    rows = terms_by_seq(conn, space.id, candidates, request)
    score = HybridScorer(
        terms,
        df,
        (docs, total_terms),
        context.weights,
        similarity_range(context.embedder),
        (cache, dense, query_vector),
    )
    base = {seq: score(seq, text) for seq, text in rows.items()}
    final = {seq: parts[0] for seq, parts in base.items()}
    if context.weights.neighbour > 0 and request.mode == "smart" and base:
        _boost_by_neighbours(conn, space.id, base, final, score, context.weights)
    ranked = ranked_seqs(final, request.limit)
    return _results(space, ranked, full_rows(conn, ranked), base, final)


def _keyword_pool(
    conn: Connection,
    space_id: str,
    request: ProviderSearchRequest,
    terms: list[str],
    df: Mapping[str, int],
    weights: HybridWeights,
) -> list[int]:
    """``basic``: rows holding every query term (none when a term is unknown to the space);
    otherwise rows holding any of the rarest terms."""
    known = [t for t in terms if t in df]
    if request.mode == "basic":
        if known and len(known) == len(terms):
            return lexical_pool(conn, space_id, known, "AND", weights.pool)
        return []
    chosen = prune_terms(known, df, weights.posting_budget)
    return lexical_pool(conn, space_id, chosen, "OR", weights.pool)


def _dense_pool(
    conn: Connection,
    space_id: str,
    version: int,
    request: ProviderSearchRequest,
    query_vector: np.ndarray | None,
    context: SearchContext,
) -> tuple[VectorCache | None, dict[int, float]]:
    """The space's vectors (None when there are none or their dimension differs from the
    query's) and, while the space is small enough to scan, its most similar rows."""
    if query_vector is None or request.mode != "smart":
        return None, {}
    assert context.embedder is not None  # a query vector comes from the embedder
    model = context.embedder.model_id
    cache = context.caches.get(space_id, version, model, lambda: vector_rows(conn, space_id, model))
    if cache is None or cache.matrix.shape[1] != query_vector.shape[0]:
        return None, {}
    if cache.matrix.shape[0] <= context.weights.dense_scan_limit:
        return cache, cache.top(query_vector, context.weights.dense_pool)
    return cache, {}


def _boost_by_neighbours(
    conn: Connection,
    space_id: str,
    base: dict[int, Score],
    final: dict[int, float],
    score: HybridScorer,
    weights: HybridWeights,
) -> None:
    """Score the temporal neighbours of the best rows (reading the ones not yet scored) and
    lift each of those rows by its best neighbour."""
    top = neighbour_candidates(base, weights.neighbour_top)
    near = neighbour_seqs(conn, space_id, top)
    missing = {s for pair in near.values() for s in pair} - set(base)
    if missing:
        extra = terms_by_seq(conn, space_id, list(missing), None)
        for seq, text in extra.items():
            base[seq] = score(seq, text)
    apply_neighbour_boost(final, base, near, weights.neighbour)


def _results(
    space: SpaceBinding,
    ranked: list[int],
    full: Mapping[int, Mapping[str, object]],
    base: Mapping[int, Score],
    final: Mapping[int, float],
) -> ProviderSearchResult:
    results = []
    for seq in ranked:
        row = full.get(seq)
        if row is None:
            continue
        _, lexical, semantic = base[seq]
        via = matched_via(lexical, semantic)
        results.append(insight(row, space, score=round(final[seq], 6), via=via))
    return ProviderSearchResult(results=results)
