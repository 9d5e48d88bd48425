"""The per-turn retrieval state: what one executing-agent turn may retrieve, and how often.

A :class:`TurnRetrieval` is the retrieval state of *one executing-agent turn* (reference §5.2,
§5.3, §4.4): its recall envelope (two attempts, 6 rows / 4,800 characters), its one Related
traversal, its one Documents search and the General strategy's per-route call budgets.
Parallel tool calls of that turn share it; a later turn, a sibling agent or a resumed run gets
a fresh one (:class:`~langgraph_mnemon.memory_layers.turns.TurnRetrievals` maps turn ids to
states). The rules of each part are in its module: ``_recall``, ``_related``, ``_documents``,
``_budget``.

No LangGraph or LangChain here; the recall-refine graph (:mod:`langgraph_mnemon.graphs.recall`)
drives this state.

Example:
    >>> turn = TurnRetrieval(["ops"], view_id="view-1")
    >>> first = turn.recall(mem.spaces, "How do we deploy?")
    >>> again = turn.recall(mem.spaces, "how do we DEPLOY")  # replayed, no provider call
    >>> again.status, again.evidence.id == first.evidence.id
    ('replayed', True)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from langgraph_mnemon.memory_layers.documents import DocumentSearchResult
from langgraph_mnemon.memory_layers.spaces import MemoryRecord
from langgraph_mnemon.memory_layers.turns._budget import RouteBudget
from langgraph_mnemon.memory_layers.turns._documents import DocumentsSlot
from langgraph_mnemon.memory_layers.turns._evidence import (
    DEFAULT_SOURCE_KEY,
    DocumentSearcher,
    RecallEvidence,
    RecallRequest,
    RelatedEvidence,
    SpaceSearcher,
    TurnLedger,
    grant_of,
)
from langgraph_mnemon.memory_layers.turns._limits import DOCUMENT_MAX_RECORDS
from langgraph_mnemon.memory_layers.turns._recall import RecallEnvelope
from langgraph_mnemon.memory_layers.turns._related import RelatedSlot

__all__ = ["TurnRetrieval"]


class TurnRetrieval:
    """Retrieval state of one executing-agent turn: recall attempts, Related, Documents slot.

    Args:
        grant: the turn's pinned Memory Space grant (the active space ids of its view).
        turn_id: the turn this state belongs to (shown in ``repr``).
        view_id: echoed in evidence records and rejection messages.
        source_key: identifies the Memory Spaces Source instance (part of every query digest).
        clock: seconds since the epoch, for evidence timestamps.

    Thread- and task-safe: sync and async calls may share one state.

    Example:
        >>> TurnRetrieval(["ops"]).recall(mem.spaces, "deploy").status
        'searched'
    """

    def __init__(
        self,
        grant: Iterable[str],
        *,
        turn_id: str | None = None,
        view_id: str | None = None,
        source_key: str = DEFAULT_SOURCE_KEY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.grant = grant_of(grant)
        self.turn_id = turn_id
        self._ledger = TurnLedger(view_id=view_id, source_key=source_key, clock=clock)
        self._recall = RecallEnvelope(self._ledger, self.grant)
        self._related = RelatedSlot(self._ledger, self.grant)
        self._documents = DocumentsSlot(self._ledger.lock)
        self.routes = RouteBudget()  # the General strategy's per-route calls this turn

    def __repr__(self) -> str:
        return (
            f"TurnRetrieval(turn_id={self.turn_id!r}, grant={list(self.grant)}, "
            f"attempts={len(self.attempts)})"
        )

    @property
    def view_id(self) -> str | None:
        return self._ledger.view_id

    @property
    def source_key(self) -> str:
        return self._ledger.source_key

    # ---------------------------------------------------------------- read-only views

    @property
    def attempts(self) -> list[RecallEvidence]:
        """Recorded (successful) recall attempts, in order."""
        return self._recall.attempts

    @property
    def admitted(self) -> list[MemoryRecord]:
        """Every row admitted in this turn (recall and related), in admission order."""
        with self._ledger.lock:
            return list(self._ledger.rows)

    @property
    def admitted_refs(self) -> set[tuple[str, str]]:
        """``(space id, id)`` of every admitted row: the allowed starting points of Related."""
        with self._ledger.lock:
            return set(self._ledger.refs)

    @property
    def recall_usage(self) -> tuple[int, int]:
        """``(rows, characters)`` admitted by recall attempts so far (of 6 / 4,800)."""
        return self._recall.usage

    @property
    def documents_result(self) -> DocumentSearchResult | None:
        """The turn's bounded Documents search result, once it ran."""
        return self._documents.result

    # ---------------------------------------------------------------- recall

    def shape(
        self,
        query: str,
        *,
        limit: int | None = None,
        space_ids: Sequence[str] | None = None,
        mode: str = "smart",
        category: str | None = None,
        source: str | None = None,
        intent: str | None = None,
    ) -> RecallRequest:
        """Validate and shape a model's recall request; raises before any provider call.

        ``category`` / ``source`` / ``intent`` are accepted and dropped: a guessed filter must
        not hide exact evidence.

        Raises:
            InvalidInputError: a bad query, mode or limit, or a space outside the grant.
        """
        del category, source, intent
        return self._recall.shape(query, limit=limit, space_ids=space_ids, mode=mode)

    def _request(self, query: str | RecallRequest, **options: object) -> RecallRequest:
        if isinstance(query, RecallRequest):
            return query
        return self.shape(query, **options)  # type: ignore[arg-type]

    async def arecall(
        self,
        spaces: SpaceSearcher,
        query: str | RecallRequest,
        *,
        limit: int | None = None,
        space_ids: Sequence[str] | None = None,
        mode: str = "smart",
        category: str | None = None,
        source: str | None = None,
        intent: str | None = None,
    ) -> RecallEvidence:
        """One recall call of this turn (see ``_recall`` for every rule).

        ``query`` may be an already shaped :class:`RecallRequest` (from :meth:`shape`).

        Raises:
            InvalidInputError: a bad or ungranted request (no provider call); a failing
                search comes back as ``status="failed"`` and uses no budget.
        """
        request = self._request(
            query,
            limit=limit,
            space_ids=space_ids,
            mode=mode,
            category=category,
            source=source,
            intent=intent,
        )
        return await self._recall.arecall(spaces, request)

    def recall(
        self,
        spaces: SpaceSearcher,
        query: str | RecallRequest,
        *,
        limit: int | None = None,
        space_ids: Sequence[str] | None = None,
        mode: str = "smart",
        category: str | None = None,
        source: str | None = None,
        intent: str | None = None,
    ) -> RecallEvidence:
        """Sync twin of :meth:`arecall` (uses ``spaces.search``)."""
        request = self._request(
            query,
            limit=limit,
            space_ids=space_ids,
            mode=mode,
            category=category,
            source=source,
            intent=intent,
        )
        return self._recall.recall(spaces, request)

    # ---------------------------------------------------------------- related

    async def arelated(
        self,
        spaces: SpaceSearcher,
        memory_id: str,
        *,
        memory_body_id: str | None = None,
        depth: int = 2,
        edge: str | None = None,
    ) -> RelatedEvidence:
        """The turn's one Related traversal, from an admitted ``(memory_body_id, id)``.

        ``memory_body_id`` is the Memory Space id under its model-facing name. An unadmitted
        id returns empty results and a hint without a provider call (and keeps the slot
        free); any call after the traversal replays it with the same evidence id.
        """
        space_id, mid = self._related.arguments(memory_id, memory_body_id, depth, edge)
        return await self._related.arelated(spaces, space_id, mid, depth, edge)

    def related(
        self,
        spaces: SpaceSearcher,
        memory_id: str,
        *,
        memory_body_id: str | None = None,
        depth: int = 2,
        edge: str | None = None,
    ) -> RelatedEvidence:
        """Sync twin of :meth:`arelated`."""
        space_id, mid = self._related.arguments(memory_id, memory_body_id, depth, edge)
        return self._related.related(spaces, space_id, mid, depth, edge)

    # ---------------------------------------------------------------- documents

    def search_documents(
        self,
        documents: DocumentSearcher,
        query: str,
        *,
        include_archived: bool = False,
        limit: int = DOCUMENT_MAX_RECORDS,
    ) -> DocumentSearchResult:
        """The turn's one Documents search (≤4 records / 6,000 characters).

        A second call — even a concurrent one — returns ``not_run=True`` with a hint and does
        no disk I/O. A search that raises (bad input) frees the slot and re-raises.
        """
        return self._documents.search(
            documents, query, include_archived=include_archived, limit=limit
        )

    async def asearch_documents(
        self,
        documents: DocumentSearcher,
        query: str,
        *,
        include_archived: bool = False,
        limit: int = DOCUMENT_MAX_RECORDS,
    ) -> DocumentSearchResult:
        """Async twin of :meth:`search_documents` (the file work runs in a worker thread)."""
        return await self._documents.asearch(
            documents, query, include_archived=include_archived, limit=limit
        )
