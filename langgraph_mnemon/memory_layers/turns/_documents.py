"""The Documents search budget of one turn: one search, ≤ 4 records / 6,000 characters.

``limit = min(4, max(1, limit))``; any further call (even a concurrent one) returns
``not_run=True`` with a hint without touching the disk. A search that raises (bad input)
frees the slot and re-raises.

Example:
    >>> slot = DocumentsSlot()
    >>> slot.search(mem.documents, "deploy").not_run, slot.search(mem.documents, "x").not_run
    (False, True)
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.documents import DocumentSearchResult, bound_for_model
from langgraph_mnemon.memory_layers.turns._evidence import DocumentSearcher
from langgraph_mnemon.memory_layers.turns._limits import DOCUMENT_MAX_CHARS, DOCUMENT_MAX_RECORDS

__all__ = ["HINT_DOCUMENTS_NOT_RUN", "DocumentsSlot"]

HINT_DOCUMENTS_NOT_RUN = (
    "Documents were already searched in this turn (one search per turn); this call did not "
    "run. Answer from the earlier Document results."
)


class DocumentsSlot:
    """The turn's one Documents search; thread-safe (``lock``: the turn's lock)."""

    def __init__(self, lock: threading.Lock | None = None) -> None:
        self._lock = lock or threading.Lock()
        self._taken = False
        self.result: DocumentSearchResult | None = None
        """The turn's bounded search result, once it ran."""

    def _take(
        self, query: Any, include_archived: bool, limit: Any
    ) -> tuple[DocumentSearchResult | None, int]:
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string (got {type(query).__name__})")
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidInputError("limit must be an integer (1..4 are used)")
        with self._lock:
            if self._taken:
                refused = DocumentSearchResult(
                    query=query.strip(),
                    include_archived=bool(include_archived),
                    total=0,
                    results=(),
                    hint=HINT_DOCUMENTS_NOT_RUN,
                    not_run=True,
                )
                return (refused, 0)
            self._taken = True
        return (None, min(DOCUMENT_MAX_RECORDS, max(1, limit)))

    def _done(self, result: DocumentSearchResult) -> DocumentSearchResult:
        bounded = bound_for_model(
            result, max_records=DOCUMENT_MAX_RECORDS, max_characters=DOCUMENT_MAX_CHARS
        )
        self.result = bounded
        return bounded

    def _failed(self) -> None:
        with self._lock:
            self._taken = False

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

    async def asearch(
        self,
        documents: DocumentSearcher,
        query: str,
        *,
        include_archived: bool = False,
        limit: int = DOCUMENT_MAX_RECORDS,
    ) -> DocumentSearchResult:
        """Async twin of :meth:`search` (the file work runs in a worker thread)."""
        refused, bounded_limit = self._take(query, include_archived, limit)
        if refused is not None:
            return refused
        try:
            result = await asyncio.to_thread(
                documents.search, query, include_archived=include_archived, limit=bounded_limit
            )
        except BaseException:
            self._failed()
            raise
        return self._done(result)
