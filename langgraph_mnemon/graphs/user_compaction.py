"""USER.md capacity maintenance as a LangGraph state graph.

plan (asks ``runtime`` ``maintenance`` and ``write``) → (fits now? apply) → propose (model, or
the heuristic with none) → validate (every entry covered) → commit. Without a model only
duplicates and near-duplicates merge; when that leaves no room the run ends with ``error`` (the
entries to shorten or remove) and nothing moved. Any failure ends the run with ``error`` set and
every file as it was. USER content never leaves the local root: the compactor sees it and has no
tools but its result tool.
"""

from __future__ import annotations

from functools import partial
from typing import TypedDict

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
from langgraph_mnemon.nodes import unless_error
from langgraph_mnemon.nodes import user_compaction as nodes

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


def _after_plan(state: CompactionState) -> str:
    if state.get("error"):
        return END
    return "propose" if state["plan"].requires_maintenance else "apply"


def build_user_compaction_graph(
    runtime: RuntimeMemory, model: BaseChatModel | None = None
) -> CompiledStateGraph:
    """Compile the USER compaction graph over ``runtime``; ``model=None`` uses the heuristic.

    Args:
        runtime: Runtime Memory (planned, committed under the plan's revision).
        model: the compactor (sees USER content, has no tool but its result tool); None
            merges duplicates and near-duplicates only.

    Returns:
        The compiled graph: ``receipt``, or ``error`` with every file as it was.

    Example:
        >>> graph = build_user_compaction_graph(mem.runtime)
        >>> out = graph.invoke({"request": RuntimeMutation(action="add", target="user",
        ...                                                content="Prefers metric units.")})
        >>> out["receipt"].status
        'committed'
    """
    memory = {"runtime_memory": runtime}
    graph = StateGraph(CompactionState)
    graph.add_node("plan", partial(nodes.plan_maintenance, **memory))
    graph.add_node("apply", partial(nodes.apply_directly, **memory))
    graph.add_node("propose", partial(nodes.propose, model=model))
    graph.add_node("validate", nodes.validate)
    graph.add_node("commit", partial(nodes.commit, **memory))
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", _after_plan, ["propose", "apply", END])
    graph.add_conditional_edges("propose", unless_error("validate"), ["validate", END])
    graph.add_conditional_edges("validate", unless_error("commit"), ["commit", END])
    graph.add_edge("apply", END)
    graph.add_edge("commit", END)
    return graph.compile(name="mnemon_user_compaction")
