"""The Documents search budget of one turn: one search, ≤ 4 records / 6,000 characters.

``limit = min(4, max(1, limit))``; any further call (even a concurrent one) returns
``not_run=True`` with a hint without touching the disk. The same call again (the same query,
archive flag and limit: a retried tool call) gets the earlier results with that answer, so a
retry is neither counted twice nor left without them. A search that raises (bad input) frees
the slot and re-raises.

Example:
    >>> slot = DocumentsSlot()
    >>> slot.search(mem.documents, "deploy").not_run, slot.search(mem.documents, "x").not_run
    (False, True)
"""

from __future__ import annotations

import threading
from typing import Any

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.documents import DocumentSearchResult, bound_for_model
from langgraph_mnemon.memory_layers.turns._budget import DOCUMENT_MAX_CHARS, DOCUMENT_MAX_RECORDS
from langgraph_mnemon.memory_layers.turns._evidence import DocumentSearcher
from langgraph_mnemon.memory_layers.turns._state import DocumentsState

__all__ = ["HINT_DOCUMENTS_NOT_RUN", "HINT_DOCUMENTS_REPLAY", "DocumentsSlot"]

HINT_DOCUMENTS_NOT_RUN = (
    "Documents were already searched in this turn (one search per turn); this call did not "
    "run. Answer from the earlier Document results."
)
HINT_DOCUMENTS_REPLAY = (
    "This Documents search already ran in this turn (one search per turn); its results are "
    "repeated here without a new search."
)


class DocumentsSlot:
    """The turn's one Documents search; thread-safe (``lock``: the turn's lock)."""

    def __init__(self, lock: threading.Lock | None = None) -> None:
        self._lock = lock or threading.Lock()
        self._taken = False
        self._call: tuple[str, bool, int] | None = None
        self.result: DocumentSearchResult | None = None
        """The turn's bounded search result, once it ran."""

    def state(self) -> DocumentsState | None:
        """The finished search (its call and result), or ``None`` (call under the lock)."""
        if self._call is None or self.result is None:
            return None
        return DocumentsState(call=self._call, result=self.result)

    def absorb(self, state: DocumentsState | None) -> bool:
        """Take a search recorded elsewhere when this slot has none (call under the lock);
        whether it did."""
        if state is None or self._taken:
            return False
        self._taken, self._call, self.result = True, state.call, state.result
        return True

    def _refused(self, call: tuple[str, bool, int]) -> DocumentSearchResult:
        """The answer to a further call (under the lock): the earlier results for the same
        call, else none."""
        earlier = self.result if call == self._call else None
        if earlier is not None:
            return earlier.model_copy(update={"hint": HINT_DOCUMENTS_REPLAY, "not_run": True})
        return DocumentSearchResult(
            query=call[0],
            include_archived=call[1],
            total=0,
            results=(),
            hint=HINT_DOCUMENTS_NOT_RUN,
            not_run=True,
        )

    def _take(
        self, query: Any, include_archived: bool, limit: Any
    ) -> tuple[DocumentSearchResult | None, int]:
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string (got {type(query).__name__})")
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidInputError("limit must be an integer (1..4 are used)")
        bounded = min(DOCUMENT_MAX_RECORDS, max(1, limit))
        call = (query.strip(), bool(include_archived), bounded)
        with self._lock:
            if self._taken:
                return (self._refused(call), 0)
            self._taken, self._call = True, call
        return (None, bounded)

    def _done(self, result: DocumentSearchResult) -> DocumentSearchResult:
        bounded = bound_for_model(
            result, max_records=DOCUMENT_MAX_RECORDS, max_characters=DOCUMENT_MAX_CHARS
        )
        with self._lock:
            self.result = bounded
        return bounded

    def _failed(self) -> None:
        with self._lock:
            self._taken, self._call = False, None

    def search(
        self,
        documents: DocumentSearcher,
        query: str,
        *,
        include_archived: bool = False,
        limit: int = DOCUMENT_MAX_RECORDS,
    ) -> DocumentSearchResult:
        """The turn's one Documents search (a second call returns ``not_run=True``)."""
        refused, bounded_limit = self._take(query, include_archived, limit)
        if refused is not None:
            return refused
        try:
            result = documents.search(query, include_archived=include_archived, limit=bounded_limit)
        except BaseException:
            self._failed()
            raise
        return self._done(result)
