"""Idle review: a background pass over completed turns.

The review agent's tools are exactly ``mnemon_document_search``, ``mnemon_runtime_memory``
(absent when ``idle_review.runtime_memory`` is false) and ``mnemon_document_create``, behind a
guard that allows one layer per pass (a Document or a MEMORY.md change; USER.md is independent)
and no Memory Space writes. With no model, only what the user explicitly asked to remember is
written (first-person facts to USER.md, the rest to MEMORY.md); the default is no mutation.

Host-enforced, on both paths: every write of a pass goes through one gate
(:class:`~langgraph_mnemon.nodes.review.ReviewRun`): the kernel, then the one-layer guard,
then the write; refusals are listed in the outcome. The review model's replies are bounded by
``idle_review.max_tokens`` (the chat model's ``max_tokens``, where it has one) and its
transcript by ``idle_review.max_context_chars``. The schedulers
(:mod:`langgraph_mnemon.reviews`) run every pass under ``acting("automatic")``.
"""

from __future__ import annotations

from functools import partial
from typing import TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_mnemon.nodes import review as nodes
from langgraph_mnemon.nodes.review import ReviewOutcome, ReviewServices

__all__ = ["ReviewOutcome", "ReviewServices", "ReviewState", "build_review_graph"]


class ReviewState(TypedDict, total=False):
    """Input: ``messages`` of the reviewed turns. Output: ``outcome`` (and ``error``)."""

    messages: list[BaseMessage]
    outcome: ReviewOutcome
    error: str


def build_review_graph(
    services: ReviewServices,
    model: BaseChatModel | None = None,
    *,
    runtime_memory: bool = True,
    max_context_chars: int = 24_000,
    max_steps: int = 6,
    max_tokens: int | None = None,
) -> CompiledStateGraph:
    """Compile the idle-review graph; ``model=None`` uses the heuristic.

    Args:
        services: ``documents``, ``health``, ``kernel`` and ``write_runtime`` (the host has
            them all: pass ``mem``).
        model: the review model; None writes only what the user explicitly asked to remember.
        runtime_memory: whether the pass may change USER.md / MEMORY.md.
        max_context_chars: the transcript's bound.
        max_steps: the review model's replies at most.
        max_tokens: bounds each reply (bound as the model's ``max_tokens`` when it has that
            setting).

    Returns:
        The compiled graph: ``outcome`` is a :class:`ReviewOutcome` (a failed pass sets
        ``error`` too). Kernel refusals are listed in ``outcome.refused``, never raised; the
        schedulers guard each pass against anything else.

    Example:
        >>> out = build_review_graph(mem).invoke({"messages": turn_messages})
        >>> out["outcome"].action
        'skipped'
    """
    if model is None:
        node = partial(nodes.heuristic_review, services=services, runtime_memory=runtime_memory)
    else:
        node = partial(
            nodes.model_review,
            services=services,
            model=model,
            runtime_memory=runtime_memory,
            max_context_chars=max_context_chars,
            max_steps=max_steps,
            max_tokens=max_tokens,
        )
    graph = StateGraph(ReviewState)
    graph.add_node("review", node)
    graph.add_edge(START, "review")
    graph.add_edge("review", END)
    return graph.compile(name="mnemon_idle_review")
