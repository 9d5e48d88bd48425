"""The per-turn recall envelope: what one executing-agent turn may retrieve, and how often.

A :class:`TurnRetrieval` is the retrieval state of *one executing-agent turn* (reference §5.2,
§5.3, §4.4). Parallel tool calls of that turn share it; a later turn, a sibling agent or a
resumed run gets a fresh one (:class:`TurnRetrievals` maps turn keys to states).

Recall (:meth:`TurnRetrieval.arecall`):

* Request shaping: model-chosen ``category`` / ``source`` / ``intent`` filters are dropped;
  ``limit = min(limit or 6, 6)``; requested space ids are trimmed and deduplicated and must be a
  subset of the turn's grant (otherwise :class:`~langgraph_mnemon.errors.InvalidInputError`
  before any provider call); none requested → every granted space.
* Query digest: SHA-256 of ``{source key, lowercased letter/digit runs joined by one space,
  sorted space ids}`` — queries that differ only in case or punctuation are the same query.
* Same digest → the stored evidence is replayed without a provider call; a concurrent identical
  call joins the pending one; distinct concurrent calls run one after the other; after two
  attempts every new query replays the latest evidence with an "exhausted" hint.
* Attempt 1 admits ≤ ``min(limit, 4)`` rows and ≤ 3,600 content characters; both attempts
  together ≤ 6 rows and ≤ 4,800 characters; ≤ 1,200 characters per row (clipped with ``…``
  inside the limit); ≤ 1 medium and ≤ 1 unknown row per attempt; ``low`` rows are skipped and a
  missing tier counts as ``unknown``; rows whose content digest (trimmed, whitespace-collapsed)
  or ``(space id, id)`` was already admitted are skipped.
* A failed attempt (the search raised, or every queried space was unavailable) is not recorded:
  it consumes no budget and the same query may be retried.

Related (:meth:`TurnRetrieval.arelated`): only from a ``(space id, id)`` admitted earlier in the
turn; one traversal per turn, later calls replay it with the same evidence id; ≤ 4 rows,
≤ 4,000 characters, ≤ 4 medium and ≤ 4 unknown; admitted rows extend the admitted set.

Documents (:meth:`TurnRetrieval.asearch_documents`): one search per turn with
``limit = min(4, max(1, limit))``, bounded to 4 records / 6,000 characters; any further call
(even a concurrent one) returns ``not_run=True`` without touching the disk.

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

import asyncio
import hashlib
import json
import re
import threading
import time
import unicodedata
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from langgraph_mnemon.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    ParticipationError,
    ReadOnlyError,
)
from langgraph_mnemon.memory_layers.documents import (
    MODEL_MAX_CHARACTERS,
    MODEL_MAX_RECORDS,
    DocumentSearchResult,
    bound_for_model,
)
from langgraph_mnemon.memory_layers.spaces import EDGE_TYPES, SEARCH_MODES, Insight
from langgraph_mnemon.memory_layers.turns._budget import RouteBudget

__all__ = [
    "ATTEMPTS",
    "DOCUMENT_MAX_RECORDS",
    "FIRST_ATTEMPT_CHARS",
    "FIRST_ATTEMPT_RESULTS",
    "ITEM_CHARS",
    "MAX_MEDIUM_PER_ATTEMPT",
    "MAX_UNKNOWN_PER_ATTEMPT",
    "RELATED_CHARS",
    "RELATED_RESULTS",
    "RESULT_LIMIT",
    "TOTAL_CHARS",
    "Admission",
    "EvidenceRecord",
    "RecallEvidence",
    "RecallRequest",
    "RelatedEvidence",
    "TurnRetrieval",
    "TurnRetrievals",
    "admit",
    "clip_text",
    "content_digest",
    "model_item",
    "query_digest",
    "query_terms",
]

RESULT_LIMIT = 6
ITEM_CHARS = 1200
TOTAL_CHARS = 4800
ATTEMPTS = 2
FIRST_ATTEMPT_RESULTS = 4
FIRST_ATTEMPT_CHARS = 3600
MAX_MEDIUM_PER_ATTEMPT = 1
MAX_UNKNOWN_PER_ATTEMPT = 1
LIST_METADATA_ITEMS = 8
METADATA_CHARS = 300
MEMORY_BODY_ID_CHARS = 1000
EXTERNAL_URI_CHARS = 2000
ID_CHARS = 1000
RELATED_RESULTS = 4
RELATED_CHARS = 4000
RELATED_MAX_MEDIUM = 4
RELATED_MAX_UNKNOWN = 4
RELATED_FETCH = 20
DOCUMENT_MAX_RECORDS = MODEL_MAX_RECORDS
DOCUMENT_MAX_CHARS = MODEL_MAX_CHARACTERS
MAX_QUERY_CHARS = 2000
DEFAULT_SOURCE_KEY = "memory-spaces"
# Kernel refusals are answers, not failed searches: they propagate (the slot is freed first).
_REFUSED = (ParticipationError, ReadOnlyError)
RECALL_ROUTE = "memory-spaces/recall"
RELATED_ROUTE = "memory-spaces/related"
ELLIPSIS = "…"
_TERM = re.compile(r"[^\W_]+")  # runs of Unicode letters and digits (\p{L}\p{N})
_SPACE = re.compile(r"\s+")

HINT_FIRST = (
    "Answer from this evidence. Only if it is insufficient, make one materially different, "
    "focused mnemon_recall query; call mnemon_related only when graph context is required."
)
HINT_FIRST_EMPTY = (
    "No memory was admitted for this query. You may make one materially different query; "
    "otherwise answer and say what is uncertain."
)
HINT_SECOND = (
    "Refinement complete: this turn's Recall budget is now closed. Answer from the evidence "
    "of both queries."
)
HINT_SECOND_EMPTY = (
    "The refinement admitted no new memory and this turn's Recall budget is now closed. Answer "
    "from the evidence you have and say what is uncertain."
)
HINT_REPLAY = (
    "This query already ran in this turn; its evidence was replayed without a provider query."
)
HINT_EXHAUSTED = (
    "This turn's two-query Recall budget is exhausted; the latest evidence was replayed without "
    "a provider query. Answer now and say what is uncertain."
)
HINT_FAILED = (
    "Recall could not search the Memory Spaces; this attempt did not use the turn's budget. "
    "Retry once or answer and say what is uncertain."
)
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
HINT_DOCUMENTS_NOT_RUN = (
    "Documents were already searched in this turn (one search per turn); this call did not "
    "run. Answer from the earlier Document results."
)

Tier = Literal["high", "medium", "low", "unknown"]
RecallStatus = Literal["searched", "replayed", "joined", "exhausted", "failed"]
RelatedStatus = Literal["traversed", "replayed", "not-admitted", "failed"]


# --------------------------------------------------------------------------------------------
# Pure helpers


def clip_text(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` characters, ending in ``…`` when cut.

    The ellipsis counts inside the limit; a cut never separates a base character from its
    combining marks or the halves of a surrogate pair. Returns ``(text, was_cut)``.
    """
    if limit <= 0:
        return ("", bool(text))
    if len(text) <= limit:
        return (text, False)
    end = limit - len(ELLIPSIS)
    while end > 0 and (unicodedata.combining(text[end]) or "\udc00" <= text[end] <= "\udfff"):
        end -= 1
    return (text[:end] + ELLIPSIS if end > 0 else ELLIPSIS[:limit], True)


