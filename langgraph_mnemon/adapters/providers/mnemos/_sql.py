"""The native provider's SQL: prepared statements, keyword-index tokens and the read queries.

Everything here takes an open :class:`~sqlalchemy.engine.Connection` (the provider owns the
transactions) and returns plain values or contract models; no scoring happens here (that is
:mod:`._ranking`). The keyword index is SQLite FTS5 (tokens prefixed by a per-space token) or a
PostgreSQL ``tsvector`` column; :func:`lexical_pool` hides the difference.

The module is over 900 lines because it is one concept: every statement the native provider
sends, for both dialects, so a column or an index is changed in one place (the reads of one
search share their compiled forms, :func:`_search_rows`).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from langgraph_mnemon.adapters.providers.mnemos._dates import dated
from langgraph_mnemon.errors import ProviderError
from langgraph_mnemon.memory_layers.mnemos.schema import JsonText
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    DiscoveredSpace,
    GraphEdge,
    GraphNode,
    GraphProjection,
    MemoryRecord,
    ProviderSearchRequest,
    ProviderStatus,
    RelatedRequest,
    RememberItem,
    SpaceBinding,
)
from langgraph_mnemon.memory_layers.spaces.schema import (
    EDGES,
    ENTITIES,
    FTS_TABLE,
    INSIGHTS,
    SPACE_STATS,
    SPACE_TERMS,
    SPACES,
    VECTORS,
)

__all__ = [
    "UNEXPIRED",
    "Near",
    "SqlVectors",
    "asks",
    "browse_rows",
    "database_size",
    "dedupe_edges",
    "document_frequencies",
    "edge_row",
    "fts_text",
    "full_rows",
    "graph_projection",
    "history_browse_rows",
    "history_record",
    "insert_statement",
    "insight",
    "is_live",
    "lexical_pool",
    "live_items",
    "live_rows",
    "live_seqs",
    "neighbour_seqs",
    "neighbour_terms",
    "related_walk",
    "row_by_id",
    "row_dates",
    "rows_by_metadata",
    "space_stats",
    "space_status",
    "space_token",
    "stats_and_frequencies",
    "terms_by_seq",
    "uncatalogued_spaces",
    "vector_models",
]

_CHUNK = 500  # ids per IN (...) list: well under every driver's bind-parameter limit


def _listed(column: Any, name: str, item: Any, dialect: str) -> Any:
    """``column IN`` a list bound as ONE parameter (a JSON array read by ``json_each`` on
    SQLite, an array on PostgreSQL): the statement is compiled once whatever the list's
    length, where an expanding ``IN`` is rendered again on every call (a hot-path cost)."""
    if dialect == "postgresql":
        # Deferred: the PostgreSQL dialect module is loaded only when PostgreSQL is used.
        from sqlalchemy.dialects.postgresql import ARRAY

        return column == sa.any_(sa.bindparam(name, type_=ARRAY(item)))
    values = sa.func.json_each(sa.bindparam(name, type_=sa.String)).table_valued("value")
    return column.in_(sa.select(values.c.value))


def _list_param(dialect: str, values: Sequence[Any]) -> Any:
    """A list as :func:`_listed` binds it."""
    return list(values) if dialect == "postgresql" else json.dumps(list(values))


def _neighbour_statement(dialect: str, asking: bool = False) -> sa.Select[Any]:
    """Each listed row's previous and next live row of its space (and, with ``asking``,
    whether the row asks: :func:`asks`)."""
    inner = INSIGHTS.alias("n")
    live = sa.and_(
        inner.c.space_id == sa.bindparam("space"),
        inner.c.deleted_at.is_(None),
        sa.or_(inner.c.expires_at.is_(None), inner.c.expires_at > sa.bindparam("now")),
    )
    # ORDER BY the space index's columns + LIMIT 1: an index scan that stops at the first
    # live row, whatever the statistics (min / max could be planned as an aggregate over the
    # whole space on a table never analysed, e.g. right after a bulk load).
    before = (
        sa.select(inner.c.seq)
        .where(live, inner.c.seq < INSIGHTS.c.seq)
        .order_by(inner.c.space_id.desc(), inner.c.deleted_at.desc(), inner.c.seq.desc())
        .limit(1)
    ).scalar_subquery()
    after = (
        sa.select(inner.c.seq)
        .where(live, inner.c.seq > INSIGHTS.c.seq)
        .order_by(inner.c.space_id, inner.c.deleted_at, inner.c.seq)
        .limit(1)
    ).scalar_subquery()
    columns = [INSIGHTS.c.seq, before.label("before"), after.label("after")]
    if asking:
        columns.append(asks(INSIGHTS.c.content).label("asks"))
    return sa.select(*columns).where(_listed(INSIGHTS.c.seq, "seqs", sa.BigInteger, dialect))


def _neighbour_terms_statement(dialect: str) -> sa.Select[Any]:
    """:func:`_neighbour_statement` with the analysed terms of both neighbours (one read where
    the neighbours and then their terms were two). On SQLite the neighbours are a materialised
    CTE: as a subquery SQLite flattens them into the join and looks each one up twice."""
    if dialect == "sqlite" and sqlite3.sqlite_version_info >= (3, 35):
        near = _neighbour_statement(dialect, True).cte("near").prefix_with("MATERIALIZED")
    else:
        near = _neighbour_statement(dialect, True).subquery("near")
    before, after = INSIGHTS.alias("b"), INSIGHTS.alias("a")
    joined = near.outerjoin(before, before.c.seq == near.c.before).outerjoin(
        after, after.c.seq == near.c.after
    )
    return sa.select(
        near.c.seq,
        near.c.before,
        before.c.terms,
        near.c.after,
        after.c.terms,
        near.c.asks,
        asks(before.c.content),
    ).select_from(joined)


def asks(content: Any) -> Any:
    """SQL: whether a row's text ends with a question mark (trailing spaces aside), 1 or 0;
    the one definition of a question row (``HybridWeights.question``)."""
    return sa.case((sa.func.rtrim(content).like("%?"), 1), else_=0)


def _stats_and_df_statement(dialect: str) -> Any:
    """The space's statistics (``kind`` 0) and its query terms' document frequencies
    (``kind`` 1) in one read."""
    stats = sa.select(
        sa.literal(0).label("kind"),
        sa.cast(sa.null(), sa.Text).label("term"),
        SPACE_STATS.c.docs.label("n"),
        SPACE_STATS.c.terms.label("total"),
        SPACE_STATS.c.version.label("version"),
    ).where(SPACE_STATS.c.space_id == sa.bindparam("space"))
    df = sa.select(
        sa.literal(1),
        SPACE_TERMS.c.term,
        SPACE_TERMS.c.df,
        sa.null(),
        sa.null(),
    ).where(
        SPACE_TERMS.c.space_id == sa.bindparam("space"),
        _listed(SPACE_TERMS.c.term, "terms", sa.Text, dialect),
    )
    return sa.union_all(stats, df)


# What :func:`insight` reads of a row, the JSON columns as their raw text: a search's rows are
# decoded by :func:`_envelope` (most tags / entities lists are empty, and json.loads through
# the column type was a good part of a search's time).
_ENVELOPE = (
    INSIGHTS.c.seq,
    INSIGHTS.c.id,
    INSIGHTS.c.content,
    INSIGHTS.c.category,
    INSIGHTS.c.importance,
    sa.type_coerce(INSIGHTS.c.tags, sa.Text).label("tags"),
    sa.type_coerce(INSIGHTS.c.entities, sa.Text).label("entities"),
    INSIGHTS.c.source,
    sa.type_coerce(INSIGHTS.c.metadata, sa.Text).label("metadata"),
    INSIGHTS.c.created_at,
)
_ENVELOPE_KEYS = tuple(c.key for c in _ENVELOPE)
_JSON_KEYS = ("tags", "entities", "metadata")
_JSON = JsonText()


def _json_value(text: str | None) -> Any:
    """One stored JSON column's value, as the column type reads it (empty ones without a
    parse)."""
    if text == "[]":
        return []
    if text == "{}":
        return {}
    return _JSON.process_result_value(text, None)  # type: ignore[arg-type]


def _envelope(row: Sequence[Any]) -> dict[str, Any]:
    """A row of :data:`_ENVELOPE` as the mapping :func:`insight` reads."""
    out = dict(zip(_ENVELOPE_KEYS, row, strict=True))
    for key in _JSON_KEYS:
        out[key] = _json_value(out[key])
    return out


# Not yet expired at ``now`` (rows without a time to live never expire; schema step 3).
UNEXPIRED = sa.or_(INSIGHTS.c.expires_at.is_(None), INSIGHTS.c.expires_at > sa.bindparam("now"))


def _stated_date(dialect: str) -> Any:
    """SQL: a row's ``metadata["date"]`` (a JSON string comes out as text, a number as a
    number on SQLite and as text on PostgreSQL: either way not a date)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import JSONB  # deferred, as in _listed

        return sa.cast(INSIGHTS.c.metadata, JSONB).op("->>")("date")
    return sa.func.json_extract(INSIGHTS.c.metadata, "$.date")


