"""Idle reviews in process: a private event loop in a daemon thread runs the review graph."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.memory_layers.activity import ReviewGate, TurnActivity
from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.nodes import ReviewOutcome, memory_step
from langgraph_mnemon.reviews._protocol import ReviewHost
from langgraph_mnemon.reviews._timers import IdleReviewScheduler

__all__ = ["BackgroundReviews"]


class BackgroundReviews:
    """Idle reviews for a host, on a private event loop in a daemon thread.

    Turn hooks call :meth:`turn_started` and :meth:`turn_finished` from any thread (sync or
    async runs); the gate's bookkeeping happens on the review loop, and a due review runs the
    review graph there over the thread's latest messages, under ``acting("automatic")``.
    ``outcomes`` lists ``(thread_id, ReviewOutcome)`` of the passes that ran.

    Args:
        host: builds the review graph and records failed passes (``mem``).
        gate: the gate that decides when a thread is reviewed.
        model: the review model; None uses the heuristic.

    Example:
        >>> reviews = BackgroundReviews(mem, mem.review_gate, mem.worker_model)
        >>> mem.set_reviews(reviews)
        >>> reviews.close()
    """

    def __init__(
        self, host: ReviewHost, gate: ReviewGate, model: BaseChatModel | None = None
    ) -> None:
        self.gate = gate
        self._host, self._model = host, model
        self._health = host.health
        self._graph = host.review_graph(model)  # bounded by the host's idle_review settings
        # Other scopes' review graphs, built on first use; each thread's latest turn's scope.
        self._graphs: dict[Scope, Any] = {}
        self._scopes: dict[str, Scope] = {}
        self._messages: dict[str, list[BaseMessage]] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="mnemon-idle-review", daemon=True
        )
        self._thread.start()
        self.scheduler = IdleReviewScheduler(gate, self._review)
        self.outcomes: list[tuple[str, ReviewOutcome]] = []

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        async def run() -> Any:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result()

    def turn_started(self, thread_id: str) -> None:
        """A new turn: cancel the thread's timer and abort its running review."""
        self._call(self.scheduler.turn_started, thread_id)

    def turn_finished(
        self, thread_id: str, messages: list[BaseMessage], turn: TurnActivity
    ) -> float | None:
        """Record the turn and arm the review timer when due; returns the delay, if armed."""
        self._messages[thread_id] = list(messages)
        self._scopes[thread_id] = turn.scope
        return self._call(self.scheduler.turn_finished, thread_id, turn)

    def _graph_of(self, thread_id: str) -> Any:
        scope = self._scopes.get(thread_id)
        if scope is None or scope.is_local:
            return self._graph
        if scope not in self._graphs:
            self._graphs[scope] = self._host.scoped(scope).review_graph(self._model)
        return self._graphs[scope]

    async def _review(self, thread_id: str) -> bool:
        outcome: ReviewOutcome | None = None
        # A review is an automatic trigger, and this loop's thread starts explicit: say so.
        with memory_step(self._health, "idle-review") as step, acting("automatic"):
            graph = self._graph_of(thread_id)
            out = await graph.ainvoke({"messages": self._messages.get(thread_id, [])})
            outcome = out["outcome"]
        if step.failed or outcome is None:
            return False
        self.outcomes.append((thread_id, outcome))
        return outcome.action != "failed"

    def close(self) -> None:
        """Cancel pending reviews and stop the loop."""
        if not self._loop.is_running():
            return
        asyncio.run_coroutine_threadsafe(self.scheduler.aclose(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
