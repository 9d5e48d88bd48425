"""Idle-review activity in the shared SQL database: component ``"review"``.

* ``mnemon_review_activity`` — one row per conversation thread: the signals of the completed
  turns that have not been reviewed yet (``turns``: user and assistant character counts, the
  explicit-save and no-memory flags and the finished tool calls, as JSON; never the text),
  how many review attempts the thread has had, and when the last attempt started and the last
  review completed (UNIX seconds). A restarted host reads it back, so accumulated activity,
  admission and the minimum interval survive a restart; timers do not (a due review is armed
  again by the thread's next completed turn).
"""

from __future__ import annotations

import sqlalchemy as sa

from langgraph_mnemon.memory_layers.mnemos.schema import JsonText
from langgraph_mnemon.storage.db import Migration, create_tables

__all__ = ["METADATA", "MIGRATIONS", "REVIEW_ACTIVITY"]

METADATA = sa.MetaData()

REVIEW_ACTIVITY = sa.Table(
    "mnemon_review_activity",
    METADATA,
    sa.Column("thread_id", sa.Text, primary_key=True),
    sa.Column("turns", JsonText, nullable=False, server_default="[]"),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("last_attempt_at", sa.Float, nullable=True),
    sa.Column("last_review_at", sa.Float, nullable=True),
    sa.Column("updated_at", sa.Float, nullable=False),
)


def _create_v1(conn: sa.Connection) -> None:
    create_tables(conn, (REVIEW_ACTIVITY,))


MIGRATIONS: tuple[Migration, ...] = (
    Migration("review", 1, "Idle-review activity per thread", _create_v1),
)
"""Schema steps of the ``review`` component, for ``Database.setup``."""
