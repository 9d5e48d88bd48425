"""The Memory Space provider contract: models, the ``MemoryProvider`` protocol, receipt rules.

Memory Spaces (tier 3) are named stores behind *providers*. A provider is any object that
implements :class:`MemoryProvider`; :mod:`langgraph_mnemon.adapters.providers` ships the native
``mnemos`` provider (SQL), ``chroma`` and ``store`` (any LangGraph ``BaseStore``). Every
provider declares what it can do (:class:`Capabilities`), what its scores mean
(:data:`ScoreSemantics`), whether a write is visible at once (:data:`WriteMode`) and how it
deletes (:data:`DeletionMode`). Unsupported operations are rejected before any I/O.

Providers return raw receipts (plain dicts in the provider's own vocabulary); the host decides
whether a write happened with :func:`is_committed`, never by trusting a provider's success flag
alone. Only a committed receipt counts as a write.

This module imports no LangGraph, LangChain, httpx or Chroma code.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from langgraph_mnemon.contracts import FrozenModel, Receipt

__all__ = [
    "CATEGORIES",
    "EDGE_TYPES",
    "INTENTS",
    "SEARCH_MODES",
    "SOURCES",
    "BrowseRequest",
    "Capabilities",
    "Category",
    "ConfigField",
    "DeletionMode",
    "DiscoveredSpace",
    "EdgeType",
    "Embedder",
    "GraphEdge",
    "GraphNode",
    "GraphProjection",
    "HistoryProvider",
    "Insight",
    "Intent",
    "LinkRequest",
    "MemoryProvider",
    "MemoryReceipt",
    "MemoryRecord",
    "MemorySource",
    "MemoryStatus",
    "ProviderDescriptor",
    "ProviderSearchRequest",
    "ProviderSearchResult",
    "ProviderStatus",
    "RelatedRequest",
    "RememberItem",
    "ScoreSemantics",
    "SearchMode",
    "SpaceBinding",
    "WriteMode",
    "is_committed",
    "is_embedder",
    "settle",
]

SearchMode = Literal["smart", "keyword", "basic"]
Category = Literal["preference", "decision", "fact", "insight", "context", "general"]
MemorySource = Literal["user", "agent", "external"]
EdgeType = Literal["temporal", "semantic", "causal", "entity"]
Intent = Literal["WHY", "WHEN", "ENTITY", "GENERAL"]
ScoreSemantics = Literal["normalized", "unknown"]
"""``normalized``: finite 0..1, larger is better. ``unknown``: any other scale (or no score)."""
WriteMode = Literal["exact", "async"]
"""``exact``: a committed write is searchable at once. ``async``: the provider extracts later."""
DeletionMode = Literal["soft", "hard", "unsupported"]
MemoryStatus = Literal["current", "superseded", "forgotten"]
"""Where a row stands in its history: live, replaced by a newer row, or deleted."""

SEARCH_MODES: tuple[str, ...] = ("smart", "keyword", "basic")
CATEGORIES: tuple[str, ...] = ("preference", "decision", "fact", "insight", "context", "general")
SOURCES: tuple[str, ...] = ("user", "agent", "external")
EDGE_TYPES: tuple[str, ...] = ("temporal", "semantic", "causal", "entity")
INTENTS: tuple[str, ...] = ("WHY", "WHEN", "ENTITY", "GENERAL")

MetadataValue = str | int | float | bool


class Capabilities(FrozenModel):
    """What a provider can do. The host hides and rejects everything that is ``False``."""

    search: bool = True
    browse: bool = False
    graph: bool = False
    entities: bool = False
    related: bool = False
    remember: bool = True
    remember_many: bool = False
    link: bool = False
    forget: bool = False
    discover: bool = False
    history: bool = False
    """Keeps what a write replaced: ``supersede``, ``restore`` and ``get`` (any row by id,
    current or not) on the provider; see :class:`HistoryProvider`."""

    def names(self) -> list[str]:
        """The supported operation names, in declaration order."""
        return [name for name, on in self.model_dump().items() if on]


class ConfigField(FrozenModel):
    """One setting a Memory Space on this provider takes (the control plane's form field).

    ``kind="secret"`` fields go to ``secrets`` (host-side, write-only: read APIs show only that
    they are configured); every other kind goes to ``config``.

    Example:
        >>> ConfigField(name="endpoint", label="Service URL", kind="url", required=True).kind
        'url'
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    label: str
    kind: Literal["text", "url", "number", "bool", "path", "secret"] = "text"
    required: bool = False
    default: str | int | float | bool | None = None
    help: str = ""


class ProviderDescriptor(FrozenModel):
    """A provider's identity and declared semantics."""

    id: str = Field(pattern=r"^[a-z][a-z0-9-]{0,63}$")
    label: str
    capabilities: Capabilities = Field(default_factory=Capabilities)
    score_semantics: ScoreSemantics = "unknown"
    write_mode: WriteMode = "exact"
    deletion_mode: DeletionMode = "unsupported"
    local: bool = True
    """Data stays on this machine (``data_boundary=local-only`` allows only local providers)."""
    secret_fields: tuple[str, ...] = ()
    """Configuration keys that hold credentials; they go to ``secrets``, never to ``config``."""
    config_fields: tuple[ConfigField, ...] = ()
    """The settings a space on this provider takes, for forms (secrets as ``kind="secret"``)."""


class SpaceBinding(FrozenModel):
    """What a provider receives about the Memory Space it serves in one call.

    ``secrets`` are host-side only: they are excluded from ``repr`` and from serialisation.
    """

    id: str
    name: str
    description: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    secrets: dict[str, str] = Field(default_factory=dict, repr=False, exclude=True)


class MemoryRecord(BaseModel):
    """One memory row as a provider returns it and as federated recall reports it.

    ``score`` is the provider's raw score, never rewritten. Recall adds ``normalized_score``
    (0..1, or ``None`` when the scale is unknown), ``relevance_tier`` and, when more than one
    provider kind was queried, ``federated_score`` (reciprocal-rank fusion).

    ``status`` says where the row stands (``current``, ``superseded`` or ``forgotten``; None
    where the provider cannot tell: it is set by reads of a provider that keeps history,
    ``get``, ``history`` and ``browse``). ``superseded_by`` and ``supersedes`` mirror the
    row's metadata links of the same names (see :meth:`MemorySpaces.supersede`).
    """

    # Mutable, unlike the request models: it always was, and providers or callers may adjust
    # a row they hold; unknown fields are still refused.
    model_config = ConfigDict(extra="forbid")

    id: str
    content: str
    category: str = "general"
    importance: int | None = None
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    source: str | None = None
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    score: float | None = None
    normalized_score: float | None = None
    relevance_tier: Literal["high", "medium", "low", "unknown"] | None = None
    federated_score: float | None = None
    confidence: float | None = None
    intent: str | None = None
    matched_via: str | None = None
    created_at: float | None = None
    depth: int | None = None
    edge_type: str | None = None
    space_id: str | None = None
    space_name: str | None = None
    provider_id: str | None = None
    capabilities: list[str] | None = None
    external_uri: str | None = None
    status: MemoryStatus | None = None
    superseded_by: str | None = None
    supersedes: str | None = None


Insight = MemoryRecord
"""The former name of :class:`MemoryRecord` (``insight`` is also a category value, so the row
type was renamed); kept so provider code written against it still imports."""


class ProviderSearchRequest(FrozenModel):
    """A validated search request for one space."""

    query: str
    mode: SearchMode = "smart"
    limit: int = Field(10, ge=1, le=50)
    category: str | None = None
    source: str | None = None
    intent: str | None = None


class ProviderSearchResult(FrozenModel):
    """Ranked rows (best first) and an optional hint from the provider."""

    results: list[MemoryRecord] = Field(default_factory=list)
    hint: str | None = None


class BrowseRequest(FrozenModel):
    """List stored rows, newest first (``history``: superseded rows too, on a provider that
    keeps history; the host sets it only for one)."""

    limit: int = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0)
    category: str | None = None
    history: bool = False


