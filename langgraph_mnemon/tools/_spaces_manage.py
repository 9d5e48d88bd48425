"""Memory Space management: create (placed by the persistence strategy), update, merge."""

from __future__ import annotations

from typing import Any

from langgraph_mnemon.adapters.placement import model_chooser
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.spaces import place
from langgraph_mnemon.memory_layers.turns import SpaceManageInput
from langgraph_mnemon.tools._args import (
    MemoryBodyCreateArgs,
    MemoryBodyMergeArgs,
    MemoryBodyUpdateArgs,
)
from langgraph_mnemon.tools._context import ToolContext
from langgraph_mnemon.tools._shapes import space_receipt

__all__ = [
    "manage_spaces",
    "memory_body_create",
    "memory_body_merge",
    "memory_body_update",
    "merge_spaces",
    "update_space",
]


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
