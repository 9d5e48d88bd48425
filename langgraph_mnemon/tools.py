"""Model-facing memory tools bound to a host.

Every tool takes a pydantic argument schema and returns compact JSON. Every failure comes back as
an ``{"error": code, "message": ...}`` result, never as an exception that would end the agent
run: typed library errors with their code, arguments with lone surrogates or NUL as
``invalid-input``, anything unexpected as ``internal`` (logged with its traceback and recorded
in ``mem.health``). No tool result contains paths, provider settings or secrets.

Every tool body runs as an *automatic* trigger (the kernel's ``acting("automatic")``), and one
table (:data:`TOOL_CHANNELS`) names the layer and channel of each tool: a tool is offered by
:func:`build_tools` only while the kernel admits a model to one of its channels (``manual``,
``off``, a disabled layer or ``write_enabled=false`` for a write offer nothing), and each call
asks the kernel again before any I/O, so a switch changed after the tools were built refuses
the next call with ``{"error": code, "message": ..., "decision": {...}}`` and writes nothing.
A refusal is an answer, not a memory failure: ``mem.health`` does not record it. Under the
Layered strategy each operation has its own tool; under the General strategy the model reads
and changes memory only through the offers of its turn's pinned View (``mnemon_view_route`` /
``mnemon_view_action``), each offer asking its own channel and each read route within its
per-turn call budget.

Example:
    >>> agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langchain_core.tools import BaseTool, StructuredTool
from langgraph.config import get_config
from pydantic import BaseModel, ValidationError

from langgraph_mnemon._tool_args import (
    DocumentCreateArgs,
    DocumentManageArgs,
    DocumentSearchArgs,
    DocumentSearchInput,
    ForgetArgs,
    ForgetInput,
    LinkArgs,
    LinkInput,
    MemoryBodyCreateArgs,
    MemoryBodyMergeArgs,
    MemoryBodyUpdateArgs,
    NoArgs,
    RecallArgs,
    RelatedArgs,
    RelatedInput,
    RememberArgs,
    RememberInput,
    RuntimeMemoryArgs,
    RuntimeSearchInput,
    SpaceManageInput,
    SpacesSearchInput,
    ViewActionArgs,
    ViewInput,
    ViewRouteArgs,
)
from langgraph_mnemon.contracts import safe_text
from langgraph_mnemon.errors import InvalidInputError, MnemonError
from langgraph_mnemon.memory_layers.documents import DocumentMutation
from langgraph_mnemon.memory_layers.kernel import Channel, Layer, acting
from langgraph_mnemon.memory_layers.runtime import RuntimeMutation
from langgraph_mnemon.memory_layers.turns import (
    OFFER_CHANNELS,
    RUNTIME_SEARCH_EVIDENCE,
    ActionOffer,
    RouteOffer,
    call_key,
    clip_text,
    model_item,
)
from langgraph_mnemon.memory_layers.write_worker import WriteCandidate
from langgraph_mnemon.nodes._guard import DEGRADED_TURN, memory_step
from langgraph_mnemon.storage.db import redact_url

if TYPE_CHECKING:
    from langgraph_mnemon.host import Mnemon
    from langgraph_mnemon.memory_layers.spaces import SpaceRecord

__all__ = ["CATALOG_LIMIT", "TOOL_CHANNELS", "VIEW_TOOLS", "WRITE_TOOLS", "build_tools"]

CATALOG_LIMIT = 16
ToolChannel = tuple[Layer, Channel]
_SPACES_WRITE: tuple[ToolChannel, ...] = (("memory_spaces", "write"),)
_SPACES_MAINTENANCE: tuple[ToolChannel, ...] = (("memory_spaces", "maintenance"),)
TOOL_CHANNELS: dict[str, tuple[ToolChannel, ...]] = {
    "mnemon_status": (),  # management reads: offered whatever the switches
    "mnemon_memory_bodies": (),
    "mnemon_recall": (("memory_spaces", "recall"),),
    "mnemon_related": (("memory_spaces", "recall"),),
    "mnemon_document_search": (("documents", "recall"),),
    # add / replace / remove ask runtime write, search asks runtime recall
    "mnemon_runtime_memory": (("runtime", "write"), ("runtime", "recall")),
    "mnemon_remember": _SPACES_WRITE,
    "mnemon_document_create": (("documents", "write"),),
    "mnemon_document_manage": (("documents", "write"),),
    "mnemon_link": _SPACES_WRITE,
    "mnemon_forget": _SPACES_WRITE,
    "mnemon_memory_body_create": _SPACES_MAINTENANCE,
    "mnemon_memory_body_update": _SPACES_MAINTENANCE,
    "mnemon_memory_body_merge": _SPACES_MAINTENANCE,
    # the View's tools: each route / action asks its own channel (_view_offers.OFFER_CHANNELS)
    "mnemon_view_route": (),
    "mnemon_view_action": tuple(
        dict.fromkeys(c for c in OFFER_CHANNELS.values() if c is not None and c[1] != "recall")
    ),
}
"""Tool name → the (layer, channel) pairs it works on. A tool is offered while the kernel
admits a model to one of them (``()``: management reads, always offered)."""
WRITE_TOOLS = frozenset(
    name
    for name, channels in TOOL_CHANNELS.items()
    if channels and all(channel != "recall" for _, channel in channels)
)
"""Tools that only change memory (never offered while ``write_enabled`` is false)."""
VIEW_TOOLS = frozenset({"mnemon_view_route", "mnemon_view_action"})


def _parse(model: type[BaseModel], data: Any, what: str) -> Any:
    """Validate a model-supplied input; a mismatch becomes an ``invalid-input`` result."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidInputError(f"invalid input for {what}: {_problems(exc)}") from None


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'input'}: {err['msg']}"
        for err in exc.errors()[:5]
    )


