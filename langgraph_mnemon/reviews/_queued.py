"""Idle reviews as rows of the host's review queue: what every scheduler shares.

A finished turn that makes a review due writes the thread's row (replacing a pending one:
debounce) and arms a wake-up for it; a new turn deletes the row (cancel) and aborts the
thread's review if it runs here. When the wake-up fires, the scheduler claims the row by its
token; a clock thread also polls for due rows whose lease expired (their scheduler or runner
died, or its host closed), so on a shared database every review runs on exactly one replica,
even when the one that scheduled it is gone. The gate decides (eligibility, admission, attempt
budget, minimum interval) once the row is claimed, over the thread's saved activity.

The bookkeeping (the gate, the queue rows of the turn hooks) runs in the caller's thread
under one lock, one call at a time: no thread hop on the turn's path. A turn costs the gate's
read and write of the thread's activity, one queue statement to cancel (a delete when this
scheduler wrote the thread's row, else a read that finds none) and, when a review is due, one
to schedule. Reviews run on a small pool of worker threads, each in a fresh context
(:class:`~langgraph_mnemon.reviews._runner.ReviewRunner`).
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import socket
import threading
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.messages import BaseMessage, messages_to_dict

from langgraph_mnemon.contracts import safe_text
from langgraph_mnemon.errors import MnemonError
from langgraph_mnemon.memory_layers.activity import PRUNE_EVERY_SECONDS, ReviewDecision
from langgraph_mnemon.memory_layers.expiry import ExpiringMap
from langgraph_mnemon.memory_layers.review_queue import ReviewJob, SqlReviewQueue
from langgraph_mnemon.nodes import ReviewOutcome
from langgraph_mnemon.reviews._clock import ReviewClock
from langgraph_mnemon.reviews._runner import ReviewRunner

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from langgraph_mnemon.memory_layers.activity import ReviewGate, TurnActivity
    from langgraph_mnemon.reviews._protocol import ReviewHost

__all__ = ["QueuedReviews", "default_owner"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_WORKERS = 2
_OUTCOMES_KEPT = 100


def default_owner() -> str:
    """A name for this scheduler that no other process or host shares."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class QueuedReviews:
    """Idle reviews as leased rows of the host's database (see the module docstring).

    Subclasses choose how a scheduled review wakes up (:meth:`_wake`): here, a timer of this
    process. ``outcomes`` lists ``(thread_id, ReviewOutcome)`` of the latest passes that ran
    here (at most 100).

    Args:
        host: the host whose database holds the queue, whose scoped review graphs run the
            reviews and whose health records failed passes (``mem``).
        gate: the gate that decides when a thread is reviewed.
        model: the review model; None uses the heuristic.
        queue: the queue (default: on the host's database).
        owner: this scheduler's name in the leases (default: host name, process, random).
    """

    def __init__(
        self,
        host: ReviewHost,
        gate: ReviewGate,
        model: BaseChatModel | None = None,
        *,
        queue: SqlReviewQueue | None = None,
        owner: str | None = None,
    ) -> None:
        idle = host.config.idle_review
        self.gate = gate
        self.queue = queue or SqlReviewQueue(host.database)
        self.owner = owner or default_owner()
        self.lease_seconds = idle.lease_ms / 1000
        self.runner = ReviewRunner(host, self.queue, model, lease_seconds=self.lease_seconds)
        self.outcomes: deque[tuple[str, ReviewOutcome]] = deque(maxlen=_OUTCOMES_KEPT)
        self._lock = threading.Lock()  # counters and the subclasses' small tables
        self._busy = 0
        self._pruned_at = 0.0
        self._closed = False
        # The gate's bookkeeping, one call at a time, in the caller's thread.
        self._books = threading.RLock()
        # thread -> token of the row this scheduler wrote last: a new turn deletes it at once
        # (a thread without an entry may still have a row, written by another replica).
        self._rows: ExpiringMap[str, str] = ExpiringMap(
            ttl_seconds=gate.settings.thread_ttl_seconds, cap=gate.settings.max_threads
        )
        self._pool = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="mnemon-review")
        self.clock = ReviewClock(self._due, self._poll, poll_seconds=idle.poll_ms / 1000)

    # --- turn hooks ---------------------------------------------------------------------------

    def _booked(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)`` under the bookkeeping lock, in the caller's thread (no hop)."""
        with self._books:
            return fn(*args)

    def turn_started(self, thread_id: str) -> None:
        """A new turn: cancel the thread's pending review and abort it if it runs here."""
        self._booked(self._turn_started, thread_id)

    def _turn_started(self, thread_id: str) -> None:
        self.gate.on_turn_start(thread_id)
        self.clock.disarm(thread_id)
        self._forget(thread_id)
        with self._lock:
            ours = self._rows.pop(thread_id) is not None
        if self.gate.settings.active:  # else nothing was scheduled (a claim drops the rest)
            self._guard("cancel", self.queue.cancel, thread_id, pending=ours)
        self.runner.abort(thread_id)

    def turn_finished(
        self, thread_id: str, messages: list[BaseMessage], turn: TurnActivity
    ) -> float | None:
        """Record the turn; when a review is due, write its row and arm its wake-up.

        Returns:
            The delay in seconds when a review was scheduled, else None.
        """
        return self._booked(self._turn_finished, thread_id, messages, turn)

    def _turn_finished(
        self, thread_id: str, messages: list[BaseMessage], turn: TurnActivity
    ) -> float | None:
        delay = self.gate.finish_turn(thread_id, turn)
        if delay is None:
            return None
        job = self._guard(
            "schedule",
            self.queue.schedule,
            thread_id,
            turn.scope,
            messages_to_dict(messages),
            delay=delay,
            owner=self.owner,
            lease_seconds=self.lease_seconds,
        )
        if job is None:
            return None
        self._mark(job)
        self._wake(job, delay, again=False)
        return delay

    def _mark(self, job: ReviewJob) -> None:
        """Remember that this scheduler wrote ``job``'s row (the next turn deletes it)."""
        with self._lock:
            self._rows[job.thread_id] = job.token

    # --- waking up ----------------------------------------------------------------------------

    def _wake(self, job: ReviewJob, delay: float, *, again: bool) -> None:
        """Arrange for :meth:`run_token` of ``job`` after ``delay`` seconds (``again``: a
        reschedule by the gate)."""
        self.clock.arm(job.thread_id, job.token, delay)

    def _forget(self, thread_id: str) -> None:
        """A new turn cancelled the thread's review: drop what :meth:`_wake` arranged."""

    def _due(self, thread_id: str, token: str) -> None:
        self._submit(self.run_token, thread_id, token)

    def _poll(self) -> None:
        if self._closed or not self.gate.settings.active:  # a host that reviews nothing
            return
        self._prune()
        free = _WORKERS - self._busy
        if free <= 0:
            return  # claimed rows would wait for a worker while their lease runs out
        jobs = self.queue.claim_due(owner=self.owner, lease_seconds=self.lease_seconds, limit=free)
        for job in jobs:
            self._submit(self._run_job, job)

    def _prune(self) -> None:
        now = self.queue.clock()
        if now - self._pruned_at < PRUNE_EVERY_SECONDS:
            return
        self._pruned_at = now
        self.queue.prune(now - self.gate.settings.thread_ttl_seconds)

    def _submit(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._closed:
            return
        with self._lock:
            self._busy += 1
        try:
            self._pool.submit(contextvars.Context().run, self._work, fn, *args)
        except RuntimeError:  # the pool shut down meanwhile
            with self._lock:
                self._busy -= 1

    def _work(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            logger.exception("idle review: a scheduled review failed")
        finally:
            with self._lock:
                self._busy -= 1

    # --- running ------------------------------------------------------------------------------

    def run_token(self, thread_id: str, token: str) -> ReviewOutcome | ReviewDecision | None:
        """Claim the thread's scheduled review ``token`` and run it here (a wake-up fired).

        Returns:
            What :meth:`_run_job` returns; a ``drop`` decision when the review was cancelled,
            replaced by a newer turn, or claimed by another replica.
        """
        job = self.queue.claim(thread_id, token, owner=self.owner, lease_seconds=self.lease_seconds)
        if job is None:
            return ReviewDecision(action="drop", reason="cancelled, replaced or run elsewhere")
        return self._run_job(job)

    def _run_job(self, job: ReviewJob) -> ReviewOutcome | ReviewDecision | None:
        """Ask the gate about a claimed job; run, reschedule or drop it.

        Returns:
            The pass's outcome; the gate's decision when it did not run; None when the pass
            failed or was aborted.
        """
        if not self.queue.heartbeat(job, lease_seconds=self.lease_seconds):
            return ReviewDecision(action="drop", reason="cancelled or run elsewhere")
        decision = self._booked(self.gate.on_claim, job.thread_id)
        if decision.action == "reschedule" and decision.delay_seconds is not None:
            wait = decision.delay_seconds
            again = self.queue.reschedule(
                job, delay=wait, owner=self.owner, lease_seconds=self.lease_seconds
            )
            if again is not None:
                self._mark(again)
                self._wake(again, wait, again=True)
            return decision
        if decision.action != "run":
            self._done(job)
            return decision
        outcome = None if self._closed else self.runner.run(job)
        if outcome is None and self._closed:
            return None  # the host closes: the row stays for another replica
        success = outcome is not None and outcome.action != "failed"
        if self._done(job):  # still the thread's latest review: the gate may settle it
            self._booked(
                functools.partial(self.gate.on_claim_finished, success=success), job.thread_id
            )
        if outcome is not None:
            self.outcomes.append((job.thread_id, outcome))
        return outcome

    def _done(self, job: ReviewJob) -> bool:
        """Delete a finished job's row (``queue.done``) and forget it was written here."""
        gone = self.queue.done(job)
        with self._lock:
            if self._rows.get(job.thread_id) == job.token:
                self._rows.pop(job.thread_id)
        return gone

    def _guard(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A queue call from a turn hook: a database failure is logged, never raised."""
        try:
            return fn(*args, **kwargs)
        except MnemonError as exc:
            logger.warning("idle review: %s failed: %s", what, safe_text(exc))
            return None

    def close(self) -> None:
        """Stop waking up and polling, abort the reviews running here, and hand the pending
        ones over: another replica (or this host, reopened) runs them when due."""
        if self._closed:
            return
        self._closed = True
        self.clock.close()
        self.runner.abort_all()
        self._guard("release", self.queue.release, self.owner)
        self._pool.shutdown(wait=False, cancel_futures=True)
