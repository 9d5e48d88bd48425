"""Learning passes as database rows: component ``"learning"``, shared by every replica.

``mnemon_learn_passes`` holds one row per pass: its thread and scope, the extractor, the
status and reason, the receipts (JSON), the fingerprints of the messages it read (so the next
pass of the thread reads only newer ones, on any replica), and when it was undone. A pass is
first written as ``running`` (:meth:`LearnPasses.claim`): a second replica that starts a pass of
the same thread meanwhile sees it and skips, so two passes never learn one message twice.

Example:
    >>> passes = LearnPasses(mem.database)
    >>> passes.seen(Scope(), "thread-1")
    set()
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

import sqlalchemy as sa

from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import NotFoundError
from langgraph_mnemon.memory_layers.learning._models import LearnPass, LearnReceipt
from langgraph_mnemon.memory_layers.mnemos.schema import JsonText
from langgraph_mnemon.storage.db import Database, Migration, create_tables

__all__ = ["LEARN_PASSES", "MIGRATIONS", "LearnPasses"]

METADATA = sa.MetaData()
LEARN_PASSES = sa.Table(
    "mnemon_learn_passes",
    METADATA,
    sa.Column("pass_id", sa.String(32), primary_key=True),
    sa.Column("thread_id", sa.Text, nullable=False),
    sa.Column("scope_user", sa.Text, nullable=False),
    sa.Column("scope_project", sa.Text, nullable=False),
    sa.Column("extractor", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("reason", sa.Text, nullable=False, server_default=""),
    sa.Column("messages", sa.Integer, nullable=False, server_default="0"),
    sa.Column("learned", sa.Integer, nullable=False, server_default="0"),
    sa.Column("receipts", JsonText, nullable=False, server_default="[]"),
    sa.Column("seen", JsonText, nullable=False, server_default="[]"),
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("finished_at", sa.Float, nullable=False),
    sa.Column("undone_at", sa.Float, nullable=True),
    sa.Index("ix_mnemon_learn_passes_thread", "scope_user", "scope_project", "thread_id"),
    sa.Index("ix_mnemon_learn_passes_started", "started_at"),
)
_P = LEARN_PASSES.c
RUNNING_STALE_SECONDS = 900.0
"""A ``running`` row older than this is a pass whose process died: it no longer blocks."""


def _create_v1(conn: sa.Connection) -> None:
    create_tables(conn, (LEARN_PASSES,))


MIGRATIONS: tuple[Migration, ...] = (
    Migration("learning", 1, "Learning passes: receipts and read messages per thread", _create_v1),
)


def _of(scope: Scope) -> Any:
    return sa.and_(_P.scope_user == scope.user, _P.scope_project == scope.project)


class LearnPasses:
    """The recorded learning passes in ``database`` (one transaction a call).

    Args:
        database: a callable giving the host's database (opened on first use).
        clock: UNIX seconds (tests pass their own).
    """

    def __init__(
        self, database: Callable[[], Database], *, clock: Callable[[], float] | None = None
    ) -> None:
        self._database = database
        self.clock = clock or time.time

    def _db(self, *, write: bool) -> Database | None:
        db = self._database()
        if not db.is_setup(MIGRATIONS):
            if not write and not db.ready_for_read(MIGRATIONS):
                return None  # nothing was ever learned: a read creates no table
            db.setup(MIGRATIONS)
        return db

    def seen(self, scope: Scope, thread_id: str) -> set[str]:
        """Fingerprints of the thread's messages that finished passes read (undone ones too:
        an undo reverts what was learned, it does not ask to learn it again). A pass still
        ``running`` counts not: if its process died, its messages are read again (its writes,
        if any, are then duplicates and skipped)."""
        db = self._db(write=False)
        if db is None:
            return set()
        query = sa.select(_P.seen).where(
            _of(scope), _P.thread_id == thread_id, _P.status != "running"
        )
        rows = db.run_read(lambda conn: conn.execute(query).scalars().all())
        return {str(f) for row in rows for f in (row or [])}

    def claim(self, record: LearnPass, fingerprints: Iterable[str]) -> bool:
        """Write ``record`` as the thread's running pass; False when another pass of the same
        thread and scope is running (started less than 15 minutes ago)."""
        db = self._db(write=True)
        assert db is not None
        row = _row(record, fingerprints)

        def claim(conn: sa.Connection) -> bool:
            busy = conn.execute(
                sa.select(_P.pass_id).where(
                    _of(_scope(record)),
                    _P.thread_id == record.thread_id,
                    _P.status == "running",
                    _P.started_at > record.started_at - RUNNING_STALE_SECONDS,
                )
            ).first()
            if busy is not None:
                return False
            conn.execute(LEARN_PASSES.insert().values(**row))
            return True

        return db.run_write(claim)

    def save(self, record: LearnPass, fingerprints: Iterable[str] | None = None) -> None:
        """Write the pass's outcome over its row (insert it when it was never claimed)."""
        db = self._db(write=True)
        assert db is not None
        row = _row(record, fingerprints or ())
        if fingerprints is None:
            row.pop("seen")

        def save(conn: sa.Connection) -> None:
            done = conn.execute(
                LEARN_PASSES.update().where(_P.pass_id == record.pass_id).values(**row)
            )
            if not done.rowcount:
                conn.execute(LEARN_PASSES.insert().values(**_row(record, fingerprints or ())))

        db.run_write(save)

    def list(
        self, scope: Scope, *, thread_id: str | None = None, limit: int = 20
    ) -> list[LearnPass]:
        """The scope's passes, newest first (only the thread's with ``thread_id``)."""
        db = self._db(write=False)
        if db is None:
            return []
        query = sa.select(LEARN_PASSES).where(_of(scope))
        if thread_id is not None:
            query = query.where(_P.thread_id == thread_id)
        query = query.order_by(_P.started_at.desc(), _P.pass_id).limit(limit)
        rows = db.run_read(lambda conn: conn.execute(query).mappings().all())
        return [_record(row) for row in rows]

    def counts(self, scope: Scope) -> tuple[int, int]:
        """``(passes, memories learned)`` of the scope: every recorded pass, and the memories
        written by the passes that were not undone."""
        db = self._db(write=False)
        if db is None:
            return 0, 0
        kept = sa.case((_P.status == "undone", 0), else_=_P.learned)
        query = sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(kept), 0)).where(_of(scope))
        passes, learned = db.run_read(lambda conn: conn.execute(query).one())
        return int(passes), int(learned)

    def get(self, scope: Scope, pass_id: str) -> LearnPass:
        """One pass of the scope.

        Raises:
            NotFoundError: no such pass in this scope (another scope's pass is not found).
        """
        db = self._db(write=False)
        query = sa.select(LEARN_PASSES).where(_of(scope), _P.pass_id == pass_id)
        row = None if db is None else db.run_read(lambda c: c.execute(query).mappings().first())
        if row is None:
            raise NotFoundError(
                f"no learning pass {pass_id!r} in this scope; `mnemon learn --list` shows them"
            )
        return _record(row)


def _scope(record: LearnPass) -> Scope:
    return Scope(user=record.user, project=record.project)


def _row(record: LearnPass, fingerprints: Iterable[str]) -> dict[str, Any]:
    return {
        "pass_id": record.pass_id,
        "thread_id": record.thread_id,
        "scope_user": record.user,
        "scope_project": record.project,
        "extractor": record.extractor,
        "status": record.status,
        "reason": record.reason,
        "messages": record.messages,
        "learned": len(record.learned),
        "receipts": [r.model_dump(mode="json") for r in record.receipts],
        "seen": sorted(set(fingerprints)),
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "undone_at": record.undone_at,
    }


def _record(row: Any) -> LearnPass:
    receipts = row["receipts"]
    if isinstance(receipts, str):  # a driver that hands JSON back as text
        receipts = json.loads(receipts)
    return LearnPass(
        pass_id=row["pass_id"],
        thread_id=row["thread_id"],
        user=row["scope_user"],
        project=row["scope_project"],
        extractor=row["extractor"],
        status=row["status"],
        reason=row["reason"] or "",
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        messages=row["messages"],
        receipts=tuple(LearnReceipt.model_validate(r) for r in receipts or ()),
        undone_at=row["undone_at"],
    )
