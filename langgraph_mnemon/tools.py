"""Model-facing memory tools bound to a host.

Every tool takes a pydantic argument schema and returns compact JSON. Every failure comes back as
an ``{"error": code, "message": ...}`` result, never as an exception that would end the agent
run: typed library errors with their code, arguments with lone surrogates or NUL as
``invalid-input``, anything unexpected as ``internal`` (logged with its traceback and recorded
in ``mem.health``). No tool result contains paths, provider settings or secrets. Write tools
are absent when ``write_enabled`` is false. Under the Layered strategy each operation has its
own tool; under the General strategy the model reads and changes memory only through the offers
of its turn's pinned View (``mnemon_view_route`` / ``mnemon_view_action``).

Example:
    >>> agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from langchain_core.tools import BaseTool, StructuredTool
from langgraph.config import get_config
from langgraph.prebuilt import InjectedState
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from langgraph_mnemon.contracts import CleanStr, safe_text
from langgraph_mnemon.errors import InvalidInputError, MnemonError, ReadOnlyError
from langgraph_mnemon.memory_layers.documents import DocumentMutation
from langgraph_mnemon.memory_layers.mnemos.db import redact_url
from langgraph_mnemon.memory_layers.recall_envelope import clip_text, model_item
from langgraph_mnemon.memory_layers.runtime import RuntimeMutation
from langgraph_mnemon.memory_layers.view import ActionOffer, RouteOffer
from langgraph_mnemon.memory_layers.write_worker import WriteCandidate
from langgraph_mnemon.nodes._guard import DEGRADED_TURN, memory_step

if TYPE_CHECKING:
    from langgraph_mnemon.host import Mnemon
    from langgraph_mnemon.memory_layers.spaces import SpaceRecord

__all__ = ["CATALOG_LIMIT", "VIEW_TOOLS", "WRITE_TOOLS", "build_tools"]

CATALOG_LIMIT = 16
WRITE_TOOLS = frozenset(
    {
        "mnemon_runtime_memory",
        "mnemon_remember",
        "mnemon_document_create",
        "mnemon_document_manage",
        "mnemon_link",
        "mnemon_forget",
        "mnemon_memory_body_create",
        "mnemon_memory_body_update",
        "mnemon_memory_body_merge",
        "mnemon_view_action",
    }
)
VIEW_TOOLS = frozenset({"mnemon_view_route", "mnemon_view_action"})
EdgeType = Literal["temporal", "semantic", "causal", "entity"]


class _NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RuntimeMemoryArgs(BaseModel):
    """Change USER.md (the user) or MEMORY.md (the project) in Runtime Memory."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["add", "replace", "remove"]
    target: Literal["user", "memory"]
    content: CleanStr | None = Field(None, description="The entry text (add, replace).")
    old_text: CleanStr | None = Field(
        None, description="A short text found in exactly one entry (replace, remove)."
    )
    importance: Literal["critical", "normal", "low"] | None = None
    branches: list[CleanStr] | None = Field(
        None, description="MEMORY only: git branches the entry applies to; [] for all."
    )


class RememberArgs(BaseModel):
    """Keep a durable memory in the Memory Spaces (a write worker picks the space)."""

    model_config = ConfigDict(extra="forbid")

    content: CleanStr
    category: Literal["preference", "decision", "fact", "insight", "context", "general"] = "general"
    importance: int = Field(3, ge=1, le=5)
    tags: list[CleanStr] = Field(default_factory=list, max_length=20)
    entities: list[CleanStr] = Field(default_factory=list, max_length=50)
    memory_body_id: CleanStr | None = None


class DocumentCreateArgs(BaseModel):
    """Create one project Document (a substantial record: design, ADR, runbook)."""

    model_config = ConfigDict(extra="forbid")

    title: CleanStr
    content: CleanStr
    description: CleanStr | None = None
    source_paths: list[CleanStr] = Field(default_factory=list)


class RecallArgs(BaseModel):
    """Search long-term memory for durable history or an exact earlier detail. Costs recall
    budget: one query, then at most one materially different refinement per turn."""

    query: CleanStr
    mode: Literal["smart", "keyword", "basic"] = "smart"
    limit: int | None = Field(None, ge=1, le=6)
    memory_body_ids: list[CleanStr] = Field(default_factory=list)
    state: Annotated[dict[str, Any], InjectedState]


class RelatedArgs(BaseModel):
    """Follow links from one memory this turn's recall returned (once per turn)."""

    id: CleanStr
    memory_body_id: CleanStr | None = None
    depth: int = Field(2, ge=1, le=5)
    edge: Literal["temporal", "semantic", "causal", "entity"] | None = None
    state: Annotated[dict[str, Any], InjectedState]


