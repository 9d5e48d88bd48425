"""Runtime Memory tools: change USER.md / MEMORY.md entries, or search them (local only)."""

from __future__ import annotations

from typing import Any

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.kernel import Channel, Layer
from langgraph_mnemon.memory_layers.runtime import RuntimeMutation
from langgraph_mnemon.memory_layers.turns import RUNTIME_SEARCH_EVIDENCE, clip_text
from langgraph_mnemon.tools._args import RuntimeMemoryArgs
from langgraph_mnemon.tools._context import ToolContext

__all__ = ["runtime_channel", "runtime_memory", "runtime_search", "write_runtime"]


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
