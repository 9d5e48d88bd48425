"""The Layered strategy's model-facing tools: one function per tool, grouped by layer.

Each function takes the host context and the tool's checked arguments and returns the tool's
JSON result. In order: the management reads (``mnemon_status``, the Memory Spaces catalog),
Runtime Memory (change or search USER.md / MEMORY.md entries, local only), project Documents
(create, manage, search within the turn's budget), Memory Space recall within the turn's recall
envelope, Memory Space writes (remember through the write worker, link, forget), Memory Space
management (create placed by the persistence strategy, update, merge) and ``mnemon_task`` (the
model curates its task memory). The General strategy's routes and actions (:mod:`._view`) call
the same functions, so a Layered tool and its General action cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_config

from langgraph_mnemon.adapters.placement import model_chooser
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.documents import DocumentMutation, DocumentReceipt
from langgraph_mnemon.memory_layers.kernel import Channel, Layer
from langgraph_mnemon.memory_layers.runtime import RuntimeMutation
from langgraph_mnemon.memory_layers.spaces import place
from langgraph_mnemon.memory_layers.turns import (
    RUNTIME_SEARCH_EVIDENCE,
    ForgetInput,
    LinkInput,
    RememberInput,
    SpaceManageInput,
    clip_text,
)
from langgraph_mnemon.memory_layers.write_worker import WriteCandidate
from langgraph_mnemon.tools._args import (
    DocumentCreateArgs,
    DocumentManageArgs,
    DocumentSearchArgs,
    ForgetArgs,
    LinkArgs,
    MemoryBodyCreateArgs,
    MemoryBodyMergeArgs,
    MemoryBodyUpdateArgs,
    NoArgs,
    RecallArgs,
    RelatedArgs,
    RememberArgs,
    RuntimeMemoryArgs,
    TaskArgs,
)
from langgraph_mnemon.tools._context import (
    ToolContext,
    is_root_turn,
    thread_id,
    turn_id,
    turn_retrieval,
)
from langgraph_mnemon.tools._results import (
    memory_receipt,
    space_item,
    space_receipt,
    without_locations,
)

__all__ = [
    "CATALOG_LIMIT",
    "catalog",
    "document_create",
    "document_search",
    "forget",
    "link",
    "manage_document",
    "manage_spaces",
    "memory_body_create",
    "memory_body_merge",
    "memory_body_update",
    "merge_spaces",
    "recall",
    "related",
    "remember",
    "runtime_channel",
    "runtime_memory",
    "runtime_search",
    "search_documents",
    "status",
    "task",
    "update_space",
    "write_runtime",
]


CATALOG_LIMIT = 16
"""At most this many Memory Spaces in one catalog answer (the rest are counted)."""


def status(ctx: ToolContext, _args: NoArgs | None = None) -> dict[str, Any]:
    """``mnemon_status``: the real state (``ctx.status()``), not a hard-coded one."""
    report = ctx.status()
    rt, docs = report.runtime, report.documents  # None: unreadable now (see "degraded")
    out: dict[str, Any] = {
        "healthy": report.healthy,
        "writeEnabled": report.write_enabled,
        "runtime": None
        if rt is None
        else {"user": rt.user.model_dump(), "memory": rt.memory.model_dump()},
        "documents": None if docs is None else {"active": docs.active, "archived": docs.archived},
        "memorySpaces": None if report.spaces is None else _spaces_status(ctx, report.spaces),
    }
    if report.health.degraded:  # what fails, not the details: those are for the operator
        out["degraded"] = sorted({f"{p.step}: {p.code}" for p in report.health.problems})
    return out


def _spaces_status(ctx: ToolContext, spaces: Any) -> dict[str, Any]:
    """The Memory Spaces part of the status: counts and each provider's state."""
    return {
        "total": spaces.total,
        "active": spaces.active,
        "unreachable": list(spaces.unreachable),
        "providers": [
            {"id": p.id, "state": p.state}
            | ({"message": without_locations(ctx, p.message)} if p.state != "healthy" else {})
            for p in spaces.provider_health
        ],
    }


