"""Agent query as a LangGraph state graph: direct search → evidence-only answer → citations.

The answering model has no tools but its result tool and sees only the evidence rows; the host
drops every citation that does not name a real (space id, memory id) pair of that evidence.
The search is Memory Spaces recall: a kernel refusal is raised as it is, before any provider
call.
"""

from __future__ import annotations

from functools import partial
from typing import TypedDict

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_mnemon.memory_layers.agent_query import QueryAnswer
from langgraph_mnemon.memory_layers.spaces import MemoryRecord, MemorySpaces
from langgraph_mnemon.nodes import agent_query as nodes
from langgraph_mnemon.nodes import unless_error

__all__ = ["AgentQueryState", "build_agent_query_graph"]


class AgentQueryState(TypedDict, total=False):
    """Input: ``query`` (and optional ``space_ids``, ``limit``). Output: ``answer`` or ``error``."""

    query: str
    space_ids: list[str]
    limit: int
    evidence: list[MemoryRecord]
    answer: QueryAnswer
    error: str


def build_agent_query_graph(
    spaces: MemorySpaces, model: BaseChatModel | None = None
) -> CompiledStateGraph:
    """Compile the agent-query graph; with ``model=None`` the answer is the evidence itself.

    Args:
        spaces: the Memory Spaces service searched.
        model: the answering model (sees only the evidence, cites by id).

    Returns:
        The compiled graph: ``answer`` (a :class:`QueryAnswer` whose citations name real
        evidence rows), or ``error``.

    Raises:
        ParticipationError: (from ``invoke``) the kernel refused Memory Spaces recall, before
            any provider call.

    Example:
        >>> out = build_agent_query_graph(mem.spaces).invoke({"query": "How do we deploy?"})
        >>> out["answer"].citations
    """
    graph = StateGraph(AgentQueryState)
    graph.add_node("search", partial(nodes.search, spaces=spaces))
    graph.add_node("answer", partial(nodes.answer, model=model))
    graph.add_edge(START, "search")
    graph.add_conditional_edges("search", unless_error("answer"), ["answer", END])
    graph.add_edge("answer", END)
    return graph.compile(name="mnemon_agent_query")
