"""Learning: a pass over a thread's new messages into the user's learned Memory Space.

begin (kernel, unread messages, claim) -> extract (heuristic or model) -> propose (similar
memories, then add / update / supersede / skip) -> commit (host validation, one receipt per
change or refusal). A node that ends the pass early sets ``outcome`` and the graph stops there.
"""

from __future__ import annotations

from functools import partial
from typing import Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_mnemon.memory_layers.learning import (
    Candidate,
    Learning,
    LearnPass,
    PassContext,
    Proposal,
)
from langgraph_mnemon.nodes import learning as nodes

__all__ = ["LearningState", "build_learning_graph"]


class LearningState(TypedDict, total=False):
    """Input: ``thread_id`` and the thread's ``messages``. Output: ``outcome`` (a
    :class:`LearnPass`)."""

    thread_id: str
    messages: list[Any]
    context: PassContext
    candidates: list[Candidate]
    proposals: list[Proposal]
    outcome: LearnPass


def _next(target: str) -> Any:
    def route(state: dict[str, Any]) -> str:
        return END if state.get("outcome") is not None else target

    return route


def build_learning_graph(
    learning: Learning, model: BaseChatModel | None = None
) -> CompiledStateGraph:
    """Compile the learning graph over one scope's :class:`Learning` service.

    Args:
        learning: the scope's learning service (``mem.learning``).
        model: the worker model; None runs the offline heuristic.

    Returns:
        The compiled ``mnemon_learning`` graph: ``{"thread_id", "messages"}`` in,
        ``outcome`` (the recorded :class:`LearnPass`) out.

    Example:
        >>> out = build_learning_graph(mem.learning).invoke(
        ...     {"thread_id": "t1", "messages": [HumanMessage("I'm allergic to peanuts.")]})
        >>> out["outcome"].status
        'committed'
    """
    extractor = "heuristic" if model is None else f"model:{_name(model)}"
    graph = StateGraph(LearningState)
    graph.add_node("begin", partial(nodes.begin_pass, learning=learning, extractor=extractor))
    graph.add_node(
        "extract", partial(nodes.extract_candidates_node, learning=learning, model=model)
    )
    graph.add_node("propose", partial(nodes.propose_node, learning=learning, model=model))
    graph.add_node("commit", partial(nodes.commit_pass, learning=learning))
    graph.add_edge(START, "begin")
    graph.add_conditional_edges("begin", _next("extract"), ["extract", END])
    graph.add_conditional_edges("extract", _next("propose"), ["propose", END])
    graph.add_conditional_edges("propose", _next("commit"), ["commit", END])
    graph.add_edge("commit", END)
    return graph.compile(name="mnemon_learning")


def _name(model: BaseChatModel) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value[:80]
    return type(model).__name__