def catalog(ctx: ToolContext, _args: Any = None) -> dict[str, Any]:
    """``mnemon_memory_bodies`` (and the ``memory-spaces/inspect`` route): the catalog."""
    records = ctx.spaces.list_spaces()
    reachable = {s.space_id: s.reachable for s in ctx.spaces.health().spaces}
    return {
        "items": [space_item(r, reachable.get(r.id, False)) for r in records[:CATALOG_LIMIT]],
        "persistenceStrategy": {
            "mode": ctx.config.persistence_strategy.mode,
            "providerId": ctx.config.persistence_strategy.provider_id,
        },
        "total": len(records),
        "activeCount": sum(r.active for r in records),
        "omittedCount": max(len(records) - CATALOG_LIMIT, 0),
    }


def runtime_channel(args: dict[str, Any]) -> tuple[Layer, Channel]:
    """The channel one ``mnemon_runtime_memory`` call works on: a search is a recall."""
    return ("runtime", "recall" if args.get("action") == "search" else "write")


def runtime_memory(ctx: ToolContext, a: RuntimeMemoryArgs) -> dict[str, Any]:
    """``mnemon_runtime_memory``: add / replace / remove an entry, or search the entries."""
    if a.action == "search":
        if not a.query or not a.query.strip():
            raise InvalidInputError("search needs a query: say what to look for")
        return runtime_search(ctx, a.query, a.target, a.limit or RUNTIME_SEARCH_EVIDENCE[0])
    return write_runtime(ctx, a)


