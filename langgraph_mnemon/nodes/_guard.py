"""The memory-step guard bound to LangGraph's control flow: used by the middleware, the turn
subgraph, the memory tools and idle review, so a failing memory step never ends an agent run.

The degrade-and-record logic itself lives in :mod:`langgraph_mnemon.memory_layers.health`
(plain Python); this module only adds which exceptions are LangGraph control flow.
"""

from __future__ import annotations

from langgraph.errors import GraphBubbleUp

from langgraph_mnemon.memory_layers.health import HealthRecord, MemoryStep

__all__ = ["CONTROL_FLOW", "DEGRADED_TURN", "memory_step"]

CONTROL_FLOW: tuple[type[BaseException], ...] = (GraphBubbleUp,)
"""Interrupts, ``Command(graph=PARENT)`` and drains travel as exceptions: never swallow them."""

DEGRADED_TURN = "mnemon:degraded"
"""``mnemon_turn`` after a begin that failed: the end step knows there is nothing to end, and
memory tools answer that memory is unavailable this turn instead of asking for a middleware."""


def memory_step(health: HealthRecord, step: str, *, answers: bool = False) -> MemoryStep:
    """Guard one memory step: failures are logged, recorded in ``health`` and swallowed.

    Example:
        >>> with memory_step(mem.health, "end") as step:
        ...     update = end_turn(...)
        >>> if step.failed:
        ...     update = []   # the agent's messages stay untouched
    """
    return health.guard(step, passthrough=CONTROL_FLOW, answers=answers)
