"""What a TurnView offers the model: ONE table of its read routes and write actions.

Each row of :data:`OFFERS` is one offer: its id (``documents/search``), the Source and kernel
layer it works on, the channel the kernel admits it on, the input model a dispatcher
validates with (the JSON schema the View shows is derived from it), the named tools that
serve it under the Layered strategy, and its per-turn budget (evidence and distinct calls).
:data:`OFFER_CHANNELS` and the View's offers are derived from the table; an offer is in a view
only when the kernel admits an automatic trigger (a model) to its channel right now, so a
``manual``, ``off`` or disabled channel, or ``write_enabled=false`` for a write, offers nothing.

Example:
    >>> offer("documents/search").max_calls
    1
    >>> offer("memory-spaces/search").input is SpacesSearchInput
    True
    >>> Switches(mem.kernel).readable["memory-spaces"]   # may a model recall from Spaces?
    True
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Literal

from langgraph_mnemon.contracts import FrozenModel
from langgraph_mnemon.errors import NotFoundError
from langgraph_mnemon.memory_layers.kernel import CHANNELS, Channel, Kernel, Layer
from langgraph_mnemon.memory_layers.turns._budget import (
    DOCUMENT_SEARCH_EVIDENCE,
    RECALL_EVIDENCE,
    RELATED_EVIDENCE,
    RUNTIME_SEARCH_EVIDENCE,
)
from langgraph_mnemon.memory_layers.turns._facts import SourceFacts, SourceName
from langgraph_mnemon.memory_layers.turns._inputs import (
    DocumentManageInput,
    DocumentSearchInput,
    ForgetInput,
    LinkInput,
    RelatedInput,
    RememberInput,
    RuntimeSearchInput,
    RuntimeWriteInput,
    SpaceManageInput,
    SpacesSearchInput,
    ViewInput,
    view_schema,
)

__all__ = [
    "OFFERS",
    "OFFER_CHANNELS",
    "SOURCE_LAYERS",
    "VIEW_ACTION_TOOL",
    "VIEW_ROUTE_TOOL",
    "ActionOffer",
    "Offer",
    "RouteOffer",
    "Switches",
    "build_offers",
    "offer",
]

SOURCE_LAYERS: dict[str, Layer] = {
    "runtime": "runtime",
    "documents": "documents",
    "memory-spaces": "memory_spaces",
}
"""The view's Source names and the kernel layer each one is."""

VIEW_ROUTE_TOOL = "mnemon_view_route"
VIEW_ACTION_TOOL = "mnemon_view_action"
"""The General strategy's two tools: every offer of its views is reached through them."""


class RouteOffer(FrozenModel):
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


class ActionOffer(FrozenModel):
    """A change the view offers (always a write). ``tools`` empty: ``mnemon_view_action``."""

    id: str
    source: SourceName
    description: str
    input_schema: dict[str, Any]
    tools: tuple[str, ...] = ()


@functools.cache
def _schema(model: type[ViewInput]) -> dict[str, Any]:
    return view_schema(model)


