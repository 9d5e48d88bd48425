"""What a TurnView offers the model: its read routes and write actions, decided by the kernel.

One table (:data:`OFFER_CHANNELS`) names the layer and channel of every offer; an offer is in a
view only when the kernel admits an automatic trigger (a model) to that channel right now, so a
``manual``, ``off`` or disabled channel, or ``write_enabled=false`` for a write, offers nothing.
The view's Source names (``runtime``, ``documents``, ``memory-spaces``) map to kernel layers in
:data:`SOURCE_LAYERS` only.

Example:
    >>> switches = Switches(mem.kernel)
    >>> switches.readable["memory-spaces"]        # may a model recall from Memory Spaces?
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from langgraph_mnemon.memory_layers.kernel import CHANNELS, Channel, Kernel, Layer

if TYPE_CHECKING:
    from langgraph_mnemon.memory_layers.turns._view import SourceFacts

__all__ = [
    "DOCUMENT_SEARCH_EVIDENCE",
    "OFFER_CHANNELS",
    "RECALL_EVIDENCE",
    "RELATED_EVIDENCE",
    "RUNTIME_SEARCH_EVIDENCE",
    "SOURCE_LAYERS",
    "ActionOffer",
    "RouteOffer",
    "SourceName",
    "Switches",
    "build_offers",
]

SourceName = Literal["runtime", "documents", "memory-spaces"]
SOURCE_LAYERS: dict[str, Layer] = {
    "runtime": "runtime",
    "documents": "documents",
    "memory-spaces": "memory_spaces",
}
"""The view's Source names and the kernel layer each one is."""

# Evidence a read route may return in one turn (results, characters).
RECALL_EVIDENCE = (6, 4800)
DOCUMENT_SEARCH_EVIDENCE = (4, 6000)
RELATED_EVIDENCE = (4, 4000)
RUNTIME_SEARCH_EVIDENCE = (4, 1200)

OFFER_CHANNELS: dict[str, tuple[Layer, Channel] | None] = {
    "runtime/search": ("runtime", "recall"),
    "documents/search": ("documents", "recall"),
    "memory-spaces/inspect": None,  # a management read: never asks
    "memory-spaces/recall": ("memory_spaces", "recall"),
    "memory-spaces/search": ("memory_spaces", "recall"),
    "memory-spaces/related": ("memory_spaces", "recall"),
    "runtime/write": ("runtime", "write"),
    "documents/manage": ("documents", "write"),
    "memory-spaces/remember": ("memory_spaces", "write"),
    "memory-spaces/link": ("memory_spaces", "write"),
    "memory-spaces/forget": ("memory_spaces", "write"),
    "memory-spaces/manage": ("memory_spaces", "maintenance"),
}
"""Offer id → the (layer, channel) the kernel admits it on (``None``: a management read)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RouteOffer(_Frozen):
    """A read the view offers. ``tools`` names its tool binding; empty means the model reaches
    it with ``mnemon_view_route`` by ``id``. ``max_results`` / ``max_chars`` bound its evidence;
    ``max_calls`` is how many distinct calls one turn may make (0: unbounded; a repeated call
    replays its first answer).
    """

    id: str
    source: SourceName
    description: str
    input_schema: dict[str, Any]
    tools: tuple[str, ...] = ()
    max_results: int = 0
    max_chars: int = 0
    max_calls: int = 0


class ActionOffer(_Frozen):
    """A change the view offers (always a write). ``tools`` empty: ``mnemon_view_action``."""

    id: str
    source: SourceName
    description: str
    input_schema: dict[str, Any]
    tools: tuple[str, ...] = ()


class Switches:
    """What the kernel admits a model (an automatic trigger) to do with each Source, decided
    once per composition so one view is consistent.

    ``projected`` / ``readable`` / ``writable`` / ``maintainable``: Source name → admitted on
    the ``projection`` / ``recall`` / ``write`` / ``maintenance`` channel.
    """

    def __init__(self, kernel: Kernel) -> None:
        self._admitted = {
            (layer, channel): kernel.model_admits(layer, channel)  # type: ignore[arg-type]
            for layer in SOURCE_LAYERS.values()
            for channel in CHANNELS
        }
        self.projected = self._by_source("projection")
        self.readable = self._by_source("recall")
        self.writable = self._by_source("write")
        self.maintainable = self._by_source("maintenance")

    def _by_source(self, channel: str) -> dict[str, bool]:
        return {source: self._admitted[(layer, channel)] for source, layer in SOURCE_LAYERS.items()}

    def takes_part(self, source: str) -> bool:
        """Whether a model may use the Source at all (its facts are worth reading)."""
        layer = SOURCE_LAYERS[source]
        return any(self._admitted[(layer, channel)] for channel in CHANNELS)

    def offers(self, offer_id: str) -> bool:
        """Whether the offer's channel admits a model (management reads always do)."""
        channel = OFFER_CHANNELS[offer_id]
        return channel is None or self._admitted[channel]


