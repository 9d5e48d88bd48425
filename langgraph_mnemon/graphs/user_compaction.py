"""USER.md capacity maintenance as a LangGraph state graph.

plan (asks ``runtime`` ``maintenance`` and ``write``) → (fits now? apply) → propose (model, or
the heuristic with none) → validate (every entry covered) → commit. Without a model only
duplicates and near-duplicates merge; when that leaves no room the run ends with ``error`` (the
entries to shorten or remove) and nothing moved. Any failure ends the run with ``error`` set and
every file as it was. USER content never leaves the local root: the compactor sees it and has no
tools but its result tool.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_mnemon.memory_layers.runtime import (
    CompactedEntry,
    CompactionProposal,
    MaintenancePlan,
    RuntimeMemory,
    RuntimeMutation,
    RuntimeReceipt,
)
from langgraph_mnemon.nodes import compaction as nodes

__all__ = ["CompactionState", "build_user_compaction_graph"]


class CompactionState(TypedDict, total=False):
    """State of a compaction run. Input: ``request``. Output: ``receipt`` or ``error``."""

    request: RuntimeMutation
    plan: MaintenancePlan
    proposal: CompactionProposal
    heuristic: bool
    budget: int
    compacted: list[CompactedEntry]
    receipt: RuntimeReceipt
    error: str


def _next(after: str) -> Any:
    def route(state: CompactionState) -> str:
        if state.get("error"):
            return END
        if after == "plan":
            return "propose" if state["plan"].requires_maintenance else "apply"
        return after

    return route


def build_user_compaction_graph(
    runtime: RuntimeMemory, model: BaseChatModel | None = None
) -> CompiledStateGraph:
    """Compile the USER compaction graph over ``runtime``; ``model=None`` uses the heuristic.

    Example:
        >>> graph = build_user_compaction_graph(mem.runtime)
        >>> out = graph.invoke({"request": RuntimeMutation(action="add", target="user",
        ...                                                content="Prefers metric units.")})
        >>> out["receipt"].status
        'committed'
    """
    graph = StateGraph(CompactionState)
    graph.add_node("plan", nodes.plan_maintenance(runtime))
    graph.add_node("apply", nodes.apply_directly(runtime))
    graph.add_node("propose", nodes.propose(model))
    graph.add_node("validate", nodes.validate)
    graph.add_node("commit", nodes.commit(runtime))
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", _next("plan"), ["propose", "apply", END])
    graph.add_conditional_edges("propose", _next("validate"), ["validate", END])
    graph.add_conditional_edges("validate", _next("commit"), ["commit", END])
    graph.add_edge("apply", END)
    graph.add_edge("commit", END)
    return graph.compile(name="mnemon_user_compaction")
