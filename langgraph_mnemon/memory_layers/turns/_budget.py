"""Per-turn call budgets of a View's read routes (the General strategy's counterpart of the
Layered recall envelope).

A route offered with ``max_calls = n`` may make ``n`` distinct calls in one turn; a call whose
input is the same as an earlier one (the same normalised query, the same ids) replays that
call's answer without reaching the provider, a concurrent identical call joins the running
one, and a further distinct call is refused with a typed error before any I/O. A call that
fails uses no budget. One :class:`RouteBudget` lives in each turn's
:class:`~langgraph_mnemon.memory_layers.turns.TurnRetrieval`, so the budget is keyed by
turn id and shared by parallel tool calls; a route's ``max_calls`` comes from the offers table.

Example:
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

__all__ = ["ROUTE_BUDGET", "RouteBudget"]

_T = TypeVar("_T")


ROUTE_BUDGET = "route-budget"
"""The code of the refusal when a route's calls for this turn are used (nothing ran)."""


class RouteBudget:
    """Distinct calls per route in one turn; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str, dict[str, Future[Any]]] = {}

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
        return answer, False
