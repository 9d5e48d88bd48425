"""Related: the one graph traversal of a turn, from a row its recall admitted.

Only from a ``(space id, id)`` admitted earlier in the turn; one traversal per turn, later
calls replay it with the same evidence id; ≤ 4 rows, ≤ 4,000 characters, ≤ 4 medium and
≤ 4 unknown; admitted rows extend the turn's admitted set. An unadmitted id returns empty
results and a hint without a provider call (and keeps the slot free); a failed traversal uses
no budget.

Example:
    >>> slot = RelatedSlot(ledger, ("ops",))
    >>> slot.related(mem.spaces, "mem-1").status     # "mem-1" admitted by recall earlier
    'traversed'
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.spaces import EDGE_TYPES, MemoryRecord
from langgraph_mnemon.memory_layers.turns._budget import (
    RELATED_CHARS,
    RELATED_FETCH,
    RELATED_MAX_MEDIUM,
    RELATED_MAX_UNKNOWN,
    RELATED_RESULTS,
)
from langgraph_mnemon.memory_layers.turns._evidence import (
    REFUSED,
    RelatedEvidence,
    SpaceSearcher,
    Step,
    TurnLedger,
    short,
)

__all__ = [
    "HINT_RELATED",
    "HINT_RELATED_EMPTY",
    "HINT_RELATED_FAILED",
    "HINT_RELATED_REPLAY",
    "HINT_RELATED_UNADMITTED",
    "RELATED_ROUTE",
    "RelatedSlot",
]

RELATED_ROUTE = "memory-spaces/related"

HINT_RELATED = "Related memories of an admitted row. Related is complete for this turn."
HINT_RELATED_EMPTY = "No related memory was admitted. Related is complete for this turn."
HINT_RELATED_REPLAY = (
    "Related already ran in this turn; its evidence was replayed without a provider query."
)
HINT_RELATED_UNADMITTED = (
    "Related starts only from a memory_body_id + id admitted by this turn's Recall; call "
    "mnemon_recall first and pass an id from its results."
)
HINT_RELATED_FAILED = (
    "Related could not read the Memory Space; this call did not use the turn's budget."
)


class RelatedSlot:
    """The turn's one Related traversal; shares the turn's :class:`TurnLedger` with recall."""

    def __init__(self, ledger: TurnLedger, grant: tuple[str, ...]) -> None:
        self.ledger = ledger
        self.grant = grant
        self._done: RelatedEvidence | None = None
        self._pending: Future[Any] | None = None

    @property
    def done(self) -> RelatedEvidence | None:
        """The turn's traversal, once it ran (read it under the ledger's lock)."""
        return self._done

    def absorb(self, done: RelatedEvidence | None) -> bool:
        """Take a traversal recorded elsewhere when this turn has none (call under the
        ledger's lock); whether it did."""
        if done is None or self._done is not None:
            return False
        self._done = done
        return True

    def _space(self, space_id: str | None) -> str:
        where = self.ledger.where
        if space_id is None or not str(space_id).strip():
            if len(self.grant) != 1:
                raise InvalidInputError(
                    f"related memory requires one Memory Space from pinned Source {where}: "
                    f"pass memory_body_id (one of {', '.join(self.grant) or 'none'})"
                )
            return self.grant[0]
        if not isinstance(space_id, str):
            raise InvalidInputError("memory_body_id must be a string")
        sid = space_id.strip()
        if sid not in self.grant:
            raise InvalidInputError(
                f"Related requested a Memory Space outside pinned Source {where}: {sid}",
                code="related-rejected",
            )
        return sid

    def arguments(
        self, memory_id: str, space_id: str | None, depth: int, edge: str | None
    ) -> tuple[str, str]:
        """The validated ``(space id, memory id)`` of a call; raises before any I/O."""
        if not isinstance(memory_id, str) or not memory_id.strip():
            raise InvalidInputError("id must be the id of a row admitted by this turn's Recall")
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 5:
            raise InvalidInputError("depth must be an integer in 1..5")
        if edge is not None and edge not in EDGE_TYPES:
            raise InvalidInputError(f"edge must be one of {', '.join(EDGE_TYPES)}")
        return (self._space(space_id), memory_id.strip())

    def _begin(self, space_id: str, memory_id: str, depth: int, edge: str | None) -> Step:
        with self.ledger.lock:
            if self._done is not None:
                update = {
                    "status": "replayed",
                    "hint": HINT_RELATED_REPLAY,
                    "provider_called": False,
                }
                return Step("replay", output=self._done.model_copy(update=update))
            if self._pending is not None:
                return Step("wait", future=self._pending)
            if (space_id, memory_id) not in self.ledger.refs:
                unadmitted = RelatedEvidence(
                    id=memory_id,
                    space_id=space_id,
                    depth=depth,
                    edge=edge,
                    hint=HINT_RELATED_UNADMITTED,
                    status="not-admitted",
                )
                return Step("done", output=unadmitted)
            self._pending = Future()
            return Step("run", future=self._pending)

    def _traversed(
        self, space_id: str, memory_id: str, depth: int, edge: str | None, found: Any
    ) -> RelatedEvidence:
        rows = [r for r in found.results if isinstance(r, MemoryRecord)]
        with self.ledger.lock:
            admission = self.ledger.admit(
                rows,
                max_results=RELATED_RESULTS,
                max_chars=RELATED_CHARS,
                max_medium=RELATED_MAX_MEDIUM,
                max_unknown=RELATED_MAX_UNKNOWN,
            )
            output = RelatedEvidence(
                id=memory_id,
                space_id=space_id,
                depth=depth,
                edge=edge,
                results=tuple(admission.rows),
                hint=HINT_RELATED if admission.rows else HINT_RELATED_EMPTY,
                evidence=self.ledger.record(RELATED_ROUTE, admission.truncated),
                status="traversed",
                provider_called=True,
            )
            self._done = output
            self.ledger.take(admission)
        return output

    def _finish(
        self,
        step: Step,
        call: tuple[str, str, int, str | None],
        found: Any,
        error: BaseException | None,
    ) -> RelatedEvidence:
        space_id, memory_id, depth, edge = call
        try:
            if error is not None:
                raise error
            output = self._traversed(space_id, memory_id, depth, edge, found)
        except BaseException as exc:
            reason = short(f"{type(exc).__name__}: {exc}")
            output = RelatedEvidence(
                id=memory_id,
                space_id=space_id,
                depth=depth,
                edge=edge,
                hint=f"{HINT_RELATED_FAILED} ({reason})",
                status="failed",
                provider_called=True,
            )
        with self.ledger.lock:
            self._pending = None
        assert step.future is not None
        step.future.set_result(output)
        return output

    def _settle(
        self,
        step: Step,
        call: tuple[str, str, int, str | None],
        found: Any,
        error: BaseException | None,
    ) -> RelatedEvidence:
        """Finish a run; a kernel refusal or a cancellation propagates after the slot is free."""
        output = self._finish(step, call, found, error)
        if error is not None and (not isinstance(error, Exception) or isinstance(error, REFUSED)):
            raise error
        return output

    def related(
        self, spaces: SpaceSearcher, space_id: str, memory_id: str, depth: int, edge: str | None
    ) -> RelatedEvidence:
        """The traversal from validated :meth:`arguments`; replays after the first."""
        call = (space_id, memory_id, depth, edge)
        while True:
            step = self._begin(*call)
            if step.kind in ("replay", "done"):
                return step.output
            assert step.future is not None
            if step.kind == "wait":
                step.future.result()
                continue
            try:
                found = spaces.related(
                    memory_id, space_id=space_id, depth=depth, edge=edge, limit=RELATED_FETCH
                )
            except BaseException as exc:
                return self._settle(step, call, None, exc)
            return self._settle(step, call, found, None)
