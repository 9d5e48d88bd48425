"""Scheduled idle reviews as database rows with a lease, shared by every replica of a host.

One ``mnemon_review_queue`` row per thread holds its pending review (see
:mod:`langgraph_mnemon.memory_layers.mnemos.review_schema`). The scheduler that writes it
holds the lease until ``lease_seconds`` after the review is due and wakes up on time itself;
every replica polls :meth:`SqlReviewQueue.claim_due` for due rows whose lease expired, so a
review whose scheduler died runs on another replica. Every change is a compare-and-set on the
row's ``version``: exactly one claimant wins, on SQLite (one writer at a time) and on
PostgreSQL (a concurrent ``UPDATE`` re-checks its ``WHERE`` against the committed row).

Debounce and cancellation: :meth:`~SqlReviewQueue.schedule` replaces the thread's row (a new
token), :meth:`~SqlReviewQueue.cancel` deletes it; a runner holding an older token or version
finds its :meth:`~SqlReviewQueue.heartbeat` and :meth:`~SqlReviewQueue.done` refused and
leaves the thread's activity alone.

Example:
    >>> queue = SqlReviewQueue(mem.database)
    >>> job = queue.schedule("t1", Scope(), transcript, delay=30, owner="a", lease_seconds=60)
    >>> queue.claim("t1", job.token, owner="a", lease_seconds=60)  # the scheduler's wake-up
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict

from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.memory_layers.mnemos.review_schema import MIGRATIONS, REVIEW_QUEUE
from langgraph_mnemon.storage.db import Database, upsert

__all__ = ["ReviewJob", "SqlReviewQueue"]

_Q = REVIEW_QUEUE.c
_UPSERT_COLUMNS = (
    "token",
    "version",
    "scope_user",
    "scope_project",
    "transcript",
    "due_at",
    "state",
    "lease_owner",
    "lease_until",
    "updated_at",
)


class ReviewJob(BaseModel):
    """One scheduled idle review as read from (or written to) its row."""

    model_config = ConfigDict(frozen=True)

    thread_id: str
    token: str
    version: int
    scope: Scope
    transcript: list[dict[str, Any]]
    due_at: float
    state: Literal["scheduled", "running"]
    lease_owner: str
    lease_until: float


class SqlReviewQueue:
    """The scheduled reviews in ``database`` (thread-safe: one transaction a call).

    Args:
        database: the host's database (SQLite or PostgreSQL).
        clock: UNIX seconds (tests pass their own).
    """

    def __init__(self, database: Database, *, clock: Callable[[], float] | None = None) -> None:
        self.db = database
        self.clock = clock or time.time

    def _ready(self) -> bool:
        return self.db.ready_for_read(MIGRATIONS)

    def schedule(
        self,
        thread_id: str,
        scope: Scope,
        transcript: list[dict[str, Any]],
        *,
        delay: float,
        owner: str,
        lease_seconds: float,
    ) -> ReviewJob:
        """Replace the thread's pending review with a new one due in ``delay`` seconds.

        Args:
            thread_id: the conversation thread.
            scope: the scope of the turn that scheduled it (the review runs there).
            transcript: the thread's messages as LangChain message dicts.
            delay: seconds until it may run.
            owner: the scheduler that wakes up for it; it holds the lease until
                ``lease_seconds`` after the due time.
            lease_seconds: how long past the due time the scheduler keeps it.

        Returns:
            The scheduled job (a new token).

        Raises:
            StorageError: the database failed.
        """
        if not self.db.is_setup(MIGRATIONS):
            self.db.setup(MIGRATIONS)
        now = self.clock()
        due = now + max(delay, 0.0)
        job = ReviewJob(
            thread_id=thread_id,
            token=uuid.uuid4().hex,
            version=1,
            scope=scope,
            transcript=transcript,
            due_at=due,
            state="scheduled",
            lease_owner=owner,
            lease_until=due + lease_seconds,
        )
        stmt = upsert(self.db.dialect, REVIEW_QUEUE, ["thread_id"], _UPSERT_COLUMNS)
        with self.db.write() as conn:
            conn.execute(stmt, _row(job, now))
        return job

    def cancel(self, thread_id: str, *, pending: bool = False) -> bool:
        """Delete the thread's pending (or running) review; True when there was one.

        One statement: most turns have none, and a read finds that out without a write
        transaction; a caller that knows a row was written (``pending``: it scheduled one)
        deletes it at once.
        """
        if not self._ready():
            return False
        if not pending:
            exists = sa.select(_Q.thread_id).where(_Q.thread_id == thread_id)
            with self.db.read() as conn:
                if conn.execute(exists).first() is None:
                    return False
        stmt = sa.delete(REVIEW_QUEUE).where(_Q.thread_id == thread_id)
        with self.db.write() as conn:
            return conn.execute(stmt).rowcount > 0

    def get(self, thread_id: str) -> ReviewJob | None:
        """The thread's pending review, or None."""
        if not self._ready():
            return None
        with self.db.read() as conn:
            row = conn.execute(sa.select(REVIEW_QUEUE).where(_Q.thread_id == thread_id)).first()
        return None if row is None else _job(row._mapping)

    def claim(
        self, thread_id: str, token: str, *, owner: str, lease_seconds: float
    ) -> ReviewJob | None:
        """Claim the scheduled review ``token`` of the thread to run it (a wake-up fired).

        Returns:
            The job, now ``running`` and leased to ``owner``; None when it was cancelled,
            replaced by a newer turn, or claimed by another runner already.
        """
        job = self.get(thread_id)
        if job is None or job.token != token or job.state != "scheduled":
            return None
        return self._take(job, owner, lease_seconds)

    def claim_due(self, *, owner: str, lease_seconds: float, limit: int = 8) -> list[ReviewJob]:
        """Claim due reviews whose lease expired (their scheduler or runner is gone).

        Returns:
            The jobs this caller won, ``running`` and leased to ``owner``.
        """
        if not self._ready():
            return []
        now = self.clock()
        stmt = (
            sa.select(REVIEW_QUEUE)
            .where(_Q.due_at <= now, _Q.lease_until < now)
            .order_by(_Q.due_at)
            .limit(limit)
        )
        with self.db.read() as conn:
            seen = [_job(row._mapping) for row in conn.execute(stmt)]
        won = [self._take(job, owner, lease_seconds) for job in seen]
        return [job for job in won if job is not None]

    def _take(self, job: ReviewJob, owner: str, lease_seconds: float) -> ReviewJob | None:
        now = self.clock()
        claimed = job.model_copy(
            update={
                "version": job.version + 1,
                "state": "running",
                "lease_owner": owner,
                "lease_until": now + lease_seconds,
            }
        )
        return claimed if self._swap(job, claimed, now) else None

    def heartbeat(self, job: ReviewJob, *, lease_seconds: float) -> bool:
        """Extend a running job's lease; False when it was cancelled or taken over."""
        now = self.clock()
        stmt = (
            sa.update(REVIEW_QUEUE)
            .where(_same(job))
            .values(lease_until=now + lease_seconds, updated_at=now)
        )
        with self.db.write() as conn:
            return conn.execute(stmt).rowcount == 1

    def reschedule(
        self, job: ReviewJob, *, delay: float, owner: str, lease_seconds: float
    ) -> ReviewJob | None:
        """Put a claimed job back, due in ``delay`` seconds (the minimum interval asked so).

        Returns:
            The rescheduled job, or None when it was cancelled or taken over meanwhile.
        """
        now = self.clock()
        due = now + max(delay, 0.0)
        again = job.model_copy(
            update={
                "version": job.version + 1,
                "state": "scheduled",
                "due_at": due,
                "lease_owner": owner,
                "lease_until": due + lease_seconds,
            }
        )
        return again if self._swap(job, again, now) else None

    def done(self, job: ReviewJob) -> bool:
        """Delete a finished job; False when it was cancelled or taken over meanwhile."""
        with self.db.write() as conn:
            return conn.execute(sa.delete(REVIEW_QUEUE).where(_same(job))).rowcount == 1

    def release(self, owner: str) -> int:
        """Give up ``owner``'s scheduled reviews (its host closes): other replicas may take
        them when due. A review running under ``owner`` keeps its lease until it expires.

        Returns:
            How many rows were released.
        """
        if not self._ready():
            return 0
        stmt = (
            sa.update(REVIEW_QUEUE)
            .where(_Q.lease_owner == owner, _Q.state == "scheduled")
            .values(lease_until=0.0, version=_Q.version + 1)
        )
        with self.db.write() as conn:
            return conn.execute(stmt).rowcount

    def prune(self, before: float) -> int:
        """Drop rows nobody touched since ``before`` (UNIX seconds); returns how many."""
        if not self._ready():
            return 0
        with self.db.write() as conn:
            return conn.execute(sa.delete(REVIEW_QUEUE).where(_Q.updated_at < before)).rowcount

    def _swap(self, old: ReviewJob, new: ReviewJob, now: float) -> bool:
        values = _row(new, now)
        del values["thread_id"], values["transcript"]
        stmt = sa.update(REVIEW_QUEUE).where(_same(old)).values(values)
        with self.db.write() as conn:
            return conn.execute(stmt).rowcount == 1


def _same(job: ReviewJob) -> sa.ColumnElement[bool]:
    return sa.and_(_Q.thread_id == job.thread_id, _Q.token == job.token, _Q.version == job.version)


def _row(job: ReviewJob, now: float) -> dict[str, Any]:
    return {
        "thread_id": job.thread_id,
        "token": job.token,
        "version": job.version,
        "scope_user": job.scope.user,
        "scope_project": job.scope.project,
        "transcript": job.transcript,
        "due_at": job.due_at,
        "state": job.state,
        "lease_owner": job.lease_owner,
        "lease_until": job.lease_until,
        "updated_at": now,
    }


def _job(row: Any) -> ReviewJob:
    return ReviewJob(
        thread_id=row["thread_id"],
        token=row["token"],
        version=int(row["version"]),
        scope=Scope(user=row["scope_user"], project=row["scope_project"]),
        transcript=row["transcript"] if isinstance(row["transcript"], list) else [],
        due_at=float(row["due_at"]),
        state="running" if row["state"] == "running" else "scheduled",
        lease_owner=row["lease_owner"],
        lease_until=float(row["lease_until"]),
    )
