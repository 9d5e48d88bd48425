"""Document cold archiving as a LangGraph state graph ("index first, move second").

check → fits? apply the pending create/update → else plan the LRU document → no Memory Space
can take a reference: move without one → otherwise summarise (model, or extractive with none),
write and verify the cold reference, then move under the plan's revision → check again.
Manual archiving runs the same path for one named document. Any failure or revision conflict
keeps the document active; a reference written before a conflict stays as a safe duplicate.
Every reference write, move and the pending mutation is one step; the run ends in ``finish``,
which sets ``outcome`` (and puts ``outcome`` + ``steps`` on the returned receipt): a run that
archived some documents and then failed is ``partial``, never a success.
"""

from __future__ import annotations

from functools import partial
from typing import TypedDict

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_mnemon.contracts import Outcome, StepOutcome
from langgraph_mnemon.memory_layers.documents import (
    ArchivePlan,
    DocumentMutation,
    DocumentReceipt,
    Documents,
)
from langgraph_mnemon.memory_layers.spaces import MemorySpaces, SpaceRecord
from langgraph_mnemon.nodes import document_archive as nodes
from langgraph_mnemon.nodes import unless_error

__all__ = ["DocumentArchiveState", "build_document_archive_graph"]


class DocumentArchiveState(TypedDict, total=False):
    """Input: ``mutation`` (a create/update to make room for) or ``document_id`` (manual).

    Output: ``receipt`` (the mutation's), ``archived`` receipts, or ``error``; always
    ``outcome`` and ``steps``.
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
    steps: list[StepOutcome]
    outcome: Outcome


def _after_check(state: DocumentArchiveState) -> str:
    if state.get("error"):
        return "finish"
    return {"apply": "apply", "archive": "destinations", "done": "finish"}[state["next"]]


def _after_destinations(state: DocumentArchiveState) -> str:
    if state.get("error"):
        return "finish"
    return "summarise" if state["destinations"] else "move_unindexed"


def build_document_archive_graph(
    documents: Documents,
    spaces: MemorySpaces,
    model: BaseChatModel | None = None,
    *,
    max_rounds: int = 8,
) -> CompiledStateGraph:
    """Compile the Document cold-archive graph; ``model=None`` writes an extractive summary.

    Args:
        documents: the Documents service (capacity plan, archive, the pending mutation).
        spaces: the Memory Spaces that may hold a cold reference.
        model: the archive worker (summary and space); None writes an extractive summary.
        max_rounds: documents one run may archive at most.

    Returns:
        The compiled graph: ``receipt`` (the mutation's) or ``archived`` receipts, or
        ``error``; always ``outcome`` and ``steps``.

    Raises:
        ParticipationError: (from ``invoke``) the kernel refused a step, before its I/O.

    Example:
        >>> graph = build_document_archive_graph(mem.documents, mem.spaces)
        >>> graph.invoke({"mutation": DocumentMutation(action="create", title="ADR 7",
        ...                                            content=long_text)})
    """
    docs = {"documents": documents}
    graph = StateGraph(DocumentArchiveState)
    graph.add_node("check", partial(nodes.check_capacity, **docs, max_rounds=max_rounds))
    graph.add_node("destinations", partial(nodes.find_destinations, spaces=spaces))
    graph.add_node("summarise", partial(nodes.summarise, model=model))
    graph.add_node("reference", partial(nodes.store_reference, **docs, spaces=spaces))
    graph.add_node("move", partial(nodes.move, **docs, indexed=True))
    graph.add_node("move_unindexed", partial(nodes.move, **docs, indexed=False))
    graph.add_node("apply", partial(nodes.apply_mutation, **docs))
    graph.add_node("finish", nodes.finish)
    graph.add_edge(START, "check")
    graph.add_conditional_edges("check", _after_check, ["apply", "destinations", "finish"])
    graph.add_conditional_edges(
        "destinations", _after_destinations, ["summarise", "move_unindexed", "finish"]
    )
    for node, then in (
        ("summarise", "reference"),
        ("reference", "move"),
        ("move", "check"),
        ("move_unindexed", "check"),
    ):
        graph.add_conditional_edges(node, unless_error(then, "finish"), [then, "finish"])
    graph.add_edge("apply", "finish")
    graph.add_edge("finish", END)
    return graph.compile(name="mnemon_document_archive")
