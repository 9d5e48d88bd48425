"""One search of the native provider on PostgreSQL in one statement (one round trip).

:func:`._search.search` reads step by step (statistics, document frequencies, keyword pool,
terms of the candidates, neighbours, full rows: six to eight statements). On PostgreSQL the
same reads are one statement of CTEs, whose result rows are tagged by ``kind``:

* ``0`` the space's ``(docs, terms, version)``;
* ``1`` each query term the space knows, with its document frequency;
* ``2`` each candidate (keyword pool: the tsvector AND / OR query over the rarest terms, exactly
  as :func:`._search._keyword_pool` chooses them; plus the dense pool passed in) that passes the
  filters: its analysed terms, the fields of its envelope and its previous / next live seq;
* ``3`` the terms of those neighbours that are not candidates themselves.

Scoring stays in Python (:func:`._search.rank`, the scorer SQLite uses too), so both databases
rank alike. With pgvector (schema step 4) the dense pool comes from the database's HNSW index
(:func:`vector_search`, in a read transaction). Without it, the dense pool comes from the
provider's in-memory vector cache: it is valid for the space version it was last brought up to,
and the statement returns the version it saw, so a stale cache is updated (the changed rows
only) and the search repeated. A statement in autocommit is
one snapshot; when writes keep changing the version, :func:`search` gives up (None) and the
caller uses the step-by-step search in a read transaction.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from langgraph_mnemon.adapters.providers.mnemos._dates import memory_date
from langgraph_mnemon.adapters.providers.mnemos._pgvector import configure, nearest
from langgraph_mnemon.adapters.providers.mnemos._ranking import Cosines, VectorCache, VectorCaches
from langgraph_mnemon.adapters.providers.mnemos._search import (
    Fetched,
    Reads,
    SearchContext,
    database_cosines,
    dense_pool,
    rank,
    results,
)
from langgraph_mnemon.adapters.providers.mnemos._sql import (
    Near,
    SqlVectors,
    document_frequencies,
    full_rows,
    row_dates,
)
from langgraph_mnemon.memory_layers.mnemos.schema import JsonText
from langgraph_mnemon.memory_layers.spaces import (
    ProviderSearchRequest,
    ProviderSearchResult,
    SpaceBinding,
)

__all__ = ["search", "vector_search"]

_ATTEMPTS = 3  # statements tried before the version stops moving (then: the caller's path)
_NO_WORDS = "the query has no searchable words"

# Quoted tsquery lexeme: backslashes and quotes doubled (tsquery input rules).
_LEXEME = "'''' || replace(replace(term, '\\', '\\\\'), '''', '''''') || ''''"

_HEAD = """
WITH qt AS (
  SELECT t.term, t.ord FROM unnest(CAST(:terms AS text[])) WITH ORDINALITY AS t(term, ord)
), df AS (
  SELECT st.term, st.df, qt.ord FROM qt CROSS JOIN LATERAL (
    SELECT st.term, st.df FROM mnemon_space_terms st
    WHERE st.space_id = :space AND st.term = qt.term AND st.df > 0 LIMIT 1
  ) st
)"""

# ``basic``: every query term must be known, all of them AND-ed (in query order).
_AND = f""", tsq AS (
  SELECT CASE WHEN count(*) = cardinality(CAST(:terms AS text[]))
    THEN CAST(string_agg({_LEXEME}, ' & ' ORDER BY ord) AS tsquery) END AS q FROM df
)"""

# Otherwise the rarest terms whose postings fit the budget (at least the rarest): the running
# sum over (df, query order) is prune_terms() of _ranking, OR-ed in that order.
_OR = f""", chosen AS (
  SELECT term, df, ord FROM (
    SELECT term, df, ord, row_number() OVER w AS rn, sum(df) OVER w AS cum FROM df
    WINDOW w AS (ORDER BY df, ord ROWS UNBOUNDED PRECEDING)
  ) x WHERE rn = 1 OR cum <= :budget
), tsq AS (
  SELECT CAST(string_agg({_LEXEME}, ' | ' ORDER BY df, ord) AS tsquery) AS q FROM chosen
)"""

_CANDIDATES = """, pool AS (
  SELECT seq FROM mnemon_insights
  WHERE space_id = :space AND tsv @@ (SELECT q FROM tsq)
  ORDER BY ts_rank(tsv, (SELECT q FROM tsq)) DESC, seq DESC LIMIT :pool
), cand AS (
  SELECT seq FROM pool UNION SELECT unnest(CAST(:dense AS bigint[]))
), hit AS (
  SELECT i.* FROM cand c CROSS JOIN LATERAL (
    SELECT i.seq, i.terms, i.id, i.content, i.category, i.importance, i.tags, i.entities,
           i.source, i.metadata, i.created_at
    FROM mnemon_insights i
    WHERE i.seq = c.seq AND i.space_id = :space AND i.deleted_at IS NULL{filters}
      AND (i.expires_at IS NULL OR i.expires_at > :now)
    LIMIT 1
  ) i
)"""


def _asks(alias: str) -> str:
    """Whether a row asks: ``._sql.asks()`` written for this text statement."""
    return f"CASE WHEN rtrim({alias}.content) LIKE '%?' THEN 1 ELSE 0 END"


# Every CTE reads rows by key, so its plan does not depend on the tables' statistics (a table
# never analysed, e.g. right after a bulk load, had a hash or nested-loop join over the whole
# space planned here). A LATERAL subquery with a LIMIT is not flattened into a join: it runs
# once per outer row on its index. ``df`` probes the terms' primary key once per query term,
# ``hit`` the rows' primary key once per candidate; ``near`` adds to each hit its previous /
# next live seq, each a LATERAL probe of the space index ``(space_id, deleted_at, seq)``
# whose ORDER BY names the index's columns (an index scan that stops at the first live row);
# ``extra`` probes the primary key once per neighbour that is not a hit.
_NEAR = f""", near AS (
  SELECT h.*, b.seq AS before, a.seq AS after FROM hit h
  LEFT JOIN LATERAL (
    SELECT n.seq FROM mnemon_insights n
    WHERE n.space_id = :space AND n.deleted_at IS NULL AND n.seq < h.seq
      AND (n.expires_at IS NULL OR n.expires_at > :now)
    ORDER BY n.space_id DESC, n.deleted_at DESC, n.seq DESC LIMIT 1
  ) b ON true
  LEFT JOIN LATERAL (
    SELECT n.seq FROM mnemon_insights n
    WHERE n.space_id = :space AND n.deleted_at IS NULL AND n.seq > h.seq
      AND (n.expires_at IS NULL OR n.expires_at > :now)
    ORDER BY n.space_id, n.deleted_at, n.seq LIMIT 1
  ) a ON true
), beside AS (
  SELECT before AS seq FROM near WHERE before IS NOT NULL
  UNION SELECT after FROM near WHERE after IS NOT NULL
  EXCEPT SELECT seq FROM hit
), extra AS (
  SELECT i.seq, i.terms, i.asks FROM beside x CROSS JOIN LATERAL (
    SELECT i.seq, i.terms, {_asks("i")} AS asks
    FROM mnemon_insights i
    WHERE i.seq = x.seq AND i.space_id = :space AND i.deleted_at IS NULL
      AND (i.expires_at IS NULL OR i.expires_at > :now)
    LIMIT 1
  ) i
)"""

_FIELDS = "h.id, h.content, h.category, h.importance, h.tags, h.entities, h.source, h.metadata"
_NO_FIELDS = "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"
# UNION ALL resolves column types branch by branch: the first branch names them.
_TYPED_NULLS = (
    "NULL::text, NULL::text, NULL::text, NULL::int, NULL::text, NULL::text, NULL::text, NULL::text"
)


_TAIL = f"""
SELECT 0 AS kind, NULL::bigint AS seq, NULL::text AS terms, s.docs::bigint AS a,
       s.terms::bigint AS b, s.version::bigint AS c, {_TYPED_NULLS}, NULL::float8 AS created_at
