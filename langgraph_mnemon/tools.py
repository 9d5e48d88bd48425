"""Model-facing memory tools bound to a host.

Every tool takes a pydantic argument schema and returns compact JSON. Library errors come back as
``{"error": code, "message": ...}`` results, never as an exception that would end the agent
run. No tool result contains paths, provider settings or secrets. Write tools are absent when
``write_enabled`` is false.

Example:
    >>> agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import InjectedState
from pydantic import BaseModel, ConfigDict, Field

from langgraph_mnemon.errors import InvalidInputError, MnemonError
from langgraph_mnemon.memory_layers.runtime import RuntimeMutation
from langgraph_mnemon.memory_layers.write_worker import WriteCandidate

if TYPE_CHECKING:
    from langgraph_mnemon.host import Mnemon

__all__ = ["CATALOG_LIMIT", "build_tools"]

CATALOG_LIMIT = 16
WRITE_TOOLS = frozenset({"mnemon_runtime_memory", "mnemon_remember", "mnemon_document_create"})


class _NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RuntimeMemoryArgs(BaseModel):
    """Change USER.md (the user) or MEMORY.md (the project) in Runtime Memory."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["add", "replace", "remove"]
    target: Literal["user", "memory"]
    content: str | None = Field(None, description="The entry text (add, replace).")
    old_text: str | None = Field(
        None, description="A short text found in exactly one entry (replace, remove)."
    )
    importance: Literal["critical", "normal", "low"] | None = None
    branches: list[str] | None = Field(
        None, description="MEMORY only: git branches the entry applies to; [] for all."
    )


class RememberArgs(BaseModel):
    """Keep a durable memory in the Memory Spaces (a write worker picks the space)."""

    model_config = ConfigDict(extra="forbid")

    content: str
    category: Literal["preference", "decision", "fact", "insight", "context", "general"] = "general"
    importance: int = Field(3, ge=1, le=5)
    tags: list[str] = Field(default_factory=list, max_length=20)
    entities: list[str] = Field(default_factory=list, max_length=50)
    memory_body_id: str | None = None


class DocumentCreateArgs(BaseModel):
    """Create one project Document (a substantial record: design, ADR, runbook)."""

    model_config = ConfigDict(extra="forbid")

    title: str
    content: str
    description: str | None = None
    source_paths: list[str] = Field(default_factory=list)


class RecallArgs(BaseModel):
    """Search long-term memory for durable history or an exact earlier detail. Costs recall
    budget: one query, then at most one materially different refinement per turn."""

    query: str
    mode: Literal["smart", "keyword", "basic"] = "smart"
    limit: int | None = Field(None, ge=1, le=6)
    memory_body_ids: list[str] = Field(default_factory=list)
    state: Annotated[dict[str, Any], InjectedState]


class RelatedArgs(BaseModel):
    """Follow links from one memory this turn's recall returned (once per turn)."""

    id: str
    memory_body_id: str | None = None
    depth: int = Field(2, ge=1, le=5)
    edge: Literal["temporal", "semantic", "causal", "entity"] | None = None
    state: Annotated[dict[str, Any], InjectedState]


class DocumentSearchArgs(BaseModel):
    """Search project Documents (one search per turn; up to 4 records)."""

    query: str
    include_archived: bool = False
    limit: int = Field(4, ge=1, le=4)
    state: Annotated[dict[str, Any], InjectedState]


def _retrieval(mem: Mnemon, state: dict[str, Any]) -> Any:
    turn = state.get("mnemon_turn") if isinstance(state, dict) else None
    if not turn:
        raise InvalidInputError(
            "this tool needs a pinned memory turn: run the agent with mem.middleware() "
            "or put mem.turn_graph() around the agent node"
        )
    return mem.retrievals.get(turn)


def _result(fn: Callable[..., Any]) -> Callable[..., str]:
    """Run a tool body; a library error becomes a structured result, not a crash."""

    def run(**kwargs: Any) -> str:
        try:
            value = fn(**kwargs)
        except MnemonError as exc:
            value = exc.to_dict()
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    return run


def build_tools(mem: Mnemon) -> list[BaseTool]:
    """The memory tools for ``mem``'s configuration (write tools only when writes are on)."""

    def status() -> dict[str, Any]:
        report = mem.status()
        spaces = report.spaces
        return {
            "healthy": True,
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

    def memory_bodies() -> dict[str, Any]:
        records = mem.spaces.list_spaces()
        items = [
            {
                "id": r.id,
                "name": r.name[:120],
                "description": r.description[:500],
                "active": r.active,
                "provider": {"id": r.provider_id, "capabilities": r.capabilities},
            }
            for r in records[:CATALOG_LIMIT]
        ]
        return {
            "items": items,
            "total": len(records),
            "activeCount": sum(r.active for r in records),
            "omittedCount": max(len(records) - CATALOG_LIMIT, 0),
        }

    def runtime_memory(**args: Any) -> dict[str, Any]:
        a = RuntimeMemoryArgs(**args)
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

    def remember(**args: Any) -> dict[str, Any]:
        a = RememberArgs(**args)
        candidate = WriteCandidate(
            content=a.content,
            category=a.category,
            importance=a.importance,
            tags=tuple(a.tags),
            entities=tuple(a.entities),
            memory_body_id=a.memory_body_id,
        )
        receipt = mem.remember(candidate)
        return receipt.model_dump(mode="json", include={"status", "message", "memory_ids"})

    def document_create(**args: Any) -> dict[str, Any]:
        a = DocumentCreateArgs(**args)
        receipt = mem.documents.create(
            a.title, a.content, description=a.description, source_paths=a.source_paths
        )
        doc = receipt.document
        return {"status": receipt.status, "message": receipt.message, "id": doc.id}

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

    tools = [
        StructuredTool.from_function(
            _result(status),
            name="mnemon_status",
            description="Memory health and size at a glance.",
            args_schema=_NoArgs,
        ),
        StructuredTool.from_function(
            _result(memory_bodies),
            name="mnemon_memory_bodies",
            description="The Memory Spaces catalog (at most 16 items).",
            args_schema=_NoArgs,
        ),
        StructuredTool.from_function(
            _result(recall),
            name="mnemon_recall",
            description=RecallArgs.__doc__ or "",
            args_schema=RecallArgs,
        ),
        StructuredTool.from_function(
            _result(related),
            name="mnemon_related",
            description=RelatedArgs.__doc__ or "",
            args_schema=RelatedArgs,
        ),
        StructuredTool.from_function(
            _result(document_search),
            name="mnemon_document_search",
            description=DocumentSearchArgs.__doc__ or "",
            args_schema=DocumentSearchArgs,
        ),
        StructuredTool.from_function(
            _result(runtime_memory),
            name="mnemon_runtime_memory",
            description=RuntimeMemoryArgs.__doc__ or "",
            args_schema=RuntimeMemoryArgs,
        ),
        StructuredTool.from_function(
            _result(remember),
            name="mnemon_remember",
            description=RememberArgs.__doc__ or "",
            args_schema=RememberArgs,
        ),
        StructuredTool.from_function(
            _result(document_create),
            name="mnemon_document_create",
            description=DocumentCreateArgs.__doc__ or "",
            args_schema=DocumentCreateArgs,
        ),
    ]
    if not mem.config.write_enabled:
        tools = [t for t in tools if t.name not in WRITE_TOOLS]
    return tools
