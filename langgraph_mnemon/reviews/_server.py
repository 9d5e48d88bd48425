"""Idle review on LangGraph server: delayed server runs instead of in-process timers.

A due review becomes ``runs.create(review_thread, "mnemon_idle_review", after_seconds=delay,
multitask_strategy="rollback")``. The server holds the delay, so debounce and cancellation
survive across requests: a newer schedule on the same review thread rolls the pending run back,
and a new turn cancels it with ``action="rollback"`` (which the saver's ``delete_for_runs``
cleans up). The :class:`ReviewGate` still decides; this class only talks to the server.
"""

from __future__ import annotations

import threading
import uuid
from typing import TYPE_CHECKING, Any

import httpx
from langchain_core.messages import BaseMessage, messages_to_dict

if TYPE_CHECKING:
    from langgraph_mnemon.memory_layers.activity import ReviewDecision, ReviewGate, TurnActivity

__all__ = ["REVIEW_GRAPH", "ServerReviews", "review_thread_id"]

REVIEW_GRAPH = "mnemon_idle_review"
"""The served review graph's id (``langgraph.json``)."""
_NAMESPACE = uuid.UUID("5d0c1f4e-8f55-4b0e-9d8a-6f1b3c9e2a71")


def review_thread_id(thread_id: str) -> str:
    """The server thread that holds a conversation thread's idle reviews (stable per thread).

    Args:
        thread_id: the conversation's thread id.

    Returns:
        A UUID string, the same for the same thread id in every process.

    Example:
        >>> client.runs.list(review_thread_id("thread-1"))
    """
    return str(uuid.uuid5(_NAMESPACE, thread_id))


class ServerReviews:
    """Schedules idle reviews as delayed runs on the LangGraph server at ``url``.

    Turn hooks call it from the server's worker threads; one lock keeps the gate consistent.
    The served ``mnemon_idle_review`` graph calls :meth:`fire`, :meth:`reschedule` and
    :meth:`finished` when the delayed run starts.

    Args:
        gate: the gate that decides when a thread is reviewed.
        url: the LangGraph server's address (``LANGGRAPH_API_URL``).
        graph_id: the served review graph.

    Example:
        >>> mem.set_reviews(ServerReviews(mem.review_gate, os.environ["LANGGRAPH_API_URL"]))
    """

    def __init__(self, gate: ReviewGate, url: str, *, graph_id: str = REVIEW_GRAPH) -> None:
        from langgraph_sdk import get_sync_client

        self.gate = gate
        self.graph_id = graph_id
        self._client = get_sync_client(url=url, api_key=None, timeout=30.0)
        self._pending: dict[str, str] = {}
        self._lock = threading.Lock()

    def turn_started(self, thread_id: str) -> None:
        """A new turn: the gate forgets the armed review and the pending run is rolled back."""
        with self._lock:
            self.gate.on_turn_start(thread_id)
            run_id = self._pending.pop(thread_id, None)
        if run_id is not None:
            self._cancel(thread_id, run_id)

    def turn_finished(
        self, thread_id: str, messages: list[BaseMessage], turn: TurnActivity
    ) -> float | None:
        """Record the turn; when a review is due, create the delayed run. Returns the delay."""
        with self._lock:
            self.gate.record_turn(thread_id, turn)
            delay = self.gate.on_turn_end(thread_id)
            generation = self.gate.generation(thread_id)
        if delay is None:
            return None
        self._schedule(thread_id, generation, delay, messages_to_dict(messages), "rollback")
        return delay

    def fire(self, thread_id: str, generation: int) -> ReviewDecision:
        """The delayed run started: ask the gate; a reschedule becomes another delayed run."""
        with self._lock:
            return self.gate.on_fire(thread_id, generation)

    def reschedule(
        self, thread_id: str, generation: int, delay: float, transcript: list[dict[str, Any]]
    ) -> None:
        """Schedule the review again after ``delay`` seconds (the gate asked to wait)."""
        # "enqueue": "rollback" would cancel the very run that asks for the reschedule.
        self._schedule(thread_id, generation, delay, transcript, "enqueue")

    def finished(self, thread_id: str, generation: int, *, success: bool) -> None:
        """The review ran (or failed); a stale generation is ignored by the gate."""
        with self._lock:
            self.gate.on_review_finished(thread_id, generation, success=success)

    def _schedule(
        self,
        thread_id: str,
        generation: int,
        delay: float,
        transcript: list[dict[str, Any]],
        strategy: str,
    ) -> None:
        run = self._client.runs.create(
            review_thread_id(thread_id),
            self.graph_id,
            input={"thread_id": thread_id, "generation": generation, "transcript": transcript},
            after_seconds=max(1, round(delay)),
            multitask_strategy=strategy,  # type: ignore[arg-type]
            if_not_exists="create",
        )
        with self._lock:
            self._pending[thread_id] = run["run_id"]

    def _cancel(self, thread_id: str, run_id: str) -> None:
        try:
            self._client.runs.cancel(review_thread_id(thread_id), run_id, action="rollback")
        except httpx.HTTPStatusError as exc:
            # Already finished or already rolled back by a newer schedule: nothing is pending.
            if exc.response.status_code not in (404, 409):
                raise

    def close(self) -> None:
        """Nothing runs in this process; pending runs stay with the server."""
