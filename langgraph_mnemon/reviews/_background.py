"""Idle reviews in process: leased queue rows, woken up by this process's review clock."""

from __future__ import annotations

from langgraph_mnemon.memory_layers.activity import ReviewGate, ReviewSettings
from langgraph_mnemon.memory_layers.activity_store import SqlActivityStore
from langgraph_mnemon.reviews._protocol import ReviewHost
from langgraph_mnemon.reviews._queued import QueuedReviews

__all__ = ["BackgroundReviews", "host_review_gate"]


def host_review_gate(host: ReviewHost, *, write_enabled: bool) -> ReviewGate:
    """The review gate a host's scheduler uses: its ``idle_review`` settings, and its activity
    saved in the host's database (a read-only host writes nothing: its gate stays in memory).

    Args:
        host: the host (``mem``).
        write_enabled: whether the host may write (``mem.kernel.write_enabled``).

    Returns:
        A new :class:`~langgraph_mnemon.memory_layers.activity.ReviewGate`.

    Example:
        >>> mem.set_reviews(ServerReviews(host_review_gate(mem, write_enabled=True), url, host=mem))
    """
    store = SqlActivityStore(host.database) if write_enabled else None
    return ReviewGate(ReviewSettings.from_config(host.config), store=store)


class BackgroundReviews(QueuedReviews):
    """Idle reviews for a host, scheduled as rows of its database and run on worker threads.

    Turn hooks call :meth:`turn_started` and :meth:`turn_finished` from any thread (sync or
    async runs). A due review is a row of ``mnemon_review_queue`` with a lease; this process
    wakes up for the rows it wrote, and polls for rows whose scheduler is gone, so hosts that
    share a database (replicas) run each review exactly once. A review runs in a fresh context
    (never inside the agent's run: whatever checkpointer the agent uses, nothing is written to
    its thread), under ``acting("automatic")``, in the scope of the turn that scheduled it.
    ``outcomes`` lists ``(thread_id, ReviewOutcome)`` of the latest passes that ran here.

    Args:
        host: the host (``mem``): its database holds the queue, its scoped review graphs run
            the reviews, its health records failed passes, ``idle_review.lease_ms`` and
            ``poll_ms`` time the leases and the poll.
        gate: the gate that decides when a thread is reviewed.
        model: the review model; None uses the heuristic.

    Example:
        >>> reviews = BackgroundReviews(mem, mem.review_gate, mem.worker_model)
        >>> mem.set_reviews(reviews)
        >>> reviews.close()  # pending reviews are handed over, not lost
    """
