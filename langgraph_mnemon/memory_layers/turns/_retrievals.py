"""Turn id → :class:`TurnRetrieval`: one retrieval state per executing-agent turn.

The states live in the registry of live turns (``_registry.LiveTurns``) that the turn
service shares with its composer, so ending a turn releases its pin and its budgets at once.

Example:
    >>> turns = TurnRetrievals()
    >>> state = turns.begin("turn-1", ["ops"], view_id="view-1")
    >>> turns.get("turn-1") is state, turns.end("turn-1")
    (True, True)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from langgraph_mnemon.errors import ConflictError, InvalidInputError, NotFoundError
from langgraph_mnemon.memory_layers.turns._evidence import DEFAULT_SOURCE_KEY, grant_of
from langgraph_mnemon.memory_layers.turns._registry import LiveTurns
from langgraph_mnemon.memory_layers.turns._retrieval import TurnRetrieval

__all__ = ["TurnRetrievals"]


class TurnRetrievals:
    """Turn id → :class:`TurnRetrieval`: one state per executing-agent turn.

    :meth:`begin` returns the existing state of a turn (parallel calls share it) or a fresh one;
    the same id with a different grant, view or source is a conflict. At most ``max_turns``
    states are kept (least recently used dropped first); :meth:`end` releases a turn's state.

    Args:
        max_turns: how many turns' states are kept at most.
        clock: seconds since the epoch, for evidence timestamps.
        live: the registry of live turns to keep the states in (the turn service's; default:
            a registry of its own).

    Example:
        >>> TurnRetrievals(max_turns=2).begin("t1", ["ops"]).grant
        ('ops',)
    """

    def __init__(
        self,
        *,
        max_turns: int = 256,
        clock: Callable[[], float] = time.time,
        live: LiveTurns | None = None,
    ) -> None:
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise InvalidInputError("max_turns must be a positive integer")
        self.max_turns = max_turns
        self._clock = clock
        self._live = live if live is not None else LiveTurns()

    def __len__(self) -> int:
        return self._live.retrievals

    def begin(
        self,
        turn_id: str,
        grant: Iterable[str],
        *,
        view_id: str | None = None,
        source_key: str = DEFAULT_SOURCE_KEY,
    ) -> TurnRetrieval:
        """The retrieval state of ``turn_id`` (created on first use).

        Raises:
            InvalidInputError: an empty turn id or a malformed grant.
            ConflictError: the turn already has a state with another grant, view or source.
        """
        if not isinstance(turn_id, str) or not turn_id.strip():
            raise InvalidInputError("turn_id must be a non-empty string naming the agent turn")
        granted = grant_of(grant)

        def make() -> TurnRetrieval:
            return TurnRetrieval(
                granted, turn_id=turn_id, view_id=view_id, source_key=source_key, clock=self._clock
            )

        def check(found: TurnRetrieval) -> None:
            if (found.grant, found.view_id, found.source_key) != (granted, view_id, source_key):
                raise ConflictError(
                    f"turn {turn_id!r} is already pinned to view {found.view_id!r} with "
                    f"grant {list(found.grant)}; start a new turn id for a different scope"
                )

        return self._live.attach(turn_id, make, check, limit=self.max_turns)

    def get(self, turn_id: str) -> TurnRetrieval:
        """The state of a begun turn.

        Raises:
            NotFoundError: the turn has no retrieval state (not begun, ended or evicted).
        """
        found = self._live.retrieval(turn_id)
        if found is None:
            raise NotFoundError(f"no retrieval state for turn {turn_id!r}; begin the turn first")
        return found

    def end(self, turn_id: str) -> bool:
        """Forget a turn's state; ``True`` when it existed."""
        return self._live.detach(turn_id)
