"""Idle-review state in the shared SQL database: component ``"review"``.

* ``mnemon_review_activity`` — one row per conversation thread: the signals of the completed
  turns that have not been reviewed yet (``turns``: user and assistant character counts, the
  explicit-save and no-memory flags and the finished tool calls, as JSON; never the text),
  how many review attempts the thread has had, and when the last attempt started and the last
  review completed (UNIX seconds). A restarted host reads it back, so accumulated activity,
  admission and the minimum interval survive a restart. ``updated_at`` is when the row last
  changed: rows older than ``idle_review.thread_ttl_hours`` are dropped, and so are the oldest
  beyond ``idle_review.max_threads`` (version 2 indexes it).
* ``mnemon_review_queue`` (version 2) — the scheduled idle review of a thread, at most one:
  ``token`` names one scheduling (a newer turn replaces it, a new turn deletes the row),
  ``version`` counts every claim and reschedule (each change is a compare-and-set on it),
  ``scope_user`` / ``scope_project`` the scope the review runs in, ``transcript`` the thread's
  messages as LangChain message dicts (kept only until the review ran or was cancelled),
  ``due_at`` when it may run, ``state`` ``scheduled`` or ``running``, and the lease:
  ``lease_owner`` (the scheduler that armed it, or the runner) holds it until ``lease_until``.
  Any replica may claim a due row whose lease expired (its scheduler or runner died).
"""

from __future__ import annotations

import sqlalchemy as sa

from langgraph_mnemon.memory_layers.mnemos.schema import JsonText
from langgraph_mnemon.storage.db import Migration, create_tables

__all__ = ["METADATA", "MIGRATIONS", "REVIEW_ACTIVITY", "REVIEW_QUEUE"]

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

REVIEW_QUEUE = sa.Table(
    "mnemon_review_queue",
    METADATA,
    sa.Column("thread_id", sa.Text, primary_key=True),
    sa.Column("token", sa.Text, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("scope_user", sa.Text, nullable=False),
    sa.Column("scope_project", sa.Text, nullable=False),
    sa.Column("transcript", JsonText, nullable=False, server_default="[]"),
    sa.Column("due_at", sa.Float, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("lease_owner", sa.Text, nullable=False),
    sa.Column("lease_until", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.Index("ix_mnemon_review_queue_due", "due_at"),
)


def _create_v1(conn: sa.Connection) -> None:
    create_tables(conn, (REVIEW_ACTIVITY,))


_ACTIVITY_BY_AGE = (
    "CREATE INDEX IF NOT EXISTS ix_mnemon_review_activity_updated "
    "ON mnemon_review_activity (updated_at)"
)


def _create_v2(conn: sa.Connection) -> None:
    create_tables(
        conn,
        (REVIEW_QUEUE,),
        then=(_ACTIVITY_BY_AGE,),
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration("review", 1, "Idle-review activity per thread", _create_v1),
    Migration("review", 2, "Scheduled idle reviews with a lease; activity by age", _create_v2),
)
"""Schema steps of the ``review`` component, for ``Database.setup``."""