def _object(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


_STR = {"type": "string"}
_IDS = {"type": "array", "items": {"type": "string"}}
_TARGET = {"enum": ["user", "memory"]}

_RUNTIME_SEARCH_SCHEMA = _object(
    {
        "query": {"type": "string", "maxLength": 2000},
        "target": _TARGET,
        "limit": {"type": "integer", "minimum": 1, "maximum": RUNTIME_SEARCH_EVIDENCE[0]},
    },
    ["query", "target"],
)
_DOC_SEARCH_SCHEMA = _object(
    {
        "query": {"type": "string", "maxLength": 2000},
        "include_archived": {"type": "boolean"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 4},
    },
    ["query"],
)
_RECALL_SCHEMA = _object(
    {
        "query": {"type": "string", "maxLength": 2000},
        "limit": {"type": "integer", "minimum": 1, "maximum": 6},
        "space_ids": _IDS,
    },
    ["query"],
)
_RELATED_SCHEMA = _object(
    {
        "id": _STR,
        "depth": {"type": "integer", "minimum": 1, "maximum": 5},
        "edge": _STR,
        "space_id": _STR,
    },
    ["id"],
)
_RUNTIME_SCHEMA = _object(
    {
        "action": {"enum": ["add", "replace", "remove"]},
        "target": _TARGET,
        "content": _STR,
        "old_text": _STR,
        "importance": {"enum": ["critical", "normal", "low"]},
        "branches": _IDS,
    },
    ["action", "target"],
)
_DOC_MANAGE_SCHEMA = _object(
    {
        "action": {"enum": ["create", "update", "archive"]},
        "id": _STR,
        "title": _STR,
        "description": _STR,
        "content": _STR,
        "source_paths": _IDS,
    },
    ["action"],
)
_REMEMBER_SCHEMA = _object(
    {
        "content": _STR,
        "category": _STR,
        "importance": {"type": "integer", "minimum": 1, "maximum": 5},
        "tags": _IDS,
        "entities": _IDS,
        "space_id": _STR,
    },
    ["content"],
)
_LINK_SCHEMA = _object(
    {
        "source_id": _STR,
        "target_id": _STR,
        "type": _STR,
        "weight": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": _STR,
        "space_id": _STR,
    },
    ["source_id", "target_id"],
)
_FORGET_SCHEMA = _object({"id": _STR, "space_id": _STR}, ["id"])
_SPACE_MANAGE_SCHEMA = _object(
    {
        "operation": {"enum": ["create", "update", "merge"]},
        "space_id": _STR,
        "name": _STR,
        "description": _STR,
        "active": {"type": "boolean"},
        "source_space_ids": _IDS,
    },
    ["operation"],
)

# Routes: id, source, description, schema, tools, evidence, calls per turn, capability needed.
_ROUTES: tuple[tuple[Any, ...], ...] = (
    (
        "documents/search",
        "documents",
        "Search active project Documents (one search per turn).",
        _DOC_SEARCH_SCHEMA,
        ("mnemon_document_search",),
        DOCUMENT_SEARCH_EVIDENCE,
        1,
        None,
    ),
    (
        "memory-spaces/inspect",
        "memory-spaces",
        "List Memory Spaces and provider health.",
        _object({}),
        ("mnemon_memory_bodies", "mnemon_status"),
        (0, 0),
        0,
        None,
    ),
    (
        "memory-spaces/search",
        "memory-spaces",
        "Search the active Memory Spaces for durable history.",
        _RECALL_SCHEMA,
        ("mnemon_recall",),
        RECALL_EVIDENCE,
        2,
        "readable",
    ),
    (
        "memory-spaces/related",
        "memory-spaces",
        "Follow graph links from a memory admitted this turn.",
        _RELATED_SCHEMA,
        ("mnemon_related",),
        RELATED_EVIDENCE,
        1,
        "related",
    ),
    (
        "runtime/search",
        "runtime",
        "Search USER.md or MEMORY.md entries, archived ones included (local only).",
        _RUNTIME_SEARCH_SCHEMA,
        ("mnemon_runtime_memory",),
        RUNTIME_SEARCH_EVIDENCE,
        2,
        None,
    ),
)
# Actions: id, source, description, schema, tools, capability needed.
_ACTIONS: tuple[tuple[Any, ...], ...] = (
    (
        "runtime/write",
        "runtime",
        "Add, replace or remove one Runtime Memory entry.",
        _RUNTIME_SCHEMA,
        ("mnemon_runtime_memory",),
        None,
    ),
    (
        "documents/manage",
        "documents",
        "Create, update or archive a project Document.",
        _DOC_MANAGE_SCHEMA,
        ("mnemon_document_manage",),
        None,
    ),
    (
        "memory-spaces/remember",
        "memory-spaces",
        "Store a durable memory in a Memory Space.",
        _REMEMBER_SCHEMA,
        ("mnemon_remember",),
        "remember",
    ),
    (
        "memory-spaces/link",
        "memory-spaces",
        "Link two stored memories.",
        _LINK_SCHEMA,
        ("mnemon_link",),
        "link",
    ),
    (
        "memory-spaces/forget",
        "memory-spaces",
        "Forget one memory, only when the user explicitly asks.",
        _FORGET_SCHEMA,
        ("mnemon_forget",),
        "forget",
    ),
    (
        "memory-spaces/manage",
        "memory-spaces",
        "Create, update or merge Memory Spaces.",
        _SPACE_MANAGE_SCHEMA,
        ("mnemon_memory_body_create", "mnemon_memory_body_update", "mnemon_memory_body_merge"),
        None,
    ),
)


def _supported(facts: SourceFacts, source: str, needs: str | None) -> bool:
    """Whether the facts have the Source and the capability an offer needs."""
    present = {
        "runtime": facts.runtime is not None,
        "documents": facts.documents is not None,
        "memory-spaces": facts.spaces is not None,
    }[source]
    if not present or needs is None:
        return present
    assert facts.spaces is not None
    if needs == "readable":
        return bool(facts.spaces.readable)
    return bool(facts.spaces.readable) and needs in facts.spaces.capabilities


def build_offers(
    facts: SourceFacts, switches: Switches, *, named: bool
) -> tuple[list[RouteOffer], list[ActionOffer]]:
    """The routes and actions the facts support and the kernel admits for a model.

    ``named``: bind each offer to its own tools (Layered), else the model reaches it through
    ``mnemon_view_route`` / ``mnemon_view_action`` (General, whose Memory Space search is
    ``memory-spaces/search`` instead of ``memory-spaces/recall``).
    """
    routes = [
        RouteOffer(
            id="memory-spaces/recall" if named and rid == "memory-spaces/search" else rid,
            source=source,
            description=text,
            input_schema=schema,
            tools=tools if named else (),
            max_results=evidence[0],
            max_chars=evidence[1],
            max_calls=calls,
        )
        for rid, source, text, schema, tools, evidence, calls, needs in _ROUTES
        if switches.offers(rid) and _supported(facts, source, needs)
    ]
    actions = [
        ActionOffer(
            id=aid,
            source=source,
            description=text,
            input_schema=schema,
            tools=tools if named else (),
        )
        for aid, source, text, schema, tools, needs in _ACTIONS
        if switches.offers(aid) and _supported(facts, source, needs)
    ]
    return routes, actions