FROM mnemon_space_stats s WHERE s.space_id = :space
UNION ALL SELECT 1, NULL, df.term, df.df, NULL, NULL, {_NO_FIELDS}, NULL FROM df
UNION ALL SELECT 2, h.seq, h.terms, {{near_cols}}, {_asks("h")}, {_FIELDS}, h.created_at
FROM {{hits}} h
{{extra}}"""

_EXTRA = f"UNION ALL SELECT 3, x.seq, x.terms, x.asks, NULL, NULL, {_NO_FIELDS}, NULL FROM extra x"

_VERSION = sa.text("SELECT version FROM mnemon_space_stats WHERE space_id = :space")

_STATEMENTS: dict[tuple[bool, bool, bool, bool], sa.TextClause] = {}


def _statement(conjunction_and: bool, near: bool, category: bool, source: bool) -> sa.TextClause:
    """The search statement for one shape (built once per shape, so it is parsed once)."""
    key = (conjunction_and, near, category, source)
    found = _STATEMENTS.get(key)
    if found is not None:
        return found
    filters = (" AND i.category = :category" if category else "") + (
        " AND i.source = :source" if source else ""
    )
    tail = _TAIL.format(
        near_cols="h.before, h.after" if near else "NULL, NULL",
        hits="near" if near else "hit",
        extra=_EXTRA if near else "",
    )
    sql = _HEAD + (_AND if conjunction_and else _OR) + _CANDIDATES.format(filters=filters)
    statement = sa.text(sql + (_NEAR if near else "") + tail)
    _STATEMENTS[key] = statement
    return statement


@dataclass
class _Read:
    """The rows of one search statement, by kind."""

    stats: tuple[int, int, int] | None
    df: dict[str, int]
    rows: dict[int, str]
    full: dict[int, Sequence[Any]]
    near: dict[int, tuple[int, ...]]
    extra: dict[int, str]
    asking: set[int]


def _read(conn: Connection, params: Mapping[str, Any], statement: sa.TextClause) -> _Read:
    out = _Read(None, {}, {}, {}, {}, {}, set())
    for row in conn.execute(statement, params).all():  # one fetch, not a row at a time
        kind = row[0]
        if kind == 0:
            out.stats = (int(row[3]), int(row[4]), int(row[5]))
        elif kind == 1:
            out.df[row[2]] = int(row[3])
        elif kind == 2:
            seq = int(row[1])
            out.rows[seq] = row[2] or ""
            out.full[seq] = row
            out.near[seq] = tuple(int(x) for x in (row[3], row[4]) if x is not None)
            if row[5]:
                out.asking.add(seq)
        else:
            out.extra[int(row[1])] = row[2] or ""
            if row[3]:
                out.asking.add(int(row[1]))
    return out


# Which space version each provider's cached vectors (or their absence) belong to, kept beside
# its VectorCaches: {(space_id, model, dim): (version, has_vectors)}.
_KNOWN: weakref.WeakKeyDictionary[VectorCaches, dict[tuple[str, str, int], tuple[int, bool]]] = (
    weakref.WeakKeyDictionary()
)


def _cached(
    caches: VectorCaches, space_id: str, model: str, dim: int
) -> tuple[int | None, VectorCache | None]:
    """``(version, cache)`` the provider holds for the space without reading anything;
    ``(None, None)`` when it knows nothing current."""
    known = _KNOWN.setdefault(caches, {}).get((space_id, model, dim))
    if known is None:
        return None, None
    version, has_vectors = known
    cache = caches.peek(space_id, model, dim)
    if not has_vectors:
        return version, None
    if cache is None or cache.version != version:
        return None, None
    return version, cache


def _reload(
    conn: Connection,
    caches: VectorCaches,
    space_id: str,
    model: str,
    dim: int,
    version: int | None = None,
) -> tuple[int | None, VectorCache | None]:
    """Bring the space's vectors up to ``version`` (read first when not given), reading only
    what changed since the cache's version; remember that version, also when the space has
    no vectors of ``model``."""
    if version is None:
        found = conn.execute(_VERSION, {"space": space_id}).scalar()
        if found is None:
            return None, None
        version = int(found)
    cache = caches.get(space_id, version, model, dim, SqlVectors(conn, space_id, model))
    _KNOWN.setdefault(caches, {})[(space_id, model, dim)] = (version, cache is not None)
    return version, cache


def search(
    conn: Connection,
    space: SpaceBinding,
    request: ProviderSearchRequest,
    terms: list[str],
    query_vector: np.ndarray | None,
    context: SearchContext,
) -> ProviderSearchResult | None:
    """Ranked rows of one space, read in one statement (see the module docstring).

    Args:
        conn: a PostgreSQL connection in autocommit (each statement is one snapshot).
        space: the space searched.
        request: mode, limit and filters.
        terms: the analysed query terms.
        query_vector: the unit query embedding (smart mode with an embedder), else None.
        context: weights, embedder and vector caches of the provider.

    Returns:
        The result, or None when concurrent writes kept moving the space's version between
        the vector reload and the search (the caller then searches in a read transaction).

    Example:
        >>> with db.engine.connect() as conn:  # autocommit
        ...     found = search(conn, space, request, ["tea"], None, context)
    """
    statement = _statement(
        request.mode == "basic",
        context.weights.neighbour > 0 and request.mode == "smart",
        bool(request.category),
        bool(request.source),
    )
    if query_vector is None or request.mode != "smart" or context.embedder is None:
        read = _read(conn, _params(space.id, request, terms, {}, context), statement)
        return _ranked(conn, space, request, terms, None, context, read, None, {})
    model, dim = context.embedder.model_id, int(query_vector.shape[0])
    version, cache = _cached(context.caches, space.id, model, dim)
    if version is None:  # nothing known yet: read the vectors first
        version, cache = _reload(conn, context.caches, space.id, model, dim)
    for _ in range(_ATTEMPTS):
        cache, dense = dense_pool(cache, query_vector, context.weights)
        read = _read(conn, _params(space.id, request, terms, dense, context), statement)
        if read.stats is None or version == read.stats[2]:
            return _ranked(conn, space, request, terms, query_vector, context, read, cache, dense)
        version, cache = _reload(conn, context.caches, space.id, model, dim, read.stats[2])
        fresh, pool = dense_pool(cache, query_vector, context.weights)
        if version == read.stats[2] and pool.keys() == dense.keys():
            # The statement's candidates did not depend on the stale vectors: they stand.
            return _ranked(conn, space, request, terms, query_vector, context, read, fresh, pool)
    return None


def vector_search(
    conn: Connection,
    space: SpaceBinding,
    request: ProviderSearchRequest,
    terms: list[str],
    query_vector: np.ndarray,
    context: SearchContext,
) -> ProviderSearchResult:
    """A smart search with pgvector: the dense pool from the HNSW index (see
    :mod:`._pgvector`), then the one search statement, then the cosines of the keyword
    candidates outside the pool (one statement); nothing is cached in memory.

    Args:
        conn: a PostgreSQL connection in a read transaction (the ``SET LOCAL`` settings of
            the index scan last until it ends).
        space: the space searched.
        request: mode (``smart``), limit and filters.
        terms: the analysed query terms.
        query_vector: the unit query embedding.
        context: weights, embedder and the database's pgvector.

    Returns:
        The best ``request.limit`` rows, best first.

    Example:
        >>> with db.read() as conn:
        ...     vector_search(conn, space, request, ["tea"], query_vector, context)
    """
    assert context.pgvector is not None
    assert context.embedder is not None
    k = context.weights.dense_pool
    configure(conn, context.pgvector, k)
    model = context.embedder.model_id
    dense = nearest(conn, context.pgvector, space.id, model, query_vector, k)
    statement = _statement(
        False, context.weights.neighbour > 0, bool(request.category), bool(request.source)
    )
    read = _read(conn, _params(space.id, request, terms, dense, context), statement)
    found = database_cosines(conn, dense, read.rows, query_vector, context)
    return _ranked(conn, space, request, terms, query_vector, context, read, found, dense)


def _params(
    space_id: str,
    request: ProviderSearchRequest,
    terms: list[str],
    dense: Mapping[int, float],
    context: SearchContext,
) -> dict[str, Any]:
    return {
        "space": space_id,
        "terms": terms,
        "budget": context.weights.posting_budget,
        "pool": max(context.weights.pool, request.limit),
        "dense": list(dense),
        "category": request.category,
        "source": request.source,
        "now": context.now,
    }


def _ranked(
    conn: Connection,
    space: SpaceBinding,
    request: ProviderSearchRequest,
    terms: list[str],
    query_vector: np.ndarray | None,
    context: SearchContext,
    read: _Read,
    cache: VectorCache | Cosines | None,
    dense: Mapping[int, float],
) -> ProviderSearchResult:
    """Score what the statement read with the shared ranking (:func:`._search.rank`); the
    feedback pass reads its terms' document frequencies in one more statement."""
    if read.stats is None or read.stats[0] <= 0:
        return ProviderSearchResult(results=[])
    if not terms and not dense:  # no keyword pool and no dense pool: nothing to rank
        return ProviderSearchResult(results=[], hint=_NO_WORDS)
    fetched = Fetched(read.stats[:2], read.df, read.rows, cache, dense)

    def neighbours(top: list[int], known: set[int]) -> Near:
        near = {seq: read.near[seq] for seq in top}
        missing = {s for pair in near.values() for s in pair} - known
        return Near(near, {seq: read.extra[seq] for seq in missing}, read.asking)

    def dates(seqs: list[int]) -> dict[int, tuple[int, int, int]]:
        found = {}
        for seq in seqs:
            row = read.full.get(seq)
            if row is not None:
                date = memory_date(_JSON.process_result_value(row[13], None), row[14])
                if date is not None:
                    found[seq] = date
        return found | row_dates(conn, [seq for seq in seqs if seq not in read.full])

    reads = Reads(neighbours, lambda words: document_frequencies(conn, space.id, words), dates)
    ranked, base, final = rank(fetched, terms, request, query_vector, context, reads)
    full = {seq: _row(read.full[seq]) for seq in ranked if seq in read.full}
    beside = [seq for seq in ranked if seq not in full]  # neighbours that joined the ranking
    if beside:
        full.update(full_rows(conn, beside))
    return results(space, ranked, full, base, final)


_JSON = JsonText()
_FIELD_NAMES = ("id", "content", "category", "importance", "tags", "entities", "source")


def _row(row: Sequence[Any]) -> dict[str, Any]:
    """A kind-2 row as the mapping :func:`._sql.insight` reads (JSON decoded here, for the
    returned rows only)."""
    out = dict(zip(_FIELD_NAMES, row[6:13], strict=True))
    for name in ("tags", "entities"):
        out[name] = _JSON.process_result_value(out[name], None)  # type: ignore[arg-type]
    out["metadata"] = _JSON.process_result_value(row[13], None)  # type: ignore[arg-type]
    out["created_at"] = row[14]
    return out
