"""The per-turn budgets: evidence limits of every read, and the call budgets of View routes.

The per-turn evidence budgets, written once: the recall envelope, Related, the Documents
search and the Runtime search read them, and the offers table publishes them as each read
route's ``max_results`` / ``max_chars``.

Per-turn call budgets of a View's read routes (the General strategy's counterpart of the
Layered recall envelope).

A route offered with ``max_calls = n`` may make ``n`` distinct calls in one turn; a call whose
input is the same as an earlier one (the same normalised query, the same ids) replays that
call's answer without reaching the provider, a concurrent identical call joins the running
one, and a further distinct call is refused with a typed error before any I/O. A call that
fails uses no budget. The answers of finished calls are the budget's state (:meth:`answers`,
:meth:`absorb`): a process that reads them back replays those calls as this one would. One
:class:`RouteBudget` lives in each turn's
:class:`~langgraph_mnemon.memory_layers.turns.TurnRetrieval`, so the budget is keyed by
turn id and shared by parallel tool calls; a route's ``max_calls`` comes from the offers table.

Example:
    >>> RECALL_EVIDENCE == (RESULT_LIMIT, TOTAL_CHARS)
    True
    >>> budget = RouteBudget()
    >>> answer, replayed = budget.run("memory-spaces/search", 2, call_key({"query": "deploy"}),
    ...                               lambda: spaces.search("deploy"))
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from langgraph_mnemon.errors import MnemonError
from langgraph_mnemon.memory_layers.documents import MODEL_MAX_CHARACTERS, MODEL_MAX_RECORDS

__all__ = [
    "ATTEMPTS",
    "DOCUMENT_MAX_CHARS",
    "DOCUMENT_MAX_RECORDS",
    "DOCUMENT_SEARCH_EVIDENCE",
    "FIRST_ATTEMPT_CHARS",
    "FIRST_ATTEMPT_RESULTS",
    "ITEM_CHARS",
    "MAX_MEDIUM_PER_ATTEMPT",
    "MAX_QUERY_CHARS",
    "MAX_UNKNOWN_PER_ATTEMPT",
    "RECALL_EVIDENCE",
    "RELATED_CHARS",
    "RELATED_EVIDENCE",
    "RELATED_FETCH",
    "RELATED_MAX_MEDIUM",
    "RELATED_MAX_UNKNOWN",
    "RELATED_RESULTS",
    "RESULT_LIMIT",
    "ROUTE_BUDGET",
    "RUNTIME_SEARCH_CHARS",
    "RUNTIME_SEARCH_EVIDENCE",
    "RUNTIME_SEARCH_RESULTS",
    "TOTAL_CHARS",
    "RouteBudget",
]


# Recall (memory-spaces/recall and memory-spaces/search): both attempts of a turn together.
RESULT_LIMIT = 6
TOTAL_CHARS = 4800
ATTEMPTS = 2
FIRST_ATTEMPT_RESULTS = 4
FIRST_ATTEMPT_CHARS = 3600
ITEM_CHARS = 1200
MAX_MEDIUM_PER_ATTEMPT = 1
MAX_UNKNOWN_PER_ATTEMPT = 1
MAX_QUERY_CHARS = 2000

# Related: one traversal per turn.
RELATED_RESULTS = 4
RELATED_CHARS = 4000
RELATED_MAX_MEDIUM = 4
RELATED_MAX_UNKNOWN = 4
RELATED_FETCH = 20
"""Rows asked of the provider before admission picks at most :data:`RELATED_RESULTS`."""

# Documents: one search per turn, bounded like every model-facing Documents result.
DOCUMENT_MAX_RECORDS = MODEL_MAX_RECORDS
DOCUMENT_MAX_CHARS = MODEL_MAX_CHARACTERS

# Runtime search (the General strategy's runtime/search route; local only).
RUNTIME_SEARCH_RESULTS = 4
RUNTIME_SEARCH_CHARS = 1200

# Evidence a read route may return in one turn: (results, characters).
RECALL_EVIDENCE = (RESULT_LIMIT, TOTAL_CHARS)
DOCUMENT_SEARCH_EVIDENCE = (DOCUMENT_MAX_RECORDS, DOCUMENT_MAX_CHARS)
RELATED_EVIDENCE = (RELATED_RESULTS, RELATED_CHARS)
RUNTIME_SEARCH_EVIDENCE = (RUNTIME_SEARCH_RESULTS, RUNTIME_SEARCH_CHARS)


_T = TypeVar("_T")


ROUTE_BUDGET = "route-budget"
"""The code of the refusal when a route's calls for this turn are used (nothing ran)."""


class RouteBudget:
    """Distinct calls per route in one turn; thread-safe.

    Args:
        on_record: called (no lock held) after a call's answer is recorded.
    """

    def __init__(self, on_record: Callable[[], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str, dict[str, Future[Any]]] = {}
        self.on_record = on_record

    def answers(self) -> dict[str, dict[str, Any]]:
        """Route id → call key → answer, of every call that finished (running ones left out)."""
        with self._lock:
            return {
                route: {key: f.result() for key, f in calls.items() if _answered(f)}
                for route, calls in self._calls.items()
                if any(_answered(f) for f in calls.values())
            }

    def absorb(self, answers: dict[str, dict[str, Any]]) -> bool:
        """Add finished calls recorded elsewhere (a call already held here is kept as it is);
        whether anything was added."""
        added = False
        with self._lock:
            for route, calls in answers.items():
                held = self._calls.setdefault(route, {})
                for key, answer in calls.items():
                    if key not in held:
                        held[key] = _done(answer)
                        added = True
        return added

    def used(self, route_id: str) -> int:
        """Distinct calls of ``route_id`` that ran (or are running) this turn."""
        with self._lock:
            return len(self._calls.get(route_id, {}))

    def run(
        self, route_id: str, max_calls: int, key: str, call: Callable[[], _T]
    ) -> tuple[_T, bool]:
        """Run ``call`` within the route's budget; returns ``(answer, replayed)``.

        Raises:
            MnemonError: code :data:`ROUTE_BUDGET`, ``max_calls`` distinct calls were already
                made this turn (nothing ran).
        """
        if max_calls <= 0:
            return call(), False
        with self._lock:
            calls = self._calls.setdefault(route_id, {})
            earlier = calls.get(key)
            if earlier is None:
                if len(calls) >= max_calls:
                    raise MnemonError(
                        f"{route_id} allows {max_calls} distinct call(s) per turn and they are "
                        "used; answer from the evidence already returned (the same input "
                        "replays its answer)",
                        code=ROUTE_BUDGET,
                    )
                mine: Future[Any] = Future()
                calls[key] = mine
        if earlier is not None:
            return earlier.result(), True
        try:
            answer = call()
        except BaseException as exc:
            with self._lock:  # a failed call uses no budget
                calls.pop(key, None)
            mine.set_exception(exc)
            raise
        mine.set_result(answer)
        if self.on_record is not None:
            self.on_record()
        return answer, False


def _answered(future: Future[Any]) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


def _done(answer: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(answer)
    return future
