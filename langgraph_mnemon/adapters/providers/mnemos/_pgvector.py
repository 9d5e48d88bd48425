"""Dense candidates from PostgreSQL with pgvector (schema step 4 of the ``spaces`` component).

Where the ``vector`` extension was available when the schema was set up, every stored vector is
also a pgvector ``embedding`` and each (embedder model, dimension) has an HNSW cosine index
(``create_vector_index`` of :mod:`langgraph_mnemon.memory_layers.spaces.schema`). A smart search
then takes its dense pool from the database: the ``k`` nearest rows of its space by
``embedding::vector(D) <=> query``, in a read transaction whose ``SET LOCAL`` settings size the
index scan (``hnsw.ef_search``, and on pgvector 0.8 or newer ``hnsw.iterative_scan =
relaxed_order``, so the space filter applied after the index scan still yields ``k`` rows).
Older pgvector releases stop after ``ef_search`` candidates; when fewer than ``k`` rows of the
space come back, an exact scan of the space's vectors answers instead. No process holds the
space's vectors in memory on this path.

The model id and dimension are written into the statements as literals: the planner can use a
partial index only when the query's predicate names the index's own values.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from langgraph_mnemon.memory_layers.spaces.schema import (
    EMBEDDING,
    HNSW_MAX_DIM,
    VECTORS,
    create_vector_index,
    pgvector_schema,
    sql_literal,
    vector_index_name,
    vector_literal,
)
from langgraph_mnemon.storage.db import Database, column_names

__all__ = [
    "EF_SEARCH",
    "PgVector",
    "all_cosines",
    "configure",
    "cosines",
    "ensure_index",
    "known_pgvector",
    "nearest",
    "pgvector_of",
    "remember_pgvector",
]

EF_SEARCH = 400
"""``hnsw.ef_search`` of a dense search (raised to the dense pool's size when that is larger).

On a 60,000-memory space of WordLlama vectors the index (pgvector's defaults, m 16,
ef_construction 64) found 10 of 26 paraphrases at 100, 15 at 400 and 16, as many as the exact
scan, at 800, for 5 and 10 ms more per search (``bench/spaces_scale.py --paraphrase
--ef-search 100,200,400,800``)."""


@dataclass(frozen=True)
class PgVector:
    """The pgvector a database offers: the extension's (quoted) schema and its version."""

    schema: str
    version: tuple[int, ...]

    @property
    def iterative(self) -> bool:
        """Whether the HNSW scan can continue past ``ef_search`` (pgvector 0.8+)."""
        return self.version >= (0, 8)

    def mode(self, dim: int) -> str:
        """How a search of vectors of ``dim`` dimensions runs: ``pgvector-hnsw`` or (above
        the HNSW limit) ``pgvector-exact``."""
        return "pgvector-hnsw" if dim <= HNSW_MAX_DIM else "pgvector-exact"


# Per engine (one database and search path): the pgvector found, or None. Read once the
# schema is current (step 4 decided for good whether the column exists).
_FOUND: weakref.WeakKeyDictionary[Engine, PgVector | None] = weakref.WeakKeyDictionary()
_INDEXED: weakref.WeakKeyDictionary[Engine, set[tuple[str, int]]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for part in text.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def known_pgvector(engine: Engine) -> tuple[bool, PgVector | None]:
    """``(known, found)``: what :func:`pgvector_of` answered for ``engine`` already, without a
    connection (a search asks before every dense read)."""
    with _LOCK:
        if engine in _FOUND:
            return True, _FOUND[engine]
    return False, None


def remember_pgvector(engine: Engine, found: PgVector | None) -> None:
    """Keep ``found`` as ``engine``'s answer (its one-statement reads run on another engine,
    whose answer :func:`pgvector_of` keeps under that one)."""
    with _LOCK:
        _FOUND[engine] = found


def pgvector_of(conn: Connection) -> PgVector | None:
    """The pgvector of the connection's database when the vectors table has the
    ``embedding`` column (schema step 4 found the extension), else None. Call it only once the
    schema is current: the answer is kept for the engine's lifetime.

    Example:
        >>> pgvector_of(conn)
        PgVector(schema='public', version=(0, 6, 2))
    """
    engine = conn.engine
    with _LOCK:
        if engine in _FOUND:
            return _FOUND[engine]
    found = None
    if conn.dialect.name == "postgresql" and EMBEDDING in column_names(conn, VECTORS.name):
        schema = pgvector_schema(conn)
        text = conn.execute(
            sa.text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        ).scalar()
        if schema is not None and text is not None:
            found = PgVector(schema, _version(str(text)))
    with _LOCK:
        _FOUND[engine] = found
    return found


def ensure_index(db: Database, found: PgVector, model: str, dims: set[int]) -> None:
    """Create the HNSW index of ``model`` at each of ``dims`` once per process, each in a
    short transaction of its own before the write that needs it (an index build takes a
    table lock a write transaction must not wait for while holding its own)."""
    with _LOCK:
        done = _INDEXED.setdefault(db.engine, set())
        todo = [d for d in sorted(dims) if (model, d) not in done]
    for dim in todo:
        try:
            with db.write() as conn:
                create_vector_index(conn, found.schema, model, dim)
        except Exception:
            with db.read() as conn:
                if not _index_exists(conn, model, dim):
                    raise
        with _LOCK:
            done.add((model, dim))


def _index_exists(conn: Connection, model: str, dim: int) -> bool:
    found = conn.execute(
        sa.text(
            "SELECT 1 FROM pg_indexes WHERE indexname = :name "
            "AND schemaname = ANY(current_schemas(false))"
        ),
        {"name": vector_index_name(model, dim)},
    ).scalar()
    return found is not None


def configure(conn: Connection, found: PgVector, k: int) -> None:
    """``SET LOCAL`` the HNSW scan settings of a dense search (one statement; the caller's
    read transaction ends them)."""
    settings = {"hnsw.ef_search": str(max(EF_SEARCH, k))}
    if found.iterative:
        settings["hnsw.iterative_scan"] = "relaxed_order"
    calls = ", ".join(f"set_config('{name}', '{value}', true)" for name, value in settings.items())
    conn.exec_driver_sql(f"SELECT {calls}")


def _distance(found: PgVector, dim: int) -> str:
    cast = f"{found.schema}.vector({int(dim)})"
    return f"({EMBEDDING}::{cast} OPERATOR({found.schema}.<=>) CAST(:q AS {cast}))"


def _of_model(model: str, dim: int) -> str:
    # A colon would read as a bind parameter in sa.text: escaped.
    return f"model = {sql_literal(model)} AND dim = {int(dim)}".replace(":", "\\:")


_NEAREST: dict[tuple[str, str, int, bool], sa.TextClause] = {}


def _nearest_statement(found: PgVector, model: str, dim: int, exact: bool) -> sa.TextClause:
    key = (found.schema, model, dim, exact)
    statement = _NEAREST.get(key)
    if statement is None:
        distance = _distance(found, dim)
        order = f"{distance} + 0" if exact else distance  # + 0: no index can order it
        statement = sa.text(
            f"SELECT insight_seq, 1 - {distance} FROM {VECTORS.name} "
            f"WHERE {_of_model(model, dim)} AND space_id = :space "
            f"ORDER BY {order} LIMIT :k"
        )
        _NEAREST[key] = statement
    return statement


def nearest(
    conn: Connection,
    found: PgVector,
    space_id: str,
    model: str,
    query_vector: np.ndarray,
    k: int,
) -> dict[int, float]:
    """The ``k`` rows of the space whose vectors of ``model`` are nearest the query:
    ``{seq: cosine}`` (call :func:`configure` first in the same transaction).

    Example:
        >>> nearest(conn, found, "notes", "wordllama-l2-supercat", query_vector, 50)
        {12: 0.71, 40: 0.64}
    """
    dim = int(query_vector.shape[0])
    params = {"space": space_id, "q": vector_literal(query_vector.tolist()), "k": k}
    exact = dim > HNSW_MAX_DIM
    rows = conn.execute(_nearest_statement(found, model, dim, exact), params).all()
    if len(rows) < k and not exact and not found.iterative:
        # The index scan stopped after ef_search candidates of every space: the space may
        # hold more. Its own vectors, scanned exactly, answer.
        rows = conn.execute(_nearest_statement(found, model, dim, True), params).all()
    return {int(seq): float(cos) for seq, cos in rows}


def cosines(
    conn: Connection,
    found: PgVector,
    model: str,
    query_vector: np.ndarray,
    seqs: Sequence[int],
) -> dict[int, float]:
    """Cosine of each of ``seqs`` that has a vector of ``model`` (one statement)."""
    if not seqs:
        return {}
    dim = int(query_vector.shape[0])
    statement = sa.text(
        f"SELECT insight_seq, 1 - {_distance(found, dim)} FROM {VECTORS.name} "
        f"WHERE insight_seq = ANY(CAST(:seqs AS bigint[])) AND {_of_model(model, dim)}"
    )
    params = {"seqs": list(seqs), "q": vector_literal(query_vector.tolist())}
    return {int(s): float(c) for s, c in conn.execute(statement, params).all()}


def all_cosines(
    conn: Connection, found: PgVector, space_id: str, model: str, query_vector: np.ndarray
) -> dict[int, float]:
    """Cosine of every row of the space with a vector of ``model`` (one statement)."""
    dim = int(query_vector.shape[0])
    statement = sa.text(
        f"SELECT insight_seq, 1 - {_distance(found, dim)} FROM {VECTORS.name} "
        f"WHERE space_id = :space AND {_of_model(model, dim)}"
    )
    params = {"space": space_id, "q": vector_literal(query_vector.tolist())}
    return {int(s): float(c) for s, c in conn.execute(statement, params).all()}
