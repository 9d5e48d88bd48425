"""What a turn's retrieval state holds, as plain data another process can read back.

A :class:`RetrievalState` is everything a :class:`~langgraph_mnemon.memory_layers.turns.
TurnRetrieval` has recorded: the recall attempts (their evidence, by query digest), what the
turn admitted (content digests, ``(space id, id)`` refs, the clipped rows), the Related
traversal, the Documents search and the General routes' answers. In-flight calls are not
state: a call counts once it is recorded, so a call that never finished (a crashed worker)
uses no budget, and the same call run again (a retry) replays what was recorded.

The recall usage (rows and characters) is not stored: it is the sum over the attempts.

Two states of one turn merge by union (``TurnRetrieval.absorb`` and the ``absorb`` methods of
its parts): every recorded call is kept once, keyed by what identifies it (a query digest, a
route call's input key), so a merge never counts a call twice.

Example:
    >>> state = turn.state()
    >>> TurnRetrieval.restore(RetrievalState.model_validate_json(state.model_dump_json()))
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from langgraph_mnemon.contracts import FrozenModel
from langgraph_mnemon.memory_layers.documents import DocumentSearchResult
from langgraph_mnemon.memory_layers.spaces import MemoryRecord
from langgraph_mnemon.memory_layers.turns._evidence import RecallEvidence, RelatedEvidence

__all__ = ["DocumentsState", "RetrievalState"]

RouteAnswers = dict[str, dict[str, Any]]
"""Route id → call key → the answer that call returned (JSON)."""


class DocumentsState(FrozenModel):
    """The turn's one Documents search: the call that took it and its bounded result."""

    call: tuple[str, bool, int]
    result: DocumentSearchResult


class RetrievalState(FrozenModel):
    """Everything one turn's retrieval state recorded (see the module docstring)."""

    grant: tuple[str, ...]
    view_id: str | None = None
    source_key: str
    attempts: tuple[RecallEvidence, ...] = ()
    digests: tuple[str, ...] = ()
    refs: tuple[tuple[str, str], ...] = ()
    rows: tuple[MemoryRecord, ...] = ()
    related: RelatedEvidence | None = None
    documents: DocumentsState | None = None
    routes: RouteAnswers = Field(default_factory=dict)

    @property
    def recall_usage(self) -> tuple[int, int]:
        """``(rows, characters)`` the recall attempts admitted."""
        rows = [r for attempt in self.attempts for r in attempt.results]
        return len(rows), sum(len(r.content) for r in rows)
