"""Tables of Memory Spaces (tier 3) in the shared SQL database: component ``"spaces"``.

* ``mnemon_spaces`` — the Memory Space catalog: id, name, description, provider id, active flag
  and the provider's non-secret configuration. Secrets never enter this table; they live in
  their own table, sealed with ``secret_key`` when one is set (see
  :mod:`langgraph_mnemon.memory_layers.spaces._secrets`).
* ``mnemon_insights`` — insights of the native ``mnemos`` provider: content, category,
  importance, tags, entities, source, metadata and timestamps. ``terms`` holds the analysed
  search terms (stemmed words, Han bigrams) the keyword index was built from. Forgetting sets
  ``deleted_at`` (soft delete) and removes the row from the keyword index.
* Expiry (schema step 3): ``expires_at`` (UNIX seconds) and ``ttl_minutes`` of a row given a
  time to live (the store facade's TTL); a row whose ``expires_at`` has passed is read as gone
  at once and soft-deleted by the next sweep, which finds it through a partial index.
* ``mnemon_insight_edges`` — typed, weighted edges (temporal, semantic, causal, entity).
* ``mnemon_insight_entities`` — entity → insight, for automatic entity edges and the entity index.
* ``mnemon_insight_vectors`` — optional dense vectors (float32 bytes) of the configured embedder.
  Schema step 4, on PostgreSQL where the ``vector`` extension (pgvector) can be created, adds
  ``embedding``: the same vectors as an untyped pgvector ``vector`` (dimensions differ per
  embedder model), back-filled from the bytes, with one HNSW cosine index per (model,
  dimension): the expression ``embedding::vector(D)`` over the rows ``WHERE model = … AND dim
  = D`` (:func:`create_vector_index`, named by :func:`vector_index_name`). Without the extension
  the step changes nothing and searches keep the vectors in memory.
* ``mnemon_space_terms`` / ``mnemon_space_stats`` — per-space document frequencies, counts and
  a write version, so keyword scores are BM25 over one space and identical on SQLite and
  PostgreSQL, and cached vectors know when they are stale.
* Keyword index: on SQLite a contentless FTS5 table ``mnemon_insights_fts`` (rowid = insight
  ``seq``, tokens prefixed by a per-space token); on PostgreSQL a generated ``tsvector``
  column (the analysed terms as lexemes, no second parser) with a GIN index.

Times are UNIX seconds (``Float``).
"""

from __future__ import annotations

import array
import hashlib
import time
from collections.abc import Sequence

import sqlalchemy as sa

from langgraph_mnemon.memory_layers.mnemos.schema import JsonText
from langgraph_mnemon.storage.db import Migration, column_names, create_tables

__all__ = [
    "EDGES",
    "EMBEDDING",
    "ENTITIES",
    "EXPIRY_INDEX",
    "FTS_TABLE",
    "HNSW_MAX_DIM",
    "INSIGHTS",
    "METADATA",
    "MIGRATIONS",
    "SPACES",
    "SPACE_STATS",
    "SPACE_TERMS",
    "STORE_KEY_INDEX",
    "VECTORS",
    "create_vector_index",
    "pgvector_schema",
    "sql_literal",
    "vector_index_name",
    "vector_literal",
]

_SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
FTS_TABLE = "mnemon_insights_fts"

METADATA = sa.MetaData()

