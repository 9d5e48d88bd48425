"""The per-turn retrieval state: what one executing-agent turn may retrieve, and how often.

A :class:`TurnRetrieval` is the retrieval state of *one executing-agent turn* (reference §5.2,
§5.3, §4.4): its recall envelope (two attempts, 6 rows / 4,800 characters), its one Related
traversal, its one Documents search and the General strategy's per-route call budgets.
Parallel tool calls of that turn share it; a later turn, a sibling agent or a resumed run gets
a fresh one (:class:`~langgraph_mnemon.memory_layers.turns.TurnRetrievals` maps turn ids to
states). The rules of each part are in its module: ``_recall``, ``_related``, ``_documents``,
``_budget``.

What the state recorded is plain data (:meth:`TurnRetrieval.state`, a
:class:`~langgraph_mnemon.memory_layers.turns._state.RetrievalState`): the turn service keeps
it in the shared database after every recorded call (``on_change``), and a process that never
saw the turn continues it from there (:meth:`TurnRetrieval.restore`, :meth:`TurnRetrieval.absorb`).

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

from langgraph_mnemon.errors import ConflictError
from langgraph_mnemon.memory_layers.documents import DocumentSearchResult
from langgraph_mnemon.memory_layers.spaces import MemoryRecord
from langgraph_mnemon.memory_layers.turns._budget import DOCUMENT_MAX_RECORDS, RouteBudget
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
from langgraph_mnemon.memory_layers.turns._recall import RecallEnvelope
from langgraph_mnemon.memory_layers.turns._related import RelatedSlot
from langgraph_mnemon.memory_layers.turns._state import RetrievalState
from langgraph_mnemon.storage.edge import async_form

__all__ = ["TurnRetrieval"]


class TurnRetrieval:
    """Retrieval state of one executing-agent turn: recall attempts, Related, Documents slot.

    Args:
        grant: the turn's pinned Memory Space grant (the active space ids of its view).
        turn_id: the turn this state belongs to (shown in ``repr``).
        view_id: echoed in evidence records and rejection messages.
        source_key: identifies the Memory Spaces Source instance (part of every query digest).
        clock: seconds since the epoch, for evidence timestamps.

    Thread- and task-safe: sync and async calls may share one state. ``on_change`` (set by
    the turn service) is called, with no lock held, after each call that recorded something:
    a searched recall attempt, the Related traversal, the Documents search, a route's call.

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
        self.routes = RouteBudget(self._changed)  # the General strategy's per-route calls
        self.on_change: Callable[[], None] | None = None

    def __repr__(self) -> str:
        return (
            f"TurnRetrieval(turn_id={self.turn_id!r}, grant={list(self.grant)}, "
            f"attempts={len(self.attempts)})"
        )

    @property
    def view_id(self) -> str | None:
        return self._ledger.view_id

    # ---------------------------------------------------------------- state as data

    def state(self) -> RetrievalState:
        """Everything this turn recorded, as plain data (one consistent snapshot)."""
        ledger = self._ledger
        with ledger.lock:
            recorded = {
                "attempts": self._recall.recorded,
                "digests": tuple(sorted(ledger.digests)),
                "refs": tuple(sorted(ledger.refs)),
                "rows": tuple(ledger.rows),
                "related": self._related.done,
                "documents": self._documents.state(),
            }
        return RetrievalState(
            grant=self.grant,
            view_id=self.view_id,
            source_key=self.source_key,
            routes=self.routes.answers(),
            **recorded,
        )

    def absorb(self, state: RetrievalState) -> bool:
        """Add what ``state`` recorded and this one lacks (a call both hold counts once).

        Returns:
            Whether anything was added.

        Raises:
            ConflictError: ``state`` is another turn's (another grant, view or source).
        """
        if (state.grant, state.view_id, state.source_key) != (
            self.grant,
            self.view_id,
            self.source_key,
        ):
            raise ConflictError(
                f"the stored state of turn {self.turn_id!r} is for view {state.view_id!r}, "
                f"not {self.view_id!r}; start a new turn"
            )
        with self._ledger.lock:
            changed = self._recall.absorb(state.attempts)
            changed = self._ledger.absorb(state.digests, state.refs, state.rows) or changed
            changed = self._related.absorb(state.related) or changed
            changed = self._documents.absorb(state.documents) or changed
        return self.routes.absorb(state.routes) or changed

    @classmethod
    def restore(
        cls,
        state: RetrievalState,
        *,
        turn_id: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> TurnRetrieval:
        """The retrieval state ``state`` describes, as the process that recorded it had it."""
        turn = cls(
            state.grant,
            turn_id=turn_id,
            view_id=state.view_id,
            source_key=state.source_key,
            clock=clock,
        )
        turn.absorb(state)
        return turn

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

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
        evidence = self._recall.recall(spaces, request)
        if evidence.status == "searched":
            self._changed()
        return evidence

    arecall = async_form(recall)

    # ---------------------------------------------------------------- related

    def related(
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
        evidence = self._related.related(spaces, space_id, mid, depth, edge)
        if evidence.status == "traversed":
            self._changed()
        return evidence

    arelated = async_form(related)

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
        no disk I/O (the same call again gets the earlier results with it). A search that
        raises (bad input) frees the slot and re-raises.
        """
        found = self._documents.search(
            documents, query, include_archived=include_archived, limit=limit
        )
        if not found.not_run:
            self._changed()
        return found

    asearch_documents = async_form(search_documents)
