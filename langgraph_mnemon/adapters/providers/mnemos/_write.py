"""Write transactions of the native provider: remember (insert), forget (soft delete), link,
and history (supersede: insert and retire in one; restore: a soft-deleted row made live again).

Each function runs inside the caller's write transaction. Remember writes, in this order: the
rows (duplicates of a live row with the same content and metadata are skipped), their
keyword-index entries, the per-space term statistics, entity rows, temporal edges (to the
previous row of the space; keyed rows get none) and entity edges (to the recent rows that
share an entity), and the dense vectors.

A write costs a fixed number of statements whatever it holds: each step is one statement (an
``executemany`` for many rows), the term statistics change of the new rows and of the rows they
replace is one upsert (the replaced rows' terms come from their stored ``terms`` column, never
re-analysed), and entity neighbours are probed on the entity index (PostgreSQL: every entity
in one statement; SQLite: one probe per distinct entity, a call, not a round trip). On SQLite
the steps run as driver SQL on the transaction's own connection: SQLAlchemy's compile and
per-row parameter processing cost more than SQLite's work for one row.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter, deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from langgraph_mnemon.adapters.providers.mnemos._pgvector import pgvector_of
from langgraph_mnemon.adapters.providers.mnemos._sql import (
    dedupe_edges,
    edge_row,
    fts_text,
    insert_statement,
    space_token,
)
from langgraph_mnemon.adapters.providers.text import analyze
from langgraph_mnemon.errors import ConflictError, NotFoundError
from langgraph_mnemon.memory_layers.mnemos.schema import JsonText
from langgraph_mnemon.memory_layers.spaces import (
    Embedder,
    LinkRequest,
    RememberItem,
    SpaceBinding,
)
from langgraph_mnemon.memory_layers.spaces.schema import (
    EDGES,
    EMBEDDING,
    ENTITIES,
    FTS_TABLE,
    INSIGHTS,
    SPACE_STATS,
    SPACE_TERMS,
    VECTORS,
    vector_literal,
)
from langgraph_mnemon.storage.db import upsert

__all__ = [
    "Analysis",
    "Retired",
    "content_hash",
    "forget",
    "forget_rows",
    "insert",
    "link",
    "restore",
    "supersede",
]

_ENTITY_EDGE_FANOUT = 5
_Receipts = list[dict[str, Any] | None]


class Analysis:
    """Analysed form of one row."""

    __slots__ = ("counts", "length", "terms", "unique")

    def __init__(self, text: str) -> None:
        terms = analyze(text)
        self.terms = terms
        self.length = len(terms)
        self.counts = Counter(terms)
        self.unique = list(self.counts)


def content_hash(item: RememberItem) -> str:
    """The duplicate key of an item: its content and metadata."""
    meta = json.dumps(item.metadata, sort_keys=True, ensure_ascii=False)
    return hashlib.blake2b(f"{item.content}\x00{meta}".encode(), digest_size=16).hexdigest()


# ------------------------------------------------------------------ remember


def insert(
    conn: Connection,
    space: SpaceBinding,
    items: list[RememberItem],
    analyses: list[Analysis],
    hashes: list[str],
    vectors: list[np.ndarray] | None,
    embedder: Embedder | None,
    now: float,
    *,
    keys: list[str | None] | None = None,
    retired: Sequence[Retired] = (),
    expiry: Sequence[tuple[float | None, float | None]] | None = None,
) -> list[dict[str, Any]]:
    """Store the items that are not duplicates; one receipt per item, in order. ``keys``
    (one per item) sets the rows' ``store_key`` (keyed items; see :mod:`._keyed`), and
    ``expiry`` their ``(expires_at, ttl_minutes)`` (keyed items only; default: never);
    ``retired`` are live rows the new ones replace (soft-deleted here, and their statistics
    taken off in the same statements that count the new rows in).

    A keyed item is addressed by its key, not its content: two keys may hold the same value,
    so keyed rows skip the duplicate read, and they get no temporal edge (the rows of a
    store namespace are not a conversation; recall's neighbour boost reads ``seq`` order,
    not edges)."""
    if keys is None:
        receipts, rows, fresh, previous = _new_rows(conn, space.id, items, analyses, hashes, now)
        if not rows:
            return [r for r in receipts if r is not None]
    else:
        receipts: _Receipts = [None] * len(items)
        fresh, previous = list(range(len(items))), None
        expiry = expiry if expiry is not None else [(None, None)] * len(items)
        rows = [
            {
                **_row(space.id, uuid.uuid4().hex, item, analysis, digest, now),
                "store_key": key,
                "expires_at": expires,
                "ttl_minutes": minutes,
            }
            for item, analysis, digest, key, (expires, minutes) in zip(
                items, analyses, hashes, keys, expiry, strict=True
            )
        ]
    if retired:  # first: the key's unique index holds one live row
        _retire(conn, space.id, retired, now)
    seqs = _insert_rows(conn, rows)
    _index_keywords(conn, space.id, seqs, rows)
    _add_new_terms(conn, space.id, [analyses[index] for index in fresh], retired)
    _store_links(conn, space.id, previous, seqs, rows, now, temporal=keys is None)
    if vectors is not None:
        assert embedder is not None
        _store_vectors(conn, space.id, embedder.model_id, seqs, [vectors[i] for i in fresh])
    for seq, index, row in zip(seqs, fresh, rows, strict=True):
        receipts[index] = {"status": "stored", "id": row["id"], "seq": seq, "created": 1}
    return [r for r in receipts if r is not None]


def _new_rows(
    conn: Connection,
    space_id: str,
    items: list[RememberItem],
    analyses: list[Analysis],
    hashes: list[str],
    now: float,
) -> tuple[_Receipts, list[dict[str, Any]], list[int], str | None]:
    """Receipts for the duplicates (of a live row or of an earlier item), the rows to insert,
    the indexes of the items they come from, and the space's newest live row (the temporal
    predecessor), all from one statement."""
    existing: dict[str, str] = {}
    previous = None
    for kind, digest, row_id in conn.execute(_known_rows(space_id, set(hashes))).all():
        if kind == "newest":
            previous = row_id
        else:
            existing[digest] = row_id
    receipts: _Receipts = [None] * len(items)
    rows: list[dict[str, Any]] = []
    fresh: list[int] = []
    for index, (item, analysis, digest) in enumerate(zip(items, analyses, hashes, strict=True)):
        if digest in existing:
            receipts[index] = {
                "status": "stored",
                "id": existing[digest],
                "duplicate": True,
                "created": 0,
            }
            continue
        new_id = uuid.uuid4().hex
        existing[digest] = new_id
        fresh.append(index)
        rows.append(_row(space_id, new_id, item, analysis, digest, now))
    return receipts, rows, fresh, previous


def _known_rows(space_id: str, hashes: set[str]) -> sa.CompoundSelect:
    """``(kind, content_hash, id)``: the live rows of the space with one of ``hashes``
    (``duplicate``) and its newest live row (``newest``), in one round trip."""
    live = sa.and_(INSIGHTS.c.space_id == space_id, INSIGHTS.c.deleted_at.is_(None))
    duplicates = sa.select(
        sa.literal("duplicate").label("kind"), INSIGHTS.c.content_hash, INSIGHTS.c.id
    ).where(live, INSIGHTS.c.content_hash.in_(hashes))
    newest_seq = (
        sa.select(INSIGHTS.c.seq).where(live).order_by(INSIGHTS.c.seq.desc()).limit(1)
    ).scalar_subquery()
    newest = sa.select(
        sa.literal("newest").label("kind"), INSIGHTS.c.content_hash, INSIGHTS.c.id
    ).where(INSIGHTS.c.seq == newest_seq)
    return sa.union_all(duplicates, newest)


def _row(
    space_id: str, new_id: str, item: RememberItem, analysis: Analysis, digest: str, now: float
) -> dict[str, Any]:
    return {
        "id": new_id,
        "space_id": space_id,
        "content": item.content,
        "content_hash": digest,
        "category": item.category,
        "importance": item.importance,
        "tags": list(item.tags),
        "entities": list(item.entities),
        "source": item.source,
        "metadata": dict(item.metadata),
        "terms": " ".join(analysis.terms),
        "term_count": analysis.length,
        "created_at": now,
        "updated_at": now,
    }


_JSON_NAMES = frozenset(("tags", "entities", "metadata"))
_JSON = JsonText()
_SQLITE_INSERTS: dict[tuple[str, ...], str] = {}


def _sqlite_insert(names: tuple[str, ...]) -> str:
    """The driver INSERT of rows with these columns (built once per column set: keyed rows
    carry the key and expiry columns, other rows do not)."""
    found = _SQLITE_INSERTS.get(names)
    if found is None:
        found = _SQLITE_INSERTS[names] = (
            f"INSERT INTO {INSIGHTS.name} ({', '.join(names)}) "
            f"VALUES ({', '.join('?' * len(names))})"
        )
    return found


def _insert_rows(conn: Connection, rows: list[dict[str, Any]]) -> list[int]:
    """Insert ``rows``; their seqs, in order.

    SQLite: driver SQL on the transaction's connection (SQLAlchemy's compile and
    insert-many-values machinery cost more than the insert). Inside the write transaction
    (``BEGIN IMMEDIATE``) nobody else inserts, and ``AUTOINCREMENT`` hands out consecutive
    seqs, so the rows' seqs end at ``last_insert_rowid()``."""
    if conn.dialect.name != "sqlite":
        inserted = conn.execute(
            INSIGHTS.insert().returning(INSIGHTS.c.seq, sort_by_parameter_order=True), rows
        ).all()
        return [int(r[0]) for r in inserted]
    driver = conn.connection.driver_connection
    assert driver is not None
    names = tuple(rows[0])
    params = [
        tuple(
            _JSON.process_bind_param(row[name], conn.dialect) if name in _JSON_NAMES else row[name]
            for name in names
        )
        for row in rows
    ]
    if len(params) == 1:
        last = driver.execute(_sqlite_insert(names), params[0]).lastrowid
    else:
        driver.executemany(_sqlite_insert(names), params)
        last = driver.execute("SELECT last_insert_rowid()").fetchone()[0]
    assert last is not None
    return list(range(int(last) - len(rows) + 1, int(last) + 1))