def _search_statements(dialect: str) -> dict[str, Any]:
    """The search reads of one dialect, built once so SQLAlchemy compiles each of them once."""
    seqs = _listed(INSIGHTS.c.seq, "seqs", sa.BigInteger, dialect)
    return {
        # The candidates a search scores: live and unexpired (an expired row is gone at once).
        "terms": sa.select(INSIGHTS.c.seq, INSIGHTS.c.terms).where(
            seqs,
            INSIGHTS.c.space_id == sa.bindparam("space"),
            INSIGHTS.c.deleted_at.is_(None),
            UNEXPIRED,
        ),
        "rows": sa.select(*_ENVELOPE).where(seqs),
        "near": _neighbour_statement(dialect),
        "near_terms": _neighbour_terms_statement(dialect),
        "dates": sa.select(INSIGHTS.c.seq, _stated_date(dialect), INSIGHTS.c.created_at).where(
            seqs
        ),
        "stats_df": _stats_and_df_statement(dialect),
        "df": sa.select(SPACE_TERMS.c.term, SPACE_TERMS.c.df).where(
            SPACE_TERMS.c.space_id == sa.bindparam("space"),
            _listed(SPACE_TERMS.c.term, "terms", sa.Text, dialect),
        ),
    }


# Hot-path statements per dialect, built on the dialect's first search (building PostgreSQL's
# loads SQLAlchemy's PostgreSQL dialect, which a SQLite host never needs).
_SEARCH: dict[str, dict[str, Any]] = {}
_STATS = sa.select(SPACE_STATS.c.docs, SPACE_STATS.c.terms, SPACE_STATS.c.version).where(
    SPACE_STATS.c.space_id == sa.bindparam("space")
)


