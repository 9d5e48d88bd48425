"""Tables of Memory Spaces (tier 3) in the shared SQL database: component ``"spaces"``.

* ``mnemon_spaces`` — the Memory Space catalog: id, name, description, provider id, active flag
  and the provider's non-secret configuration. Secrets never enter the database; they live in a
  host-side file (see :mod:`langgraph_mnemon.memory_layers.spaces`).
* ``mnemon_insights`` — insights of the native ``mnemos`` provider: content, category,
  importance, tags, entities, source, metadata and timestamps. ``terms`` holds the analysed
  search terms (stemmed words, Han bigrams) the keyword index was built from. Forgetting sets
  ``deleted_at`` (soft delete) and removes the row from the keyword index.
* ``mnemon_insight_edges`` — typed, weighted edges (temporal, semantic, causal, entity).
* ``mnemon_insight_entities`` — entity → insight, for automatic entity edges and the entity index.
* ``mnemon_insight_vectors`` — optional dense vectors (float32 bytes) of the configured embedder.
* ``mnemon_space_terms`` / ``mnemon_space_stats`` — per-space document frequencies, counts and
  a write version, so keyword scores are BM25 over one space and identical on SQLite and
  PostgreSQL, and cached vectors know when they are stale.
* Keyword index: on SQLite a contentless FTS5 table ``mnemon_insights_fts`` (rowid = insight
  ``seq``, tokens prefixed by a per-space token); on PostgreSQL a generated ``tsvector``
  column (the analysed terms as lexemes, no second parser) with a GIN index.

Times are UNIX seconds (``Float``).
"""

from __future__ import annotations

import sqlalchemy as sa

from langgraph_mnemon.memory_layers.mnemos.schema import JsonText
from langgraph_mnemon.storage.db import Migration

__all__ = [
    "EDGES",
    "ENTITIES",
    "FTS_TABLE",
    "INSIGHTS",
    "METADATA",
    "MIGRATIONS",
    "SPACES",
    "SPACE_STATS",
    "SPACE_TERMS",
    "VECTORS",
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

INSIGHTS = sa.Table(
    "mnemon_insights",
    METADATA,
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
    sa.Index("ix_mnemon_insights_space", "space_id", "deleted_at", "seq"),
    sa.Index("ix_mnemon_insights_hash", "space_id", "content_hash"),
    sqlite_autoincrement=True,
)

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
    for table in (SPACES, INSIGHTS, EDGES, ENTITIES, VECTORS, SPACE_TERMS, SPACE_STATS):
        table.create(conn, checkfirst=True)
    if conn.dialect.name == "sqlite":
        # Contentless: the terms live in mnemon_insights.terms; rows are removed with the
        # FTS5 'delete' command, which needs the original values. Every indexed token is the
        # term prefixed with a fixed-length token of its space, so a query reads only the
        # postings of its own space.
        conn.exec_driver_sql(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
            "terms, content='', tokenize='unicode61 remove_diacritics 0')"
        )
    elif conn.dialect.name == "postgresql":
        conn.exec_driver_sql(
            "ALTER TABLE mnemon_insights ADD COLUMN IF NOT EXISTS tsv tsvector "
            "GENERATED ALWAYS AS (CASE WHEN deleted_at IS NULL "
            "THEN array_to_tsvector(string_to_array(terms, ' ')) END) STORED"
        )
        conn.exec_driver_sql(
            "CREATE INDEX IF NOT EXISTS ix_mnemon_insights_tsv ON mnemon_insights USING gin (tsv)"
        )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "spaces",
        1,
        "Memory Space catalog, native insights, edges, entities, vectors and keyword index",
        _create_v1,
    ),
)
"""Schema steps of the ``spaces`` component, for ``Database.setup``."""
