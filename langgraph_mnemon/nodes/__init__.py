"""LangGraph node functions: each unpacks state, calls one layer service, returns an update.

One module per graph (``turn`` with ``mnemos``, its per-model-call step, ``recall``,
``review``, ``learning``, ``write_worker``, ``agent_query``, ``user_compaction``,
``memory_archival``, ``document_archive``): module-level node functions
that take the graph state and their dependencies as keyword arguments, which the graph
builders in :mod:`langgraph_mnemon.graphs` bind. Shared here: the memory-step guard, the
message-history compaction and the worker models' result tools.

Example:
    >>> from functools import partial
    >>> from langgraph_mnemon.nodes import user_compaction
    >>> graph.add_node("plan", partial(user_compaction.plan_maintenance, runtime_memory=rt))
"""

from langgraph_mnemon.nodes import (
    agent_query,
    document_archive,
    learning,
    memory_archival,
    mnemos,
    recall,
    review,
    turn,
    user_compaction,
    write_worker,
)
from langgraph_mnemon.nodes._guard import CONTROL_FLOW, DEGRADED_TURN, memory_step
from langgraph_mnemon.nodes._history import (
    budget_cut,
    compact_history,
    compact_to_budget,
    safe_cut,
    valid_tool_sequence,
)
from langgraph_mnemon.nodes._results import parse_result, tool_schema, unless_error
from langgraph_mnemon.nodes.mnemos import model_call_update
from langgraph_mnemon.nodes.review import ReviewOutcome

__all__ = [
    "CONTROL_FLOW",
    "DEGRADED_TURN",
    "ReviewOutcome",
    "agent_query",
    "budget_cut",
    "compact_history",
    "compact_to_budget",
    "document_archive",
    "learning",
    "memory_archival",
    "memory_step",
    "mnemos",
    "model_call_update",
    "parse_result",
    "recall",
    "review",
    "safe_cut",
    "tool_schema",
    "turn",
    "unless_error",
    "user_compaction",
    "valid_tool_sequence",
    "write_worker",
]