SPACES = sa.Table(
    "mnemon_spaces",
    METADATA,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("description", sa.Text, nullable=False, server_default=""),
    sa.Column("provider_id", sa.String(64), nullable=False),
    sa.Column("active", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("config", JsonText, nullable=False, server_default="{}"),
    sa.Column("external_id", sa.Text, nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.Column("revision", sa.Integer, nullable=False, server_default="1"),
    sa.Index("ix_mnemon_spaces_provider", "provider_id"),
)

STORE_KEY_INDEX = "ux_mnemon_insights_store_key"
EXPIRY_INDEX = "ix_mnemon_insights_expires"


def _insights(metadata: sa.MetaData, *, keyed: bool) -> sa.Table:
    """The insights table; ``keyed`` adds the ``store_key`` column of schema step 2 and the
    expiry columns of step 3 (step 1 still creates the table without them, so an old database
    upgrades through steps 2 and 3)."""
    keyed_columns = (
        [
            sa.Column("store_key", sa.Text, nullable=True),
            sa.Column("expires_at", sa.Float, nullable=True),
            sa.Column("ttl_minutes", sa.Float, nullable=True),
        ]
        if keyed
        else []
    )
    return sa.Table(
        "mnemon_insights",
        metadata,
        sa.Column("seq", _SEQ, primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(32), nullable=False, unique=True),
        sa.Column("space_id", sa.String(64), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("content_hash", sa.String(32), nullable=False),
        sa.Column("category", sa.String(16), nullable=False, server_default="general"),
        sa.Column("importance", sa.Integer, nullable=False, server_default="3"),
        sa.Column("tags", JsonText, nullable=False, server_default="[]"),
        sa.Column("entities", JsonText, nullable=False, server_default="[]"),
        sa.Column("source", sa.String(16), nullable=False, server_default="agent"),
        sa.Column("metadata", JsonText, nullable=False, server_default="{}"),
        sa.Column("terms", sa.Text, nullable=False, server_default=""),
        sa.Column("term_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.Column("deleted_at", sa.Float, nullable=True),
        *keyed_columns,
        sa.Index("ix_mnemon_insights_space", "space_id", "deleted_at", "seq"),
        sa.Index("ix_mnemon_insights_hash", "space_id", "content_hash"),
        sqlite_autoincrement=True,
    )


INSIGHTS = _insights(METADATA, keyed=True)
_INSIGHTS_V1 = _insights(sa.MetaData(), keyed=False)

EDGES = sa.Table(
    "mnemon_insight_edges",
    METADATA,
    sa.Column("space_id", sa.String(64), nullable=False),
    sa.Column("source_id", sa.String(32), primary_key=True),
    sa.Column("target_id", sa.String(32), primary_key=True),
    sa.Column("edge_type", sa.String(16), primary_key=True),
    sa.Column("weight", sa.Float, nullable=False, server_default="0.5"),
    sa.Column("reason", sa.Text, nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Index("ix_mnemon_insight_edges_target", "target_id"),
    sa.Index("ix_mnemon_insight_edges_space", "space_id"),
)

ENTITIES = sa.Table(
    "mnemon_insight_entities",
    METADATA,
    sa.Column("space_id", sa.String(64), primary_key=True),
    sa.Column("entity", sa.String(200), primary_key=True),
    sa.Column("insight_seq", _SEQ, primary_key=True),
)

VECTORS = sa.Table(
    "mnemon_insight_vectors",
    METADATA,
    sa.Column("insight_seq", _SEQ, primary_key=True, autoincrement=False),
    sa.Column("space_id", sa.String(64), nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("dim", sa.Integer, nullable=False),
    sa.Column("vector", sa.LargeBinary, nullable=False),
    sa.Index("ix_mnemon_insight_vectors_space", "space_id", "model"),
)

SPACE_TERMS = sa.Table(
    "mnemon_space_terms",
    METADATA,
    sa.Column("space_id", sa.String(64), primary_key=True),
    sa.Column("term", sa.String(200), primary_key=True),
    sa.Column("df", sa.Integer, nullable=False),
)

SPACE_STATS = sa.Table(
    "mnemon_space_stats",
    METADATA,
    sa.Column("space_id", sa.String(64), primary_key=True),
    sa.Column("docs", sa.Integer, nullable=False, server_default="0"),
    sa.Column("terms", _SEQ, nullable=False, server_default="0"),
    sa.Column("version", _SEQ, nullable=False, server_default="0"),
)


def _create_v1(conn: sa.Connection) -> None:
    then: tuple[str, ...] = ()
    if conn.dialect.name == "sqlite":
        # Contentless: the terms live in mnemon_insights.terms; rows are removed with the
        # FTS5 'delete' command, which needs the original values. Every indexed token is the
        # term prefixed with a fixed-length token of its space, so a query reads only the
        # postings of its own space.
        fts = (
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
            "terms, content='', tokenize='unicode61 remove_diacritics 0')"
        )
        then = (fts,)
    elif conn.dialect.name == "postgresql":
        tsv = (
            "ALTER TABLE mnemon_insights ADD COLUMN IF NOT EXISTS tsv tsvector "
            "GENERATED ALWAYS AS (CASE WHEN deleted_at IS NULL "
            "THEN array_to_tsvector(string_to_array(terms, ' ')) END) STORED"
        )
        index = (
            "CREATE INDEX IF NOT EXISTS ix_mnemon_insights_tsv ON mnemon_insights USING gin (tsv)"
        )
        then = (tsv, index)
    tables = (SPACES, _INSIGHTS_V1, EDGES, ENTITIES, VECTORS, SPACE_TERMS, SPACE_STATS)
    create_tables(conn, tables, then=then)


def _add_store_key(conn: sa.Connection) -> None:
    """Step 2: the store facade's indexed address. Adds ``store_key``, back-fills it from the
    metadata of the newest live row of each (space, key), soft-deletes the older live copies
    (concurrent puts of the old facade could leave some) and adds the unique partial index."""
    columns = column_names(conn, INSIGHTS.name)
    if "store_key" not in columns:
        conn.exec_driver_sql(f"ALTER TABLE {INSIGHTS.name} ADD COLUMN store_key TEXT")
    if conn.dialect.name == "postgresql":
        field = "jsonb_extract_path_text(CAST(metadata AS jsonb), 'store_key')"
        typed = "jsonb_typeof(CAST(metadata AS jsonb) -> 'store_key') = 'string'"
    else:
        field = """json_extract(metadata, '$."store_key"')"""
        typed = """json_type(metadata, '$."store_key"') = 'text'"""
    found = conn.execute(
        sa.text(
            f"SELECT seq, space_id, {field} FROM {INSIGHTS.name} "
            f"WHERE deleted_at IS NULL AND store_key IS NULL AND metadata LIKE :hint "
            f"AND {typed} ORDER BY seq DESC"
        ),
        {"hint": "%store_key%"},
    ).all()
    newest: dict[tuple[str, str], int] = {}
    superseded: list[int] = []
    for seq, space_id, key in found:
        if newest.setdefault((space_id, key), int(seq)) != int(seq):
            superseded.append(int(seq))
    if newest:
        conn.execute(
            INSIGHTS.update()
            .where(INSIGHTS.c.seq == sa.bindparam("b_seq"))
            .values(store_key=sa.bindparam("b_key")),
            [{"b_seq": seq, "b_key": key} for (_, key), seq in newest.items()],
        )
    _retire(conn, superseded)
    conn.exec_driver_sql(
        f"CREATE UNIQUE INDEX IF NOT EXISTS {STORE_KEY_INDEX} ON {INSIGHTS.name} "
        "(space_id, store_key) WHERE deleted_at IS NULL AND store_key IS NOT NULL"
    )


def _add_expiry(conn: sa.Connection) -> None:
    """Step 3: a row's time to live. Adds ``expires_at`` and ``ttl_minutes`` (NULL: the row
    never expires, so every existing row keeps living) and the partial index a sweep reads."""
    columns = column_names(conn, INSIGHTS.name)
    kind = sa.Float().compile(dialect=conn.dialect)
    for name in ("expires_at", "ttl_minutes"):
        if name not in columns:
            conn.exec_driver_sql(f"ALTER TABLE {INSIGHTS.name} ADD COLUMN {name} {kind}")
    conn.exec_driver_sql(
        f"CREATE INDEX IF NOT EXISTS {EXPIRY_INDEX} ON {INSIGHTS.name} (expires_at) "
        "WHERE deleted_at IS NULL AND expires_at IS NOT NULL"
    )


def _retire(conn: sa.Connection, seqs: list[int]) -> None:
    """Soft-delete superseded copies during step 2: out of the term statistics and vectors.
    Their keyword-index postings stay; every search reads only live rows."""
    for seq in seqs:
        row = conn.execute(
            sa.select(INSIGHTS.c.space_id, INSIGHTS.c.terms, INSIGHTS.c.term_count).where(
                INSIGHTS.c.seq == seq
            )
        ).one()
        space_id, terms, count = row[0], row[1] or "", int(row[2])
        now = time.time()
        conn.execute(
            INSIGHTS.update().where(INSIGHTS.c.seq == seq).values(deleted_at=now, updated_at=now)
        )
        unique = list(dict.fromkeys(terms.split()))
        if unique:
            conn.execute(
                SPACE_TERMS.update()
                .where(SPACE_TERMS.c.space_id == space_id, SPACE_TERMS.c.term.in_(unique))
                .values(df=SPACE_TERMS.c.df - 1)
            )
        conn.execute(
            SPACE_STATS.update()
            .where(SPACE_STATS.c.space_id == space_id)
            .values(
                docs=SPACE_STATS.c.docs - 1,
                terms=SPACE_STATS.c.terms - count,
                version=SPACE_STATS.c.version + 1,
            )
        )
        conn.execute(VECTORS.delete().where(VECTORS.c.insight_seq == seq))


EMBEDDING = "embedding"
"""Step 4's pgvector column of ``mnemon_insight_vectors``."""
HNSW_MAX_DIM = 2000
"""The most dimensions pgvector's HNSW index takes for ``vector``: larger vectors are searched
by an exact scan in the database."""
_BACKFILL = 1000  # rows converted per statement


def sql_literal(text: str) -> str:
    """``text`` as a quoted SQL string literal (quotes doubled; DDL and partial-index
    predicates take no bind parameters)."""
    return "'" + text.replace("'", "''") + "'"


def vector_literal(values: Sequence[float]) -> str:
    """A vector in pgvector's text form, ``[1.5,2,...]``."""
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


def pgvector_schema(conn: sa.Connection) -> str | None:
    """The schema that holds the ``vector`` extension (quoted for SQL), or None without it.
    Its type and operators are named through it, so a search path that leaves the schema out
    (a test's own schema) still finds them."""
    if conn.dialect.name != "postgresql":
        return None
    found = conn.execute(
        sa.text(
            "SELECT quote_ident(n.nspname) FROM pg_extension e "
            "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
        )
    ).scalar()
    return None if found is None else str(found)


def vector_index_name(model: str, dim: int) -> str:
    """The stable name of the HNSW index of one embedder model and dimension."""
    digest = hashlib.blake2b(f"{model}\x00{dim}".encode(), digest_size=8).hexdigest()
    return f"ix_mnemon_vec_{digest}"


def create_vector_index(conn: sa.Connection, schema: str, model: str, dim: int) -> bool:
    """Create the HNSW cosine index of ``model`` at ``dim`` dimensions if it is missing.

    Args:
        conn: a PostgreSQL connection in a transaction.
        schema: the extension's schema (:func:`pgvector_schema`).
        model: the embedder model id (the index covers its rows only).
        dim: the dimension (the index expression casts to ``vector(dim)``).

    Returns:
        False when ``dim`` is above :data:`HNSW_MAX_DIM` (no index: an exact scan serves).
    """
    if not 0 < dim <= HNSW_MAX_DIM:
        return False
    predicate = f"model = {sql_literal(model)} AND dim = {int(dim)}".replace(":", "\\:")
    conn.execute(
        sa.text(
            f"CREATE INDEX IF NOT EXISTS {vector_index_name(model, dim)} ON {VECTORS.name} "
            f"USING hnsw (({EMBEDDING}::{schema}.vector({int(dim)})) "
            f"{schema}.vector_cosine_ops) WHERE {predicate}"
        )
    )
    return True


def _create_extension(conn: sa.Connection) -> bool:
    """``CREATE EXTENSION IF NOT EXISTS vector`` under a savepoint: False (and the transaction
    still usable) when the server has no pgvector or the role may not create it."""
    try:
        with conn.begin_nested():
            conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS vector")
    except sa.exc.DBAPIError:
        return False
    return True


def _add_embedding(conn: sa.Connection) -> None:
    """Step 4: pgvector. Where the extension can be created, add the ``embedding`` column,
    fill it from the stored bytes and index each (model, dimension) in use; elsewhere (SQLite,
    a PostgreSQL without pgvector) nothing changes."""
    if conn.dialect.name != "postgresql" or not _create_extension(conn):
        return
    schema = pgvector_schema(conn)
    if schema is None:
        return
    conn.exec_driver_sql(
        f"ALTER TABLE {VECTORS.name} ADD COLUMN IF NOT EXISTS {EMBEDDING} {schema}.vector"
    )
    update = sa.text(
        f"UPDATE {VECTORS.name} SET {EMBEDDING} = CAST(:e AS {schema}.vector) "
        "WHERE insight_seq = :s"
    )
    last = -1
    while True:
        rows = conn.execute(
            sa.text(
                f"SELECT insight_seq, vector FROM {VECTORS.name} "
                f"WHERE {EMBEDDING} IS NULL AND insight_seq > :last ORDER BY insight_seq LIMIT :n"
            ),
            {"last": last, "n": _BACKFILL},
        ).all()
        if not rows:
            break
        last = int(rows[-1][0])
        params = [
            {"s": int(seq), "e": vector_literal(array.array("f", bytes(blob)))}
            for seq, blob in rows
        ]
        conn.execute(update, params)
    pairs = conn.execute(sa.text(f"SELECT DISTINCT model, dim FROM {VECTORS.name}")).all()
    for model, dim in pairs:
        create_vector_index(conn, schema, str(model), int(dim))


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "spaces",
        1,
        "Memory Space catalog, native insights, edges, entities, vectors and keyword index",
        _create_v1,
    ),
    Migration(
        "spaces",
        2,
        "store_key: the BaseStore facade's indexed item address (unique over live rows)",
        _add_store_key,
    ),
    Migration(
        "spaces",
        3,
        "expires_at / ttl_minutes: time to live of a row (the store facade's TTL), swept by index",
        _add_expiry,
    ),
    Migration(
        "spaces",
        4,
        "embedding: pgvector column and HNSW index per embedder model (PostgreSQL with pgvector)",
        _add_embedding,
    ),
)
"""Schema steps of the ``spaces`` component, for ``Database.setup``."""