class DocumentSearchArgs(BaseModel):
    """Search project Documents (one search per turn; up to 4 records)."""

    query: CleanStr
    include_archived: bool = False
    limit: int = Field(4, ge=1, le=4)
    state: Annotated[dict[str, Any], InjectedState]


class LinkArgs(BaseModel):
    """Link two stored memories with a typed, weighted edge (both ids exactly as recalled)."""

    model_config = ConfigDict(extra="forbid")

    source_id: CleanStr = Field(min_length=1, max_length=200)
    target_id: CleanStr = Field(min_length=1, max_length=200)
    type: EdgeType = "semantic"
    weight: float = Field(0.5, ge=0, le=1)
    reason: CleanStr | None = Field(None, max_length=1000)
    memory_body_id: CleanStr | None = None


class ForgetArgs(BaseModel):
    """Forget one stored memory by its exact id. Only when the user explicitly asks to forget
    or delete it; never to tidy up on your own."""

    model_config = ConfigDict(extra="forbid")

    id: CleanStr = Field(min_length=1, max_length=200)
    memory_body_id: CleanStr | None = None


class MemoryBodyCreateArgs(BaseModel):
    """Create a Memory Space (a named body of durable memories). The persistence strategy
    decides the provider: in manual mode it is fixed, in automatic mode the host validates your
    choice."""

    model_config = ConfigDict(extra="forbid")

    name: CleanStr = Field(min_length=1, max_length=120)
    description: CleanStr = Field(min_length=1, max_length=500)
    provider_id: CleanStr | None = None
    reason: CleanStr | None = Field(None, max_length=500)
    confidence: float | None = Field(None, ge=0, le=1)


class MemoryBodyUpdateArgs(BaseModel):
    """Rename, describe, activate or deactivate a Memory Space (its data is always kept)."""

    model_config = ConfigDict(extra="forbid")

    memory_body_id: CleanStr = Field(min_length=1)
    name: CleanStr | None = Field(None, min_length=1, max_length=120)
    description: CleanStr | None = Field(None, max_length=500)
    active: bool | None = None


class MemoryBodyMergeArgs(BaseModel):
    """Copy the memories of native Memory Spaces into a native target (non-destructive: the
    sources keep their data). Without a target, the single other active space is used."""

    model_config = ConfigDict(extra="forbid")

    target_memory_body_id: CleanStr | None = None
    source_memory_body_ids: list[CleanStr] = Field(min_length=1, max_length=20)
    deactivate_sources: bool = True


