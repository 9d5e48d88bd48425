"""Memory Space removal in the native provider: every row of one space deleted for good.

Unlike ``forget`` (a soft delete of one row), removal is the dangerous catalog action the
control plane asks for after confirmation (``MemorySpaces.remove_space``): the space's rows,
their keyword-index entries, vectors, entity rows, edges and term statistics all go, in one
transaction. The space's statistics row is kept with zero counts and a bumped write version,
so a vector cache any process still holds for that space id is stale (a new space of the same
id starts from a newer version, never from a cached one).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from langgraph_mnemon.adapters.providers.mnemos._sql import fts_text, space_token
from langgraph_mnemon.memory_layers.spaces.schema import (
    EDGES,
    ENTITIES,
    FTS_TABLE,
    INSIGHTS,
    SPACE_STATS,
    SPACE_TERMS,
    VECTORS,
)

__all__ = ["remove_space_rows"]


def remove_space_rows(conn: Connection, space_id: str) -> dict[str, Any]:
    """Delete every row of ``space_id`` inside the caller's transaction.

    Args:
        conn: An open write transaction.
        space_id: The space whose data goes.

    Returns:
        ``{"status": "removed", "id", "removed": rows deleted, "live": live rows among them}``.

    Example:
        >>> with db.write() as conn:
        ...     remove_space_rows(conn, "scratch")
        {'status': 'removed', 'id': 'scratch', 'removed': 3, 'live': 2}
    """
    live = conn.execute(
        sa.select(INSIGHTS.c.seq, INSIGHTS.c.terms).where(
            INSIGHTS.c.space_id == space_id, INSIGHTS.c.deleted_at.is_(None)
        )
    ).all()
    if conn.dialect.name == "sqlite" and live:
        # The contentless FTS5 index forgets a row only when told its indexed text; only live
        # rows are still indexed (forget removed the others already).
        token = space_token(space_id)
        conn.exec_driver_sql(
            f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, terms) VALUES ('delete', ?, ?)",
            [(int(seq), fts_text(token, terms or "")) for seq, terms in live],
        )
    for table in (ENTITIES, VECTORS, EDGES, SPACE_TERMS):
        conn.execute(table.delete().where(table.c.space_id == space_id))
    removed = conn.execute(INSIGHTS.delete().where(INSIGHTS.c.space_id == space_id)).rowcount
    conn.execute(
        SPACE_STATS.update()
        .where(SPACE_STATS.c.space_id == space_id)
        .values(docs=0, terms=0, version=SPACE_STATS.c.version + 1)
    )
    return {"status": "removed", "id": space_id, "removed": int(removed or 0), "live": len(live)}