def _index_keywords(
    conn: Connection, space_id: str, seqs: list[int], rows: list[dict[str, Any]]
) -> None:
    """SQLite: the FTS5 entries (PostgreSQL's ``tsvector`` column is generated)."""
    if conn.dialect.name != "sqlite":
        return
    token = space_token(space_id)
    driver = conn.connection.driver_connection  # the transaction's own connection
    assert driver is not None
    driver.executemany(
        f"INSERT INTO {FTS_TABLE}(rowid, terms) VALUES (?, ?)",
        [(seq, fts_text(token, row["terms"])) for seq, row in zip(seqs, rows, strict=True)],
    )


def _add_new_terms(
    conn: Connection, space_id: str, analyses: list[Analysis], retired: Sequence[Retired] = ()
) -> None:
    """Count the new rows into the space's document frequencies and totals (and the
    ``retired`` rows out of them)."""
    df: Counter[str] = Counter()
    total_terms = 0
    for analysis in analyses:
        df.update(analysis.unique)
        total_terms += analysis.length
    if retired:
        df, docs, total_terms = _minus(df, len(analyses), total_terms, retired)
    else:
        docs = len(analyses)
    _add_term_stats(conn, space_id, df, docs, total_terms)


def _add_term_stats(
    conn: Connection, space_id: str, df: Counter[str], docs: int, terms: int
) -> None:
    dialect = conn.dialect.name
    if dialect == "postgresql":  # the terms and the totals in one round trip
        ordered = sorted(df)  # one lock order for concurrent writers of the space
        dfs = [df[t] for t in ordered]
        params = {"space": space_id, "terms": ordered, "dfs": dfs, "docs": docs, "total": terms}
        conn.execute(_PG_TERM_STATS, params)
        return
    if dialect == "sqlite":  # driver SQL on the transaction's connection: no compile step
        driver = conn.connection.driver_connection
        assert driver is not None
        if df:  # every term in one statement: the changes as one JSON object
            driver.execute(_SQLITE_TERMS, (space_id, json.dumps(df)))
        driver.execute(_SQLITE_STATS, (space_id, docs, terms))
        return
    terms_stmt, stats_stmt = _term_statements(dialect)
    if df:
        conn.execute(
            terms_stmt, [{"space_id": space_id, "term": t, "df": n} for t, n in df.items()]
        )
    conn.execute(stats_stmt, {"space_id": space_id, "docs": docs, "terms": terms, "version": 1})