class RememberItem(FrozenModel):
    """One validated write."""

    content: str
    category: Category = "general"
    importance: int = Field(3, ge=1, le=5)
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    source: MemorySource = "agent"
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)


class RelatedRequest(FrozenModel):
    """Graph traversal from one row."""

    id: str
    depth: int = Field(2, ge=1, le=5)
    edge: EdgeType | None = None
    limit: int = Field(20, ge=1, le=100)


class LinkRequest(FrozenModel):
    """A typed, weighted edge between two rows of one space."""

    source_id: str
    target_id: str
    type: EdgeType = "semantic"
    weight: float = Field(0.5, ge=0, le=1)
    reason: str | None = None


class GraphNode(FrozenModel):
    """One row in a graph projection."""

    id: str
    label: str
    category: str | None = None
    entities: list[str] = Field(default_factory=list)


class GraphEdge(FrozenModel):
    """A typed edge between two rows of a graph projection."""

    source: str
    target: str
    type: str
    weight: float | None = None


class GraphProjection(FrozenModel):
    """Nodes and typed edges of a space (bounded)."""

    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[GraphEdge] = Field(default_factory=list)


class ProviderStatus(FrozenModel):
    """Health and optional statistics of one space on its provider.

    ``dense`` says how dense (vector) search runs for the space, when the provider says:
    ``pgvector-hnsw`` (an index in the database), ``in-process`` (vectors scanned in memory)
    or ``off: <reason>``.
    """

    healthy: bool
    error: str | None = None
    total_insights: int | None = None
    deleted_insights: int | None = None
    edge_count: int | None = None
    db_size_bytes: int | None = None
    by_category: dict[str, int] = Field(default_factory=dict)
    top_entities: list[tuple[str, int]] = Field(default_factory=list)
    dense: str | None = None


