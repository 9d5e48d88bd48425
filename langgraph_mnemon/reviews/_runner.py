"""One claimed idle review, run in a fresh context: never inside the caller's LangGraph run.

A turn hook runs inside the agent's run: its context variables hold the agent's run
configuration (thread, checkpointer, checkpoint namespace). A review started from there would
run as a subgraph of the agent: its checkpoints would go into the user's thread (under
``model:<uuid>``), and an agent checkpointer without async methods (LangGraph's
``SqliteSaver``) would fail every review. So each review runs in ``contextvars.Context()``
(empty) on an event loop of its own, with no configuration but what the review graph brings.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import threading
from typing import TYPE_CHECKING, Any

from langchain_core.messages import messages_from_dict

from langgraph_mnemon.errors import MnemonError
from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.memory_layers.review import abortable
from langgraph_mnemon.memory_layers.scopes import ScopedLayers
from langgraph_mnemon.nodes import ReviewOutcome, memory_step

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from langgraph_mnemon.memory_layers.review_queue import ReviewJob, SqlReviewQueue
    from langgraph_mnemon.reviews._protocol import ReviewHost

__all__ = ["ReviewRunner"]

logger = logging.getLogger(__name__)


class ReviewRunner:
    """Runs claimed reviews: the scope's review graph over the job's transcript, the job's
    lease renewed while it runs; a review is aborted when its row goes (a new turn) or on
    :meth:`abort`.

    Args:
        host: builds each scope's review graph and records failed passes.
        queue: where the job's lease is renewed.
        model: the review model (None: the heuristic).
        lease_seconds: the lease a heartbeat renews (every third of it).
    """

    def __init__(
        self,
        host: ReviewHost,
        queue: SqlReviewQueue,
        model: BaseChatModel | None,
        *,
        lease_seconds: float,
    ) -> None:
        self._host, self._queue, self._model = host, queue, model
        self.lease_seconds = lease_seconds
        self._graphs: ScopedLayers[Any] = ScopedLayers(
            lambda scope: host.scoped(scope).review_graph(model), keep=64
        )
        # thread -> (loop, task, abort event) of the review running here
        self._running: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Any]] = {}
        self._lock = threading.Lock()

    def run(self, job: ReviewJob) -> ReviewOutcome | None:
        """Run the review of ``job`` and wait for it (call from a thread without a loop).

        Returns:
            What the pass did; None when it failed (recorded in the host's health) or was
            aborted.
        """
        try:
            return contextvars.Context().run(asyncio.run, self._arun(job))
        except asyncio.CancelledError:
            return None  # aborted: a new turn, or the host closes

    async def _arun(self, job: ReviewJob) -> ReviewOutcome | None:
        graph = await asyncio.to_thread(self._graphs.get, job.scope)
        stop = threading.Event()
        task = asyncio.ensure_future(self._invoke(graph, job, stop))
        entry = (asyncio.get_running_loop(), task, stop)
        with self._lock:
            self._running[job.thread_id] = entry
        try:
            while not task.done():
                await asyncio.wait({task}, timeout=self.lease_seconds / 3)
                if not task.done() and not await asyncio.to_thread(self._beat, job):
                    _stop(entry)  # cancelled or taken over elsewhere
            return task.result()
        finally:
            with self._lock:
                if self._running.get(job.thread_id) is entry:
                    del self._running[job.thread_id]

    async def _invoke(
        self, graph: Any, job: ReviewJob, stop: threading.Event
    ) -> ReviewOutcome | None:
        outcome: ReviewOutcome | None = None
        messages: list[Any] = []
        # A review is an automatic trigger: manual and off channels refuse its writes. Its
        # worker threads stop at their next step once ``stop`` is set.
        with (
            memory_step(self._host.health, "idle-review") as step,
            acting("automatic"),
            abortable(stop),
        ):
            messages = messages_from_dict(job.transcript)
            out = await graph.ainvoke({"messages": messages})
            outcome = out["outcome"]
        if messages and not stop.is_set():
            await asyncio.to_thread(self._learn, job, messages)
        return None if step.failed else outcome

    def _learn(self, job: ReviewJob, messages: list[Any]) -> None:
        """The thread's learning pass, after its review (an idle thread); its failure is
        recorded like a failed review step, never raised (``learning.enabled=false``: the
        pass says so and records nothing)."""
        with memory_step(self._host.health, "learning"), acting("automatic"):
            view = self._host.scoped(job.scope)
            view.learn(job.thread_id, model=self._model, messages=messages)

    def _beat(self, job: ReviewJob) -> bool:
        try:
            return self._queue.heartbeat(job, lease_seconds=self.lease_seconds)
        except MnemonError as exc:  # the database is down: keep going, the finish will tell
            logger.warning("idle review: the lease of a running review not renewed: %s", exc)
            return True

    def abort(self, thread_id: str) -> bool:
        """Abort the thread's review running here, if any; True when there was one."""
        with self._lock:
            running = self._running.get(thread_id)
        if running is None:
            return False
        _stop(running)
        return True

    def abort_all(self) -> None:
        """Abort every review running here (the host closes)."""
        with self._lock:
            threads = list(self._running)
        for thread_id in threads:
            self.abort(thread_id)


def _stop(entry: tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], threading.Event]) -> None:
    """Abort a running review: its pass stops at its next step, its task is cancelled."""
    loop, task, stop = entry
    stop.set()
    with contextlib.suppress(RuntimeError):  # its loop already closed: it has finished
        loop.call_soon_threadsafe(task.cancel)