# ``WHERE true``: SQLite's parser needs it between a SELECT and an upsert clause.
_SQLITE_TERMS = (
    f"INSERT INTO {SPACE_TERMS.name} (space_id, term, df) "
    "SELECT ?, j.key, j.value FROM json_each(?) AS j WHERE true "
    "ON CONFLICT (space_id, term) DO UPDATE SET df = df + excluded.df"
)
_SQLITE_STATS = (
    f"INSERT INTO {SPACE_STATS.name} (space_id, docs, terms, version) VALUES (?, ?, ?, 1) "
    "ON CONFLICT (space_id) DO UPDATE SET docs = docs + excluded.docs, "
    "terms = terms + excluded.terms, version = version + 1"
)
_TERM_STATEMENTS: dict[str, tuple[Any, Any]] = {}


def _term_statements(dialect: str) -> tuple[Any, Any]:
    """The upserts of the terms and totals, built once per dialect (building an
    ``on_conflict_do_update`` costs more than running it on SQLite)."""
    built = _TERM_STATEMENTS.get(dialect)
    if built is None:
        terms = insert_statement(dialect, SPACE_TERMS)
        terms = terms.on_conflict_do_update(
            index_elements=["space_id", "term"],
            set_={"df": SPACE_TERMS.c.df + terms.excluded.df},
        )
        stats = insert_statement(dialect, SPACE_STATS)
        stats = stats.on_conflict_do_update(
            index_elements=["space_id"],
            set_={
                "docs": SPACE_STATS.c.docs + stats.excluded.docs,
                "terms": SPACE_STATS.c.terms + stats.excluded.terms,
                "version": SPACE_STATS.c.version + 1,
            },
        )
        built = _TERM_STATEMENTS[dialect] = (terms, stats)
    return built


