"""The General strategy's tools: the routes and actions of the turn's pinned View.

The model reaches memory only through ``mnemon_view_route`` (reads) and ``mnemon_view_action``
(writes), naming an offer of its View by id. Dispatch comes from two tables keyed by offer id
(:data:`ROUTES`, :data:`ACTIONS`: the input model and the handler of each offer), whose ids are
the offers table's (``OFFER_CHANNELS``). Each call asks the kernel for its offer's channel
before any I/O, and each read route runs within its per-turn call budget (the same input
replays its first answer).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from pydantic import BaseModel

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.turns import (
    OFFER_CHANNELS,
    ActionOffer,
    DocumentSearchInput,
    ForgetInput,
    LinkInput,
    RelatedInput,
    RememberInput,
    RouteOffer,
    RuntimeSearchInput,
    SpaceManageInput,
    SpacesSearchInput,
    TurnView,
    ViewInput,
    call_key,
    clip_text,
    model_item,
)
from langgraph_mnemon.tools._args import (
    DocumentManageArgs,
    RuntimeMemoryArgs,
    ViewActionArgs,
    ViewRouteArgs,
)
from langgraph_mnemon.tools._context import ToolContext, pinned_view, turn_id, turn_retrieval
from langgraph_mnemon.tools._layered import (
    catalog,
    forget,
    link,
    manage_document,
    manage_spaces,
    remember,
    runtime_search,
    search_documents,
    write_runtime,
)
from langgraph_mnemon.tools._results import parse_input

__all__ = ["ACTIONS", "ROUTES", "view_action", "view_route"]

RouteCall = Callable[[], dict[str, Any]]
"""A route call ready to run (validated and checked against the View's grants, no I/O yet)."""
RoutePrepare = Callable[[ToolContext, RouteOffer, TurnView, str, Any], RouteCall]
ActionRun = Callable[[ToolContext, Any], dict[str, Any]]


# -- read routes ----------------------------------------------------------------------------


def bounded(route: RouteOffer, rows: list[Any]) -> tuple[list[dict[str, Any]], bool]:
    """Rows as model items within the route's evidence bounds (results, characters)."""
    items: list[dict[str, Any]] = []
    left = route.max_chars
    cut = len(rows) > route.max_results
    for row in rows[: route.max_results]:
        if left <= 0:
            cut = True
            break
        item = model_item(row)
        item["content"], clipped = clip_text(row.content, left)
        left -= len(item["content"])
        cut = cut or clipped
        items.append(item)
    return items, cut


def granted(view: TurnView, space_ids: list[str]) -> list[str]:
    """``space_ids`` (all granted ones when empty), refused when one is outside the View."""
    grant = list(view.grants.space_ids)
    if not grant:
        raise InvalidInputError(
            f"view {view.id} grants no Memory Space; activate or create one first"
        )
    outside = [s for s in space_ids if s not in grant]
    if outside:
        raise InvalidInputError(
            f"Memory Space(s) {', '.join(outside)} are outside view {view.id}; use only "
            f"{', '.join(grant)}",
            code="recall-rejected",
        )
    return space_ids or grant


def related_space(view: TurnView, space_id: str | None) -> str:
    """The one granted Memory Space a related call reads (named, or the only one)."""
    if space_id is not None:
        return granted(view, [space_id])[0]
    grant = granted(view, [])
    if len(grant) != 1:
        raise InvalidInputError(f"related needs space_id: view {view.id} grants {', '.join(grant)}")
    return grant[0]


def _search_spaces(
    ctx: ToolContext, route: RouteOffer, q: SpacesSearchInput, spaces: list[str]
) -> dict[str, Any]:
    found = ctx.spaces.search(
        q.query, limit=q.limit, space_ids=spaces, policy=ctx.spaces.envelope_policy
    )
    items, cut = bounded(route, list(found.results))
    out: dict[str, Any] = {"query": found.query, "results": items, "truncated": cut}
    if found.hint:
        out["hint"] = found.hint
    return out


def _related_spaces(
    ctx: ToolContext, route: RouteOffer, r: RelatedInput, space: str
) -> dict[str, Any]:
    result = ctx.spaces.related(r.id, space_id=space, depth=r.depth, edge=r.edge)
    items, cut = bounded(route, list(result.results))
    return {"id": r.id, "space_id": space, "results": items, "truncated": cut}


def _runtime_route(
    ctx: ToolContext, route: RouteOffer, view: TurnView, turn: str, t: RuntimeSearchInput
) -> RouteCall:
    return partial(runtime_search, ctx, t.query, t.target, t.limit)


def _documents_route(
    ctx: ToolContext, route: RouteOffer, view: TurnView, turn: str, d: DocumentSearchInput
) -> RouteCall:
    return partial(search_documents, ctx, turn, d.query, d.include_archived, d.limit)


def _inspect_route(
    ctx: ToolContext, route: RouteOffer, view: TurnView, turn: str, _input: ViewInput
) -> RouteCall:
    return partial(catalog, ctx)


def _search_route(
    ctx: ToolContext, route: RouteOffer, view: TurnView, turn: str, q: SpacesSearchInput
) -> RouteCall:
    return partial(_search_spaces, ctx, route, q, granted(view, q.space_ids))


def _related_route(
    ctx: ToolContext, route: RouteOffer, view: TurnView, turn: str, r: RelatedInput
) -> RouteCall:
    return partial(_related_spaces, ctx, route, r, related_space(view, r.space_id))


ROUTES: dict[str, tuple[type[BaseModel], RoutePrepare]] = {
    "runtime/search": (RuntimeSearchInput, _runtime_route),
    "documents/search": (DocumentSearchInput, _documents_route),
    "memory-spaces/inspect": (ViewInput, _inspect_route),
    "memory-spaces/search": (SpacesSearchInput, _search_route),
    # the Layered View's id of the same search (a General View offers memory-spaces/search)
    "memory-spaces/recall": (SpacesSearchInput, _search_route),
    "memory-spaces/related": (RelatedInput, _related_route),
}
"""Route id → its input model and the function preparing its call."""

ACTIONS: dict[str, tuple[type[BaseModel], ActionRun]] = {
    "runtime/write": (RuntimeMemoryArgs, write_runtime),  # refuses action=search
    "documents/manage": (DocumentManageArgs, manage_document),
    "memory-spaces/remember": (RememberInput, remember),
    "memory-spaces/link": (LinkInput, link),
    "memory-spaces/forget": (ForgetInput, forget),
    "memory-spaces/manage": (SpaceManageInput, manage_spaces),
}
"""Action id → its input model and the function running it."""


def run_route(
    ctx: ToolContext, route: RouteOffer, view: TurnView, turn: str, data: Any
) -> dict[str, Any]:
    """Run a route within its per-turn call budget (the same input replays its answer)."""
    if route.id not in ROUTES:
        raise InvalidInputError(f"route {route.id!r} has no executor in this version")
    model, prepare = ROUTES[route.id]
    parsed = parse_input(model, data, route.id)
    call = prepare(ctx, route, view, turn, parsed)
    budget = turn_retrieval(ctx, turn).routes
    key = call_key(parsed.model_dump(mode="json"))
    out, replayed = budget.run(route.id, route.max_calls, key, call)
    return {**out, "replayed": True} if replayed else out


def run_action(ctx: ToolContext, action: ActionOffer, data: Any) -> dict[str, Any]:
    """Validate an action's input against its model and run it."""
    if action.id not in ACTIONS:
        raise InvalidInputError(f"action {action.id!r} has no executor in this version")
    model, run = ACTIONS[action.id]
    return run(ctx, parse_input(model, data, action.id))


def admit_offer(ctx: ToolContext, offer_id: str) -> None:
    """Ask the kernel for a View offer's channel (a management read never asks)."""
    channel = OFFER_CHANNELS.get(offer_id)
    if channel is not None:
        ctx.kernel.admit(*channel)


# -- the two tools --------------------------------------------------------------------------


def view_route(ctx: ToolContext, a: ViewRouteArgs) -> dict[str, Any]:
    """``mnemon_view_route``: a read route of the pinned View, by id."""
    turn = turn_id(a.state)
    view = pinned_view(ctx, turn)
    offer = view.offers(a.route_id)
    if not isinstance(offer, RouteOffer):
        raise InvalidInputError(
            f"{a.route_id!r} is an action of view {view.id}; run it with mnemon_view_action"
        )
    admit_offer(ctx, offer.id)  # the pinned view keeps its offers; the kernel decides now
    return {"routeId": offer.id, "output": run_route(ctx, offer, view, turn, a.input)}


def view_action(ctx: ToolContext, a: ViewActionArgs) -> dict[str, Any]:
    """``mnemon_view_action``: a write action of the pinned View, by id."""
    view = pinned_view(ctx, turn_id(a.state))
    offer = view.offers(a.offer_id)
    if not isinstance(offer, ActionOffer):
        raise InvalidInputError(
            f"{a.offer_id!r} is a route of view {view.id}; read it with mnemon_view_route"
        )
    admit_offer(ctx, offer.id)
    return {"offerId": offer.id, "receipt": run_action(ctx, offer, a.input)}
