"""Document cold archiving as a LangGraph state graph ("index first, move second").

check → fits? apply the pending create/update → else plan the LRU document → no Memory Space
can take a reference: move without one → otherwise summarise (model, or extractive with none),
write and verify the cold reference, then move under the plan's revision → check again.
Manual archiving runs the same path for one named document. Any failure or revision conflict
keeps the document active; a reference written before a conflict stays as a safe duplicate.
"""

from __future__ import annotations

from typing import TypedDict

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_mnemon.memory_layers.documents import (
    ArchivePlan,
    DocumentMutation,
    DocumentReceipt,
    Documents,
)
from langgraph_mnemon.memory_layers.spaces import MemorySpaces, SpaceRecord
from langgraph_mnemon.nodes import cold_archive as nodes
from langgraph_mnemon.nodes._results import unless_error

__all__ = ["DocumentArchiveState", "build_document_archive_graph"]


class DocumentArchiveState(TypedDict, total=False):
    """Input: ``mutation`` (a create/update to make room for) or ``document_id`` (manual).

    Output: ``receipt`` (the mutation's), ``archived`` receipts, or ``error``.
    """

    mutation: DocumentMutation
    document_id: str
    next: str
    rounds: int
    plan: ArchivePlan
    destinations: list[SpaceRecord]
    summary: str
    destination: str
    references: list[str]
    archived: list[DocumentReceipt]
    receipt: DocumentReceipt
    error: str


def _after_check(state: DocumentArchiveState) -> str:
    if state.get("error"):
        return END
    return {"apply": "apply", "archive": "destinations", "done": END}[state["next"]]


def _after_destinations(state: DocumentArchiveState) -> str:
    if state.get("error"):
        return END
    return "summarise" if state["destinations"] else "move_unindexed"


def build_document_archive_graph(
    documents: Documents,
    spaces: MemorySpaces,
    model: BaseChatModel | None = None,
    *,
    max_rounds: int = 8,
) -> CompiledStateGraph:
    """Compile the Document cold-archive graph; ``model=None`` writes an extractive summary.

    Example:
        >>> graph = build_document_archive_graph(mem.documents, mem.spaces)
        >>> graph.invoke({"mutation": DocumentMutation(action="create", title="ADR 7",
        ...                                            content=long_text)})
    """
    graph = StateGraph(DocumentArchiveState)
    graph.add_node("check", nodes.check_capacity(documents, max_rounds))
    graph.add_node("destinations", nodes.find_destinations(spaces))
    graph.add_node("summarise", nodes.summarise(model))
    graph.add_node("reference", nodes.store_reference(documents, spaces))
    graph.add_node("move", nodes.move(documents, indexed=True))
    graph.add_node("move_unindexed", nodes.move(documents, indexed=False))
    graph.add_node("apply", nodes.apply_mutation(documents))
    graph.add_edge(START, "check")
    graph.add_conditional_edges("check", _after_check, ["apply", "destinations", END])
    graph.add_conditional_edges(
        "destinations", _after_destinations, ["summarise", "move_unindexed", END]
    )
    graph.add_conditional_edges("summarise", unless_error("reference"), ["reference", END])
    graph.add_conditional_edges("reference", unless_error("move"), ["move", END])
    graph.add_conditional_edges("move", unless_error("check"), ["check", END])
    graph.add_conditional_edges("move_unindexed", unless_error("check"), ["check", END])
    graph.add_edge("apply", END)
    return graph.compile(name="mnemon_document_archive")