# PostgreSQL: the document frequencies (unnest of two arrays: one fixed statement whatever
# the number of terms) and the space totals as one statement; a data-modifying CTE always
# runs. The terms' conflict updates lock rows in the sorted order of the arrays.
_PG_TERM_STATS = sa.text(
    f"WITH t AS (INSERT INTO {SPACE_TERMS.name} (space_id, term, df) "
    "SELECT :space, u.term, u.df FROM unnest(CAST(:terms AS varchar[]), CAST(:dfs AS int[])) "
    "AS u(term, df) "
    f"ON CONFLICT (space_id, term) DO UPDATE SET df = {SPACE_TERMS.name}.df + excluded.df) "
    f"INSERT INTO {SPACE_STATS.name} (space_id, docs, terms, version) "
    "VALUES (:space, :docs, :total, 1) "
    f"ON CONFLICT (space_id) DO UPDATE SET docs = {SPACE_STATS.name}.docs + excluded.docs, "
    f"terms = {SPACE_STATS.name}.terms + excluded.terms, "
    f"version = {SPACE_STATS.name}.version + 1"
)


def _store_links(
    conn: Connection,
    space_id: str,
    previous: str | None,
    seqs: list[int],
    rows: list[dict[str, Any]],
    now: float,
    *,
    temporal: bool = True,
) -> None:
    """Entity rows, a temporal edge from each row's predecessor (unless not ``temporal``:
    keyed rows, also those of one batch) and entity edges to the recent rows (at most
    ``_ENTITY_EDGE_FANOUT`` per entity) that share an entity."""
    edges: list[dict[str, Any]] = []
    entity_rows: list[dict[str, Any]] = []
    named = [[e for e in dict.fromkeys(_entity_key(e) for e in r["entities"]) if e] for r in rows]
    recent_by_entity = _recent_with_entities(conn, space_id, {e for es in named for e in es})
    for seq, row, entities in zip(seqs, rows, named, strict=True):
        if previous is not None and temporal:
            edges.append(edge_row(space_id, previous, row["id"], "temporal", 1.0, now))
        previous = row["id"]
        for entity in entities:
            recent = recent_by_entity[entity]
            for _, other in recent:
                edges.append(edge_row(space_id, other, row["id"], "entity", 0.5, now))
            recent.append((seq, row["id"]))
            entity_rows.append({"space_id": space_id, "entity": entity, "insight_seq": seq})
    if entity_rows:
        _insert_many(conn, ENTITIES.insert(), _SQLITE_ENTITIES, entity_rows)
    if edges:
        edge_upsert = upsert(
            conn.dialect.name, EDGES, ["source_id", "target_id", "edge_type"], ["weight"]
        )
        _insert_many(conn, edge_upsert, _SQLITE_EDGES, dedupe_edges(edges))


