"""The long-term write worker as a LangGraph state graph.

With no model: choose the space whose description fits best, skip an exact duplicate, remember.
With a model: a bounded tool loop (depth 1: the worker cannot start workers) over run-scoped
tools — list spaces, recall, remember, link, forget, create a space — ending with its
schema-validated result tool. Whatever the model claims, the receipt lists only writes whose
receipts the host observed, so a skipped or pending write is reported as such.

The worker gets only what its request needs: ``mnemon_forget`` only when the request asks to
forget or supersede, recall and space creation only while the kernel admits them, and at most
:data:`~langgraph_mnemon.memory_layers.write_worker.MAX_WRITES_PER_RUN` writes (further write
calls get a structured refusal); a tool it was not handed is refused by the host too. The
worker runs under the trigger of whoever asked (explicit for ``mem.remember``, automatic for a
model's ``mnemon_remember``): it asks the kernel for Memory Spaces write before any I/O, and a
refusal raises the kernel's typed error.
"""

from __future__ import annotations

from functools import partial
from typing import TypedDict

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_mnemon.memory_layers.spaces import MemorySpaces
from langgraph_mnemon.memory_layers.write_worker import WriteCandidate, WriteReceipt
from langgraph_mnemon.nodes import write_worker as nodes
from langgraph_mnemon.nodes.write_worker import worker_tools

__all__ = ["WriteWorkerState", "build_write_worker_graph", "worker_tools"]


class WriteWorkerState(TypedDict, total=False):
    """Input: ``candidate``. Output: ``receipt`` (and ``error`` when the worker misbehaved)."""

    candidate: WriteCandidate
    receipt: WriteReceipt
    error: str


def build_write_worker_graph(
    spaces: MemorySpaces, model: BaseChatModel | None = None, *, max_steps: int = 8
) -> CompiledStateGraph:
    """Compile the write worker; ``model=None`` uses the heuristic.

    Args:
        spaces: the Memory Spaces service every write goes through.
        model: the worker model (a bounded tool loop); None picks the best-fitting space.
        max_steps: the worker model's replies at most.

    Returns:
        The compiled graph: ``receipt`` lists only the writes the host observed (``error``
        says how the worker misbehaved, if it did).

    Raises:
        ParticipationError: (from ``invoke``) the kernel refused Memory Spaces write for the
            caller's trigger, before any I/O.
        ReadOnlyError: (from ``invoke``) writes are disabled.

    Example:
        >>> out = build_write_worker_graph(mem.spaces).invoke(
        ...     {"candidate": WriteCandidate(content="Deploys need two approvals.")})
        >>> out["receipt"].status, [w.kind for w in out["receipt"].writes]
        ('committed', ['remember'])
    """
    graph = StateGraph(WriteWorkerState)
    graph.add_node("write", partial(nodes.write, spaces=spaces, model=model, max_steps=max_steps))
    graph.add_edge(START, "write")
    graph.add_edge("write", END)
    return graph.compile(name="mnemon_write_worker")