def _reads(conn: Connection) -> dict[str, Any]:
    name = conn.dialect.name
    found = _SEARCH.get(name)
    if found is None:
        if name not in ("sqlite", "postgresql"):
            raise ProviderError(f"unsupported database dialect {name!r}")
        found = _SEARCH.setdefault(name, _search_statements(name))
    return found


# SQLite: each search read compiled once to ``(SQL, parameter order, default values)``.
_DRIVER: dict[str, tuple[str, tuple[str, ...], dict[str, Any]]] = {}


def _search_rows(conn: Connection, name: str, params: Mapping[str, Any]) -> list[Any]:
    """The rows of the search read ``name`` (:func:`_search_statements`). On SQLite it runs on
    the transaction's driver connection with its SQL compiled once (the read's columns need
    no result processing), where SQLAlchemy's per-call statement and row handling cost as
    much as SQLite's own work; elsewhere through SQLAlchemy."""
    if conn.dialect.name != "sqlite":
        return list(conn.execute(_reads(conn)[name], params).all())
    found = _DRIVER.get(name)
    if found is None:
        compiled = _reads(conn)[name].compile(dialect=conn.dialect)
        order = tuple(compiled.positiontup or ())
        found = _DRIVER.setdefault(name, (str(compiled), order, dict(compiled.params)))
    sql, order, defaults = found
    driver = conn.connection.driver_connection
    assert driver is not None
    values = tuple(params[k] if k in params else defaults[k] for k in order)
    return driver.execute(sql, values).fetchall()


# ------------------------------------------------------------------ keyword-index tokens


def space_token(space_id: str) -> str:
    """17 characters that prefix every keyword-index token of one space."""
    return "s" + hashlib.blake2b(space_id.encode(), digest_size=8).hexdigest()


def fts_text(space_token: str, terms: str) -> str:
    """The FTS5 document of one row: its analysed terms, each prefixed by the space token."""
    return " ".join(space_token + t for t in terms.split())


_FTS_POOL = (
    f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? ORDER BY bm25({FTS_TABLE}) LIMIT ?"
)


def _fts_query(space_token: str, terms: Sequence[str], conjunction: str) -> str:
    return f" {conjunction} ".join(f'"{space_token}{t}"' for t in terms)


def _pg_query(terms: Sequence[str], conjunction: str) -> str:
    op = " & " if conjunction == "AND" else " | "
    return op.join(f"'{t}'" for t in terms)


# ------------------------------------------------------------------ rows and edges


def insert_statement(dialect: str, table: sa.Table) -> Any:
    """The dialect's ``INSERT`` construct (it has ``on_conflict_do_update``)."""
    # Deferred: each dialect module is loaded only when that database is used.
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table)


