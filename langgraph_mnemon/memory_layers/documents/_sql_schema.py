"""Documents in the shared SQL database: component ``"documents"``.

* ``mnemon_documents`` — one row per Document of one owner (``"project:local"``,
  ``"project:billing"``, ``"project:billing/user:alice"``): ``record`` is the record exactly as
  ``index.json`` stores it (its JSON line), ``body`` the trimmed Markdown body, ``position`` its
  place in the index (commit order). ``status``, ``revision``, ``content_hash`` and
  ``size_bytes`` repeat fields of ``record`` for queries and inspection. ``last_accessed_at``
  is the newest access time: searches move it forward without rewriting ``record``; the next
  commit folds it into ``record``, as the file backend folds ``access.jsonl`` into the index.
* ``mnemon_documents_heads`` — one row per owner: ``generation`` (a new token on every commit),
  ``access_token`` (a new token whenever access times move), and ``revision`` (the collection
  revision of the committed state). A reader checks this one row to know whether its cached
  state is still current.
"""

from __future__ import annotations

import sqlalchemy as sa

from langgraph_mnemon.storage.db import Migration, create_tables

__all__ = ["DOCUMENTS", "HEADS", "METADATA", "MIGRATIONS"]

METADATA = sa.MetaData()
_TIMESTAMP = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")

DOCUMENTS = sa.Table(
    "mnemon_documents",
    METADATA,
    sa.Column("owner", sa.Text, primary_key=True),
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("revision", sa.Integer, nullable=False),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("size_bytes", sa.BigInteger, nullable=False),
    # Compared as text: byte order on PostgreSQL too, whatever the database's collation.
    sa.Column("last_accessed_at", _TIMESTAMP, nullable=False),
    sa.Column("record", sa.Text, nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.Index("mnemon_documents_owner_position", "owner", "position"),
)

HEADS = sa.Table(
    "mnemon_documents_heads",
    METADATA,
    sa.Column("owner", sa.Text, primary_key=True),
    sa.Column("generation", sa.String(32), nullable=False),
    sa.Column("access_token", sa.String(32), nullable=False),
    sa.Column("revision", sa.String(64), nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)


def _create_v1(conn: sa.Connection) -> None:
    create_tables(conn, METADATA.sorted_tables)


MIGRATIONS: tuple[Migration, ...] = (
    Migration("documents", 1, "Documents records, bodies and per-owner heads", _create_v1),
)
"""Schema steps of the ``documents`` component, for ``Database.setup``."""
