"""The executing run's memory turn, and the one place the tools reach the turn registry.

Every read of the pinned View, the turn's scope or its recall budgets goes through the functions
here (``ctx.turns`` is used nowhere else in the tools).
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_config

from langgraph_mnemon.errors import InvalidInputError, MnemonError, NotFoundError
from langgraph_mnemon.memory_layers.turns import TurnRetrieval, TurnView
from langgraph_mnemon.nodes import DEGRADED_TURN
from langgraph_mnemon.tools._context import ToolContext

__all__ = [
    "is_root_turn",
    "pinned_view",
    "scoped_context",
    "thread_id",
    "turn_id",
    "turn_retrieval",
]


def turn_id(state: dict[str, Any]) -> str:
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


def scoped_context(ctx: ToolContext, state: Any) -> ToolContext:
    """``ctx`` in the scope the call runs in: the one its turn's view pinned, else the run's.

    Tools built on a scoped view (``mem.scoped(...).tools()``) stay in that view's scope.

    Raises:
        ScopeMismatchError: the run names a user other than the authenticated one.
    """
    if not ctx.scope.is_local:
        return ctx
    turn = state.get("mnemon_turn") if isinstance(state, dict) else None
    if isinstance(turn, str) and turn and turn != DEGRADED_TURN:
        try:
            return ctx.scoped(ctx.turns.pinned(turn).scope)
        except NotFoundError:
            pass  # the turn is gone (a restarted process): the run's config says whose it is
    try:
        config = get_config()
    except RuntimeError:
        return ctx  # called outside a run: the context's own scope
    return ctx.scoped(ctx.resolve_scope(config))


def pinned_view(ctx: ToolContext, turn: str) -> TurnView:
    """The View pinned for ``turn`` (its offers stay as they were at the turn's start)."""
    return ctx.turns.pinned(turn)


def turn_retrieval(ctx: ToolContext, turn: str) -> TurnRetrieval:
    """The recall, related and route budgets of ``turn``."""
    return ctx.turns.retrieval(turn)


def is_root_turn(ctx: ToolContext, turn: str) -> bool:
    """Whether ``turn`` belongs to the root agent (child agents do not archive Documents)."""
    return bool(ctx.turns.scope(turn).root)


def thread_id() -> str | None:
    """The thread id of the executing run, when the tool runs inside one."""
    try:
        config = get_config()
    except RuntimeError:
        return None
    thread = (config.get("configurable") or {}).get("thread_id")
    return str(thread)[:200] if thread else None
