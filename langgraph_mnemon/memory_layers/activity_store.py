"""Idle-review activity kept in the shared SQL database (SQLite or PostgreSQL).

The :class:`~langgraph_mnemon.memory_layers.activity.ActivityStore` the host gives its review
gate: one ``mnemon_review_activity`` row per thread (see
:mod:`langgraph_mnemon.memory_layers.mnemos.review_schema`), replaced whenever the thread's
activity, attempts or times change. A read never creates the schema; the first save does.
:meth:`SqlActivityStore.prune` drops rows not updated for a while and keeps at most a given
number (the newest), so the table does not grow with every thread ever seen.

Example:
    >>> store = SqlActivityStore(mem.database)
    >>> gate = ReviewGate(ReviewSettings.from_config(mem.config), store=store)
    >>> gate.record_turn("t1", TurnActivity(user_text="Please remember: deploys go via CI."))
    >>> SqlActivityStore(mem.database).load("t1").turns[0].explicit_save  # no text is kept
    True
"""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa
from pydantic import ValidationError

from langgraph_mnemon.memory_layers.activity import SavedActivity, TurnSignals
from langgraph_mnemon.memory_layers.mnemos.review_schema import MIGRATIONS, REVIEW_ACTIVITY
from langgraph_mnemon.storage.db import Database, upsert

__all__ = ["SqlActivityStore"]

_COLUMNS = ("turns", "attempts", "last_attempt_at", "last_review_at", "updated_at")


class SqlActivityStore:
    """Per-thread idle-review activity in ``database`` (thread-safe: one transaction a call)."""

    def __init__(self, database: Database) -> None:
        self.db = database

    def load(self, thread_id: str) -> SavedActivity | None:
        """The saved activity of ``thread_id``, or None (also while no table exists yet)."""
        if not self.db.ready_for_read(MIGRATIONS):
            return None
        stmt = sa.select(REVIEW_ACTIVITY).where(REVIEW_ACTIVITY.c.thread_id == thread_id)
        with self.db.read() as conn:
            row = conn.execute(stmt).mappings().first()
        if row is None:
            return None
        return SavedActivity(
            turns=_turns(row["turns"]),
            attempts=max(int(row["attempts"] or 0), 0),
            last_attempt_at=row["last_attempt_at"],
            last_review_at=row["last_review_at"],
            updated_at=row["updated_at"],
        )

    def save(self, thread_id: str, saved: SavedActivity) -> None:
        """Replace the saved activity of ``thread_id`` (creates the table on first use)."""
        if not self.db.is_setup(MIGRATIONS):
            self.db.setup(MIGRATIONS)
        values: dict[str, Any] = {
            "thread_id": thread_id,
            "turns": [turn.model_dump(mode="json") for turn in saved.turns],
            "attempts": saved.attempts,
            "last_attempt_at": saved.last_attempt_at,
            "last_review_at": saved.last_review_at,
            "updated_at": time.time() if saved.updated_at is None else saved.updated_at,
        }
        stmt = upsert(self.db.dialect, REVIEW_ACTIVITY, ["thread_id"], _COLUMNS)
        with self.db.write() as conn:
            conn.execute(stmt, values)

    def prune(self, before: float, keep: int) -> int:
        """Drop the rows not updated since ``before``, then all but the ``keep`` newest.

        Args:
            before: UNIX seconds (the gate's clock): older rows are dropped.
            keep: the most rows kept (the least recently updated go first).

        Returns:
            How many rows were dropped.

        Raises:
            StorageError: the database failed.
        """
        if not self.db.ready_for_read(MIGRATIONS):
            return 0
        col = REVIEW_ACTIVITY.c
        newest = sa.select(col.thread_id).order_by(col.updated_at.desc(), col.thread_id)
        surplus = sa.select(newest.offset(keep).subquery().c.thread_id)
        with self.db.write() as conn:
            old = conn.execute(sa.delete(REVIEW_ACTIVITY).where(col.updated_at < before))
            over = conn.execute(sa.delete(REVIEW_ACTIVITY).where(col.thread_id.in_(surplus)))
        return old.rowcount + over.rowcount


def _turns(value: Any) -> tuple[TurnSignals, ...]:
    """Saved turns; an entry of another shape (an older or edited row) is skipped."""
    turns = []
    for item in value if isinstance(value, list) else []:
        try:
            turns.append(TurnSignals.model_validate(item))
        except ValidationError:
            continue
    return tuple(turns)