def content_digest(text: str) -> str:
    """SHA-256 of the trimmed, whitespace-collapsed content (the duplicate key of a row)."""
    normal = _SPACE.sub(" ", text.strip())
    return hashlib.sha256(normal.encode("utf-8", "surrogatepass")).hexdigest()


def query_terms(query: str) -> str:
    """The lexical form of a query: its letter/digit runs, lowercased, joined by one space."""
    return " ".join(_TERM.findall(query)).lower()


def query_digest(source_key: str, query: str, space_ids: Iterable[str]) -> str:
    """SHA-256 identity of a recall request: source key, :func:`query_terms`, sorted space ids."""
    body = json.dumps(
        {"source": source_key, "query": query_terms(query), "spaces": sorted(set(space_ids))},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Admission:
    """What :func:`admit` let through: clipped rows, their digests/refs, characters used."""

    rows: list[Insight] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)
    refs: list[tuple[str, str]] = field(default_factory=list)
    chars: int = 0
    truncated: bool = False


def admit(
    rows: Sequence[Insight],
    *,
    max_results: int,
    max_chars: int,
    max_medium: int,
    max_unknown: int,
    seen_digests: Iterable[str] = (),
    seen_refs: Iterable[tuple[str, str]] = (),
    item_chars: int = ITEM_CHARS,
) -> Admission:
    """Admit ``rows`` (best first) into an envelope.

    Skips ``low`` rows, rows whose id is longer than 1,000 characters, and rows whose content
    digest or ``(space id, id)`` is in ``seen_*`` (or earlier in ``rows``). A missing tier counts
    as ``unknown``; at most ``max_medium`` medium and ``max_unknown`` unknown rows are admitted.
    Each admitted content is clipped to ``min(item_chars, remaining characters)``; admission
    stops at ``max_results`` rows or when no character is left. ``truncated`` is set when a
    content was clipped or an admissible row did not fit.
    """
    out = Admission()
    digests = set(seen_digests)
    refs = set(seen_refs)
    medium = unknown = 0
    for row in rows:
        tier = row.relevance_tier or "unknown"
        if tier == "low" or len(row.id) > ID_CHARS:
            continue
        digest = content_digest(row.content)
        ref = (row.space_id or "", row.id)
        if digest in digests or ref in refs:
            continue
        if (tier == "medium" and medium >= max_medium) or (
            tier == "unknown" and unknown >= max_unknown
        ):
            continue
        remaining = max_chars - out.chars
        if len(out.rows) >= max_results or remaining <= 0:
            out.truncated = True
            break
        content, cut = clip_text(row.content, min(item_chars, remaining))
        out.truncated = out.truncated or cut
        out.rows.append(row.model_copy(update={"content": content}))
        out.digests.append(digest)
        out.refs.append(ref)
        out.chars += len(content)
        digests.add(digest)
        refs.add(ref)
        medium += tier == "medium"
        unknown += tier == "unknown"
    return out


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


