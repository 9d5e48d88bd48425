"""Idle review on LangGraph server: delayed server runs instead of in-process timers.

A due review becomes ``runs.create(review_thread, "mnemon_idle_review", after_seconds=delay,
multitask_strategy="rollback")``. The server holds the delay, so debounce and cancellation
survive across requests: a newer schedule on the same review thread rolls the pending run back,
and a new turn cancels it with ``action="rollback"`` (which the saver's ``delete_for_runs``
cleans up). The :class:`ReviewGate` still decides; this class only talks to the server.

A review runs in the scope of the turn that scheduled it: the run carries that scope in its
config (``user_id`` and ``mnemon_project``), and the served review graph resolves it there.

With custom auth on the server (``auth.path``), the server's API refuses this client, which
has no credentials of any user. Then (``in_process=True``, or on the first 401/403) the review
runs in this process instead: a timer thread waits the delay and runs the scope's review graph
synchronously (no event loop in that thread, so LangGraph server's blocking-call checks do not
apply), with the same gate, debounce and cancellation.
"""

from __future__ import annotations

import logging
import threading
import uuid
from typing import TYPE_CHECKING, Any

import httpx
from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict

from langgraph_mnemon.contracts import LOCAL, Scope
from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.nodes import memory_step

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from langgraph_mnemon.memory_layers.activity import ReviewDecision, ReviewGate, TurnActivity
    from langgraph_mnemon.reviews._protocol import ReviewHost

__all__ = ["REVIEW_GRAPH", "ServerReviews", "review_config", "review_thread_id"]

logger = logging.getLogger(__name__)

REVIEW_GRAPH = "mnemon_idle_review"
"""The served review graph's id (``langgraph.json``)."""
_NAMESPACE = uuid.UUID("5d0c1f4e-8f55-4b0e-9d8a-6f1b3c9e2a71")
_REFUSED = (401, 403)


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


def review_config(scope: Scope) -> dict[str, Any]:
    """The run config that makes a served review run in ``scope`` (nothing for the local one).

    Args:
        scope: the scope of the turn that scheduled the review.

    Returns:
        ``{"configurable": {"user_id": ..., "mnemon_project": ...}}`` with the non-local ids.

    Example:
        >>> review_config(Scope(user="alice"))
        {'configurable': {'user_id': 'alice'}}
    """
    configurable: dict[str, str] = {}
    if scope.user != LOCAL:
        configurable["user_id"] = scope.user
    if scope.project != LOCAL:
        configurable["mnemon_project"] = scope.project
    return {"configurable": configurable} if configurable else {}