@dataclass(frozen=True)
class Offer:
    """One row of the offers table.

    ``channel`` is the kernel channel of the offer's layer (``None``: a management read that
    never asks); ``needs`` the Memory Spaces capability its facts must show (``readable``: a
    readable space at all); ``named_id`` the id the offer has when the Layered strategy binds
    it to its own tools (``memory-spaces/search`` is ``memory-spaces/recall`` there).
    """

    id: str
    kind: Literal["route", "action"]
    source: SourceName
    description: str
    input: type[ViewInput]
    tools: tuple[str, ...]
    channel: Channel | None
    needs: str | None = None
    max_results: int = 0
    max_chars: int = 0
    max_calls: int = 0
    named_id: str | None = None

    @property
    def layer(self) -> Layer:
        """The kernel layer the offer works on."""
        return SOURCE_LAYERS[self.source]

    @property
    def admitted_on(self) -> tuple[Layer, Channel] | None:
        """The ``(layer, channel)`` the kernel admits the offer on (``None``: never asks)."""
        return None if self.channel is None else (self.layer, self.channel)

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON schema the View shows for the offer's input."""
        return _schema(self.input)

    def as_route(self, *, named: bool) -> RouteOffer:
        """The offer as a view's route (``named``: bound to its Layered tools)."""
        return RouteOffer(
            id=self.named_id if named and self.named_id else self.id,
            source=self.source,
            description=self.description,
            input_schema=self.input_schema,
            tools=self.tools if named else (),
            max_results=self.max_results,
            max_chars=self.max_chars,
            max_calls=self.max_calls,
        )

    def as_action(self, *, named: bool) -> ActionOffer:
        """The offer as a view's action (``named``: bound to its Layered tools)."""
        return ActionOffer(
            id=self.id,
            source=self.source,
            description=self.description,
            input_schema=self.input_schema,
            tools=self.tools if named else (),
        )


OFFERS: tuple[Offer, ...] = (
    Offer(
        id="documents/search",
        kind="route",
        source="documents",
        description="Search active project Documents (one search per turn).",
        input=DocumentSearchInput,
        tools=("mnemon_document_search",),
        channel="recall",
        max_results=DOCUMENT_SEARCH_EVIDENCE[0],
        max_chars=DOCUMENT_SEARCH_EVIDENCE[1],
        max_calls=1,
    ),
    Offer(
        id="memory-spaces/inspect",
        kind="route",
        source="memory-spaces",
        description="List Memory Spaces and provider health.",
        input=ViewInput,
        tools=("mnemon_memory_bodies", "mnemon_status"),
        channel=None,  # a management read: never asks
    ),
    Offer(
        id="memory-spaces/search",
        kind="route",
        source="memory-spaces",
        description="Search the active Memory Spaces for durable history.",
        input=SpacesSearchInput,
        tools=("mnemon_recall",),
        channel="recall",
        needs="readable",
        max_results=RECALL_EVIDENCE[0],
        max_chars=RECALL_EVIDENCE[1],
        max_calls=2,
        named_id="memory-spaces/recall",
    ),
    Offer(
        id="memory-spaces/related",
        kind="route",
        source="memory-spaces",
        description="Follow graph links from a memory admitted this turn.",
        input=RelatedInput,
        tools=("mnemon_related",),
        channel="recall",
        needs="related",
        max_results=RELATED_EVIDENCE[0],
        max_chars=RELATED_EVIDENCE[1],
        max_calls=1,
    ),
    Offer(
        id="runtime/search",
        kind="route",
        source="runtime",
        description="Search USER.md or MEMORY.md entries, archived ones included (local only).",
        input=RuntimeSearchInput,
        tools=("mnemon_runtime_memory",),
        channel="recall",
        max_results=RUNTIME_SEARCH_EVIDENCE[0],
        max_chars=RUNTIME_SEARCH_EVIDENCE[1],
        max_calls=2,
    ),
    Offer(
        id="runtime/write",
        kind="action",
        source="runtime",
        description="Add, replace or remove one Runtime Memory entry.",
        input=RuntimeWriteInput,
        tools=("mnemon_runtime_memory",),
        channel="write",
    ),
    Offer(
        id="documents/manage",
        kind="action",
        source="documents",
        description="Create, update or archive a project Document.",
        input=DocumentManageInput,
        tools=("mnemon_document_manage",),
        channel="write",
    ),
    Offer(
        id="memory-spaces/remember",
        kind="action",
        source="memory-spaces",
        description="Store a durable memory in a Memory Space.",
        input=RememberInput,
        tools=("mnemon_remember",),
        channel="write",
        needs="remember",
    ),
    Offer(
        id="memory-spaces/link",
        kind="action",
        source="memory-spaces",
        description="Link two stored memories.",
        input=LinkInput,
        tools=("mnemon_link",),
        channel="write",
        needs="link",
    ),
    Offer(
        id="memory-spaces/forget",
        kind="action",
        source="memory-spaces",
        description="Forget one memory, only when the user explicitly asks.",
        input=ForgetInput,
        tools=("mnemon_forget",),
        channel="write",
        needs="forget",
    ),
    Offer(
        id="memory-spaces/manage",
        kind="action",
        source="memory-spaces",
        description="Create, update or merge Memory Spaces.",
        input=SpaceManageInput,
        tools=(
            "mnemon_memory_body_create",
            "mnemon_memory_body_update",
            "mnemon_memory_body_merge",
        ),
        channel="maintenance",
    ),
)
"""Every offer of every strategy, routes first, in the order a view lists them."""

