"""Evidence of one turn: the admission rule, the model-facing row shape, the evidence
records and outcomes of recall and Related, and :class:`TurnLedger`, what the turn has
admitted so far (shared by its recall attempts and its Related traversal).

Example:
    >>> admission = admit(rows, max_results=4, max_chars=3600, max_medium=1, max_unknown=1)
    >>> [model_item(r) for r in admission.rows]
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from pydantic import AliasChoices, ConfigDict, Field

from langgraph_mnemon.contracts import FrozenModel, iso_utc
from langgraph_mnemon.errors import InvalidInputError, ParticipationError, ReadOnlyError
from langgraph_mnemon.memory_layers.documents import DocumentSearchResult
from langgraph_mnemon.memory_layers.spaces import MemoryRecord
from langgraph_mnemon.memory_layers.turns._budget import ITEM_CHARS, RESULT_LIMIT
from langgraph_mnemon.memory_layers.turns._text import clip_text, content_digest

__all__ = [
    "DEFAULT_SOURCE_KEY",
    "REFUSED",
    "Admission",
    "DocumentSearcher",
    "EvidenceRecord",
    "RecallEvidence",
    "RecallRequest",
    "RelatedEvidence",
    "SpaceSearcher",
    "Step",
    "TurnLedger",
    "admit",
    "grant_of",
    "model_item",
    "short",
]

LIST_METADATA_ITEMS = 8
METADATA_CHARS = 300
MEMORY_BODY_ID_CHARS = 1000
EXTERNAL_URI_CHARS = 2000
ID_CHARS = 1000
DEFAULT_SOURCE_KEY = "memory-spaces"
REFUSED = (ParticipationError, ReadOnlyError)
"""Kernel refusals are answers, not failed searches: they propagate (the slot is freed first)."""

Tier = Literal["high", "medium", "low", "unknown"]
RecallStatus = Literal["searched", "replayed", "joined", "exhausted", "failed"]
RelatedStatus = Literal["traversed", "replayed", "not-admitted", "failed"]


# --------------------------------------------------------------------------------------------
# Admission and the model-facing row


@dataclass
class Admission:
    """What :func:`admit` let through: clipped rows, their digests/refs, characters used."""

    rows: list[MemoryRecord] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)
    refs: list[tuple[str, str]] = field(default_factory=list)
    chars: int = 0
    truncated: bool = False


def _over_tier_cap(tier: str, medium: int, unknown: int, max_medium: int, max_unknown: int) -> bool:
    return (tier == "medium" and medium >= max_medium) or (
        tier == "unknown" and unknown >= max_unknown
    )


def admit(
    rows: Sequence[MemoryRecord],
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
    stops at ``max_results`` rows or when no character is left.

    Returns:
        The :class:`Admission`; ``truncated`` is set when a content was clipped or an
        admissible row did not fit.

    Example:
        >>> admit(rows, max_results=4, max_chars=3600, max_medium=1, max_unknown=1).chars
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
        if _over_tier_cap(tier, medium, unknown, max_medium, max_unknown):
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
    # ISO-8601 with "Z"; fractional seconds only when there are some (as isoformat() does).
    moment = datetime.fromtimestamp(timestamp, UTC)
    return iso_utc(moment, precision="microseconds" if moment.microsecond else "seconds")


def short(value: Any) -> str:
    """``value`` as text of at most 300 characters (metadata shown to the model)."""
    return clip_text(str(value), METADATA_CHARS)[0]


def _short_list(values: Sequence[Any]) -> list[str]:
    return [short(v) for v in values[:LIST_METADATA_ITEMS]]


def model_item(row: MemoryRecord) -> dict[str, Any]:
    """One admitted row in the model-facing shape (§5.2; no score, no internal metadata).

    Example:
        >>> set(model_item(row)) >= {"id", "content"}
        True
    """
    item: dict[str, Any] = {"id": row.id, "content": row.content}
    if row.category:
        item["category"] = short(row.category)
    if row.importance is not None:
        item["importance"] = row.importance
    if row.tags:
        item["tags"] = _short_list(row.tags)
    if row.entities:
        item["entities"] = _short_list(row.entities)
    if row.source:
        item["source"] = short(row.source)
    if row.created_at is not None:
        item["created_at"] = _iso(row.created_at)
    if row.depth is not None:
        item["depth"] = row.depth
    if row.edge_type:
        item["edge_type"] = short(row.edge_type)
    if row.space_id and len(row.space_id) <= MEMORY_BODY_ID_CHARS:
        item["memory_body_id"] = row.space_id
    if row.space_name:
        item["memory_body_name"] = short(row.space_name)
    if row.provider_id:
        item["memory_provider_id"] = short(row.provider_id)
    if row.capabilities:
        item["memory_capabilities"] = _short_list(row.capabilities)
    if row.external_uri and len(row.external_uri) <= EXTERNAL_URI_CHARS:
        item["external_uri"] = row.external_uri
    return item


# --------------------------------------------------------------------------------------------
# Models


class RecallRequest(FrozenModel):
    """A shaped recall request: the only things a model choice can still influence."""

    query: str
    mode: str = "smart"
    limit: int = Field(RESULT_LIMIT, ge=1, le=RESULT_LIMIT)
    space_ids: tuple[str, ...]
    digest: str


class EvidenceRecord(FrozenModel):
    """Where a piece of evidence came from (replays keep the original record)."""

    id: str
    view_id: str | None
    route_id: str
    source_key: str
    observed_at: str
    truncated: bool = False


class RecallEvidence(FrozenModel):
    """The outcome of one recall call.

    ``results`` are the rows admitted by the attempt that produced this evidence (clipped);
    ``status`` says how the call was served and ``provider_called`` whether it reached a
    provider. :meth:`to_model` is the model-facing JSON.
    """

    query: str
    mode: str
    results: tuple[MemoryRecord, ...] = ()
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


class RelatedEvidence(FrozenModel):
    """The outcome of one related call; :meth:`to_model` is the model-facing JSON.

    ``space_id`` is the Memory Space traversed; the model sees it as ``memory_body_id`` (its
    wire name, also in ``model_dump``).
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, serialize_by_alias=True
    )

    id: str
    space_id: str = Field(
        validation_alias=AliasChoices("space_id", "memory_body_id"),
        serialization_alias="memory_body_id",
    )
    depth: int
    edge: str | None = None
    results: tuple[MemoryRecord, ...] = ()
    hint: str
    evidence: EvidenceRecord | None = None
    status: RelatedStatus
    provider_called: bool = False

    def to_model(self) -> dict[str, Any]:
        """``{id, memory_body_id, depth, edge?, results, hint, evidence?}``."""
        out: dict[str, Any] = {
            "id": self.id,
            "memory_body_id": self.space_id,
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

    @property
    def envelope_policy(self) -> str:
        """The quality policy recall passes to :meth:`search` (the model's envelope)."""
        ...

    def search(
        self,
        query: str,
        *,
        limit: int | None = ...,
        mode: str = ...,
        space_ids: Any = ...,
        policy: str | None = ...,
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
# The turn's shared state


@dataclass
class Step:
    """What a call found when it asked the turn's state: replay, join, wait, run, ..."""

    kind: Literal["replay", "join", "wait", "exhausted", "run", "done"]
    output: Any = None
    future: Future[Any] | None = None
    attempt: int = 0


def grant_of(ids: Iterable[str]) -> tuple[str, ...]:
    """The granted Memory Space ids, trimmed and deduplicated in order.

    Raises:
        InvalidInputError: ``ids`` is one string, or holds an empty or non-string id.
    """
    if isinstance(ids, str):
        raise InvalidInputError("granted space ids must be a list of Memory Space ids")
    out: list[str] = []
    for raw in ids:
        if not isinstance(raw, str) or not raw.strip():
            raise InvalidInputError("granted space ids must be non-empty strings")
        if raw.strip() not in out:
            out.append(raw.strip())
    return tuple(out)


class TurnLedger:
    """What one turn has admitted (content digests, ``(space id, id)`` refs, rows), and the
    evidence records it issues. One lock guards the whole turn's retrieval state."""

    def __init__(
        self,
        *,
        view_id: str | None,
        source_key: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.view_id = view_id
        self.source_key = source_key
        self.lock = threading.Lock()
        self.digests: set[str] = set()
        self.refs: set[tuple[str, str]] = set()
        self.rows: list[MemoryRecord] = []
        self._clock = clock

    @property
    def where(self) -> str:
        """The pinned Source named in rejection messages (the view, else the source key)."""
        return self.view_id or self.source_key

    def record(self, route: str, truncated: bool) -> EvidenceRecord:
        """A new evidence record of ``route``, observed now."""
        return EvidenceRecord(
            id=f"evidence:{uuid.uuid4()}",
            view_id=self.view_id,
            route_id=route,
            source_key=self.source_key,
            observed_at=_iso(self._clock()),
            truncated=truncated,
        )

    def admit(self, rows: Sequence[MemoryRecord], **limits: int) -> Admission:
        """:func:`admit` against what the turn already has (call under :attr:`lock`)."""
        return admit(rows, seen_digests=self.digests, seen_refs=self.refs, **limits)

    def take(self, admission: Admission) -> None:
        """Add an admission's rows to the turn (call under :attr:`lock`)."""
        self.digests.update(admission.digests)
        self.refs.update(admission.refs)
        self.rows.extend(admission.rows)

    def absorb(
        self,
        digests: Iterable[str],
        refs: Iterable[tuple[str, str]],
        rows: Iterable[MemoryRecord],
    ) -> bool:
        """Add what the turn admitted elsewhere (call under :attr:`lock`); a row already held
        here (by ``(space id, id)``) is kept once. Whether anything was added."""
        held = {(r.space_id or "", r.id) for r in self.rows}
        new_rows = [r for r in rows if (r.space_id or "", r.id) not in held]
        before = (len(self.digests), len(self.refs))
        self.digests.update(digests)
        self.refs.update(refs)
        self.rows.extend(new_rows)
        return bool(new_rows) or before != (len(self.digests), len(self.refs))
