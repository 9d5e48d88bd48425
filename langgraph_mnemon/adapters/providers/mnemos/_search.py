"""One search of the native provider, step by step, inside the caller's read transaction.

1. space statistics and the query terms' document frequencies;
2. candidates: the keyword pool (``basic``: rows holding every term; otherwise the rarest
   terms' postings) and, in smart mode with a query vector, the dense pool (the database's
   HNSW index with pgvector, else an exact scan of the space's vectors held in memory);
3. every candidate scored in Python (:class:`._ranking.HybridScorer`, one batch of array
   operations that gives the row-by-row scores bit for bit), so SQLite and PostgreSQL give
   the same scores;
4. smart mode: a share of the best temporal neighbour's score added, then the pseudo-relevance
   feedback pass (the expansion terms' document frequencies: one more statement), then the
   conversation cues: rows that ask lowered and the row after one lifted, and, when the query
   names a date, the best rows dated then lifted (their dates: one more statement);
5. the best rows read in full and returned as :class:`MemoryRecord` results.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy.engine import Connection

from langgraph_mnemon.adapters.providers.mnemos._cues import apply_cues, apply_dates
from langgraph_mnemon.adapters.providers.mnemos._dates import named_date
from langgraph_mnemon.adapters.providers.mnemos._pgvector import (
    PgVector,
    all_cosines,
    configure,
    cosines,
    nearest,
)
from langgraph_mnemon.adapters.providers.mnemos._ranking import (
    Cosines,
    HybridScorer,
    HybridWeights,
    Score,
    VectorCache,
    VectorCaches,
    apply_adjacent,
    apply_feedback,
    apply_neighbour_boost,
    expansion_terms,
    feedback_candidates,
    matched_via,
    neighbour_candidates,
    prune_terms,
    ranked_seqs,
    similarity_range,
)
from langgraph_mnemon.adapters.providers.mnemos._sql import (
    Near,
    SqlVectors,
    document_frequencies,
    full_rows,
    insight,
    lexical_pool,
    live_seqs,
    neighbour_terms,
    row_dates,
    space_stats,
    stats_and_frequencies,
    terms_by_seq,
)
from langgraph_mnemon.memory_layers.spaces import (
    Embedder,
    ProviderSearchRequest,
    ProviderSearchResult,
    SpaceBinding,
)

__all__ = [
    "MAX_QUERY_TERMS",
    "Dates",
    "Fetched",
    "Frequencies",
    "Neighbours",
    "Reads",
    "SearchContext",
    "cached_vectors",
    "database_cosines",
    "dense_pool",
    "rank",
    "rank_all",
    "results",
    "scored",
    "search",
]

MAX_QUERY_TERMS = 64


@dataclass(frozen=True)
class SearchContext:
    """What a search needs from its provider: its weights, embedder and vector caches, the
    time (``now``, the provider's clock) rows whose time to live ran out are gone at, the
    database's pgvector (None: the vectors are searched in memory) and the rows' analysed terms
    already split (``parsed``: a pure function of the text, so the provider keeps one across
    searches; a new context starts empty)."""

    weights: HybridWeights
    embedder: Embedder | None
    caches: VectorCaches
    now: float
    pgvector: PgVector | None = None
    parsed: dict[str, Any] = field(default_factory=dict)


Neighbours = Callable[[list[int], set[int]], Near]
"""``(top seqs, seqs already scored) -> Near``: how a search reads the neighbours of its best
rows, their terms and which of them ask (a query or a lookup)."""

Frequencies = Callable[[list[str]], Mapping[str, int]]
"""``terms -> {term: document frequency}`` (terms no live row holds left out): how a search reads
the statistics of its feedback terms."""

Dates = Callable[[list[int]], Mapping[int, tuple[int, int, int]]]
"""``seqs -> {seq: (year, month, day)}``: how a search reads the dates of its best rows
(:func:`._dates.memory_date`)."""


@dataclass(frozen=True)
class Reads:
    """How a search reads more while it ranks: the neighbours of its best rows, the document
    frequencies of feedback terms (None skips the feedback pass) and the dates of its best
    rows (None skips the date cue)."""

    neighbours: Neighbours
    frequencies: Frequencies | None = None
    dates: Dates | None = None


@dataclass(frozen=True)
class Fetched:
    """What one search read: space statistics, the query terms' document frequencies, the
    analysed terms of the (filtered) candidates and the dense side (cache and dense pool)."""

    stats: tuple[int, int]
    df: Mapping[str, int]
    rows: Mapping[int, str]
    cache: VectorCache | Cosines | None
    dense: Mapping[int, float]


def search(
    conn: Connection,
    space: SpaceBinding,
    request: ProviderSearchRequest,
    terms: list[str],
    query_vector: np.ndarray | None,
    context: SearchContext,
) -> ProviderSearchResult:
    """Ranked rows of one space for the analysed query ``terms`` (see the module docstring).

    Args:
        conn: a connection inside a read transaction (one snapshot for every statement).
        space: the space searched.
        request: mode, limit and filters.
        terms: the analysed query terms (:func:`..text.query_terms`).
        query_vector: the unit query embedding (smart mode with an embedder), else None.
        context: weights, embedder and vector caches of the provider.

    Returns:
        The best ``request.limit`` rows, best first.

    Example:
        >>> with db.read() as conn:
        ...     search(conn, space, ProviderSearchRequest(query="tea"), ["tea"], None, ctx)
    """
    stats, df = stats_and_frequencies(conn, space.id, terms)
    if stats is None:
        return ProviderSearchResult(results=[])
    docs, total_terms, version = stats
    pool = _keyword_pool(conn, space.id, request, terms, df, context.weights)
    cache, dense = _dense_pool(conn, space.id, version, request, query_vector, context)
    candidates = list(dict.fromkeys([*pool, *dense]))
    if not candidates:
        hint = None if terms else "the query has no searchable words"
        return ProviderSearchResult(results=[], hint=hint)
    rows = terms_by_seq(conn, space.id, candidates, request, context.now)
    if isinstance(cache, Cosines) and query_vector is not None:  # pgvector: the rest's cosines
        cache = database_cosines(conn, dense, rows, query_vector, context)
    fetched = Fetched((docs, total_terms), df, rows, cache, dense)

    reads = Reads(
        lambda top, known: neighbour_terms(conn, space.id, top, context.now, known),
        lambda words: document_frequencies(conn, space.id, words),
        lambda seqs: row_dates(conn, seqs),
    )
    ranked, base, final = rank(fetched, terms, request, query_vector, context, reads)
    return results(space, ranked, full_rows(conn, ranked), base, final)


def rank_all(
    conn: Connection,
    space_id: str,
    terms: list[str],
    query_vector: np.ndarray | None,
    context: SearchContext,
) -> list[tuple[int, float, float]]:
    """Every live row of the space as ``(seq, score, cosine)``, best first: the smart score of
    :func:`rank`'s scorer without the neighbour and feedback lifts (the rows that hold a query
    term scored one by one, the others by their dense share at once), ties by the raw cosine
    (0 without a vector of the model), then the newer row.

    Example:
        >>> with db.read() as conn:
        ...     rank_all(conn, "notes", ["tea"], query_vector, ctx)[:2]
        [(9, 0.41, 0.72), (4, 0.05, 0.3)]
    """
    stats = space_stats(conn, space_id)
    seqs = np.asarray(
        live_seqs(conn, space_id, context.now) if stats is not None else [], dtype=np.int64
    )
    if stats is None or not seqs.size:
        return []
    docs, total_terms, version = stats
    df = document_frequencies(conn, space_id, terms)
    known = [t for t in terms if t in df]
    pool = lexical_pool(conn, space_id, known, "OR", int(seqs.size)) if known else []
    cache: VectorCache | Cosines | None = None
    cosine = np.zeros(seqs.size, dtype=np.float64)
    if query_vector is not None and context.embedder is not None:
        cache, cosine = _every_cosine(conn, space_id, version, seqs, query_vector, context)
    lo, hi = similarity_range(context.embedder)
    if cache is not None:
        final = context.weights.dense * np.clip((cosine - lo) / (hi - lo), 0.0, 1.0)
    else:
        final = np.zeros(seqs.size, dtype=np.float64)
    score = HybridScorer(
        terms, df, (docs, total_terms), context.weights, (lo, hi), (cache, {}, query_vector)
    )
    at = {int(s): i for i, s in enumerate(seqs.tolist())}
    rows = {
        s: t for s, t in terms_by_seq(conn, space_id, pool, None, context.now).items() if s in at
    }
    if rows:
        index = np.fromiter((at[s] for s in rows), np.int64, len(rows))
        final[index] = score.score_many(list(rows), list(rows.values()))[0]
    order = np.lexsort((-seqs, -cosine, -final))
    return [(int(seqs[i]), float(final[i]), float(cosine[i])) for i in order]


def _every_cosine(
    conn: Connection,
    space_id: str,
    version: int,
    seqs: np.ndarray,
    query_vector: np.ndarray,
    context: SearchContext,
) -> tuple[VectorCache | Cosines | None, np.ndarray]:
    """The cosine of each of ``seqs`` (0 without a vector of the model): computed by the
    database with pgvector, else from the in-memory vectors; None when none has a vector."""
    assert context.embedder is not None
    if context.pgvector is not None:
        model = context.embedder.model_id
        found = all_cosines(conn, context.pgvector, space_id, model, query_vector)
        if not found:
            return None, np.zeros(seqs.size, dtype=np.float64)
        values = np.fromiter((found.get(int(s), 0.0) for s in seqs), np.float64, seqs.size)
        return Cosines(found), values
    cache = cached_vectors(conn, space_id, version, query_vector, context)
    if cache is None:
        return None, np.zeros(seqs.size, dtype=np.float64)
    return cache, cache.cosines(seqs, query_vector)


def rank(
    fetched: Fetched,
    terms: list[str],
    request: ProviderSearchRequest,
    query_vector: np.ndarray | None,
    context: SearchContext,
    reads: Reads,
) -> tuple[list[int], dict[int, Score], dict[int, float]]:
    """Score the candidates in Python (one scorer for SQLite and PostgreSQL), lift the best
    ones by their temporal neighbours, by pseudo-relevance feedback and by the conversation
    cues in smart mode and keep the ``request.limit`` best.

    Args:
        fetched: what the search read (see :class:`Fetched`).
        terms: the analysed query terms.
        request: mode, limit and the query (the date cue reads the date it names).
        query_vector: the unit query embedding, or None.
        context: weights and embedder.
        reads: how the search reads neighbours, feedback statistics and dates
            (see :class:`Reads`).

    Returns:
        ``(ranked seqs, (final, lexical, semantic) per scored seq, final score per candidate)``;
        a final score may pass 1 once the cues lift it (:func:`results` reports at most 1).

    Example:
        >>> ranked, base, final = rank(fetched, ["tea"], request, None, ctx, Reads(neighbours))
    """
    score = HybridScorer(
        terms,
        fetched.df,
        fetched.stats,
        context.weights,
        similarity_range(context.embedder),
        (fetched.cache, fetched.dense, query_vector),
        parsed=context.parsed,
    )
    seqs = list(fetched.rows)
    index = score.rows(list(fetched.rows.values()))  # the candidates in the row table
    base = scored(score, fetched.rows, index)
    final = {seq: parts[0] for seq, parts in base.items()}
    weights = context.weights
    smart = request.mode == "smart" and bool(base)
    near = Near({}, {}, set())
    if smart and weights.neighbour > 0:
        # Score the neighbours of the best rows (reading the ones not yet scored) and lift
        # each of those rows by its best neighbour.
        near = reads.neighbours(neighbour_candidates(base, weights.neighbour_top), set(base))
        base.update(scored(score, near.terms))
        apply_neighbour_boost(final, base, near.seqs, weights.neighbour)
    if smart and weights.prf > 0 and reads.frequencies is not None:
        _feedback(final, fetched, terms, weights, reads.frequencies, (score.parsed, seqs, index))
    if weights.adjacent > 0 and near.seqs and not (request.category or request.source):
        # After feedback, which reads only candidates' terms: the neighbours join the ranking.
        apply_adjacent(final, base, near.seqs, weights.adjacent)
    if smart:
        _cues(final, near, request, weights, reads.dates)
    return ranked_seqs(final, request.limit, fetched.dense), base, final


def _cues(
    final: dict[int, float],
    near: Near,
    request: ProviderSearchRequest,
    weights: HybridWeights,
    dates: Dates | None,
) -> None:
    """The conversation cues of a smart search (:func:`._cues.apply_cues`), then the date
    cue when the query names a date: the dates of the best rows are read and the ones that
    agree lifted (:func:`._cues.apply_dates`)."""
    apply_cues(final, near.seqs, near.asking, weights)
    mention = named_date(request.query) if weights.dated > 0 and dates is not None else None
    if mention is None or dates is None:
        return
    seqs = np.fromiter(final, np.int64, len(final))
    scores = np.fromiter(final.values(), np.float64, len(final))
    top = max(request.limit, weights.neighbour_top)
    best = seqs[(-scores).argsort(kind="stable")[:top]].tolist()
    apply_dates(final, dates(best), mention, weights.dated)


def scored(
    score: HybridScorer, rows: Mapping[int, str], index: np.ndarray | None = None
) -> dict[int, Score]:
    """``{seq: (final, lexical, semantic)}`` of ``rows`` (seq -> analysed terms), scored as
    one batch (``index``: their :meth:`HybridScorer.rows`, when known).

    Example:
        >>> scored(score, {3: "alic hike"})
        {3: (0.62, 0.7, 0.17)}
    """
    if not rows:
        return {}
    seqs = list(rows)
    parts = score.score_many(seqs, list(rows.values()), index)
    return dict(zip(seqs, zip(*(p.tolist() for p in parts), strict=True), strict=True))


def _feedback(
    final: dict[int, float],
    fetched: Fetched,
    terms: list[str],
    weights: HybridWeights,
    frequencies: Frequencies,
    candidates: tuple[dict[str, Any], list[int], np.ndarray],
) -> None:
    """The pseudo-relevance feedback pass: expansion terms from the ``prf_docs`` best rows
    (ties to the newer row, as in :func:`ranked_seqs`), their keyword score added.

    ``candidates`` are the query scorer's parsed rows, the candidates' seqs (``final``'s
    order) and their indexes in its row table: no row is split or looked up again."""
    parsed, seqs, index = candidates
    assert list(final) == seqs  # the lifts below go by position
    order = np.fromiter(final, np.int64, len(final))
    scores = np.fromiter(final.values(), np.float64, len(final))
    top = order[np.lexsort((order, scores))[::-1][: weights.prf_docs]].tolist()
    texts = [fetched.rows[s] for s in top if final[s] > 0]
    words = feedback_candidates(texts, terms)
    if not words:
        return
    df = frequencies(words)
    expansion = expansion_terms(texts, df, fetched.stats[0], weights.prf_terms)
    if not expansion:
        return
    score = HybridScorer(
        expansion,
        {t: df[t] for t in expansion},
        fetched.stats,
        weights,
        (0.0, 1.0),
        (None, {}, None),
        parsed=parsed,
    )
    apply_feedback(final, lambda at: score.lexical_rows(index[at]), weights.prf)


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
    size = max(weights.pool, request.limit)  # a deeper search reads a deeper pool
    if request.mode == "basic":
        if known and len(known) == len(terms):
            return lexical_pool(conn, space_id, known, "AND", size)
        return []
    chosen = prune_terms(known, df, weights.posting_budget)
    return lexical_pool(conn, space_id, chosen, "OR", size)


def _dense_pool(
    conn: Connection,
    space_id: str,
    version: int,
    request: ProviderSearchRequest,
    query_vector: np.ndarray | None,
    context: SearchContext,
) -> tuple[VectorCache | None, dict[int, float]]:
    """The space's vectors at ``version`` and its dense pool (see :func:`dense_pool`); with
    pgvector the pool comes from the database (its cosines stand in for the vectors)."""
    if query_vector is None or request.mode != "smart":
        return None, {}
    if context.pgvector is not None:
        assert context.embedder is not None
        k = context.weights.dense_pool
        configure(conn, context.pgvector, k)
        model = context.embedder.model_id
        dense = nearest(conn, context.pgvector, space_id, model, query_vector, k)
        return Cosines(dense), dense
    cache = cached_vectors(conn, space_id, version, query_vector, context)
    return dense_pool(cache, query_vector, context.weights)


def database_cosines(
    conn: Connection,
    dense: Mapping[int, float],
    rows: Mapping[int, str],
    query_vector: np.ndarray,
    context: SearchContext,
) -> Cosines | None:
    """With pgvector: the dense pool's cosines plus those of the other candidates among
    ``rows`` (one statement); None when no candidate has a vector of the model.

    Example:
        >>> database_cosines(conn, {4: 0.8}, {4: "tea", 9: "cup"}, query_vector, context)
    """
    assert context.pgvector is not None
    assert context.embedder is not None
    rest = [s for s in rows if s not in dense]
    found = dict(dense)
    model = context.embedder.model_id
    found.update(cosines(conn, context.pgvector, model, query_vector, rest))
    return Cosines(found) if found else None


def cached_vectors(
    conn: Connection,
    space_id: str,
    version: int,
    query_vector: np.ndarray,
    context: SearchContext,
) -> VectorCache | None:
    """The space's in-memory vectors of the embedder's model and the query's dimension,
    brought up to the space's write ``version`` (only what changed is read); None when the
    space holds none.

    Example:
        >>> cache = cached_vectors(conn, "notes", 12, query_vector, context)
    """
    assert context.embedder is not None  # a query vector comes from the embedder
    model = context.embedder.model_id
    source = SqlVectors(conn, space_id, model)
    return context.caches.get(space_id, version, model, int(query_vector.shape[0]), source)


def dense_pool(
    cache: VectorCache | None, query_vector: np.ndarray, weights: HybridWeights
) -> tuple[VectorCache | None, dict[int, float]]:
    """The cache (None when there is none or its dimension differs from the query's) and its
    ``weights.dense_pool`` most similar rows (an exact scan, whatever the space's size).

    Example:
        >>> cache, dense = dense_pool(cache, query_vector, HybridWeights())
    """
    if cache is None or cache.dim != query_vector.shape[0]:
        return None, {}
    return cache, cache.top(query_vector, weights.dense_pool)


def results(
    space: SpaceBinding,
    ranked: list[int],
    full: Mapping[int, Mapping[str, Any]],
    base: Mapping[int, Score],
    final: Mapping[int, float],
) -> ProviderSearchResult:
    """The ``ranked`` rows read in ``full`` as :class:`MemoryRecord` results with their score
    (rounded to 6 decimals) and which signal found them.

    Example:
        >>> results(space, [3], {3: row}, {3: (0.5, 0.5, 0.0)}, {3: 0.5}).results[0].score
        0.5
    """
    out = []
    for seq in ranked:
        row = full.get(seq)
        if row is None:
            continue
        _, lexical, semantic = base[seq]
        via = matched_via(lexical, semantic, final[seq])
        # The cues may lift a row past 1: the ranking keeps the order, the score its range.
        out.append(insight(row, space, score=round(min(1.0, final[seq]), 6), via=via))
    return ProviderSearchResult(results=out)