class DiscoveredSpace(FrozenModel):
    """A namespace the provider already holds (for mapping into a Memory Space)."""

    external_id: str
    name: str
    description: str = ""
    config: dict[str, Any] = Field(default_factory=dict)


class MemoryReceipt(Receipt):
    """What a Memory Space write did. Only ``status="committed"`` means it happened.

    ``completion`` is ``committed`` for a write that is durable and visible, ``pending`` when the
    provider accepted it for later processing (not a write yet), ``none`` otherwise.
    ``revision`` is the id of the object the write produced or touched.
    """

    space_id: str
    id: str | None = None
    completion: Literal["committed", "pending", "none"] = "none"
    activated: bool = False
    provider_receipt: dict[str, Any] = Field(default_factory=dict)


@runtime_checkable
class Embedder(Protocol):
    """Dense text embeddings (sync; callers off the event loop use a thread)."""

    @property
    def model_id(self) -> str:
        """A stable name of the model and its settings (stored beside every vector)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query."""
        ...


def is_embedder(value: Any) -> bool:
    """Whether ``value`` is an :class:`Embedder` *instance*.

    ``isinstance(WordLlamaEmbedder, Embedder)`` is true for the class itself (a protocol check
    only looks for the attribute names, and a property is an attribute of the class), so a
    class handed over where an instance belongs would slip through; this check refuses it.
    """
    return isinstance(value, Embedder) and not isinstance(value, type)


def settle(value: Any) -> Any:
    """A provider call's result, with an awaitable (an ``async def`` hook) run to completion.

    The provider contract is synchronous; a provider written with ``async def`` methods still
    works: its coroutine runs here with ``asyncio.run``, or in a short-lived thread of its own
    when this thread already runs an event loop (a notebook cell). Plain values pass through.

    Example:
        >>> async def answer() -> int:
        ...     return 42
        >>> settle(answer()), settle(7)
        (42, 7)
    """
    if not inspect.isawaitable(value):
        return value

    async def wait() -> Any:
        return await value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = asyncio.run(wait())
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="mnemon-async-provider", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


