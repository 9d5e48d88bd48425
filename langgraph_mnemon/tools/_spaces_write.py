"""Memory Space writes: remember (through the write worker), link and forget.

Each takes the Layered tool's arguments or the General action's input alike: both name the
Memory Space ``space_id`` in Python (the Layered models map their wire name to it).
"""

from __future__ import annotations

from typing import Any

from langgraph_mnemon.memory_layers.turns import ForgetInput, LinkInput, RememberInput
from langgraph_mnemon.memory_layers.write_worker import WriteCandidate
from langgraph_mnemon.tools._args import ForgetArgs, LinkArgs, RememberArgs
from langgraph_mnemon.tools._context import ToolContext
from langgraph_mnemon.tools._shapes import memory_receipt

__all__ = ["forget", "link", "remember"]


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
