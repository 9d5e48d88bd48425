"""Idle review on LangGraph server: the review's row is woken up by a delayed server run.

A due review is a row of the host's review queue (as in process, see
:mod:`langgraph_mnemon.reviews._queued`); on LangGraph server its wake-up is
``runs.create(review_thread, "mnemon_idle_review", after_seconds=delay,
multitask_strategy="rollback")`` with the row's token as input. The server holds the delay: a
newer schedule on the same review thread rolls the pending run back, and a new turn cancels it
with ``action="rollback"`` (which the saver's ``delete_for_runs`` cleans up) and deletes the
row. When the run starts, the served graph calls :meth:`ServerReviews.run_token`, which claims
the row and runs the review in this process, in a fresh context. Every replica also polls the
queue: a review whose replica died before its run fired is run by another one.

A review runs in the scope of the turn that scheduled it: the row holds that scope, and the
run carries it in its config (``user_id`` and ``mnemon_project``) for the server's own checks.

With custom auth on the server (``auth.path``), the server's API refuses this client, which
has no credentials of any user. Then (``in_process=True``, or on the first 401/403) the
wake-up is a timer of this process instead, with the same queue, debounce and cancellation.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

import httpx

from langgraph_mnemon.contracts import LOCAL, Scope, safe_text
from langgraph_mnemon.memory_layers.activity import ReviewDecision
from langgraph_mnemon.memory_layers.expiry import ExpiringMap
from langgraph_mnemon.reviews._queued import QueuedReviews

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from langgraph_mnemon.memory_layers.activity import ReviewGate
    from langgraph_mnemon.memory_layers.review_queue import ReviewJob
    from langgraph_mnemon.nodes import ReviewOutcome
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


class ServerReviews(QueuedReviews):
    """Idle reviews whose wake-ups are delayed runs on the LangGraph server at ``url``.

    Turn hooks call it from the server's worker threads; the served ``mnemon_idle_review``
    graph calls :meth:`run_token` when a delayed run starts.

    Args:
        gate: the gate that decides when a thread is reviewed.
        url: the LangGraph server's address (``LANGGRAPH_API_URL``).
        graph_id: the served review graph.
        host: the host whose database holds the queue and whose scoped review graphs run the
            reviews (``mem``).
        model: the review model (None: the heuristic).
        in_process: wake up with timers of this process from the start (custom auth on the
            server).

    Example:
        >>> mem.set_reviews(ServerReviews(mem.review_gate, url, host=mem))
    """

    def __init__(
        self,
        gate: ReviewGate,
        url: str,
        *,
        host: ReviewHost,
        graph_id: str = REVIEW_GRAPH,
        model: BaseChatModel | None = None,
        in_process: bool = False,
    ) -> None:
        from langgraph_sdk import get_sync_client

        self.graph_id = graph_id
        self.in_process = in_process
        self._client = get_sync_client(url=url, api_key=None, timeout=30.0)
        settings = gate.settings
        # thread -> the pending run this process created (rolled back by the next turn)
        self._pending: ExpiringMap[str, str] = ExpiringMap(
            ttl_seconds=settings.thread_ttl_seconds, cap=settings.max_threads
        )
        super().__init__(host, gate, model)  # starts the clock: everything above is ready

    def _forget(self, thread_id: str) -> None:
        with self._lock:
            run_id = self._pending.pop(thread_id)
        if run_id is None:
            return
        try:
            self._client.runs.cancel(review_thread_id(thread_id), run_id, action="rollback")
        except httpx.HTTPStatusError as exc:
            # Already finished or already rolled back by a newer schedule: nothing is pending.
            if exc.response.status_code not in (404, 409):
                logger.warning("idle review: the pending run not rolled back: %s", exc)
        except httpx.HTTPError as exc:  # its row is gone: the run, if it fires, finds nothing
            logger.warning("idle review: the pending run not rolled back: %s", safe_text(exc))

    def _wake(self, job: ReviewJob, delay: float, *, again: bool) -> None:
        if self.in_process:
            super()._wake(job, delay, again=again)
            return
        # "enqueue" for a reschedule: "rollback" would cancel the very run that asks for it.
        strategy = "enqueue" if again else "rollback"
        try:
            run = self._client.runs.create(
                review_thread_id(job.thread_id),
                self.graph_id,
                input={"thread_id": job.thread_id, "token": job.token},
                config=review_config(job.scope) or None,  # type: ignore[arg-type]
                after_seconds=max(1, round(delay)),
                multitask_strategy=strategy,  # type: ignore[arg-type]
                if_not_exists="create",
            )
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code in _REFUSED:  # custom auth: no credentials of a user
                logger.warning(
                    "the LangGraph server refused the idle-review run (HTTP %s); idle reviews "
                    "wake up in this process from now on",
                    exc.response.status_code,
                )
                self.in_process = True
            else:
                logger.warning("idle review: no server run (%s); a timer here instead", exc)
            super()._wake(job, delay, again=again)
            return
        except httpx.HTTPError as exc:
            logger.warning("idle review: no server run (%s); a timer here instead", exc)
            super()._wake(job, delay, again=again)
            return
        with self._lock:
            self._pending[job.thread_id] = run["run_id"]

    def run_token(
        self, thread_id: str, token: str, scope: Scope | None = None
    ) -> ReviewOutcome | ReviewDecision | None:
        """Claim the thread's scheduled review ``token`` and run it here (its run started).

        Args:
            thread_id: the conversation thread.
            token: the scheduled review's token (the run's input).
            scope: the scope the run resolved; a review of another scope is not run.

        Returns:
            The pass's outcome; the gate's (or the queue's) decision when it did not run;
            None when the pass failed or was aborted.
        """
        with self._lock:
            self._pending.pop(thread_id)  # this run is the pending one: nothing to roll back
        if scope is not None:
            job = self.queue.get(thread_id)
            if job is not None and job.token == token and job.scope != scope:
                return ReviewDecision(action="drop", reason="the run names another scope")
        return super().run_token(thread_id, token)
