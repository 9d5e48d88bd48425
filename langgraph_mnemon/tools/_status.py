"""The management reads: memory status and the Memory Spaces catalog (always offered)."""

from __future__ import annotations

from typing import Any

from langgraph_mnemon.tools._args import NoArgs
from langgraph_mnemon.tools._context import ToolContext
from langgraph_mnemon.tools._results import without_locations
from langgraph_mnemon.tools._shapes import space_item

__all__ = ["CATALOG_LIMIT", "catalog", "status"]

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