def write_runtime(ctx: ToolContext, a: RuntimeMemoryArgs) -> dict[str, Any]:
    """Add, replace or remove one entry (also the ``runtime/write`` action)."""
    if a.action == "search":
        raise InvalidInputError("search is a read: use the runtime/search route")
    branches = a.branches if a.target == "memory" else None
    receipt = ctx.write_runtime(
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


def runtime_search(ctx: ToolContext, query: str, target: str, limit: int) -> dict[str, Any]:
    """Runtime Memory entries matching ``query`` (archived ones included), within the
    runtime/search evidence bounds; local only, never a Memory Space."""
    matches = ctx.runtime.search(query, target=target, limit=limit)  # type: ignore[arg-type]
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


def document_create(ctx: ToolContext, a: DocumentCreateArgs) -> dict[str, Any]:
    """``mnemon_document_create``: one new project Document."""
    receipt = ctx.documents.create(
        a.title, a.content, description=a.description, source_paths=a.source_paths
    )
    doc = receipt.document
    return {"status": receipt.status, "message": receipt.message, "id": doc.id}


def manage_document(ctx: ToolContext, a: DocumentManageArgs) -> dict[str, Any]:
    """``mnemon_document_manage`` (and the ``documents/manage`` action); the result names the
    Documents the write moved to the archive to stay within the active budget."""
    before = {d.id: d.title for d in ctx.documents.list("active")}
    receipt = _archive(ctx, a) if a.action == "archive" else _write(ctx, a)
    return _manage_result(receipt, before, {d.id for d in ctx.documents.list("active")})


def _archive(ctx: ToolContext, a: DocumentManageArgs) -> DocumentReceipt:
    if not a.id:
        raise InvalidInputError("archive needs the id of an active Document")
    turn = a.state.get("mnemon_turn")
    if turn and not is_root_turn(ctx, turn):
        raise InvalidInputError(
            "only the root agent archives Documents; report back and let it decide"
        )
    return ctx.archive_document(a.id)


def _write(ctx: ToolContext, a: DocumentManageArgs) -> DocumentReceipt:
    """A create or update through the host (an overflow archives the oldest Documents)."""
    if a.action == "create" and not (a.title and a.content):
        raise InvalidInputError("create needs a title and content")
    if a.action == "update":
        if not a.id:
            raise InvalidInputError("update needs the id of an active Document")
        if (a.title, a.description, a.content, a.source_paths) == (None,) * 4:
            raise InvalidInputError(
                "update needs at least one of title, description, content, source_paths"
            )
    thread = thread_id()
    return ctx.write_document(
        DocumentMutation(
            action=a.action,  # type: ignore[arg-type]
            id=a.id if a.action == "update" else None,
            title=a.title,
            description=a.description,
            content=a.content,
            source_paths=tuple(a.source_paths) if a.source_paths is not None else None,
            session_ids=(thread,) if thread else None,
        )
    )


def _manage_result(
    receipt: DocumentReceipt, before: dict[str, str], after: set[str]
) -> dict[str, Any]:
    doc = receipt.document
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


def document_search(ctx: ToolContext, a: DocumentSearchArgs) -> dict[str, Any]:
    """``mnemon_document_search``: within the turn's document-search budget."""
    return search_documents(ctx, turn_id(a.state), a.query, a.include_archived, a.limit)


def search_documents(
    ctx: ToolContext, turn: str, query: str, include_archived: bool, limit: int
) -> dict[str, Any]:
    """Active (or also archived) Documents matching ``query``, charged to ``turn``'s budget."""
    found = turn_retrieval(ctx, turn).search_documents(
        ctx.documents, query, include_archived=include_archived, limit=limit
    )
    return found.model_dump(mode="json", exclude_defaults=True)


def recall(ctx: ToolContext, a: RecallArgs) -> dict[str, Any]:
    """``mnemon_recall``: one query (and one refinement) per turn across the granted spaces."""
    evidence = turn_retrieval(ctx, turn_id(a.state)).recall(
        ctx.spaces, a.query, limit=a.limit, space_ids=a.space_ids or None, mode=a.mode
    )
    return evidence.to_model()


def related(ctx: ToolContext, a: RelatedArgs) -> dict[str, Any]:
    """``mnemon_related``: the links of one memory this turn's recall returned."""
    evidence = turn_retrieval(ctx, turn_id(a.state)).related(
        ctx.spaces, a.id, memory_body_id=a.space_id, depth=a.depth, edge=a.edge
    )
    return evidence.to_model()


def remember(ctx: ToolContext, a: RememberArgs | RememberInput) -> dict[str, Any]:
    """``mnemon_remember`` / ``memory-spaces/remember``: the write worker picks the space
    unless the call names one."""
    receipt = ctx.remember(
        WriteCandidate(
            content=a.content,
            category=a.category,
            importance=a.importance,
            tags=tuple(a.tags),
            entities=tuple(a.entities),
            memory_body_id=a.space_id,
        )
    )
    return receipt.model_dump(mode="json", include={"status", "message", "memory_ids"})


def link(ctx: ToolContext, a: LinkArgs | LinkInput) -> dict[str, Any]:
    """``mnemon_link`` / ``memory-spaces/link``: a typed, weighted edge between two memories."""
    receipt = ctx.spaces.link(
        a.source_id,
        a.target_id,
        space_id=a.space_id,
        type=a.type,
        weight=a.weight,
        reason=a.reason,
    )
    return memory_receipt(receipt)


def forget(ctx: ToolContext, a: ForgetArgs | ForgetInput) -> dict[str, Any]:
    """``mnemon_forget`` / ``memory-spaces/forget``: one memory, by its exact id."""
    return memory_receipt(ctx.spaces.forget(a.id, space_id=a.space_id))


def chosen_provider(ctx: ToolContext, requested: str | None, purpose: str) -> tuple[str, str]:
    """``(provider id, mode)`` for a new Memory Space under the persistence strategy (the
    placement service; the worker model chooses among several eligible providers)."""
    placement = place(
        ctx.config.persistence_strategy,
        {pid: provider.descriptor for pid, provider in ctx.spaces.providers.items()},
        requested=requested,
        purpose=purpose,
        chooser=model_chooser(ctx.worker_model),
    )
    return placement.provider_id, placement.mode


def memory_body_create(ctx: ToolContext, a: MemoryBodyCreateArgs) -> dict[str, Any]:
    """``mnemon_memory_body_create``: the result also says how the provider was chosen."""
    provider_id, mode = chosen_provider(ctx, a.provider_id, f"{a.name}: {a.description}")
    out = space_receipt(ctx.spaces.create_space(a.name, a.description, provider_id=provider_id))
    choice: dict[str, Any] = {"mode": mode, "providerId": provider_id}
    if a.reason:
        choice["reason"] = a.reason
    if a.confidence is not None:
        choice["confidence"] = a.confidence
    out["providerChoice"] = choice
    return out


def memory_body_update(ctx: ToolContext, a: MemoryBodyUpdateArgs) -> dict[str, Any]:
    """``mnemon_memory_body_update``."""
    return update_space(ctx, a.space_id, a.name, a.description, a.active)


def memory_body_merge(ctx: ToolContext, a: MemoryBodyMergeArgs) -> dict[str, Any]:
    """``mnemon_memory_body_merge``."""
    return merge_spaces(ctx, a.target_space_id, a.source_space_ids, a.deactivate_sources)


def update_space(
    ctx: ToolContext, space_id: str, name: str | None, description: str | None, active: Any
) -> dict[str, Any]:
    """Rename, describe, activate or deactivate one Memory Space (at least one change)."""
    if (name, description, active) == (None, None, None):
        raise InvalidInputError("update needs at least one of name, description, active")
    return space_receipt(
        ctx.spaces.update_space(space_id, name=name, description=description, active=active)
    )


def merge_spaces(
    ctx: ToolContext, target: str | None, sources: list[str], deactivate: bool
) -> dict[str, Any]:
    """Copy ``sources`` into ``target``; without one, the single other active space."""
    if target is None:
        others = [r.id for r in ctx.spaces.list_spaces(active=True) if r.id not in sources]
        if len(others) != 1:
            raise InvalidInputError(
                "merge needs target_memory_body_id: "
                f"{len(others)} other active Memory Spaces could be the target"
            )
        target = others[0]
    return space_receipt(ctx.spaces.merge_spaces(target, sources, deactivate_sources=deactivate))


def manage_spaces(ctx: ToolContext, m: SpaceManageInput) -> dict[str, Any]:
    """The ``memory-spaces/manage`` action: create, update or merge by ``operation``."""
    if m.operation == "create":
        if not m.name or m.description is None:
            raise InvalidInputError("create needs name and description")
        provider_id, _mode = chosen_provider(ctx, None, f"{m.name}: {m.description}")
        return space_receipt(
            ctx.spaces.create_space(m.name, m.description, provider_id=provider_id, active=m.active)
        )
    if m.operation == "update":
        if not m.space_id:
            raise InvalidInputError("update needs space_id")
        return update_space(ctx, m.space_id, m.name, m.description, m.active)
    if not m.source_space_ids:
        raise InvalidInputError("merge needs source_space_ids (1 to 20 space ids)")
    return merge_spaces(ctx, m.space_id, m.source_space_ids, True)


def task(ctx: ToolContext, a: TaskArgs) -> dict[str, Any]:
    """``mnemon_task``: set the goal, add a constraint, record a result or mark the task done.

    Args:
        ctx: the host. a: the checked arguments (action, text).

    Returns:
        The receipt: status, message, action, the node (id, type, content, origin) and the ids
        of goals a new goal superseded.

    Raises:
        InvalidInputError: called outside a run, or a run without a thread id (and without
            ``configurable[mnemos.task_id_key]``). ReadOnlyError: writes are off.

    Example:
        >>> task(mem, TaskArgs(action="set_goal", text="Ship the importer"))["node"]["origin"]
        'model'
    """
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:
        raise InvalidInputError(
            "mnemon_task records the task of an agent run; call it from inside a run"
        ) from None
    task_id = configurable.get(ctx.config.mnemos.task_id_key) or configurable.get("thread_id")
    if not task_id:
        raise InvalidInputError(
            "mnemon_task needs the run's task: run the agent with "
            f"configurable.thread_id (or configurable.{ctx.config.mnemos.task_id_key})"
        )
    receipt = ctx.mnemos.curate(str(task_id), a.action, a.text)
    node = receipt.node
    return {
        "status": receipt.status,
        "message": receipt.message,
        "action": receipt.action,
        "node": {"id": node.id, "type": node.type, "content": node.content, "origin": node.origin},
        "superseded": list(receipt.superseded),
    }