_ENTITY_NAMES = ("space_id", "entity", "insight_seq")
_SQLITE_ENTITIES = (
    f"INSERT INTO {ENTITIES.name} ({', '.join(_ENTITY_NAMES)}) VALUES (?, ?, ?)",
    _ENTITY_NAMES,
)
_EDGE_NAMES = ("space_id", "source_id", "target_id", "edge_type", "weight", "reason", "created_at")
_SQLITE_EDGES = (
    (
        f"INSERT INTO {EDGES.name} ({', '.join(_EDGE_NAMES)}) VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (source_id, target_id, edge_type) DO UPDATE SET weight = excluded.weight"
    ),
    _EDGE_NAMES,
)


def _insert_many(
    conn: Connection, statement: Any, sqlite: tuple[str, tuple[str, ...]], rows: list[dict]
) -> None:
    """``statement`` once per row; on SQLite one driver ``executemany`` of the same SQL (a
    bulk write's entity and edge rows number ten or more per row: SQLAlchemy's per-row
    parameter processing cost more than the inserts)."""
    if conn.dialect.name != "sqlite":
        conn.execute(statement, rows)
        return
    driver = conn.connection.driver_connection
    assert driver is not None
    sql, names = sqlite
    driver.executemany(sql, [tuple(row[name] for name in names) for row in rows])


def _entity_key(entity: str) -> str:
    return " ".join(entity.split()).lower()[:200]


# The newest live rows naming an entity: the entity index ``(space_id, entity, insight_seq)``
# read backwards, stopping after the fan-out (whatever the number of rows naming it).
_RECENT_WITH_ENTITY = (
    f"SELECT i.seq, i.id FROM {ENTITIES.name} x JOIN {INSIGHTS.name} i ON i.seq = x.insight_seq "
    "WHERE x.space_id = ? AND x.entity = ? AND i.deleted_at IS NULL "
    f"ORDER BY x.insight_seq DESC LIMIT {_ENTITY_EDGE_FANOUT}"
)
# PostgreSQL: the same probe once per entity of the batch, in one statement (one round trip).
_PG_RECENT_WITH_ENTITIES = sa.text(
    "SELECT e.entity, r.seq, r.id FROM unnest(CAST(:entities AS varchar[])) AS e(entity) "
    f"CROSS JOIN LATERAL (SELECT i.seq, i.id FROM {ENTITIES.name} x "
    f"JOIN {INSIGHTS.name} i ON i.seq = x.insight_seq "
    "WHERE x.space_id = :space AND x.entity = e.entity AND i.deleted_at IS NULL "
    f"ORDER BY x.insight_seq DESC LIMIT {_ENTITY_EDGE_FANOUT}) AS r"
)


def _recent_with_entities(
    conn: Connection, space_id: str, entities: set[str]
) -> dict[str, deque[tuple[int, str]]]:
    """Per entity, the newest live rows naming it, oldest first, as ``(seq, id)``. PostgreSQL:
    one statement for every entity of the batch; SQLite: one driver statement per entity (a
    function call, not a round trip)."""
    if not entities:
        return {}
    found: dict[str, list[tuple[int, str]]] = {e: [] for e in entities}
    if conn.dialect.name == "postgresql":
        params = {"space": space_id, "entities": sorted(entities)}
        for entity, seq, insight_id in conn.execute(_PG_RECENT_WITH_ENTITIES, params).all():
            found[entity].append((int(seq), insight_id))
    else:
        driver = conn.connection.driver_connection
        assert driver is not None
        for entity in entities:
            rows = driver.execute(_RECENT_WITH_ENTITY, (space_id, entity)).fetchall()
            found[entity] = [(int(seq), insight_id) for seq, insight_id in rows]
    return {
        entity: deque(sorted(rows), maxlen=_ENTITY_EDGE_FANOUT) for entity, rows in found.items()
    }


