"""Idle reviews on asyncio timers, in memory: the gate decides, the scheduler waits and runs.

The host's schedulers keep pending reviews in the database (:mod:`._queued`); this one keeps
them in one process only (nothing survives it), for callers that bring their own review.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Awaitable, Callable

from langgraph_mnemon.memory_layers.activity import ReviewGate, TurnActivity

__all__ = ["IdleReviewScheduler"]


class IdleReviewScheduler:
    """Schedules idle reviews with asyncio timers; the gate decides, this only waits and runs.

    A finished turn arms a debounced timer, a new turn cancels the timer and aborts a running
    review, and success clears the thread's activity. Call :meth:`turn_started` when a turn
    begins and :meth:`turn_finished` when it ends, from the event loop that should run the
    reviews.

    Args:
        gate: the :class:`~langgraph_mnemon.memory_layers.activity.ReviewGate` that decides.
        review: ``review(thread_id)`` runs one pass and returns True on success (a skip
            included).

    Example:
        >>> scheduler = IdleReviewScheduler(gate, review)
        >>> scheduler.turn_finished("t", TurnActivity(user_text="...", tool_calls=("shell",)))
        30.0
        >>> await scheduler.aclose()
    """

    def __init__(self, gate: ReviewGate, review: Callable[[str], Awaitable[bool]]) -> None:
        self.gate = gate
        self._review = review
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def turn_started(self, thread_id: str) -> None:
        """Cancel the thread's timer and abort its running review; activity is kept."""
        self.gate.on_turn_start(thread_id)
        task = self._tasks.pop(thread_id, None)
        if task is not None:
            task.cancel()

    def turn_finished(self, thread_id: str, turn: TurnActivity) -> float | None:
        """Record the turn; arm the timer when a review is due.

        Returns:
            The delay in seconds when a timer was armed, else None.

        Raises:
            RuntimeError: called outside a running event loop while a review is due.
        """
        delay = self.gate.finish_turn(thread_id, turn)
        old = self._tasks.pop(thread_id, None)
        if old is not None:
            old.cancel()
        if delay is not None:
            generation = self.gate.generation(thread_id)
            # A fresh context: never the caller's run configuration (see ._runner).
            self._tasks[thread_id] = asyncio.get_running_loop().create_task(
                self._wait_and_run(thread_id, generation, delay), context=contextvars.Context()
            )
        return delay

    async def _wait_and_run(self, thread_id: str, generation: int, delay: float) -> None:
        while True:
            await asyncio.sleep(delay)
            decision = self.gate.on_fire(thread_id, generation)
            if decision.action == "reschedule" and decision.delay_seconds is not None:
                delay = decision.delay_seconds
                continue
            if decision.action != "run":
                return
            break
        success = False
        try:
            success = await self._review(thread_id)
        except asyncio.CancelledError:
            raise  # a new turn aborted the review; the gate already counted it
        except Exception:
            success = False
        self.gate.on_review_finished(thread_id, generation, success=success)

    async def aclose(self) -> None:
        """Cancel every pending timer and running review."""
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
