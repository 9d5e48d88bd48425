"""The one registry of live turns: turn id → its scope, its pinned TurnView and its retrieval
state (recall / Related / Documents budgets).

The composer pins views into it, :class:`~langgraph_mnemon.memory_layers.turns.TurnRetrievals`
attaches retrieval states to it, and the turn service releases a turn from it once, whatever
the turn holds. A turn that only has a retrieval state (a standalone recall run) lives here
too. At most ``limit`` retrieval states are kept (the least recently begun dropped first).

Example:
    >>> live = LiveTurns()
    >>> live.pin("turn-1", TurnScope(thread_id="t1"), view) is view
    True
    >>> live.release("turn-1").view is view
    True
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from langgraph_mnemon.errors import ConflictError
from langgraph_mnemon.memory_layers.turns._models import TurnScope, TurnView
from langgraph_mnemon.memory_layers.turns._retrieval import TurnRetrieval

__all__ = ["LiveTurn", "LiveTurns"]


@dataclass
class LiveTurn:
    """What one live turn holds (``view`` and ``scope`` once pinned)."""

    turn_id: str
    scope: TurnScope | None = None
    view: TurnView | None = None
    retrieval: TurnRetrieval | None = None


class LiveTurns:
    """Live turns by id; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns: dict[str, LiveTurn] = {}
        self._recent: OrderedDict[str, None] = OrderedDict()  # turns with a retrieval state

    # -- pins --------------------------------------------------------------------------------

    def pin(self, turn_id: str, scope: TurnScope, view: TurnView) -> TurnView:
        """Pin ``view`` for ``turn_id``; a turn already pinned keeps its view.

        Raises:
            ConflictError: code ``turn-scope-conflict``, the turn is pinned for another scope.
        """
        with self._lock:
            entry = self._turns.setdefault(turn_id, LiveTurn(turn_id))
            if entry.view is None or entry.scope is None:
                entry.scope, entry.view = scope, view
                return view
            if entry.scope != scope:
                raise ConflictError(
                    f"turn {turn_id!r} is already pinned for thread {entry.scope.thread_id!r} / "
                    f"agent {entry.scope.agent_id!r}; use a new turn id for each agent turn",
                    code="turn-scope-conflict",
                )
            return entry.view

    def pinned(self, turn_id: str) -> LiveTurn | None:
        """The turn if it has a pinned view, else ``None``."""
        with self._lock:
            entry = self._turns.get(turn_id)
        return entry if entry is not None and entry.view is not None else None

    def unpin(self, turn_id: str) -> TurnView | None:
        """Drop the turn's pin (its retrieval state stays); the view it had, or ``None``."""
        with self._lock:
            entry = self._turns.get(turn_id)
            if entry is None or entry.view is None:
                return None
            view, entry.view, entry.scope = entry.view, None, None
            self._drop_if_empty(entry)
        return view

    @property
    def pinned_turns(self) -> list[str]:
        """Ids of the turns with a pinned view, in pin order."""
        with self._lock:
            return [turn_id for turn_id, e in self._turns.items() if e.view is not None]

    # -- retrieval states --------------------------------------------------------------------

    def attach(
        self,
        turn_id: str,
        make: Callable[[], TurnRetrieval],
        check: Callable[[TurnRetrieval], None],
        *,
        limit: int,
    ) -> TurnRetrieval:
        """The turn's retrieval state, made with ``make()`` on first use.

        ``check`` validates an existing state against the caller's request (it raises on a
        mismatch); at most ``limit`` states are kept, the least recently begun dropped first.
        """
        with self._lock:
            entry = self._turns.setdefault(turn_id, LiveTurn(turn_id))
            if entry.retrieval is not None:
                check(entry.retrieval)
                self._recent.move_to_end(turn_id)
                return entry.retrieval
            entry.retrieval = make()
            self._recent[turn_id] = None
            while len(self._recent) > limit:
                oldest, _ = self._recent.popitem(last=False)
                dropped = self._turns[oldest]
                dropped.retrieval = None
                self._drop_if_empty(dropped)
            return entry.retrieval

    def retrieval(self, turn_id: str) -> TurnRetrieval | None:
        """The turn's retrieval state, or ``None``."""
        with self._lock:
            entry = self._turns.get(turn_id)
        return entry.retrieval if entry is not None else None

    def detach(self, turn_id: str) -> bool:
        """Drop the turn's retrieval state (its pin stays); ``True`` when it had one."""
        with self._lock:
            entry = self._turns.get(turn_id)
            if entry is None or entry.retrieval is None:
                return False
            entry.retrieval = None
            self._recent.pop(turn_id, None)
            self._drop_if_empty(entry)
        return True

    @property
    def retrievals(self) -> int:
        """How many turns have a retrieval state."""
        with self._lock:
            return len(self._recent)

    # -- whole turns -------------------------------------------------------------------------

    def get(self, turn_id: str) -> LiveTurn | None:
        """The live turn, or ``None``."""
        with self._lock:
            return self._turns.get(turn_id)

    def release(self, turn_id: str) -> LiveTurn | None:
        """Forget the turn (pin and retrieval state at once); what it held, or ``None``."""
        with self._lock:
            self._recent.pop(turn_id, None)
            return self._turns.pop(turn_id, None)

    def _drop_if_empty(self, entry: LiveTurn) -> None:
        if entry.view is None and entry.retrieval is None:
            self._turns.pop(entry.turn_id, None)