def _store_vectors(
    conn: Connection, space_id: str, model: str, seqs: list[int], vectors: list[np.ndarray]
) -> None:
    """One vector row per row; an empty vector (a row with no text to index) stores none.

    With pgvector (schema step 4) the row carries the vector twice: as float32 bytes, the
    portable copy every database reads (and the in-memory path uses should the extension go),
    and as the ``embedding`` the HNSW index searches."""
    if conn.dialect.name == "sqlite":  # driver SQL: no compile step (kept apart: see below)
        _store_vectors_sqlite(conn, space_id, model, seqs, vectors)
        return
    rows = [
        {
            "insight_seq": seq,
            "space_id": space_id,
            "model": model,
            "dim": int(vector.shape[0]),
            "vector": vector.astype(np.float32).tobytes(),
        }
        for seq, vector in zip(seqs, vectors, strict=True)
        if vector.shape[0]
    ]
    if not rows:
        return
    found = pgvector_of(conn) if conn.dialect.name == "postgresql" else None
    if found is None:
        conn.execute(VECTORS.insert(), rows)
        return
    for row, vector in zip(rows, (v for v in vectors if v.shape[0]), strict=True):
        row["embedding"] = vector_literal(vector.tolist())
    conn.execute(
        sa.text(
            f"INSERT INTO {VECTORS.name} (insight_seq, space_id, model, dim, vector, "
            f"{EMBEDDING}) VALUES (:insight_seq, :space_id, :model, :dim, :vector, "
            f"CAST(:embedding AS {found.schema}.vector))"
        ).bindparams(sa.bindparam("vector", type_=sa.LargeBinary)),
        rows,
    )


_SQLITE_VECTORS = (
    f"INSERT INTO {VECTORS.name} (insight_seq, space_id, model, dim, vector) VALUES (?, ?, ?, ?, ?)"
)


def _store_vectors_sqlite(
    conn: Connection, space_id: str, model: str, seqs: list[int], vectors: list[np.ndarray]
) -> None:
    """:func:`_store_vectors` on SQLite: one ``executemany`` on the transaction's connection."""
    driver = conn.connection.driver_connection
    assert driver is not None
    driver.executemany(
        _SQLITE_VECTORS,
        [
            (seq, space_id, model, int(v.shape[0]), v.astype(np.float32).tobytes())
            for seq, v in zip(seqs, vectors, strict=True)
            if v.shape[0]
        ],
    )


# ------------------------------------------------------------------ forget and link


class Retired(NamedTuple):
    """A live row leaving the space, as the caller already holds it."""

    seq: int
    terms: str
    term_count: int


def forget(
    conn: Connection, space: SpaceBinding, insight_id: str, clock: Callable[[], float]
) -> dict[str, Any]:
    """Soft-delete one live row: it leaves the keyword index, statistics and vectors.

    Raises:
        NotFoundError: the space has no live row with this id.
    """
    row = conn.execute(
        sa.select(INSIGHTS.c.seq, INSIGHTS.c.terms, INSIGHTS.c.term_count).where(
            INSIGHTS.c.space_id == space.id,
            INSIGHTS.c.id == insight_id,
            INSIGHTS.c.deleted_at.is_(None),
        )
    ).first()
    if row is None:
        raise NotFoundError(
            f"no memory {insight_id!r} in Memory Space {space.id!r}; search or browse "
            "the space for the exact id"
        )
    forget_rows(conn, space.id, [Retired(int(row[0]), row[1] or "", int(row[2]))], clock())
    return {"status": "forgotten", "id": insight_id, "deleted": 1}


def forget_rows(conn: Connection, space_id: str, rows: Sequence[Retired], now: float) -> None:
    """Soft-delete live rows the caller holds (no read): out of the keyword index, the
    vectors and the term statistics."""
    if rows:
        _retire(conn, space_id, rows, now)
        _add_term_stats(conn, space_id, *_minus(Counter(), 0, 0, rows))


# PostgreSQL: the soft delete and the vectors' removal in one round trip.
_PG_RETIRE = sa.text(
    f"WITH d AS (UPDATE {INSIGHTS.name} SET deleted_at = :now, updated_at = :now "
    "WHERE seq = ANY(CAST(:seqs AS bigint[])) RETURNING seq) "
    f"DELETE FROM {VECTORS.name} WHERE insight_seq IN (SELECT seq FROM d)"
)
_RETIRE = (
    INSIGHTS.update()
    .where(INSIGHTS.c.seq.in_(sa.bindparam("seqs", expanding=True)))
    .values(deleted_at=sa.bindparam("now"), updated_at=sa.bindparam("now"))
)
_DROP_VECTORS = VECTORS.delete().where(
    VECTORS.c.insight_seq.in_(sa.bindparam("seqs", expanding=True))
)