def edge_row(
    space_id: str, source: str, target: str, kind: str, weight: float, now: float
) -> dict[str, Any]:
    """One ``mnemon_insight_edges`` row (no reason)."""
    return {
        "space_id": space_id,
        "source_id": source,
        "target_id": target,
        "edge_type": kind,
        "weight": weight,
        "reason": None,
        "created_at": now,
    }


def dedupe_edges(edges: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per ``(source, target, type)``, the last one winning (one upsert batch)."""
    unique: dict[tuple[str, str, str], dict[str, Any]] = {}
    for edge in edges:
        unique[(edge["source_id"], edge["target_id"], edge["edge_type"])] = edge
    return list(unique.values())


def insight(
    row: Mapping[str, Any],
    space: SpaceBinding,
    *,
    score: float | None = None,
    via: str | None = None,
    depth: int | None = None,
    edge_type: str | None = None,
) -> MemoryRecord:
    """A stored row as the contract's :class:`MemoryRecord`."""
    return MemoryRecord(
        id=row["id"],
        content=row["content"],
        category=row["category"],
        importance=int(row["importance"]),
        tags=list(row["tags"] or []),
        entities=list(row["entities"] or []),
        source=row["source"],
        metadata=dict(row["metadata"] or {}),
        score=score,
        matched_via=via,
        created_at=float(row["created_at"]),
        depth=depth,
        edge_type=edge_type,
        space_id=space.id,
        space_name=space.name,
    )


# ------------------------------------------------------------------ search reads


def space_stats(conn: Connection, space_id: str) -> tuple[int, int, int] | None:
    """``(docs, terms, version)`` of a space that holds live rows; None when it holds none."""
    stats = conn.execute(_STATS, {"space": space_id}).first()
    if stats is None or int(stats[0]) <= 0:
        return None
    return int(stats[0]), int(stats[1]), int(stats[2])


def stats_and_frequencies(
    conn: Connection, space_id: str, terms: list[str]
) -> tuple[tuple[int, int, int] | None, dict[str, int]]:
    """:func:`space_stats` and :func:`document_frequencies` of ``terms`` in one statement.

    Example:
        >>> stats_and_frequencies(conn, "notes", ["tea"])
        ((12, 80, 3), {'tea': 2})
    """
    if not terms:
        return space_stats(conn, space_id), {}
    params = {"space": space_id, "terms": _list_param(conn.dialect.name, terms)}
    stats: tuple[int, int, int] | None = None
    df: dict[str, int] = {}
    for kind, term, n, total, version in _search_rows(conn, "stats_df", params):
        if kind == 0:
            stats = (int(n), int(total), int(version)) if int(n) > 0 else None
        elif int(n) > 0:
            df[term] = int(n)
    return stats, df


def document_frequencies(conn: Connection, space_id: str, terms: list[str]) -> dict[str, int]:
    """Per-space document frequency of the query terms that some live row contains."""
    if not terms:
        return {}
    params = {"space": space_id, "terms": _list_param(conn.dialect.name, terms)}
    return {t: int(n) for t, n in _search_rows(conn, "df", params) if int(n) > 0}


def lexical_pool(
    conn: Connection, space_id: str, terms: list[str], conjunction: str, pool: int
) -> list[int]:
    """Up to ``pool`` candidate seqs from the keyword index (``AND`` or ``OR`` of ``terms``)."""
    if not terms:
        return []
    if conn.dialect.name == "sqlite":
        query = _fts_query(space_token(space_id), terms, conjunction)
        driver = conn.connection.driver_connection  # as _search_rows: no per-call wrapping
        assert driver is not None
        return [int(r[0]) for r in driver.execute(_FTS_POOL, (query, pool)).fetchall()]
    if conn.dialect.name == "postgresql":
        return [
            int(r[0])
            for r in conn.execute(
                sa.text(
                    "SELECT seq FROM mnemon_insights WHERE space_id = :space AND "
                    "tsv @@ CAST(:q AS tsquery) "
                    "ORDER BY ts_rank(tsv, CAST(:q AS tsquery)) DESC, seq DESC LIMIT :pool"
                ),
                {"space": space_id, "q": _pg_query(terms, conjunction), "pool": pool},
            ).all()
        ]
    raise ProviderError(f"unsupported database dialect {conn.dialect.name!r}")


class SqlVectors:
    """The stored vectors of one space and model, read for an in-memory
    :class:`._ranking.VectorCache` (each method one statement on the space's vector index).

    Example:
        >>> cache = caches.get("notes", version, model, 384, SqlVectors(conn, "notes", model))
    """

    def __init__(self, conn: Connection, space_id: str, model: str) -> None:
        self.conn = conn
        self.space_id = space_id
        self.model = model

    @property
    def where(self) -> sa.ColumnElement[bool]:
        """Space and model: the vector index covers them, so the summary and the seqs are read
        from the index alone (a vector of another dimension is the cache's to set aside).
        Built on first use: a search whose cache is current reads nothing."""
        return sa.and_(VECTORS.c.space_id == self.space_id, VECTORS.c.model == self.model)

    def after(self, seq: int) -> tuple[list[Any], tuple[int, int]]:
        """``(seq, bytes)`` of the vectors with a seq above ``seq``, and ``(count, sum of
        seqs)`` of all of them: one statement (a search on a stale version pays one read)."""
        new = sa.select(
            VECTORS.c.insight_seq,
            VECTORS.c.vector,
            sa.null().label("n"),
            sa.null().label("total"),
        ).where(self.where, VECTORS.c.insight_seq > seq)
        totals = sa.select(
            sa.null(),
            sa.null(),
            sa.func.count(),
            sa.func.coalesce(sa.func.sum(VECTORS.c.insight_seq), 0),
        ).where(self.where)
        rows: list[Any] = []
        summary = (0, 0)
        for row in self.conn.execute(sa.union_all(new, totals)).all():
            if row[0] is None:
                summary = (int(row[2]), int(row[3]))
            else:
                rows.append(row)
        return rows, summary

    def seqs(self) -> list[int]:
        """The seqs of every stored vector."""
        stmt = sa.select(VECTORS.c.insight_seq).where(self.where)
        return [int(s) for s in self.conn.execute(stmt).scalars()]

    def rows(self, seqs: Sequence[int]) -> list[Any]:
        """``(seq, bytes)`` of the vectors among ``seqs``."""
        out: list[Any] = []
        for start in range(0, len(seqs), _CHUNK):
            stmt = sa.select(VECTORS.c.insight_seq, VECTORS.c.vector).where(
                self.where, VECTORS.c.insight_seq.in_(list(seqs[start : start + _CHUNK]))
            )
            out.extend(self.conn.execute(stmt).all())
        return out


def vector_models(conn: Connection, space_id: str) -> set[str]:
    """The embedder models the space's stored vectors come from (the vector index covers
    the read)."""
    stmt = sa.select(VECTORS.c.model).where(VECTORS.c.space_id == space_id).distinct()
    return {str(m) for m in conn.execute(stmt).scalars()}


def live_seqs(conn: Connection, space_id: str, now: float) -> list[int]:
    """The seqs of every live row of the space not expired at ``now`` (the space index
    covers them)."""
    stmt = sa.select(INSIGHTS.c.seq).where(
        INSIGHTS.c.space_id == space_id, INSIGHTS.c.deleted_at.is_(None), UNEXPIRED
    )
    return [int(s) for s in conn.execute(stmt, {"now": now}).scalars()]


def terms_by_seq(
    conn: Connection,
    space_id: str,
    seqs: list[int],
    request: ProviderSearchRequest | None,
    now: float,
) -> dict[int, str]:
    """Analysed terms of the live rows among ``seqs`` not expired at ``now`` (filtered like
    ``request`` when given)."""
    if not seqs:
        return {}
    params = {"seqs": _list_param(conn.dialect.name, seqs), "space": space_id, "now": now}
    if request is None or not (request.category or request.source):
        return {int(s): t or "" for s, t in _search_rows(conn, "terms", params)}
    stmt = _reads(conn)["terms"]
    if request.category:
        stmt = stmt.where(INSIGHTS.c.category == request.category)
    if request.source:
        stmt = stmt.where(INSIGHTS.c.source == request.source)
    return {int(s): t or "" for s, t in conn.execute(stmt, params).all()}


def full_rows(conn: Connection, seqs: list[int]) -> dict[int, Mapping[str, Any]]:
    """The rows by seq, with every field :func:`insight` reads (one statement)."""
    if not seqs:
        return {}
    params = {"seqs": _list_param(conn.dialect.name, seqs)}
    return {int(r[0]): _envelope(r) for r in _search_rows(conn, "rows", params)}


def neighbour_seqs(
    conn: Connection, space_id: str, seqs: list[int], now: float
) -> dict[int, tuple[int, ...]]:
    """The previous and next live, unexpired row of the same space for each ``seq`` (one
    query)."""
    if not seqs:
        return {}
    params = {"seqs": _list_param(conn.dialect.name, seqs), "space": space_id, "now": now}
    rows = conn.execute(_reads(conn)["near"], params).all()
    return {int(s): tuple(int(x) for x in (b, a) if x is not None) for s, b, a in rows}


def neighbour_terms(
    conn: Connection, space_id: str, seqs: list[int], now: float, known: set[int]
) -> Near:
    """:func:`neighbour_seqs`, the analysed terms of the neighbours not in ``known`` (the
    neighbours are live and unexpired, as :func:`terms_by_seq` reads them) and which of the
    rows and their previous neighbours are questions: one statement.

    Example:
        >>> neighbour_terms(conn, "notes", [5], now, {5})
        Near(seqs={5: (4, 6)}, terms={4: 'alic hike', 6: 'bob tea'}, asking={4})
    """
    if not seqs:
        return Near({}, {}, set())
    params = {"seqs": _list_param(conn.dialect.name, seqs), "space": space_id, "now": now}
    out = Near({}, {}, set())
    for seq, before, before_terms, after, after_terms, asks_row, asks_before in _search_rows(
        conn, "near_terms", params
    ):
        out.seqs[int(seq)] = tuple(int(x) for x in (before, after) if x is not None)
        for other, text in ((before, before_terms), (after, after_terms)):
            if other is not None and int(other) not in known:
                out.terms[int(other)] = text or ""
        if asks_row:
            out.asking.add(int(seq))
        if asks_before and before is not None:
            out.asking.add(int(before))
    return out


class Near(NamedTuple):
    """What a search reads about the neighbours of its best rows: each row's previous and
    next live row (``seqs``), the analysed terms of the neighbours not yet scored (``terms``)
    and the rows known to be questions, among those rows and their previous ones
    (``asking``)."""

    seqs: dict[int, tuple[int, ...]]
    terms: dict[int, str]
    asking: set[int]


def row_dates(conn: Connection, seqs: list[int]) -> dict[int, tuple[int, int, int]]:
    """The date of each row of ``seqs`` (:func:`._dates.memory_date`): one statement that
    reads only ``metadata["date"]`` and ``created_at``.

    Example:
        >>> row_dates(conn, [5])
        {5: (2023, 5, 8)}
    """
    if not seqs:
        return {}
    params = {"seqs": _list_param(conn.dialect.name, seqs)}
    out: dict[int, tuple[int, int, int]] = {}
    for seq, stated, created_at in _search_rows(conn, "dates", params):
        found = dated(stated, created_at)
        if found is not None:
            out[int(seq)] = found
    return out


# ------------------------------------------------------------------ other reads


def live_items(conn: Connection, space_id: str) -> list[RememberItem]:
    """The live rows of a space, oldest first, as items to remember elsewhere (merge)."""
    rows = conn.execute(
        sa.select(INSIGHTS)
        .where(INSIGHTS.c.space_id == space_id, INSIGHTS.c.deleted_at.is_(None))
        .order_by(INSIGHTS.c.seq)
    ).mappings()
    return [
        RememberItem(
            content=r["content"],
            category=r["category"],
            importance=r["importance"],
            tags=tuple(r["tags"] or ()),
            entities=tuple(r["entities"] or ()),
            source=r["source"],
            metadata=r["metadata"] or {},
        )
        for r in rows
    ]


def browse_rows(
    conn: Connection, space_id: str, request: BrowseRequest, now: float
) -> list[Mapping[str, Any]]:
    """One page of the live rows of a space not expired at ``now``, newest first (optionally
    one category)."""
    live = sa.and_(INSIGHTS.c.deleted_at.is_(None), UNEXPIRED)
    return _page(conn, space_id, live, request, now)


def _page(
    conn: Connection, space_id: str, which: Any, request: BrowseRequest, now: float
) -> list[Mapping[str, Any]]:
    """One page (newest first, optionally one category) of the space's rows matching
    ``which``."""
    stmt = (
        sa.select(INSIGHTS)
        .where(INSIGHTS.c.space_id == space_id, which)
        .order_by(INSIGHTS.c.seq.desc())
        .limit(request.limit)
        .offset(request.offset)
    )
    if request.category:
        stmt = stmt.where(INSIGHTS.c.category == request.category)
    return list(conn.execute(stmt, {"now": now}).mappings().all())


def rows_by_metadata(
    conn: Connection, space_id: str, key: str, value: str, limit: int
) -> list[Mapping[str, Any]]:
    """Live rows whose ``metadata[key]`` is the string ``value``, newest first."""
    text = sa.cast(INSIGHTS.c.metadata, sa.Text)
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import JSONB  # deferred: PostgreSQL only

        field = sa.func.jsonb_extract_path_text(sa.cast(text, JSONB), key)
    else:
        field = sa.func.json_extract(text, f'$."{key}"')
    return list(
        conn.execute(
            sa.select(INSIGHTS)
            .where(
                INSIGHTS.c.space_id == space_id,
                INSIGHTS.c.deleted_at.is_(None),
                field == sa.literal(value, sa.Text),
            )
            .order_by(INSIGHTS.c.seq.desc())
            .limit(limit)
        )
        .mappings()
        .all()
    )


# ------------------------------------------------------------------ history reads


def _metadata_field(conn: Connection, key: str) -> Any:
    """``metadata[key]`` as text, in the dialect's JSON functions."""
    text = sa.cast(INSIGHTS.c.metadata, sa.Text)
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import JSONB  # deferred: PostgreSQL only

        return sa.func.jsonb_extract_path_text(sa.cast(text, JSONB), key)
    return sa.func.json_extract(text, f'$."{key}"')


def row_by_id(conn: Connection, space_id: str, insight_id: str) -> Mapping[str, Any] | None:
    """The row ``insight_id`` of the space, live or not (None when the space has none)."""
    return (
        conn.execute(
            sa.select(INSIGHTS).where(INSIGHTS.c.space_id == space_id, INSIGHTS.c.id == insight_id)
        )
        .mappings()
        .first()
    )


def history_browse_rows(
    conn: Connection, space_id: str, request: BrowseRequest, now: float
) -> list[Mapping[str, Any]]:
    """One page of the live rows (not expired at ``now``) and the superseded rows of a space,
    newest first (optionally one category); forgotten rows stay out."""
    live = sa.and_(INSIGHTS.c.deleted_at.is_(None), UNEXPIRED)
    superseded = sa.and_(
        INSIGHTS.c.deleted_at.is_not(None), _metadata_field(conn, "superseded_by").is_not(None)
    )
    return _page(conn, space_id, sa.or_(live, superseded), request, now)


def history_record(row: Mapping[str, Any], space: SpaceBinding, now: float) -> MemoryRecord:
    """A stored row (live or not) as a :class:`MemoryRecord` with its ``status`` and the
    mirrors of its ``supersedes`` / ``superseded_by`` metadata links."""
    record = insight(row, space)
    meta = record.metadata
    expires = row.get("expires_at")
    if row["deleted_at"] is None and (expires is None or float(expires) > now):
        record.status = "current"
    elif row["deleted_at"] is not None and isinstance(meta.get("superseded_by"), str):
        record.status = "superseded"
    else:
        record.status = "forgotten"
    for name in ("supersedes", "superseded_by"):
        value = meta.get(name)
        setattr(record, name, value if isinstance(value, str) else None)
    return record


def is_live(conn: Connection, space_id: str, insight_id: str) -> bool:
    """Whether the space holds a live row with this id."""
    found = conn.execute(
        sa.select(INSIGHTS.c.id).where(
            INSIGHTS.c.space_id == space_id,
            INSIGHTS.c.id == insight_id,
            INSIGHTS.c.deleted_at.is_(None),
        )
    ).scalar()
    return found is not None


def related_walk(
    conn: Connection, space_id: str, request: RelatedRequest
) -> dict[str, tuple[int, str]]:
    """Breadth-first over the edges (both directions) from ``request.id``: for every id
    reached, ``(depth, edge type it was reached by)``; the start is ``(0, "")``."""
    seen: dict[str, tuple[int, str]] = {request.id: (0, "")}
    frontier = [request.id]
    for depth in range(1, request.depth + 1):
        if not frontier:
            break
        stmt = sa.select(EDGES.c.source_id, EDGES.c.target_id, EDGES.c.edge_type).where(
            EDGES.c.space_id == space_id,
            sa.or_(EDGES.c.source_id.in_(frontier), EDGES.c.target_id.in_(frontier)),
        )
        if request.edge:
            stmt = stmt.where(EDGES.c.edge_type == request.edge)
        nxt: list[str] = []
        current = set(frontier)
        for src, dst, kind in conn.execute(stmt.order_by(EDGES.c.created_at)).all():
            for here, there in ((src, dst), (dst, src)):
                if here in current and there not in seen:
                    seen[there] = (depth, kind)
                    nxt.append(there)
        frontier = nxt
    return seen


def live_rows(conn: Connection, ids: list[str]) -> dict[str, Mapping[str, Any]]:
    """Live rows by id (any space: ids are unique)."""
    return {
        r["id"]: r
        for r in conn.execute(
            sa.select(INSIGHTS).where(INSIGHTS.c.id.in_(ids), INSIGHTS.c.deleted_at.is_(None))
        ).mappings()
    }


def graph_projection(conn: Connection, space_id: str, limit: int) -> GraphProjection:
    """The newest ``limit`` live rows of a space and the edges between them."""
    rows = conn.execute(
        sa.select(INSIGHTS.c.id, INSIGHTS.c.content, INSIGHTS.c.category, INSIGHTS.c.entities)
        .where(INSIGHTS.c.space_id == space_id, INSIGHTS.c.deleted_at.is_(None))
        .order_by(INSIGHTS.c.seq.desc())
        .limit(limit)
    ).all()
    ids = [r[0] for r in rows]
    edges = []
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        edges.extend(
            conn.execute(
                sa.select(
                    EDGES.c.source_id, EDGES.c.target_id, EDGES.c.edge_type, EDGES.c.weight
                ).where(EDGES.c.space_id == space_id, EDGES.c.source_id.in_(chunk))
            ).all()
        )
    keep = set(ids)
    return GraphProjection(
        nodes=[
            GraphNode(
                id=r[0],
                label=r[1] if len(r[1]) <= 80 else r[1][:79] + "…",
                category=r[2],
                entities=list(r[3] or []),
            )
            for r in rows
        ],
        edges=[
            GraphEdge(source=s, target=t, type=k, weight=float(wt))
            for s, t, k, wt in edges
            if t in keep
        ],
    )


def space_status(conn: Connection, space_id: str, now: float) -> ProviderStatus:
    """Live rows per category (an expired row is gone already, swept or not), deleted rows,
    edges, the top entities and the database size."""
    live = conn.execute(
        sa.select(INSIGHTS.c.category, sa.func.count())
        .where(INSIGHTS.c.space_id == space_id, INSIGHTS.c.deleted_at.is_(None), UNEXPIRED)
        .group_by(INSIGHTS.c.category),
        {"now": now},
    ).all()
    deleted = conn.execute(
        sa.select(sa.func.count()).where(
            INSIGHTS.c.space_id == space_id, INSIGHTS.c.deleted_at.is_not(None)
        )
    ).scalar()
    edge_count = conn.execute(
        sa.select(sa.func.count()).where(EDGES.c.space_id == space_id)
    ).scalar()
    entities = conn.execute(
        sa.select(ENTITIES.c.entity, sa.func.count().label("n"))
        .join(INSIGHTS, ENTITIES.c.insight_seq == INSIGHTS.c.seq)
        .where(ENTITIES.c.space_id == space_id, INSIGHTS.c.deleted_at.is_(None), UNEXPIRED)
        .group_by(ENTITIES.c.entity)
        .order_by(sa.desc("n"), ENTITIES.c.entity)
        .limit(10),
        {"now": now},
    ).all()
    size = database_size(conn)
    by_category = {str(c): int(n) for c, n in live}
    return ProviderStatus(
        healthy=True,
        total_insights=sum(by_category.values()),
        deleted_insights=int(deleted or 0),
        edge_count=int(edge_count or 0),
        db_size_bytes=size,
        by_category=by_category,
        top_entities=[(str(e), int(n)) for e, n in entities],
    )


def uncatalogued_spaces(conn: Connection) -> list[DiscoveredSpace]:
    """Spaces that hold live rows but have no catalog entry (e.g. after a restore)."""
    known = set(conn.execute(sa.select(SPACES.c.id)).scalars())
    found = conn.execute(
        sa.select(INSIGHTS.c.space_id, sa.func.count())
        .where(INSIGHTS.c.deleted_at.is_(None))
        .group_by(INSIGHTS.c.space_id)
    ).all()
    return [
        DiscoveredSpace(
            external_id=str(space_id),
            name=str(space_id),
            description=f"{int(n)} stored memories",
        )
        for space_id, n in found
        if space_id not in known
    ]


def database_size(conn: Connection) -> int | None:
    """Bytes of the database (PostgreSQL) or of the SQLite file; None when unknown."""
    try:
        if conn.dialect.name == "postgresql":
            return int(
                conn.execute(sa.text("SELECT pg_database_size(current_database())")).scalar()
            )
        database = conn.engine.url.database
        if database and database != ":memory:" and Path(database).exists():
            return Path(database).stat().st_size
    except Exception:  # size is informative only
        return None
    return None
