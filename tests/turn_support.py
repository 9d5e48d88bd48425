"""The hand-built turn graph the tests share: the memory turn subgraph around an agent node.

``memory_begin`` (``mem.turn_graph()``) → ``agent`` → (``tools`` ↔ ``agent`` when tools are
given) → ``memory_end``, as README's "A hand-built graph" shows it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langgraph_mnemon import Mnemon
from langgraph_mnemon.graphs import MnemonTurnState


def memory_graph(
    mem: Mnemon,
    agent: Callable[..., Any],
    *,
    tools: Sequence[Any] = (),
    checkpointer: Any = None,
    context_schema: type | None = None,
) -> Any:
    """The compiled turn graph around ``agent`` (``checkpointer``: the host's by default)."""
    builder = StateGraph(MnemonTurnState, context_schema=context_schema)
    builder.add_node("memory_begin", mem.turn_graph())
    builder.add_node("agent", agent)
    builder.add_node("memory_end", mem.turn_graph())
    builder.add_edge(START, "memory_begin")
    builder.add_edge("memory_begin", "agent")
    if tools:
        builder.add_node("tools", ToolNode(list(tools)))
        route = {"tools": "tools", END: "memory_end"}
        builder.add_conditional_edges("agent", tools_condition, route)
        builder.add_edge("tools", "agent")
    else:
        builder.add_edge("agent", "memory_end")
    builder.add_edge("memory_end", END)
    return builder.compile(checkpointer=checkpointer or mem.checkpointer())