def _retire(conn: Connection, space_id: str, rows: Sequence[Retired], now: float) -> None:
    seqs = [r.seq for r in rows]
    if conn.dialect.name == "postgresql":
        conn.execute(_PG_RETIRE, {"seqs": seqs, "now": now})
        return
    if conn.dialect.name != "sqlite":
        conn.execute(_RETIRE, {"seqs": seqs, "now": now})
        conn.execute(_DROP_VECTORS, {"seqs": seqs})
        return
    driver = conn.connection.driver_connection  # the transaction's own connection
    assert driver is not None
    marks = ", ".join("?" * len(seqs))
    driver.execute(
        f"UPDATE {INSIGHTS.name} SET deleted_at = ?, updated_at = ? WHERE seq IN ({marks})",
        (now, now, *seqs),
    )
    token = space_token(space_id)
    driver.executemany(
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, terms) VALUES ('delete', ?, ?)",
        [(r.seq, fts_text(token, r.terms)) for r in rows],
    )
    driver.execute(f"DELETE FROM {VECTORS.name} WHERE insight_seq IN ({marks})", seqs)


def _minus(
    df: Counter[str], docs: int, terms: int, rows: Sequence[Retired]
) -> tuple[Counter[str], int, int]:
    """The statistics change of adding ``df``/``docs``/``terms`` and removing ``rows``
    (terms whose change is zero are left out)."""
    change = Counter(df)
    for row in rows:
        change.subtract(dict.fromkeys(row.terms.split(), 1))
        terms -= row.term_count
    return Counter({t: n for t, n in change.items() if n}), docs - len(rows), terms


def link(
    conn: Connection, space: SpaceBinding, request: LinkRequest, clock: Callable[[], float]
) -> dict[str, Any]:
    """Add (or re-weight) a typed edge between two live rows of the space.

    Raises:
        NotFoundError: one of the two ids is not a live row of the space.
    """
    found = set(
        conn.execute(
            sa.select(INSIGHTS.c.id).where(
                INSIGHTS.c.space_id == space.id,
                INSIGHTS.c.deleted_at.is_(None),
                INSIGHTS.c.id.in_([request.source_id, request.target_id]),
            )
        ).scalars()
    )
    missing = [i for i in (request.source_id, request.target_id) if i not in found]
    if missing:
        raise NotFoundError(
            f"no memory {missing[0]!r} in Memory Space {space.id!r}; link needs two "
            "existing ids of the same space"
        )
    edge = edge_row(
        space.id, request.source_id, request.target_id, request.type, request.weight, clock()
    )
    edge["reason"] = request.reason
    conn.execute(
        upsert(
            conn.dialect.name, EDGES, ["source_id", "target_id", "edge_type"], ["weight", "reason"]
        ),
        edge,
    )
    return {
        "status": "linked",
        "id": f"{request.source_id}->{request.target_id}",
        "edges_inserted": 1,
    }


# ------------------------------------------------------------------ history


def _missing(space_id: str, insight_id: str, what: str) -> NotFoundError:
    return NotFoundError(
        f"no {what}memory {insight_id!r} in Memory Space {space_id!r}; search or browse "
        "the space for the exact id"
    )


