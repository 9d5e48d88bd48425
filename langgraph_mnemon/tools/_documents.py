"""Project Document tools: create, manage (create / update / archive) and search."""

from __future__ import annotations

from typing import Any

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.documents import DocumentMutation, DocumentReceipt
from langgraph_mnemon.tools._args import DocumentCreateArgs, DocumentManageArgs, DocumentSearchArgs
from langgraph_mnemon.tools._context import ToolContext
from langgraph_mnemon.tools._turns import is_root_turn, thread_id, turn_id, turn_retrieval

__all__ = ["document_create", "document_search", "manage_document", "search_documents"]


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