@runtime_checkable
class MemoryProvider(Protocol):
    """The data-plane contract every Memory Space provider implements (synchronous methods).

    The host calls an operation only when ``descriptor.capabilities`` declares it. ``space``
    names the Memory Space the call is about; one provider object serves many spaces. The
    host passes every result through :func:`settle`, so a provider whose methods are still
    ``async def`` keeps working. Optional extras the host looks up when present: ``close()``
    (release clients; an older provider's ``aclose()`` too), ``remove_space(space)``,
    ``merge(target, sources)``, ``find_by_metadata`` and ``check_destination(config)``; the
    :class:`HistoryProvider` methods ``supersede``, ``restore`` and ``get`` (asked only of a
    provider whose capabilities declare ``history``, so a provider without them keeps
    working); and
    ``runs_inline = True`` for a provider whose calls bound themselves (in-process storage):
    a search of one of its spaces then runs in the caller's thread instead of on the pool
    under the provider timeout.
    """

    descriptor: ProviderDescriptor

    def check_config(self, config: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
        """Validate a space's provider configuration (no I/O); return the normalised config."""
        ...

    def place(self, space_id: str, config: dict[str, Any]) -> dict[str, Any]:
        """The config a new space is stored with: where its data will live (no I/O)."""
        ...

    def status(self, space: SpaceBinding) -> ProviderStatus:
        """Health and statistics of one space."""
        ...

    def search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        """Ranked rows (best first, at most ``request.limit``)."""
        ...

    def browse(self, space: SpaceBinding, request: BrowseRequest) -> list[MemoryRecord]:
        """Stored rows of the space."""
        ...

    def graph(self, space: SpaceBinding, limit: int = 200) -> GraphProjection:
        """Nodes and typed edges of the space."""
        ...

    def remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        """Store one row; return the provider's raw receipt."""
        ...

    def remember_many(
        self, space: SpaceBinding, items: Sequence[RememberItem]
    ) -> list[dict[str, Any]]:
        """Store several rows; one raw receipt per item, in order."""
        ...

    def related(self, space: SpaceBinding, request: RelatedRequest) -> list[MemoryRecord]:
        """Rows reachable from ``request.id`` through typed edges."""
        ...

    def link(self, space: SpaceBinding, request: LinkRequest) -> dict[str, Any]:
        """Add a typed, weighted edge; return the raw receipt."""
        ...

    def forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        """Delete one row; return the raw receipt."""
        ...

    def discover(
        self, config: Mapping[str, Any], secrets: Mapping[str, str]
    ) -> list[DiscoveredSpace]:
        """Namespaces the provider already holds."""
        ...


@runtime_checkable
class HistoryProvider(Protocol):
    """The optional history methods of a provider whose capabilities declare ``history``.

    They are not part of :class:`MemoryProvider` (a provider without them stays a valid
    provider); the host checks the capability before it calls one.
    """

    def supersede(self, space: SpaceBinding, memory_id: str, item: RememberItem) -> dict[str, Any]:
        """Store ``item`` and retire the live row ``memory_id`` in one transaction, linked both
        ways; return the raw receipt (``status="superseded"``, the new ``id``, ``replaced``)."""
        ...

    def restore(self, space: SpaceBinding, memory_id: str) -> dict[str, Any]:
        """Make a forgotten or superseded row live again; return the raw receipt."""
        ...

    def get(self, space: SpaceBinding, memory_id: str) -> MemoryRecord:
        """Any row of the space by id, live or not, with its ``status``."""
        ...


# --------------------------------------------------------------------------------------------
# Receipt classification

_NOT_COMMITTED_STATES = frozenset(
    {
        "accepted",
        "candidate",
        "canceled",
        "cancelled",
        "error",
        "failed",
        "pending",
        "partial",
        "processing",
        "queued",
        "running",
        "skipped",
    }
)
_COMMITTED_STATES = frozenset(
    {
        "added",
        "committed",
        "completed",
        "created",
        "deleted",
        "forgotten",
        "imported",
        "invalidated",
        "linked",
        "merged",
        "removed",
        "replaced",
        "restored",
        "stored",
        "succeeded",
        "success",
        "superseded",
        "updated",
    }
)
_COUNT_KEYS = ("created", "deleted", "edges_inserted", "imported", "removed", "stored", "updated")
_STATE_KEYS = ("action", "status", "state")


def _state_values(receipt: Mapping[str, Any]) -> list[str]:
    return [
        receipt[key].strip().lower()
        for key in _STATE_KEYS
        if isinstance(receipt.get(key), str) and receipt[key].strip()
    ]


def is_committed(receipt: Any) -> bool:
    """Whether a provider receipt proves a durable write.

    Not committed when any of ``success/ok/committed/durable`` is ``False``, ``errors`` is
    non-empty, or ``action/status/state`` says accepted, candidate, canceled/cancelled, error,
    failed, pending, partial, processing, queued, running or skipped. Committed when
    ``committed``/``durable`` is ``True``, a state says added, committed, completed, created,
    deleted, forgotten, imported, invalidated, linked, merged, removed, replaced, restored,
    stored, succeeded, success, superseded or updated, a count among created, deleted,
    edges_inserted, imported, removed, stored, updated is positive, or a ``memory_receipt``
    (``memoryReceipt``) says ``status="succeeded"`` with ``completion="committed"`` and a
    ``committed_at`` time. Anything else is not committed.
    """
    if not isinstance(receipt, Mapping):
        return False
    for key in ("success", "ok", "committed", "durable"):
        if receipt.get(key) is False:
            return False
    errors = receipt.get("errors")
    if errors:
        return False
    states = _state_values(receipt)
    if any(state in _NOT_COMMITTED_STATES for state in states):
        return False
    if receipt.get("committed") is True or receipt.get("durable") is True:
        return True
    if any(state in _COMMITTED_STATES for state in states):
        return True
    for key in _COUNT_KEYS:
        value = receipt.get(key)
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and value > 0
        ):
            return True
    nested = receipt.get("memory_receipt", receipt.get("memoryReceipt"))
    if isinstance(nested, Mapping):
        committed_at = nested.get("committed_at", nested.get("committedAt"))
        return (
            nested.get("status") == "succeeded"
            and nested.get("completion") == "committed"
            and isinstance(committed_at, str)
            and bool(committed_at.strip())
        )
    return False


def is_pending(receipt: Any) -> bool:
    """Whether a receipt says the provider accepted the write for later processing."""
    if not isinstance(receipt, Mapping):
        return False
    return any(
        state in {"accepted", "pending", "processing", "queued", "running"}
        for state in _state_values(receipt)
    )
