"""MEMORY.md archival as a LangGraph state graph.

plan (asks ``runtime`` ``maintenance`` and ``write``) → (fits now? apply) → destinations
(only when the kernel admits an automatic ``memory_spaces`` write) → none: keep what fits,
archive the rest locally → one or several: route (planner model only when several) → write
every entry verbatim and require committed receipts → keep hot entries by importance → commit
under the plan revision. An entry whose destination failed is archived locally when it leaves
hot memory, and the receipt's ``outcome`` is ``partial`` with ``steps`` naming the failed space.
A failure before the commit leaves Runtime Memory as it was; durable copies already written
stay as safe duplicates.
"""

from __future__ import annotations

from functools import partial
from typing import TypedDict

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_mnemon.contracts import StepOutcome
from langgraph_mnemon.memory_layers.runtime import (
    CompactedEntry,
    MaintenancePlan,
    RuntimeMemory,
    RuntimeMutation,
    RuntimeReceipt,
)
from langgraph_mnemon.memory_layers.spaces import MemorySpaces, SpaceRecord
from langgraph_mnemon.nodes import memory_archival, unless_error, user_compaction

__all__ = ["ArchivalState", "build_memory_archival_graph"]


class ArchivalState(TypedDict, total=False):
    """Input: ``request``. Output: ``receipt`` or ``error``, plus ``copies`` written and the
    destination ``steps``."""

    request: RuntimeMutation
    plan: MaintenancePlan
    destinations: list[SpaceRecord]
    routes: dict[int, str]
    routed_by: str
    copies: dict[int, str]
    steps: tuple[StepOutcome, ...]
    compacted: list[CompactedEntry]
    receipt: RuntimeReceipt
    error: str


def _after_plan(state: ArchivalState) -> str:
    if state.get("error"):
        return END
    return "destinations" if state["plan"].requires_maintenance else "apply"


def _after_destinations(state: ArchivalState) -> str:
    if state.get("error"):
        return END
    return "route" if state["destinations"] else "commit"


def build_memory_archival_graph(
    runtime: RuntimeMemory, spaces: MemorySpaces, model: BaseChatModel | None = None
) -> CompiledStateGraph:
    """Compile the MEMORY archival graph; ``model=None`` routes deterministically.

    Args:
        runtime: Runtime Memory (planned, committed under the plan's revision).
        spaces: the Memory Spaces that may take durable copies of archived entries.
        model: the archive planner, asked only when several spaces are eligible.

    Returns:
        The compiled graph: ``receipt`` (``outcome`` ``partial`` when a destination failed)
        or ``error`` with Runtime Memory as it was.

    Example:
        >>> graph = build_memory_archival_graph(mem.runtime, mem.spaces)
        >>> graph.invoke({"request": RuntimeMutation(action="add", target="memory",
        ...                                          content="CI runs on every push.")})
    """
    memory = {"runtime_memory": runtime}
    graph = StateGraph(ArchivalState)
    graph.add_node("plan", partial(user_compaction.plan_maintenance, **memory))
    graph.add_node("apply", partial(user_compaction.apply_directly, **memory))
    graph.add_node("destinations", partial(memory_archival.find_destinations, spaces=spaces))
    graph.add_node("route", partial(memory_archival.plan_routes, model=model))
    graph.add_node("write", partial(memory_archival.write_copies, spaces=spaces))
    graph.add_node("commit", partial(user_compaction.commit, **memory))
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", _after_plan, ["destinations", "apply", END])
    graph.add_conditional_edges("destinations", _after_destinations, ["route", "commit", END])
    graph.add_conditional_edges("route", unless_error("write"), ["write", END])
    graph.add_conditional_edges("write", unless_error("commit"), ["commit", END])
    graph.add_edge("apply", END)
    graph.add_edge("commit", END)
    return graph.compile(name="mnemon_memory_archival")