def _short(value: Any) -> str:
    return clip_text(str(value), METADATA_CHARS)[0]


def model_item(row: Insight) -> dict[str, Any]:
    """One admitted row in the model-facing shape (§5.2; no score, no internal metadata)."""
    item: dict[str, Any] = {"id": row.id, "content": row.content}
    if row.category:
        item["category"] = _short(row.category)
    if row.importance is not None:
        item["importance"] = row.importance
    if row.tags:
        item["tags"] = [_short(t) for t in row.tags[:LIST_METADATA_ITEMS]]
    if row.entities:
        item["entities"] = [_short(e) for e in row.entities[:LIST_METADATA_ITEMS]]
    if row.source:
        item["source"] = _short(row.source)
    if row.created_at is not None:
        item["created_at"] = _iso(row.created_at)
    if row.depth is not None:
        item["depth"] = row.depth
    if row.edge_type:
        item["edge_type"] = _short(row.edge_type)
    if row.space_id and len(row.space_id) <= MEMORY_BODY_ID_CHARS:
        item["memory_body_id"] = row.space_id
    if row.space_name:
        item["memory_body_name"] = _short(row.space_name)
    if row.provider_id:
        item["memory_provider_id"] = _short(row.provider_id)
    if row.capabilities:
        item["memory_capabilities"] = [_short(c) for c in row.capabilities[:LIST_METADATA_ITEMS]]
    if row.external_uri and len(row.external_uri) <= EXTERNAL_URI_CHARS:
        item["external_uri"] = row.external_uri
    return item


# --------------------------------------------------------------------------------------------
# Models


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RecallRequest(_Frozen):
    """A shaped recall request: the only things a model choice can still influence."""

    query: str
    mode: str = "smart"
    limit: int = Field(RESULT_LIMIT, ge=1, le=RESULT_LIMIT)
    space_ids: tuple[str, ...]
    digest: str


class EvidenceRecord(_Frozen):
    """Where a piece of evidence came from (replays keep the original record)."""

    id: str
    view_id: str | None
    route_id: str
    source_key: str
    observed_at: str
    truncated: bool = False


class RecallEvidence(_Frozen):
    """The outcome of one recall call.

    ``results`` are the rows admitted by the attempt that produced this evidence (clipped);
    ``status`` says how the call was served and ``provider_called`` whether it reached a
    provider. :meth:`to_model` is the model-facing JSON.
    """

    query: str
    mode: str
    results: tuple[Insight, ...] = ()
    hint: str
    unavailable: tuple[str, ...] = ()
    evidence: EvidenceRecord
    status: RecallStatus
    attempt: int | None = None
    digest: str
    provider_called: bool = False

    def to_model(self) -> dict[str, Any]:
        """``{query, mode, results, hint, unavailable?, evidence}`` — no scores, no stats."""
        out: dict[str, Any] = {
            "query": self.query,
            "mode": self.mode,
            "results": [model_item(r) for r in self.results],
            "hint": self.hint,
        }
        if self.unavailable:
            out["unavailable"] = list(self.unavailable)
        out["evidence"] = self.evidence.model_dump()
        return out


class RelatedEvidence(_Frozen):
    """The outcome of one related call; :meth:`to_model` is the model-facing JSON."""

    id: str
    memory_body_id: str
    depth: int
    edge: str | None = None
    results: tuple[Insight, ...] = ()
    hint: str
    evidence: EvidenceRecord | None = None
    status: RelatedStatus
    provider_called: bool = False

    def to_model(self) -> dict[str, Any]:
        """``{id, memory_body_id, depth, edge?, results, hint, evidence?}``."""
        out: dict[str, Any] = {
            "id": self.id,
            "memory_body_id": self.memory_body_id,
            "depth": self.depth,
        }
        if self.edge:
            out["edge"] = self.edge
        out["results"] = [model_item(r) for r in self.results]
        out["hint"] = self.hint
        if self.evidence is not None:
            out["evidence"] = self.evidence.model_dump()
        return out