_BY_ID: dict[str, Offer] = {
    **{o.named_id: o for o in OFFERS if o.named_id},
    **{o.id: o for o in OFFERS},
}

OFFER_CHANNELS: dict[str, tuple[Layer, Channel] | None] = {
    offer_id: row.admitted_on for offer_id, row in _BY_ID.items()
}
"""Offer id (named ids included) → the (layer, channel) the kernel admits it on (``None``: a
management read). Derived from :data:`OFFERS`."""


def offer(offer_id: str) -> Offer:
    """The row of the offers table for ``offer_id`` (its Layered ``named_id`` works too).

    Args:
        offer_id: an offer id such as ``documents/search``.

    Returns:
        The :class:`Offer` row: input model, channel, layer, budget.

    Raises:
        NotFoundError: no offer has that id.

    Example:
        >>> offer("memory-spaces/forget").admitted_on
        ('memory_spaces', 'write')
    """
    found = _BY_ID.get(offer_id)
    if found is None:
        raise NotFoundError(f"no offer {offer_id!r} (offers: {', '.join(o.id for o in OFFERS)})")
    return found


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

    @property
    def signature(self) -> tuple[tuple[tuple[str, str], bool], ...]:
        """Every admission decided, in a stable order (views composed alike share it)."""
        return tuple(sorted(self._admitted.items()))

    def takes_part(self, source: str) -> bool:
        """Whether a model may use the Source at all (its facts are worth reading)."""
        layer = SOURCE_LAYERS[source]
        return any(self._admitted[(layer, channel)] for channel in CHANNELS)

    def offers(self, offer_id: str) -> bool:
        """Whether the offer's channel admits a model (management reads always do)."""
        channel = OFFER_CHANNELS[offer_id]
        return channel is None or self._admitted[channel]


def _supported(facts: SourceFacts, row: Offer) -> bool:
    """Whether the facts have the Source and the capability an offer needs."""
    present = {
        "runtime": facts.runtime is not None,
        "documents": facts.documents is not None,
        "memory-spaces": facts.spaces is not None,
    }[row.source]
    if not present or row.needs is None:
        return present
    assert facts.spaces is not None
    if row.needs == "readable":
        return bool(facts.spaces.readable)
    return bool(facts.spaces.readable) and row.needs in facts.spaces.capabilities


def build_offers(
    facts: SourceFacts, switches: Switches, *, named: bool
) -> tuple[list[RouteOffer], list[ActionOffer]]:
    """The routes and actions the facts support and the kernel admits for a model.

    ``named``: bind each offer to its own tools (Layered), else the model reaches it through
    ``mnemon_view_route`` / ``mnemon_view_action`` (General, whose Memory Space search is
    ``memory-spaces/search`` instead of ``memory-spaces/recall``).
    """
    admitted = [row for row in OFFERS if switches.offers(row.id) and _supported(facts, row)]
    routes = [row.as_route(named=named) for row in admitted if row.kind == "route"]
    actions = [row.as_action(named=named) for row in admitted if row.kind == "action"]
    return routes, actions