def _validation_result(exc: Any) -> str:
    """Arguments that do not fit a tool's schema: an ``invalid-input`` result, not a crash."""
    message = _problems(exc) if isinstance(exc, ValidationError) else safe_text(exc)
    return _dumps({"error": "invalid-input", "message": f"invalid arguments: {message}"})


def _dumps(value: Any) -> str:
    # A result may quote what the model sent (a query, an id); the message must still be
    # storable and sendable text, so lone surrogates become U+FFFD and NUL is dropped.
    return safe_text(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def _thread_id() -> str | None:
    """The thread id of the executing run, when the tool runs inside one."""
    try:
        config = get_config()
    except RuntimeError:
        return None
    thread = (config.get("configurable") or {}).get("thread_id")
    return str(thread)[:200] if thread else None


def _space_item(record: SpaceRecord, reachable: bool | None = None) -> dict[str, Any]:
    """A Memory Space as the model sees it: no config, paths or secrets; ``reachable`` (the
    catalog) says whether its provider answers right now."""
    item: dict[str, Any] = {
        "id": record.id,
        "name": record.name[:120],
        "description": record.description[:500],
        "active": record.active,
        "provider": {"id": record.provider_id, "capabilities": record.capabilities},
    }
    if reachable is not None:
        item["reachable"] = reachable
    return item


def _reachable(mem: Mnemon) -> dict[str, bool]:
    """Space id → whether its provider answers (``mem.spaces.health()``, cached briefly)."""
    return {s.space_id: s.reachable for s in mem.spaces.health().spaces}


def _status(mem: Mnemon) -> dict[str, Any]:
    """``mnemon_status``: the real state (``mem.status()``), not a hard-coded one."""
    report = mem.status()
    spaces = report.spaces
    out: dict[str, Any] = {
        "healthy": report.healthy,
        "writeEnabled": report.write_enabled,
        "runtime": {
            "user": report.runtime.user.model_dump(),
            "memory": report.runtime.memory.model_dump(),
        },
        "documents": {"active": report.documents.active, "archived": report.documents.archived},
        "memorySpaces": None,
    }
    if spaces is not None:
        out["memorySpaces"] = {
            "total": spaces.total,
            "active": spaces.active,
            "unreachable": list(spaces.unreachable),
            "providers": [
                {"id": p.id, "state": p.state}
                | ({"message": _without_locations(mem, p.message)} if p.state != "healthy" else {})
                for p in spaces.provider_health
            ],
        }
    if report.health.degraded:  # what fails, not the details: those are for the operator
        out["degraded"] = sorted({f"{p.step}: {p.code}" for p in report.health.problems})
    return out


def _memory_receipt(receipt: Any) -> dict[str, Any]:
    return receipt.model_dump(
        mode="json", include={"status", "message", "changed", "space_id", "id", "completion"}
    )


def _space_receipt(receipt: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "status": receipt.status,
        "message": receipt.message,
        "changed": receipt.changed,
    }
    if receipt.space is not None:
        out["memoryBody"] = _space_item(receipt.space)
    if receipt.spaces:
        out["sources"] = [_space_item(r) for r in receipt.spaces]
    return out


def _capable(mem: Mnemon, capability: str) -> bool:
    """Whether some active Memory Space's provider supports ``capability``."""
    return any(capability in r.capabilities for r in mem.spaces.list_spaces(active=True))


def _turn(state: dict[str, Any]) -> str:
    """The executing agent's pinned turn id, or a typed error saying why there is none."""
    turn = state.get("mnemon_turn") if isinstance(state, dict) else None
    if turn == DEGRADED_TURN:
        raise MnemonError(
            "memory is unavailable for this turn (its begin step failed; mem.status().health "
            "says why); go on without it",
            code="memory-degraded",
        )
    if not turn or not isinstance(turn, str):
        raise InvalidInputError(
            "this tool needs a pinned memory turn: run the agent with mem.middleware() "
            "or put mem.turn_graph() around the agent node"
        )
    return turn


def _pinned_view(mem: Mnemon, state: dict[str, Any]) -> Any:
    return mem.views.pinned(_turn(state))


def _retrieval(mem: Mnemon, state: dict[str, Any]) -> Any:
    return mem.retrievals.get(_turn(state))


def _result(mem: Mnemon, name: str, fn: Callable[..., Any]) -> Callable[..., str]:
    """Run a tool body; any failure becomes a structured result, never a crash of the run.

    Typed errors keep their code; a storage or provider failure, or anything unexpected
    (``internal``), is also logged and recorded in ``mem.health`` under ``tool:<name>``.
    """

    def run(**kwargs: Any) -> str:
        value: Any = None
        # A model's call is an automatic trigger; whatever the tool sets off inherits it.
        with acting("automatic"), memory_step(mem.health, f"tool:{name}", answers=True) as step:
            try:
                channel = _tool_channel(name, kwargs)
                if channel is not None:  # before any I/O: a switch flipped since build refuses
                    mem.kernel.admit(*channel)
                value = fn(**kwargs)
            except ValidationError as exc:  # a value the layer's own model refused
                value = {"error": "invalid-input", "message": f"invalid input: {_problems(exc)}"}
        if step.failed:
            value = _failure(mem, step)
        return _dumps(value)

    return run


def _runtime_search(mem: Mnemon, query: str, target: str, limit: int) -> dict[str, Any]:
    """Runtime Memory entries matching ``query`` (archived ones included), within the
    runtime/search evidence bounds; local only, never a Memory Space."""
    matches = mem.runtime.search(query, target=target, limit=limit)  # type: ignore[arg-type]
    left = RUNTIME_SEARCH_EVIDENCE[1]
    cut = len(matches) > limit
    results: list[dict[str, Any]] = []
    for match in matches[:limit]:
        if left <= 0:
            cut = True
            break
        content, clipped = clip_text(match.content, left)
        left -= len(content)
        cut = cut or clipped
        item = {"target": match.target, "content": content, "archived": match.archived}
        item["score"] = round(float(match.score), 3)
        if match.archived_at:
            item["archivedAt"] = match.archived_at
        results.append(item)
    return {"query": query, "target": target, "results": results, "truncated": cut}


def _offered(mem: Mnemon, name: str) -> bool:
    """Whether the kernel admits a model to one of the tool's channels right now."""
    channels = TOOL_CHANNELS[name]
    return not channels or any(mem.kernel.model_admits(*channel) for channel in channels)


def _tool_channel(name: str, args: dict[str, Any]) -> ToolChannel | None:
    """The one (layer, channel) a call of ``name`` works on, when the tool has one."""
    if name == "mnemon_runtime_memory":
        return ("runtime", "recall" if args.get("action") == "search" else "write")
    channels = TOOL_CHANNELS.get(name, ())
    return channels[0] if len(channels) == 1 else None


def _admit_offer(mem: Mnemon, offer_id: str) -> None:
    """Ask the kernel for a View offer's channel (a management read never asks)."""
    channel = OFFER_CHANNELS.get(offer_id)
    if channel is not None:
        mem.kernel.admit(*channel)


def _failure(mem: Mnemon, step: Any) -> dict[str, Any]:
    """A failed or refused step as a tool result; a kernel refusal keeps its decision."""
    value = step.result()
    decision = getattr(step.error, "decision", None)
    if isinstance(step.error, MnemonError) and decision is not None:
        value["decision"] = dict(decision)
    if value["error"].startswith("database-"):  # the driver's text names host and port
        value["message"] = (
            f"the memory database is not available right now ({value['error']}); memory "
            "is degraded and the agent can go on without it (status shows the details)"
        )
    # A storage error names its file: the model sees no host paths.
    value["message"] = _without_locations(mem, value["message"])
    return value


def _without_locations(mem: Mnemon, message: str) -> str:
    """``message`` with the storage roots and the database address replaced by placeholders:
    a tool result never shows the model where memory lives."""
    url = mem.config.resolved_database_url  # masked as the database errors mask it
    places = [
        (redact_url(url), "<database>"),
        (url, "<database>"),
        (str(mem.root), "<memory root>"),
        (str(mem.config.global_root_path), "<user memory root>"),
    ]
    for place, placeholder in sorted(places, key=lambda p: -len(p[0])):  # longest first
        if place:
            message = message.replace(place, placeholder)
    return message


def _chosen_provider(mem: Mnemon, requested: str | None, purpose: str = "") -> tuple[str, str]:
    """``(provider id, mode)`` for a new Memory Space under the persistence strategy (the
    placement service; the worker model chooses among several eligible providers)."""
    from langgraph_mnemon.adapters.placement import model_chooser
    from langgraph_mnemon.memory_layers.spaces import place

    placement = place(
        mem.config.persistence_strategy,
        {pid: provider.descriptor for pid, provider in mem.spaces.providers.items()},
        requested=requested,
        purpose=purpose,
        chooser=model_chooser(mem.worker_model),
    )
    return placement.provider_id, placement.mode


def build_tools(mem: Mnemon) -> list[BaseTool]:
    """The memory tools a model may use now: those whose channel (:data:`TOOL_CHANNELS`) the
    kernel admits for an automatic trigger (management reads always).

    Under the Layered strategy every operation has its own tool; ``mnemon_link`` /
    ``mnemon_forget`` only when an active Memory Space's provider supports them. Under the
    General strategy the model reaches memory only through the routes and actions of the turn's
    View: ``mnemon_view_route`` and ``mnemon_view_action``.
    """

    def status() -> dict[str, Any]:
        return _status(mem)

    def memory_bodies() -> dict[str, Any]:
        records = mem.spaces.list_spaces()
        reachable = _reachable(mem)
        return {
            "items": [_space_item(r, reachable.get(r.id, False)) for r in records[:CATALOG_LIMIT]],
            "persistenceStrategy": {
                "mode": mem.config.persistence_strategy.mode,
                "providerId": mem.config.persistence_strategy.provider_id,
            },
            "total": len(records),
            "activeCount": sum(r.active for r in records),
            "omittedCount": max(len(records) - CATALOG_LIMIT, 0),
        }

    def write_runtime(a: RuntimeMemoryArgs) -> dict[str, Any]:
        if a.action == "search":
            raise InvalidInputError("search is a read: use the runtime/search route")
        branches = a.branches if a.target == "memory" else None
        receipt = mem.write_runtime(
            RuntimeMutation(
                action=a.action,
                target=a.target,
                content=a.content,
                old_text=a.old_text,
                importance=a.importance,
                branches=tuple(branches) if branches is not None else None,
            )
        )
        return receipt.model_dump(mode="json", exclude_defaults=True)

    def runtime_memory(**args: Any) -> dict[str, Any]:
        a = RuntimeMemoryArgs(**args)
        if a.action == "search":
            if not a.query or not a.query.strip():
                raise InvalidInputError("search needs a query: say what to look for")
            return _runtime_search(mem, a.query, a.target, a.limit or RUNTIME_SEARCH_EVIDENCE[0])
        return write_runtime(a)

    def write_memory(candidate: WriteCandidate) -> dict[str, Any]:
        receipt = mem.remember(candidate)
        return receipt.model_dump(mode="json", include={"status", "message", "memory_ids"})

    def remember(**args: Any) -> dict[str, Any]:
        a = RememberArgs(**args)
        return write_memory(
            WriteCandidate(
                content=a.content,
                category=a.category,
                importance=a.importance,
                tags=tuple(a.tags),
                entities=tuple(a.entities),
                memory_body_id=a.memory_body_id,
            )
        )

    def document_create(**args: Any) -> dict[str, Any]:
        a = DocumentCreateArgs(**args)
        receipt = mem.documents.create(
            a.title, a.content, description=a.description, source_paths=a.source_paths
        )
        doc = receipt.document
        return {"status": receipt.status, "message": receipt.message, "id": doc.id}

    def manage_document(a: DocumentManageArgs) -> dict[str, Any]:
        before = {d.id: d.title for d in mem.documents.list("active")}
        if a.action == "archive":
            if not a.id:
                raise InvalidInputError("archive needs the id of an active Document")
            turn = a.state.get("mnemon_turn")
            if turn and not mem.views.scope(turn).root:
                raise InvalidInputError(
                    "only the root agent archives Documents; report back and let it decide"
                )
            receipt = mem.archive_document(a.id)
        else:
            if a.action == "create" and not (a.title and a.content):
                raise InvalidInputError("create needs a title and content")
            if a.action == "update":
                if not a.id:
                    raise InvalidInputError("update needs the id of an active Document")
                if (a.title, a.description, a.content, a.source_paths) == (None,) * 4:
                    raise InvalidInputError(
                        "update needs at least one of title, description, content, source_paths"
                    )
            thread = _thread_id()
            receipt = mem.write_document(
                DocumentMutation(
                    action=a.action,
                    id=a.id if a.action == "update" else None,
                    title=a.title,
                    description=a.description,
                    content=a.content,
                    source_paths=tuple(a.source_paths) if a.source_paths is not None else None,
                    session_ids=(thread,) if thread else None,
                )
            )
        doc = receipt.document
        after = {d.id for d in mem.documents.list("active")}
        out: dict[str, Any] = {
            "status": receipt.status,
            "message": receipt.message,
            "action": receipt.action,
            "id": doc.id,
            "documentStatus": doc.status,
            "revision": doc.revision,
            "usage": receipt.usage.model_dump(),
        }
        evicted = [
            {"id": i, "title": t[:200]} for i, t in before.items() if i not in after and i != doc.id
        ]
        if evicted:
            out["archived"] = evicted
        return out

    def document_manage(**args: Any) -> dict[str, Any]:
        return manage_document(DocumentManageArgs(**args))

    def link(**args: Any) -> dict[str, Any]:
        a = LinkArgs(**args)
        receipt = mem.spaces.link(
            a.source_id,
            a.target_id,
            space_id=a.memory_body_id,
            type=a.type,
            weight=a.weight,
            reason=a.reason,
        )
        return _memory_receipt(receipt)

    def forget(**args: Any) -> dict[str, Any]:
        a = ForgetArgs(**args)
        return _memory_receipt(mem.spaces.forget(a.id, space_id=a.memory_body_id))

    def memory_body_create(**args: Any) -> dict[str, Any]:
        a = MemoryBodyCreateArgs(**args)
        provider_id, mode = _chosen_provider(mem, a.provider_id, f"{a.name}: {a.description}")
        out = _space_receipt(
            mem.spaces.create_space(a.name, a.description, provider_id=provider_id)
        )
        choice: dict[str, Any] = {"mode": mode, "providerId": provider_id}
        if a.reason:
            choice["reason"] = a.reason
        if a.confidence is not None:
            choice["confidence"] = a.confidence
        out["providerChoice"] = choice
        return out

    def update_space(space_id: str, name: Any, description: Any, active: Any) -> dict[str, Any]:
        if (name, description, active) == (None, None, None):
            raise InvalidInputError("update needs at least one of name, description, active")
        return _space_receipt(
            mem.spaces.update_space(space_id, name=name, description=description, active=active)
        )

    def memory_body_update(**args: Any) -> dict[str, Any]:
        a = MemoryBodyUpdateArgs(**args)
        return update_space(a.memory_body_id, a.name, a.description, a.active)

    def merge_spaces(target: str | None, sources: list[str], deactivate: bool) -> dict[str, Any]:
        if target is None:
            others = [r.id for r in mem.spaces.list_spaces(active=True) if r.id not in sources]
            if len(others) != 1:
                raise InvalidInputError(
                    "merge needs target_memory_body_id: "
                    f"{len(others)} other active Memory Spaces could be the target"
                )
            target = others[0]
        return _space_receipt(
            mem.spaces.merge_spaces(target, sources, deactivate_sources=deactivate)
        )

    def memory_body_merge(**args: Any) -> dict[str, Any]:
        a = MemoryBodyMergeArgs(**args)
        return merge_spaces(a.target_memory_body_id, a.source_memory_body_ids, a.deactivate_sources)

    def recall(state: dict[str, Any], **args: Any) -> dict[str, Any]:
        a = RecallArgs(state=state, **args)
        evidence = _retrieval(mem, state).recall(
            mem.spaces, a.query, limit=a.limit, space_ids=a.memory_body_ids or None, mode=a.mode
        )
        return evidence.to_model()

    def related(state: dict[str, Any], **args: Any) -> dict[str, Any]:
        a = RelatedArgs(state=state, **args)
        evidence = _retrieval(mem, state).related(
            mem.spaces, a.id, memory_body_id=a.memory_body_id, depth=a.depth, edge=a.edge
        )
        return evidence.to_model()

    def document_search(state: dict[str, Any], **args: Any) -> dict[str, Any]:
        a = DocumentSearchArgs(state=state, **args)
        found = _retrieval(mem, state).search_documents(
            mem.documents, a.query, include_archived=a.include_archived, limit=a.limit
        )
        return found.model_dump(mode="json", exclude_defaults=True)

    # -- General strategy: routes and actions of the pinned View ------------------------------

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

    def granted(view: Any, space_ids: list[str]) -> list[str]:
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

    def related_space(view: Any, space_id: str | None) -> str:
        if space_id is not None:
            return granted(view, [space_id])[0]
        grant = granted(view, [])
        if len(grant) != 1:
            raise InvalidInputError(
                f"related needs space_id: view {view.id} grants {', '.join(grant)}"
            )
        return grant[0]

    def route_call(
        route: RouteOffer, view: Any, turn: str, data: Any
    ) -> tuple[BaseModel, Callable[[], dict[str, Any]]]:
        """A route call's validated input and the call itself (nothing has run yet)."""
        if route.id == "runtime/search":
            t = _parse(RuntimeSearchInput, data, route.id)
            return t, lambda: _runtime_search(mem, t.query, t.target, t.limit)
        if route.id == "documents/search":
            d = _parse(DocumentSearchInput, data, route.id)

            def documents() -> dict[str, Any]:
                found = mem.retrievals.get(turn).search_documents(
                    mem.documents, d.query, include_archived=d.include_archived, limit=d.limit
                )
                return found.model_dump(mode="json", exclude_defaults=True)

            return d, documents
        if route.id == "memory-spaces/inspect":
            return _parse(ViewInput, data, route.id), memory_bodies
        if route.id == "memory-spaces/search":
            q = _parse(SpacesSearchInput, data, route.id)
            spaces = granted(view, q.space_ids)

            def search() -> dict[str, Any]:
                found = mem.spaces.search(q.query, limit=q.limit, space_ids=spaces)
                items, cut = bounded(route, list(found.results))
                out: dict[str, Any] = {"query": found.query, "results": items, "truncated": cut}
                if found.hint:
                    out["hint"] = found.hint
                return out

            return q, search
        if route.id == "memory-spaces/related":
            r = _parse(RelatedInput, data, route.id)
            space = related_space(view, r.space_id)

            def related() -> dict[str, Any]:
                result = mem.spaces.related(r.id, space_id=space, depth=r.depth, edge=r.edge)
                items, cut = bounded(route, list(result.results))
                return {"id": r.id, "space_id": space, "results": items, "truncated": cut}

            return r, related
        raise InvalidInputError(f"route {route.id!r} has no executor in this version")

    def run_route(route: RouteOffer, view: Any, turn: str, data: Any) -> dict[str, Any]:
        """Run a route within its per-turn call budget (the same input replays its answer)."""
        parsed, call = route_call(route, view, turn, data)
        budget = mem.retrievals.get(turn).routes
        key = call_key(parsed.model_dump(mode="json"))
        out, replayed = budget.run(route.id, route.max_calls, key, call)
        return {**out, "replayed": True} if replayed else out

    def run_action(action: ActionOffer, data: Any) -> dict[str, Any]:
        if action.id == "runtime/write":
            return write_runtime(_parse(RuntimeMemoryArgs, data, action.id))  # never "search"
        if action.id == "documents/manage":
            return manage_document(_parse(DocumentManageArgs, data, action.id))
        if action.id == "memory-spaces/remember":
            r = _parse(RememberInput, data, action.id)
            return write_memory(
                WriteCandidate(
                    content=r.content,
                    category=r.category,
                    importance=r.importance,
                    tags=tuple(r.tags),
                    entities=tuple(r.entities),
                    memory_body_id=r.space_id,
                )
            )
        if action.id == "memory-spaces/link":
            k = _parse(LinkInput, data, action.id)
            return _memory_receipt(
                mem.spaces.link(
                    k.source_id,
                    k.target_id,
                    space_id=k.space_id,
                    type=k.type,
                    weight=k.weight,
                    reason=k.reason,
                )
            )
        if action.id == "memory-spaces/forget":
            f = _parse(ForgetInput, data, action.id)
            return _memory_receipt(mem.spaces.forget(f.id, space_id=f.space_id))
        if action.id == "memory-spaces/manage":
            m = _parse(SpaceManageInput, data, action.id)
            if m.operation == "create":
                if not m.name or m.description is None:
                    raise InvalidInputError("create needs name and description")
                provider_id, _mode = _chosen_provider(mem, None, f"{m.name}: {m.description}")
                return _space_receipt(
                    mem.spaces.create_space(
                        m.name, m.description, provider_id=provider_id, active=m.active
                    )
                )
            if m.operation == "update":
                if not m.space_id:
                    raise InvalidInputError("update needs space_id")
                return update_space(m.space_id, m.name, m.description, m.active)
            if not m.source_space_ids:
                raise InvalidInputError("merge needs source_space_ids (1 to 20 space ids)")
            return merge_spaces(m.space_id, m.source_space_ids, True)
        raise InvalidInputError(f"action {action.id!r} has no executor in this version")

    def view_route(state: dict[str, Any], **args: Any) -> dict[str, Any]:
        a = ViewRouteArgs(state=state, **args)
        view = _pinned_view(mem, state)
        offer = view.offers(a.route_id)
        if not isinstance(offer, RouteOffer):
            raise InvalidInputError(
                f"{a.route_id!r} is an action of view {view.id}; run it with mnemon_view_action"
            )
        _admit_offer(mem, offer.id)  # the pinned view keeps its offers; the kernel decides now
        return {
            "routeId": offer.id,
            "output": run_route(offer, view, _turn(state), a.input),
        }

    def view_action(state: dict[str, Any], **args: Any) -> dict[str, Any]:
        a = ViewActionArgs(state=state, **args)
        view = _pinned_view(mem, state)
        offer = view.offers(a.offer_id)
        if not isinstance(offer, ActionOffer):
            raise InvalidInputError(
                f"{a.offer_id!r} is a route of view {view.id}; read it with mnemon_view_route"
            )
        _admit_offer(mem, offer.id)
        return {"offerId": offer.id, "receipt": run_action(offer, a.input)}

    def tool(fn: Callable[..., Any], name: str, schema: type[BaseModel], text: str = "") -> Any:
        return StructuredTool.from_function(
            _result(mem, name, fn),
            name=name,
            description=text or schema.__doc__ or "",
            args_schema=schema,
            handle_validation_error=_validation_result,
        )

    if mem.config.strategy == "general":
        tools = [
            tool(view_route, "mnemon_view_route", ViewRouteArgs),
            tool(view_action, "mnemon_view_action", ViewActionArgs),
        ]
    else:
        tools = [
            tool(status, "mnemon_status", NoArgs, "Memory health and size at a glance."),
            tool(
                memory_bodies,
                "mnemon_memory_bodies",
                NoArgs,
                "The Memory Spaces catalog (at most 16 items).",
            ),
            tool(recall, "mnemon_recall", RecallArgs),
            tool(related, "mnemon_related", RelatedArgs),
            tool(document_search, "mnemon_document_search", DocumentSearchArgs),
            tool(runtime_memory, "mnemon_runtime_memory", RuntimeMemoryArgs),
            tool(remember, "mnemon_remember", RememberArgs),
            tool(document_create, "mnemon_document_create", DocumentCreateArgs),
            tool(document_manage, "mnemon_document_manage", DocumentManageArgs),
        ]
        if _offered(mem, "mnemon_link") and _capable(mem, "link"):
            tools.append(tool(link, "mnemon_link", LinkArgs))
        if _offered(mem, "mnemon_forget") and _capable(mem, "forget"):
            tools.append(tool(forget, "mnemon_forget", ForgetArgs))
        tools += [
            tool(memory_body_create, "mnemon_memory_body_create", MemoryBodyCreateArgs),
            tool(memory_body_update, "mnemon_memory_body_update", MemoryBodyUpdateArgs),
            tool(memory_body_merge, "mnemon_memory_body_merge", MemoryBodyMergeArgs),
        ]
    return [t for t in tools if _offered(mem, t.name)]