class SpaceSearcher(Protocol):
    """What recall needs of Memory Spaces (``MemorySpaces`` satisfies it)."""

    async def asearch(
        self, query: str, *, limit: int | None = ..., mode: str = ..., space_ids: Any = ...
    ) -> Any: ...

    def search(
        self, query: str, *, limit: int | None = ..., mode: str = ..., space_ids: Any = ...
    ) -> Any: ...

    async def arelated(
        self, memory_id: str, *, space_id: str | None = ..., depth: int = ..., **kw: Any
    ) -> Any: ...

    def related(
        self, memory_id: str, *, space_id: str | None = ..., depth: int = ..., **kw: Any
    ) -> Any: ...


class DocumentSearcher(Protocol):
    """What the Documents slot needs (``Documents`` satisfies it)."""

    def search(
        self, query: str, *, include_archived: bool = ..., limit: int = ...
    ) -> DocumentSearchResult: ...


# --------------------------------------------------------------------------------------------
# The per-turn state


@dataclass
class _Step:
    kind: Literal["replay", "join", "wait", "exhausted", "run", "done"]
    output: Any = None
    future: Future[Any] | None = None
    attempt: int = 0


def _grant(ids: Iterable[str]) -> tuple[str, ...]:
    if isinstance(ids, str):
        raise InvalidInputError("granted space ids must be a list of Memory Space ids")
    out: list[str] = []
    for raw in ids:
        if not isinstance(raw, str) or not raw.strip():
            raise InvalidInputError("granted space ids must be non-empty strings")
        if raw.strip() not in out:
            out.append(raw.strip())
    return tuple(out)