class DocumentManageArgs(BaseModel):
    """Create, update or archive a project Document. create needs title and content; update
    needs id and a field to change; archive needs id (the Document moves to the archive)."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["create", "update", "archive"]
    id: CleanStr | None = None
    title: CleanStr | None = None
    description: CleanStr | None = None
    content: CleanStr | None = None
    source_paths: list[CleanStr] | None = None
    state: Annotated[dict[str, Any], InjectedState]


class ViewRouteArgs(BaseModel):
    """Read memory through a route the current View offers (the MNEMON VIEW ROUTES line), by
    its exact id, with an input matching its inputSchema."""

    route_id: CleanStr = Field(min_length=1)
    input: dict[str, Any]
    state: Annotated[dict[str, Any], InjectedState]


class ViewActionArgs(BaseModel):
    """Change memory through an action the current View offers, by its exact id, with an input
    matching its inputSchema. Only for new user facts or an explicit request to save,
    correct or forget."""

    offer_id: CleanStr = Field(min_length=1)
    input: dict[str, Any]
    state: Annotated[dict[str, Any], InjectedState]


# Inputs of the General strategy's routes and actions (memory_layers/view.py ``_offers``).


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _DocumentSearchInput(_Input):
    query: CleanStr = Field(max_length=2000)
    include_archived: bool = False
    limit: int = Field(4, ge=1, le=4)


class _SpacesSearchInput(_Input):
    query: CleanStr = Field(min_length=1, max_length=2000)
    limit: int = Field(6, ge=1, le=6)
    space_ids: list[CleanStr] = Field(default_factory=list)


class _RelatedInput(_Input):
    id: CleanStr = Field(min_length=1, max_length=200)
    depth: int = Field(2, ge=1, le=5)
    edge: EdgeType | None = None
    space_id: CleanStr | None = None


class _RememberInput(_Input):
    content: CleanStr = Field(min_length=1)
    category: Literal["preference", "decision", "fact", "insight", "context", "general"] = "general"
    importance: int = Field(3, ge=1, le=5)
    tags: list[CleanStr] = Field(default_factory=list, max_length=20)
    entities: list[CleanStr] = Field(default_factory=list, max_length=50)
    space_id: CleanStr | None = None


class _LinkInput(_Input):
    source_id: CleanStr = Field(min_length=1, max_length=200)
    target_id: CleanStr = Field(min_length=1, max_length=200)
    type: EdgeType = "semantic"
    weight: float = Field(0.5, ge=0, le=1)
    reason: CleanStr | None = Field(None, max_length=1000)
    space_id: CleanStr | None = None


class _ForgetInput(_Input):
    id: CleanStr = Field(min_length=1, max_length=200)
    space_id: CleanStr | None = None


class _SpaceManageInput(_Input):
    operation: Literal["create", "update", "merge"]
    space_id: CleanStr | None = None
    name: CleanStr | None = Field(None, min_length=1, max_length=120)
    description: CleanStr | None = Field(None, max_length=500)
    active: bool | None = None
    source_space_ids: list[CleanStr] | None = Field(None, min_length=1, max_length=20)


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


def _space_item(record: SpaceRecord) -> dict[str, Any]:
    """A Memory Space as the model sees it: no config, paths or secrets."""
    return {
        "id": record.id,
        "name": record.name[:120],
        "description": record.description[:500],
        "active": record.active,
        "provider": {"id": record.provider_id, "capabilities": record.capabilities},
    }


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
        with memory_step(mem.health, f"tool:{name}", answers=True) as step:
            try:
                value = fn(**kwargs)
            except ValidationError as exc:  # a value the layer's own model refused
                value = {"error": "invalid-input", "message": f"invalid input: {_problems(exc)}"}
        if step.failed:  # a storage error names its file: the model sees no host paths
            value = step.result()
            if value["error"].startswith("database-"):  # the driver's text names host and port
                value["message"] = (
                    f"the memory database is not available right now ({value['error']}); memory "
                    "is degraded and the agent can go on without it (status shows the details)"
                )
            value["message"] = _without_locations(mem, value["message"])
        return _dumps(value)

    return run


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


def _has_capability(descriptor: Any, capability: str) -> bool:
    if capability == "exact-write":
        return descriptor.write_mode == "exact"
    return bool(getattr(descriptor.capabilities, capability, False))


def _chosen_provider(mem: Mnemon, requested: str | None) -> tuple[str, str]:
    """``(provider id, mode)`` for a new Memory Space under the persistence strategy."""
    strategy = mem.config.persistence_strategy
    if strategy.mode == "manual":
        if requested is not None and requested != strategy.provider_id:
            raise InvalidInputError(
                f"the persistence strategy is manual: new Memory Spaces use provider "
                f"{strategy.provider_id!r}; omit provider_id"
            )
        return strategy.provider_id, "manual"
    chosen = requested or strategy.provider_id
    rules = strategy.rules
    if chosen not in rules.allowed_provider_ids:
        raise InvalidInputError(
            f"provider {chosen!r} is not allowed by the persistence strategy; choose one of "
            f"{', '.join(rules.allowed_provider_ids)}"
        )
    descriptor = mem.spaces.provider(chosen).descriptor
    missing = [c for c in rules.required_capabilities if not _has_capability(descriptor, c)]
    if missing:
        raise InvalidInputError(
            f"provider {chosen!r} lacks the required capabilities {', '.join(missing)}; "
            "choose another allowed provider"
        )
    return chosen, "automatic"


def build_tools(mem: Mnemon) -> list[BaseTool]:
    """The memory tools for ``mem``'s configuration (write tools only when writes are on).

    Under the Layered strategy every operation has its own tool; ``mnemon_link`` /
    ``mnemon_forget`` only when an active Memory Space's provider supports them. Under the
    General strategy the model reaches memory only through the routes and actions of the turn's
    View: ``mnemon_view_route`` and ``mnemon_view_action``.
    """

    def status() -> dict[str, Any]:
        report = mem.status()
        spaces = report.spaces
        out: dict[str, Any] = {
            "healthy": not report.health.degraded,
            "writeEnabled": report.write_enabled,
            "runtime": {
                "user": report.runtime.user.model_dump(),
                "memory": report.runtime.memory.model_dump(),
            },
            "documents": {"active": report.documents.active, "archived": report.documents.archived},
            "memorySpaces": (
                {"total": spaces.total, "active": spaces.active} if spaces is not None else None
            ),
        }
        if report.health.degraded:  # what fails, not the details: those are for the operator
            out["degraded"] = sorted({f"{p.step}: {p.code}" for p in report.health.problems})
        return out

    def memory_bodies() -> dict[str, Any]:
        records = mem.spaces.list_spaces()
        return {
            "items": [_space_item(r) for r in records[:CATALOG_LIMIT]],
            "persistenceStrategy": {
                "mode": mem.config.persistence_strategy.mode,
                "providerId": mem.config.persistence_strategy.provider_id,
            },
            "total": len(records),
            "activeCount": sum(r.active for r in records),
            "omittedCount": max(len(records) - CATALOG_LIMIT, 0),
        }

    def write_runtime(a: RuntimeMemoryArgs) -> dict[str, Any]:
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
        return write_runtime(RuntimeMemoryArgs(**args))

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
        provider_id, mode = _chosen_provider(mem, a.provider_id)
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

    def run_route(route: RouteOffer, view: Any, turn: str, data: Any) -> dict[str, Any]:
        if route.id == "documents/search":
            d = _parse(_DocumentSearchInput, data, route.id)
            found = mem.retrievals.get(turn).search_documents(
                mem.documents, d.query, include_archived=d.include_archived, limit=d.limit
            )
            return found.model_dump(mode="json", exclude_defaults=True)
        if route.id == "memory-spaces/inspect":
            _parse(_Input, data, route.id)
            return memory_bodies()
        if route.id == "memory-spaces/search":
            q = _parse(_SpacesSearchInput, data, route.id)
            spaces = granted(view, q.space_ids)
            found = mem.spaces.search(q.query, limit=q.limit, space_ids=spaces)
            items, cut = bounded(route, list(found.results))
            out: dict[str, Any] = {"query": found.query, "results": items, "truncated": cut}
            if found.hint:
                out["hint"] = found.hint
            return out
        if route.id == "memory-spaces/related":
            r = _parse(_RelatedInput, data, route.id)
            if r.space_id is not None:
                space = granted(view, [r.space_id])[0]
            else:
                grant = granted(view, [])
                if len(grant) != 1:
                    raise InvalidInputError(
                        f"related needs space_id: view {view.id} grants {', '.join(grant)}"
                    )
                space = grant[0]
            result = mem.spaces.related(r.id, space_id=space, depth=r.depth, edge=r.edge)
            items, cut = bounded(route, list(result.results))
            return {"id": r.id, "space_id": space, "results": items, "truncated": cut}
        raise InvalidInputError(f"route {route.id!r} has no executor in this version")

    def run_action(action: ActionOffer, data: Any) -> dict[str, Any]:
        if action.id == "runtime/write":
            return write_runtime(_parse(RuntimeMemoryArgs, data, action.id))
        if action.id == "documents/manage":
            return manage_document(_parse(DocumentManageArgs, data, action.id))
        if action.id == "memory-spaces/remember":
            r = _parse(_RememberInput, data, action.id)
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
            k = _parse(_LinkInput, data, action.id)
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
            f = _parse(_ForgetInput, data, action.id)
            return _memory_receipt(mem.spaces.forget(f.id, space_id=f.space_id))
        if action.id == "memory-spaces/manage":
            m = _parse(_SpaceManageInput, data, action.id)
            if m.operation == "create":
                if not m.name or m.description is None:
                    raise InvalidInputError("create needs name and description")
                provider_id, _mode = _chosen_provider(mem, None)
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
        return {
            "routeId": offer.id,
            "output": run_route(offer, view, _turn(state), a.input),
        }

    def view_action(state: dict[str, Any], **args: Any) -> dict[str, Any]:
        a = ViewActionArgs(state=state, **args)
        if not mem.config.write_enabled:
            raise ReadOnlyError.writes_disabled("memory")
        view = _pinned_view(mem, state)
        offer = view.offers(a.offer_id)
        if not isinstance(offer, ActionOffer):
            raise InvalidInputError(
                f"{a.offer_id!r} is a route of view {view.id}; read it with mnemon_view_route"
            )
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
            tool(status, "mnemon_status", _NoArgs, "Memory health and size at a glance."),
            tool(
                memory_bodies,
                "mnemon_memory_bodies",
                _NoArgs,
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
        if _capable(mem, "link"):
            tools.append(tool(link, "mnemon_link", LinkArgs))
        if _capable(mem, "forget"):
            tools.append(tool(forget, "mnemon_forget", ForgetArgs))
        tools += [
            tool(memory_body_create, "mnemon_memory_body_create", MemoryBodyCreateArgs),
            tool(memory_body_update, "mnemon_memory_body_update", MemoryBodyUpdateArgs),
            tool(memory_body_merge, "mnemon_memory_body_merge", MemoryBodyMergeArgs),
        ]
    if not mem.config.write_enabled:
        tools = [t for t in tools if t.name not in WRITE_TOOLS]
    return tools
