"""Memory Space recall tools of the Layered strategy, within the turn's recall envelope."""

from __future__ import annotations

from typing import Any

from langgraph_mnemon.tools._args import RecallArgs, RelatedArgs
from langgraph_mnemon.tools._context import ToolContext
from langgraph_mnemon.tools._turns import turn_id, turn_retrieval

__all__ = ["recall", "related"]


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