class TurnRetrieval:
    """Retrieval state of one executing-agent turn: recall attempts, Related, Documents slot.

    ``grant`` is the turn's pinned Memory Space grant (the active space ids of its view);
    ``source_key`` identifies the Memory Spaces Source instance (part of every query digest);
    ``view_id`` is echoed in evidence records and rejection messages. Thread- and task-safe:
    sync and async calls may share one state.
    """

    def __init__(
        self,
        grant: Iterable[str],
        *,
        turn_key: str | None = None,
        view_id: str | None = None,
        source_key: str = DEFAULT_SOURCE_KEY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.grant = _grant(grant)
        self.turn_key = turn_key
        self.view_id = view_id
        self.source_key = source_key
        self._clock = clock
        self._lock = threading.Lock()
        self._attempts: list[RecallEvidence] = []
        self._by_digest: dict[str, RecallEvidence] = {}
        self._pending: dict[str, Future[RecallEvidence]] = {}
        self._inflight: Future[RecallEvidence] | None = None
        self._digests: set[str] = set()
        self._refs: set[tuple[str, str]] = set()
        self._admitted: list[Insight] = []
        self._recall_chars = 0
        self._recall_results = 0
        self._related: RelatedEvidence | None = None
        self._related_pending: Future[Any] | None = None
        self._documents_taken = False
        self._documents: DocumentSearchResult | None = None
        self.routes = RouteBudget()  # the General strategy's per-route calls this turn

    def __repr__(self) -> str:
        return (
            f"TurnRetrieval(turn_key={self.turn_key!r}, grant={list(self.grant)}, "
            f"attempts={len(self._attempts)})"
        )

    # ---------------------------------------------------------------- read-only views

    @property
    def attempts(self) -> list[RecallEvidence]:
        """Recorded (successful) recall attempts, in order."""
        with self._lock:
            return list(self._attempts)

    @property
    def admitted(self) -> list[Insight]:
        """Every row admitted in this turn (recall and related), in admission order."""
        with self._lock:
            return list(self._admitted)

    @property
    def admitted_refs(self) -> set[tuple[str, str]]:
        """``(space id, id)`` of every admitted row: the allowed starting points of Related."""
        with self._lock:
            return set(self._refs)

    @property
    def recall_usage(self) -> tuple[int, int]:
        """``(rows, characters)`` admitted by recall attempts so far (of 6 / 4,800)."""
        with self._lock:
            return (self._recall_results, self._recall_chars)

    @property
    def documents_result(self) -> DocumentSearchResult | None:
        """The turn's bounded Documents search result, once it ran."""
        return self._documents

    # ---------------------------------------------------------------- recall: shaping

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
        """
        del category, source, intent
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string (got {type(query).__name__})")
        text = query.replace("\x00", "").strip()
        if not text:
            raise InvalidInputError("query must not be empty; say what to recall")
        if len(text) > MAX_QUERY_CHARS:
            raise InvalidInputError(
                f"query is too long ({len(text)} characters; max {MAX_QUERY_CHARS})"
            )
        if mode not in SEARCH_MODES:
            raise InvalidInputError(f"mode must be one of {', '.join(SEARCH_MODES)}")
        if limit is None:
            limit = RESULT_LIMIT
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError("limit must be a positive integer (at most 6 are used)")
        wanted = self._requested(space_ids)
        return RecallRequest(
            query=text,
            mode=mode,
            limit=min(limit, RESULT_LIMIT),
            space_ids=wanted,
            digest=query_digest(self.source_key, text, wanted),
        )

    def _requested(self, space_ids: Sequence[str] | None) -> tuple[str, ...]:
        if not self.grant:
            raise InvalidInputError(
                f"this turn's view {self.view_id or '(unpinned)'} grants no Memory Space; "
                "activate or create a space before recalling"
            )
        if space_ids is None:
            return self.grant
        if isinstance(space_ids, str) or not isinstance(space_ids, Sequence):
            raise InvalidInputError("memory_body_ids must be a list of Memory Space ids")
        wanted: list[str] = []
        for raw in space_ids:
            if not isinstance(raw, str):
                raise InvalidInputError("memory_body_ids must be strings")
            sid = raw.strip()
            if sid and sid not in wanted:
                wanted.append(sid)
        if not wanted:
            return self.grant
        outside = [s for s in wanted if s not in self.grant]
        if outside:
            raise InvalidInputError(
                f"Recall requested a Memory Space outside pinned Source "
                f"{self.view_id or self.source_key}: {', '.join(outside)}; use only "
                f"{', '.join(self.grant)} (or omit memory_body_ids)",
                code="recall-rejected",
            )
        return tuple(wanted)

    # ---------------------------------------------------------------- recall: state machine

    def _record(self, route: str, truncated: bool) -> EvidenceRecord:
        return EvidenceRecord(
            id=f"evidence:{uuid.uuid4()}",
            view_id=self.view_id,
            route_id=route,
            source_key=self.source_key,
            observed_at=_iso(self._clock()),
            truncated=truncated,
        )

    def _begin(self, request: RecallRequest) -> _Step:
        with self._lock:
            stored = self._by_digest.get(request.digest)
            if stored is not None:
                return _Step(
                    "replay",
                    output=stored.model_copy(
                        update={"status": "replayed", "hint": HINT_REPLAY, "provider_called": False}
                    ),
                )
            pending = self._pending.get(request.digest)
            if pending is not None:
                return _Step("join", future=pending)
            if self._inflight is not None:
                return _Step("wait", future=self._inflight)
            if len(self._attempts) >= ATTEMPTS:
                latest = self._attempts[-1]
                wanted = set(request.space_ids)
                return _Step(
                    "exhausted",
                    output=latest.model_copy(
                        update={
                            "results": tuple(r for r in latest.results if r.space_id in wanted),
                            "status": "exhausted",
                            "hint": HINT_EXHAUSTED,
                            "provider_called": False,
                        }
                    ),
                )
            future: Future[RecallEvidence] = Future()
            self._pending[request.digest] = future
            self._inflight = future
            return _Step("run", future=future, attempt=len(self._attempts) + 1)

    def _failed(self, request: RecallRequest, reasons: Sequence[str]) -> RecallEvidence:
        return RecallEvidence(
            query=request.query,
            mode=request.mode,
            hint=HINT_FAILED,
            unavailable=tuple(_short(r) for r in reasons) or ("search failed",),
            evidence=self._record(RECALL_ROUTE, False),
            status="failed",
            digest=request.digest,
            provider_called=True,
        )

    def _finish(
        self, step: _Step, request: RecallRequest, found: Any, error: BaseException | None
    ) -> RecallEvidence:
        """Admit a finished search (or record a failure) and release the pending slot."""
        assert step.future is not None
        try:
            if error is not None:
                output = self._failed(request, [f"{type(error).__name__}: {error}"])
            else:
                output = self._admit_attempt(step.attempt, request, found)
        except Exception as exc:  # an unexpected result shape: fail without using budget
            output = self._failed(request, [f"{type(exc).__name__}: {exc}"])
        with self._lock:
            self._pending.pop(request.digest, None)
            if self._inflight is step.future:
                self._inflight = None
        step.future.set_result(output)
        return output

    def _admit_attempt(self, attempt: int, request: RecallRequest, found: Any) -> RecallEvidence:
        sources = list(getattr(found, "sources", []) or [])
        unavailable = [
            f"{s.name} ({s.space_id}): {s.hint or 'unavailable'}"
            for s in sources
            if s.status == "unavailable"
        ]
        if sources and len(unavailable) == len(sources):
            return self._failed(request, unavailable)
        rows = [r for r in found.results if isinstance(r, Insight)]
        with self._lock:
            if attempt == 1:
                max_results = min(request.limit, FIRST_ATTEMPT_RESULTS)
                max_chars = FIRST_ATTEMPT_CHARS
            else:
                max_results = min(request.limit, RESULT_LIMIT - self._recall_results)
                max_chars = TOTAL_CHARS - self._recall_chars
            admission = admit(
                rows,
                max_results=max(0, max_results),
                max_chars=max(0, max_chars),
                max_medium=MAX_MEDIUM_PER_ATTEMPT,
                max_unknown=MAX_UNKNOWN_PER_ATTEMPT,
                seen_digests=self._digests,
                seen_refs=self._refs,
            )
            if attempt == 1:
                hint = HINT_FIRST if admission.rows else HINT_FIRST_EMPTY
            else:
                hint = HINT_SECOND if admission.rows else HINT_SECOND_EMPTY
            output = RecallEvidence(
                query=request.query,
                mode=request.mode,
                results=tuple(admission.rows),
                hint=hint,
                unavailable=tuple(_short(u) for u in unavailable),
                evidence=self._record(RECALL_ROUTE, admission.truncated),
                status="searched",
                attempt=attempt,
                digest=request.digest,
                provider_called=True,
            )
            self._attempts.append(output)
            self._by_digest[request.digest] = output
            self._digests.update(admission.digests)
            self._refs.update(admission.refs)
            self._admitted.extend(admission.rows)
            self._recall_results += len(admission.rows)
            self._recall_chars += admission.chars
        return output

    @staticmethod
    def _joined(output: RecallEvidence) -> RecallEvidence:
        status = "joined" if output.status == "searched" else output.status
        return output.model_copy(update={"status": status, "provider_called": False})

    def _as_request(
        self,
        query: str | RecallRequest,
        limit: int | None,
        space_ids: Sequence[str] | None,
        mode: str,
        category: str | None,
        source: str | None,
        intent: str | None,
    ) -> RecallRequest:
        if isinstance(query, RecallRequest):
            return query
        return self.shape(
            query,
            limit=limit,
            space_ids=space_ids,
            mode=mode,
            category=category,
            source=source,
            intent=intent,
        )

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
        """One recall call of this turn (see the module docstring for every rule).

        ``query`` may be an already shaped :class:`RecallRequest` (from :meth:`shape`).
        Raises :class:`InvalidInputError` for a bad or ungranted request (no provider call);
        a failing search comes back as ``status="failed"`` and uses no budget.
        """
        request = self._as_request(query, limit, space_ids, mode, category, source, intent)
        while True:
            step = self._begin(request)
            if step.kind in ("replay", "exhausted"):
                return step.output
            assert step.future is not None
            if step.kind == "join":
                return self._joined(await asyncio.wrap_future(step.future))
            if step.kind == "wait":
                await asyncio.wrap_future(step.future)
                continue
            try:
                found = await spaces.asearch(
                    request.query,
                    limit=request.limit,
                    mode=request.mode,
                    space_ids=list(request.space_ids),
                )
            except BaseException as exc:  # cancellation too: never leave joiners waiting
                output = self._finish(step, request, None, exc)
                if not isinstance(exc, Exception) or isinstance(exc, _REFUSED):
                    raise
                return output
            return self._finish(step, request, found, None)

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
        request = self._as_request(query, limit, space_ids, mode, category, source, intent)
        while True:
            step = self._begin(request)
            if step.kind in ("replay", "exhausted"):
                return step.output
            assert step.future is not None
            if step.kind == "join":
                return self._joined(step.future.result())
            if step.kind == "wait":
                step.future.result()
                continue
            try:
                found = spaces.search(
                    request.query,
                    limit=request.limit,
                    mode=request.mode,
                    space_ids=list(request.space_ids),
                )
            except BaseException as exc:
                output = self._finish(step, request, None, exc)
                if not isinstance(exc, Exception) or isinstance(exc, _REFUSED):
                    raise
                return output
            return self._finish(step, request, found, None)

    # ---------------------------------------------------------------- related

    def _related_space(self, memory_body_id: str | None) -> str:
        where = self.view_id or self.source_key
        if memory_body_id is None or not str(memory_body_id).strip():
            if len(self.grant) != 1:
                raise InvalidInputError(
                    f"related memory requires one Memory Space from pinned Source {where}: "
                    f"pass memory_body_id (one of {', '.join(self.grant) or 'none'})"
                )
            return self.grant[0]
        if not isinstance(memory_body_id, str):
            raise InvalidInputError("memory_body_id must be a string")
        sid = memory_body_id.strip()
        if sid not in self.grant:
            raise InvalidInputError(
                f"Related requested a Memory Space outside pinned Source {where}: {sid}",
                code="related-rejected",
            )
        return sid

    def _begin_related(self, space_id: str, memory_id: str, depth: int, edge: str | None) -> _Step:
        with self._lock:
            if self._related is not None:
                return _Step(
                    "replay",
                    output=self._related.model_copy(
                        update={
                            "status": "replayed",
                            "hint": HINT_RELATED_REPLAY,
                            "provider_called": False,
                        }
                    ),
                )
            if self._related_pending is not None:
                return _Step("wait", future=self._related_pending)
            if (space_id, memory_id) not in self._refs:
                return _Step(
                    "done",
                    output=RelatedEvidence(
                        id=memory_id,
                        memory_body_id=space_id,
                        depth=depth,
                        edge=edge,
                        hint=HINT_RELATED_UNADMITTED,
                        status="not-admitted",
                    ),
                )
            self._related_pending = Future()
            return _Step("run", future=self._related_pending)

    def _finish_related(
        self,
        step: _Step,
        space_id: str,
        memory_id: str,
        depth: int,
        edge: str | None,
        found: Any,
        error: BaseException | None,
    ) -> RelatedEvidence:
        try:
            if error is not None:
                raise error
            rows = [r for r in found.results if isinstance(r, Insight)]
            with self._lock:
                admission = admit(
                    rows,
                    max_results=RELATED_RESULTS,
                    max_chars=RELATED_CHARS,
                    max_medium=RELATED_MAX_MEDIUM,
                    max_unknown=RELATED_MAX_UNKNOWN,
                    seen_digests=self._digests,
                    seen_refs=self._refs,
                )
                output = RelatedEvidence(
                    id=memory_id,
                    memory_body_id=space_id,
                    depth=depth,
                    edge=edge,
                    results=tuple(admission.rows),
                    hint=HINT_RELATED if admission.rows else HINT_RELATED_EMPTY,
                    evidence=self._record(RELATED_ROUTE, admission.truncated),
                    status="traversed",
                    provider_called=True,
                )
                self._related = output
                self._digests.update(admission.digests)
                self._refs.update(admission.refs)
                self._admitted.extend(admission.rows)
        except BaseException as exc:
            reason = _short(f"{type(exc).__name__}: {exc}")
            output = RelatedEvidence(
                id=memory_id,
                memory_body_id=space_id,
                depth=depth,
                edge=edge,
                hint=f"{HINT_RELATED_FAILED} ({reason})",
                status="failed",
                provider_called=True,
            )
        with self._lock:
            self._related_pending = None
        assert step.future is not None
        step.future.set_result(output)
        return output

    def _related_args(
        self, memory_id: str, memory_body_id: str | None, depth: int, edge: str | None
    ) -> tuple[str, str]:
        if not isinstance(memory_id, str) or not memory_id.strip():
            raise InvalidInputError("id must be the id of a row admitted by this turn's Recall")
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 5:
            raise InvalidInputError("depth must be an integer in 1..5")
        if edge is not None and edge not in EDGE_TYPES:
            raise InvalidInputError(f"edge must be one of {', '.join(EDGE_TYPES)}")
        return (self._related_space(memory_body_id), memory_id.strip())

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

        An unadmitted id returns empty results and a hint without a provider call (and keeps
        the slot free); any call after the traversal replays it with the same evidence id.
        """
        space_id, mid = self._related_args(memory_id, memory_body_id, depth, edge)
        while True:
            step = self._begin_related(space_id, mid, depth, edge)
            if step.kind in ("replay", "done"):
                return step.output
            assert step.future is not None
            if step.kind == "wait":
                await asyncio.wrap_future(step.future)
                continue
            try:
                found = await spaces.arelated(
                    mid, space_id=space_id, depth=depth, edge=edge, limit=RELATED_FETCH
                )
            except BaseException as exc:  # cancellation too: never leave joiners waiting
                output = self._finish_related(step, space_id, mid, depth, edge, None, exc)
                if not isinstance(exc, Exception) or isinstance(exc, _REFUSED):
                    raise
                return output
            return self._finish_related(step, space_id, mid, depth, edge, found, None)

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
        space_id, mid = self._related_args(memory_id, memory_body_id, depth, edge)
        while True:
            step = self._begin_related(space_id, mid, depth, edge)
            if step.kind in ("replay", "done"):
                return step.output
            assert step.future is not None
            if step.kind == "wait":
                step.future.result()
                continue
            try:
                found = spaces.related(
                    mid, space_id=space_id, depth=depth, edge=edge, limit=RELATED_FETCH
                )
            except BaseException as exc:
                output = self._finish_related(step, space_id, mid, depth, edge, None, exc)
                if not isinstance(exc, Exception) or isinstance(exc, _REFUSED):
                    raise
                return output
            return self._finish_related(step, space_id, mid, depth, edge, found, None)

    # ---------------------------------------------------------------- documents

    def _take_documents(
        self, query: str, include_archived: bool, limit: int
    ) -> tuple[DocumentSearchResult | None, int]:
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string (got {type(query).__name__})")
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidInputError("limit must be an integer (1..4 are used)")
        with self._lock:
            if self._documents_taken:
                return (
                    DocumentSearchResult(
                        query=query.strip(),
                        include_archived=bool(include_archived),
                        total=0,
                        results=(),
                        hint=HINT_DOCUMENTS_NOT_RUN,
                        not_run=True,
                    ),
                    0,
                )
            self._documents_taken = True
        return (None, min(DOCUMENT_MAX_RECORDS, max(1, limit)))

    def _documents_done(self, result: DocumentSearchResult) -> DocumentSearchResult:
        bounded = bound_for_model(
            result, max_records=DOCUMENT_MAX_RECORDS, max_characters=DOCUMENT_MAX_CHARS
        )
        self._documents = bounded
        return bounded

    def _documents_failed(self) -> None:
        with self._lock:
            self._documents_taken = False

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
        refused, bounded_limit = self._take_documents(query, include_archived, limit)
        if refused is not None:
            return refused
        try:
            result = documents.search(query, include_archived=include_archived, limit=bounded_limit)
        except BaseException:
            self._documents_failed()
            raise
        return self._documents_done(result)

    async def asearch_documents(
        self,
        documents: DocumentSearcher,
        query: str,
        *,
        include_archived: bool = False,
        limit: int = DOCUMENT_MAX_RECORDS,
    ) -> DocumentSearchResult:
        """Async twin of :meth:`search_documents` (the file work runs in a worker thread)."""
        refused, bounded_limit = self._take_documents(query, include_archived, limit)
        if refused is not None:
            return refused
        try:
            result = await asyncio.to_thread(
                documents.search, query, include_archived=include_archived, limit=bounded_limit
            )
        except BaseException:
            self._documents_failed()
            raise
        return self._documents_done(result)


class TurnRetrievals:
    """Turn key → :class:`TurnRetrieval`: one state per executing-agent turn.

    :meth:`begin` returns the existing state of a turn (parallel calls share it) or a fresh one;
    the same key with a different grant, view or source is a conflict. At most ``max_turns``
    states are kept (least recently used dropped first); :meth:`end` releases a turn.
    """

    def __init__(self, *, max_turns: int = 256, clock: Callable[[], float] = time.time) -> None:
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise InvalidInputError("max_turns must be a positive integer")
        self.max_turns = max_turns
        self._clock = clock
        self._lock = threading.Lock()
        self._turns: OrderedDict[str, TurnRetrieval] = OrderedDict()

    def __len__(self) -> int:
        with self._lock:
            return len(self._turns)

    def begin(
        self,
        turn_key: str,
        grant: Iterable[str],
        *,
        view_id: str | None = None,
        source_key: str = DEFAULT_SOURCE_KEY,
    ) -> TurnRetrieval:
        """The retrieval state of ``turn_key`` (created on first use)."""
        if not isinstance(turn_key, str) or not turn_key.strip():
            raise InvalidInputError("turn_key must be a non-empty string naming the agent turn")
        granted = _grant(grant)
        with self._lock:
            found = self._turns.get(turn_key)
            if found is not None:
                if (found.grant, found.view_id, found.source_key) != (
                    granted,
                    view_id,
                    source_key,
                ):
                    raise ConflictError(
                        f"turn {turn_key!r} is already pinned to view {found.view_id!r} with "
                        f"grant {list(found.grant)}; start a new turn key for a different scope"
                    )
                self._turns.move_to_end(turn_key)
                return found
            state = TurnRetrieval(
                granted,
                turn_key=turn_key,
                view_id=view_id,
                source_key=source_key,
                clock=self._clock,
            )
            self._turns[turn_key] = state
            while len(self._turns) > self.max_turns:
                self._turns.popitem(last=False)
            return state

    def get(self, turn_key: str) -> TurnRetrieval:
        """The state of a begun turn; :class:`NotFoundError` otherwise."""
        with self._lock:
            found = self._turns.get(turn_key)
        if found is None:
            raise NotFoundError(f"no retrieval state for turn {turn_key!r}; begin the turn first")
        return found

    def end(self, turn_key: str) -> bool:
        """Forget a turn's state; ``True`` when it existed."""
        with self._lock:
            return self._turns.pop(turn_key, None) is not None
