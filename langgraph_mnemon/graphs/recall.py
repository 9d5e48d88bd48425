"""The recall-refine graph: grant check → federated search + envelope admission → refine → JSON.

Each node is a thin call into the turn's
:class:`~langgraph_mnemon.memory_layers.turns.TurnRetrieval`:

1. ``validate`` — resolve the executing turn's retrieval state (given directly as
   ``retrieval``, or by ``turn_id`` through the builder's :class:`TurnRetrievals`, created with
   ``granted_space_ids``) and shape the request: filters dropped, limit capped at 6, requested
   space ids must be a subset of the grant (otherwise ``error``, and no provider is called).
2. ``recall`` — the attempt: replay / join / exhausted-replay, or a federated search through
   ``spaces.asearch`` admitted within the turn envelope.
3. ``judge`` — *standalone mode only* (a ``judge_model`` was given): after a first attempt the
   judge sees the admitted evidence and, through its one result tool, either declares it
   sufficient or submits one materially different refinement query.
4. ``refine`` — the second attempt, with the refinement query.
5. ``respond`` — ``output``: the model-facing evidence JSON (both attempts' rows when a
   refinement ran, with ``refined_query``).

In *tool mode* (no judge) an invocation makes one attempt; the calling agent judges sufficiency
and may call again (the turn state enforces the budget). The graph runs with ``invoke`` and
``ainvoke``.

The graph is an automatic trigger (a model asked): ``validate`` asks the kernel for Memory
Spaces recall before any provider call, and a refusal comes back as ``error`` with ``output``
``{"error": code, "message": ..., "decision": {...}}``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_mnemon.memory_layers.spaces import MemorySpaces
from langgraph_mnemon.memory_layers.turns import (
    RecallEvidence,
    RecallRequest,
    TurnRetrieval,
    TurnRetrievals,
)
from langgraph_mnemon.nodes import recall as nodes
from langgraph_mnemon.nodes.recall import REFINE_TOOL, RefineDecision

__all__ = ["REFINE_TOOL", "RecallState", "RefineDecision", "build_recall_graph"]


class RecallState(TypedDict, total=False):
    """Input: ``query`` and either ``retrieval`` or ``turn_id`` (with ``granted_space_ids`` on
    the turn's first call; later calls may omit them); optional ``space_ids``, ``limit``,
    ``mode``, ``view_id``. Output: ``output`` (model-facing JSON) and ``attempts``, or ``error``
    (with ``output`` holding the structured error)."""

    query: str
    space_ids: list[str]
    limit: int
    mode: str
    category: str
    """Accepted from the model and dropped (a guessed filter must not hide evidence)."""
    source: str
    """Accepted and dropped, like ``category``."""
    intent: str
    """Accepted and dropped, like ``category``."""
    turn_id: str
    granted_space_ids: list[str]
    view_id: str
    retrieval: TurnRetrieval
    request: RecallRequest
    refinement: RecallRequest
    attempts: list[RecallEvidence]
    judge_note: str
    output: dict[str, Any]
    error: str


def _twin(name: str, sync: Callable[..., Any], afunc: Callable[..., Any], **deps: Any) -> Any:
    """One node with a sync and an async body, both bound to ``deps``."""
    return RunnableLambda(partial(sync, **deps), afunc=partial(afunc, **deps), name=name)


def build_recall_graph(
    spaces: MemorySpaces,
    judge_model: BaseChatModel | None = None,
    *,
    turns: TurnRetrievals | None = None,
) -> CompiledStateGraph:
    """Compile the recall-refine graph over ``spaces``.

    Args:
        spaces: the Memory Spaces service searched (and asked for the kernel's decision).
        judge_model: switches on standalone mode (one optional refinement chosen by the
            judge); without it the graph is in tool mode.
        turns: maps ``turn_id`` inputs to per-turn budgets (a private registry when omitted;
            share one with the tools so a turn's budget is the same whichever surface calls
            recall).

    Returns:
        The compiled graph (``invoke`` and ``ainvoke``); a refusal or a bad request comes back
        as ``error`` with the structured error in ``output``, never raised.

    Example:
        >>> graph = build_recall_graph(mem.spaces)
        >>> out = graph.invoke({"query": "deploy steps", "turn_id": "t1",
        ...                     "granted_space_ids": ["ops"]})
        >>> out["output"]["results"]
    """
    deps = {"spaces": spaces, "registry": turns if turns is not None else TurnRetrievals()}
    graph = StateGraph(RecallState)
    graph.add_node("validate", partial(nodes.validate, **deps))
    graph.add_node("recall", _twin("recall", nodes.recall, nodes.arecall, **deps))
    judge = {"model": judge_model, "registry": deps["registry"]}  # reached in standalone mode
    graph.add_node("judge", _twin("judge", nodes.judge, nodes.ajudge, **judge))
    graph.add_node("refine", _twin("refine", nodes.refine, nodes.arefine, **deps))
    graph.add_node("respond", nodes.respond)
    graph.add_edge(START, "validate")
    graph.add_conditional_edges("validate", nodes.after_validate, ["recall", END])
    after_recall = partial(nodes.after_recall, judged=judge_model is not None)
    graph.add_conditional_edges("recall", after_recall, ["judge", "respond"])
    graph.add_conditional_edges("judge", nodes.after_judge, ["refine", "respond"])
    graph.add_edge("refine", "respond")
    graph.add_edge("respond", END)
    return graph.compile(name="mnemon_recall")