def supersede(
    conn: Connection,
    space: SpaceBinding,
    old_id: str,
    item: RememberItem,
    analysis: Analysis,
    vector: np.ndarray | None,
    embedder: Embedder | None,
    now: float,
) -> dict[str, Any]:
    """Store ``item`` and retire the live row ``old_id`` in the caller's transaction.

    The old row leaves the keyword index, statistics and vectors as a forgotten one does, and
    its metadata records ``superseded_by`` (the new id) and ``superseded_at`` (``now``).
    ``item`` carries ``supersedes`` in its metadata already (the host adds it).

    Raises:
        NotFoundError: the space has no live row ``old_id``; nothing was written.
    """
    old = conn.execute(
        sa.select(INSIGHTS.c.seq, INSIGHTS.c.terms, INSIGHTS.c.term_count, INSIGHTS.c.metadata)
        .where(
            INSIGHTS.c.space_id == space.id,
            INSIGHTS.c.id == old_id,
            INSIGHTS.c.deleted_at.is_(None),
        )
        .with_for_update()
    ).first()
    if old is None:
        raise _missing(space.id, old_id, "live ")
    retired = Retired(int(old[0]), old[1] or "", int(old[2]))
    vectors = None if vector is None else [vector]
    (stored,) = insert(
        conn, space, [item], [analysis], [content_hash(item)], vectors, embedder, now,
        retired=[retired],
    )  # fmt: skip
    if stored.get("duplicate"):  # an identical live row already holds it: that one succeeds
        forget_rows(conn, space.id, [retired], now)
    new_id = str(stored["id"])
    marked = {**dict(old[3] or {}), "superseded_by": new_id, "superseded_at": now}
    conn.execute(INSIGHTS.update().where(INSIGHTS.c.seq == retired.seq).values(metadata=marked))
    return {"status": "superseded", "id": new_id, "replaced": old_id}


def restore(
    conn: Connection,
    space: SpaceBinding,
    insight_id: str,
    vector: np.ndarray | None,
    model: str | None,
    now: float,
) -> dict[str, Any]:
    """Make the soft-deleted row ``insight_id`` live again in the caller's transaction: back
    in the keyword index (SQLite's FTS5 postings from its stored ``terms``; PostgreSQL's
    ``tsvector`` follows ``deleted_at``), the term statistics and, with ``vector``, the
    vectors; ``superseded_by`` / ``superseded_at`` leave its metadata. A row with a time to
    live gets a fresh one. A live row is left as it is (``unchanged``).

    Raises:
        NotFoundError: the space has no row ``insight_id``.
        ConflictError: the row has a ``store_key`` that a live row of the space holds now.
    """
    row = (
        conn.execute(
            sa.select(INSIGHTS).where(INSIGHTS.c.space_id == space.id, INSIGHTS.c.id == insight_id)
        )
        .mappings()
        .first()
    )
    if row is None:
        raise _missing(space.id, insight_id, "")
    if row["deleted_at"] is None:
        return {"status": "restored", "id": insight_id, "restored": 0, "unchanged": True}
    _check_key_free(conn, space.id, row["store_key"])
    meta = {k: v for k, v in dict(row["metadata"] or {}).items() if k not in _HISTORY_MARKS}
    values: dict[str, Any] = {"deleted_at": None, "updated_at": now, "metadata": meta}
    if row["ttl_minutes"] is not None:
        values["expires_at"] = now + float(row["ttl_minutes"]) * 60.0
    seq, terms = int(row["seq"]), row["terms"] or ""
    conn.execute(INSIGHTS.update().where(INSIGHTS.c.seq == seq).values(**values))
    if conn.dialect.name == "sqlite":  # PostgreSQL's generated tsvector follows deleted_at
        conn.exec_driver_sql(
            f"INSERT INTO {FTS_TABLE}(rowid, terms) VALUES (?, ?)",
            (seq, fts_text(space_token(space.id), terms)),
        )
    df = Counter(dict.fromkeys(terms.split(), 1))
    _add_term_stats(conn, space.id, df, 1, int(row["term_count"]))
    conn.execute(VECTORS.delete().where(VECTORS.c.insight_seq == seq))
    if vector is not None and model is not None and vector.shape[0]:
        _store_vectors(conn, space.id, model, [seq], [vector])
    return {"status": "restored", "id": insight_id, "restored": 1}


_HISTORY_MARKS = ("superseded_by", "superseded_at")


def _check_key_free(conn: Connection, space_id: str, key: str | None) -> None:
    """Refuse a restore whose store key a live row of the space holds (one live row a key)."""
    if key is None:
        return
    holder = conn.execute(
        sa.select(INSIGHTS.c.id).where(
            INSIGHTS.c.space_id == space_id,
            INSIGHTS.c.store_key == key,
            INSIGHTS.c.deleted_at.is_(None),
        )
    ).scalar()
    if holder is not None:
        raise ConflictError(
            f"memory {holder!r} of Memory Space {space_id!r} holds the key {key!r} now; "
            "forget it first, or leave this version retired"
        )