class ServerReviews:
    """Schedules idle reviews as delayed runs on the LangGraph server at ``url``.

    Turn hooks call it from the server's worker threads; one lock keeps the gate consistent.
    The served ``mnemon_idle_review`` graph calls :meth:`fire`, :meth:`reschedule` and
    :meth:`finished` when the delayed run starts.

    Args:
        gate: the gate that decides when a thread is reviewed.
        url: the LangGraph server's address (``LANGGRAPH_API_URL``).
        graph_id: the served review graph.
        host: the host whose scoped review graphs run a review in process (needed for
            ``in_process`` and for the fallback when the server refuses this client).
        model: the review model of in-process reviews (None: the heuristic).
        in_process: run reviews in this process from the start (custom auth on the server).

    Example:
        >>> mem.set_reviews(ServerReviews(mem.review_gate, os.environ["LANGGRAPH_API_URL"]))
    """

    def __init__(
        self,
        gate: ReviewGate,
        url: str,
        *,
        graph_id: str = REVIEW_GRAPH,
        host: ReviewHost | None = None,
        model: BaseChatModel | None = None,
        in_process: bool = False,
    ) -> None:
        from langgraph_sdk import get_sync_client

        if in_process and host is None:
            raise ValueError("ServerReviews(in_process=True) needs the host that runs reviews")
        self.gate = gate
        self.graph_id = graph_id
        self._client = get_sync_client(url=url, api_key=None, timeout=30.0)
        self._pending: dict[str, str] = {}
        self._lock = threading.Lock()
        self._host, self._model = host, model
        self.in_process = in_process
        self._timers: dict[str, threading.Timer] = {}
        self._graphs: dict[Scope, Any] = {}

    def turn_started(self, thread_id: str) -> None:
        """A new turn: the gate forgets the armed review and the pending run is rolled back."""
        with self._lock:
            self.gate.on_turn_start(thread_id)
            run_id = self._pending.pop(thread_id, None)
            timer = self._timers.pop(thread_id, None)
        if timer is not None:
            timer.cancel()
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
        transcript = messages_to_dict(messages)
        self._schedule(thread_id, generation, delay, transcript, "rollback", turn.scope)
        return delay

    def fire(self, thread_id: str, generation: int) -> ReviewDecision:
        """The delayed run started: ask the gate; a reschedule becomes another delayed run."""
        with self._lock:
            return self.gate.on_fire(thread_id, generation)

    def reschedule(
        self,
        thread_id: str,
        generation: int,
        delay: float,
        transcript: list[dict[str, Any]],
        scope: Scope | None = None,
    ) -> None:
        """Schedule the review again after ``delay`` seconds (the gate asked to wait)."""
        # "enqueue": "rollback" would cancel the very run that asks for the reschedule.
        self._schedule(thread_id, generation, delay, transcript, "enqueue", scope or Scope())

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
        scope: Scope,
    ) -> None:
        if self.in_process:
            self._arm(thread_id, generation, delay, transcript, scope)
            return
        try:
            run = self._client.runs.create(
                review_thread_id(thread_id),
                self.graph_id,
                input={"thread_id": thread_id, "generation": generation, "transcript": transcript},
                config=review_config(scope) or None,  # type: ignore[arg-type]
                after_seconds=max(1, round(delay)),
                multitask_strategy=strategy,  # type: ignore[arg-type]
                if_not_exists="create",
            )
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code not in _REFUSED or self._host is None:
                raise
            # Custom auth: the server refuses a client without a user's credentials.
            logger.warning(
                "the LangGraph server refused the idle-review run (HTTP %s); idle reviews run "
                "in this process from now on",
                exc.response.status_code,
            )
            self.in_process = True
            self._arm(thread_id, generation, delay, transcript, scope)
            return
        with self._lock:
            self._pending[thread_id] = run["run_id"]

    # --- in process: a timer thread per pending review ----------------------------------------

    def _arm(
        self,
        thread_id: str,
        generation: int,
        delay: float,
        transcript: list[dict[str, Any]],
        scope: Scope,
    ) -> None:
        args = (thread_id, generation, transcript, scope)
        timer = threading.Timer(max(1.0, delay), self._run_here, args)
        timer.name, timer.daemon = f"mnemon-review-{generation}", True
        with self._lock:
            previous = self._timers.pop(thread_id, None)
            self._timers[thread_id] = timer
        if previous is not None:
            previous.cancel()  # a newer schedule replaces the pending review (debounce)
        timer.start()

    def _run_here(
        self, thread_id: str, generation: int, transcript: list[dict[str, Any]], scope: Scope
    ) -> None:
        with self._lock:
            if self._timers.get(thread_id) is threading.current_thread():
                del self._timers[thread_id]
        decision = self.fire(thread_id, generation)
        if decision.action == "reschedule" and decision.delay_seconds is not None:
            self._arm(thread_id, generation, decision.delay_seconds, transcript, scope)
            return
        if decision.action != "run":
            return
        success = False
        try:
            success = self._review(scope, transcript)
        finally:
            self.finished(thread_id, generation, success=success)

    def _review(self, scope: Scope, transcript: list[dict[str, Any]]) -> bool:
        host = self._host
        assert host is not None  # in_process needs it (checked in __init__ and the fallback)
        outcome = None
        # A review is an automatic trigger: manual and off channels refuse its writes.
        with memory_step(host.health, "idle-review") as step, acting("automatic"):
            graph = self._graphs.get(scope)
            if graph is None:
                graph = self._graphs.setdefault(scope, host.scoped(scope).review_graph(self._model))
            outcome = graph.invoke({"messages": messages_from_dict(transcript)})["outcome"]
        return not step.failed and outcome is not None and outcome.action != "failed"

    def _cancel(self, thread_id: str, run_id: str) -> None:
        try:
            self._client.runs.cancel(review_thread_id(thread_id), run_id, action="rollback")
        except httpx.HTTPStatusError as exc:
            # Already finished or already rolled back by a newer schedule: nothing is pending.
            if exc.response.status_code not in (404, 409):
                raise

    def close(self) -> None:
        """Cancel the in-process reviews still waiting; server runs stay with the server."""
        with self._lock:
            timers, self._timers = list(self._timers.values()), {}
        for timer in timers:
            timer.cancel()
