"""The turn lifecycle as a LangGraph subgraph: begin before the agent, end after it.

Begin pins one immutable TurnView for the turn and appends the Wake (this plugin's message with
``form=recall`` metadata) only when it differs from the last Wake in the thread, plus at most one
reminder cue per thread. End releases the turn and records its activity for idle review. The
node logic is :func:`langgraph_mnemon.nodes.turn.lifecycle` over the host's ``turns`` service.

Add the same compiled subgraph before and after the agent node of a parent graph whose state
includes :class:`MnemonTurnState` (``messages`` with ``add_messages`` and ``mnemon_turn``)::

    class State(MnemonTurnState): ...
    builder.add_node("memory_begin", mem.turn_graph())
    builder.add_node("agent", agent)
    builder.add_node("memory_end", mem.turn_graph())
    builder.add_edge(START, "memory_begin"); builder.add_edge("memory_begin", "agent")
    builder.add_edge("agent", "memory_end"); builder.add_edge("memory_end", END)

A hand-built agent loop puts :func:`build_model_call_graph` (``mem.model_call_graph()``) before
its model node: Mnemos then checkpoints, warns and compacts inside one long turn, as the
middleware's ``before_model`` hook does for ``create_agent``.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph

# Re-exported for code that imports them from here (README, examples, benchmarks).
from langgraph_mnemon.adapters.models import check_window_model
from langgraph_mnemon.nodes.mnemos import Tending, call_window, model_call_update
from langgraph_mnemon.nodes.turn import (
    DEGRADED_TURN,
    TurnHost,
    begin_turn,
    begin_update,
    end_turn,
    end_update,
    lifecycle,
    plugin_form,
    task_of,
    thread_of,
    turn_activity,
)

__all__ = [
    "DEGRADED_TURN",
    "MnemonTurnState",
    "begin_turn",
    "begin_update",
    "build_model_call_graph",
    "build_turn_graph",
    "end_turn",
    "end_update",
    "plugin_form",
    "task_of",
    "thread_of",
    "turn_activity",
]


class MnemonTurnState(TypedDict, total=False):
    """The state keys the turn subgraph reads and writes in its parent graph: the messages,
    the live turn (``mnemon_turn``) and where Mnemos's last pass over the messages stopped
    (``mnemon_seen``: a parent without it gets a whole-list pass each time)."""

    messages: Annotated[list[AnyMessage], add_messages]
    mnemon_turn: str | None
    mnemon_seen: dict[str, Any] | None


class _TurnIO(TypedDict, total=False):
    # No reducer here: the parent's messages come in, and what goes out is only the update
    # (new messages, or RemoveMessage operations) for the parent's add_messages to apply. A
    # reducer would hand the parent the whole list back, which cannot express a removal.
    messages: list[AnyMessage]
    mnemon_turn: str | None
    mnemon_seen: dict[str, Any] | None


def build_turn_graph(
    mem: TurnHost,
    *,
    agent_id: str = "main",
    root: bool = True,
    retained: str | None = None,
    model: Any = None,
) -> CompiledStateGraph:
    """Compile the turn subgraph over a host. Use it before and after the agent node.

    Args:
        mem: the host (its ``turns``, ``health``, ``kernel``, ``config`` and ``mnemos``).
        agent_id: the agent whose turns these are.
        root: ``False`` marks a child agent: no reminder cue and no idle review for its turns.
        retained: a view id from ``mem.turns.retain(parent_view)``: every turn pins that view.
        model: the agent's chat model: Mnemos measures token use at the end of a turn against
            its ``profile["max_input_tokens"]`` (``None``: the window stored with the task's
            token reading, else ``mnemos.context_window`` / ``context_window_tokens``).

    Returns:
        The compiled one-node subgraph ``mnemon_turn`` (no checkpointer of its own).

    Raises:
        InvalidInputError: ``model`` is neither ``None`` nor a LangChain chat model.

    Example:
        >>> builder.add_node("memory_begin", build_turn_graph(mem, model=model))
    """
    chosen = check_window_model(model)
    window = call_window(mem, chosen) if chosen is not None else None

    def node(state: _TurnIO, config: RunnableConfig) -> dict[str, Any]:
        return lifecycle(
            state, config, mem=mem, agent_id=agent_id, root=root, retained=retained, window=window
        )

    graph = StateGraph(_TurnIO)
    graph.add_node("lifecycle", node)
    graph.add_edge(START, "lifecycle")
    graph.add_edge("lifecycle", END)
    # One node, no interrupts: nothing to resume, so it writes no checkpoints of its own (the
    # parent's checkpoint after this node already holds its update).
    return graph.compile(name="mnemon_turn", checkpointer=False)


def build_model_call_graph(
    mem: TurnHost, *, root: bool = True, model: Any = None
) -> CompiledStateGraph:
    """Compile the per-model-call subgraph: put it right before the model node of a loop.

    It runs :func:`langgraph_mnemon.nodes.mnemos.model_call_update` on the parent's messages:
    Mnemos observes them and, by the task's fatigue, checkpoints, adds a REM warning or
    compacts the history at EMERGENCY (a ``RemoveMessage`` update the parent's
    ``add_messages`` applies). A failing step changes nothing.

    Args:
        mem: the host (``Mnemon``).
        root: ``False`` for a child agent: the node does nothing.
        model: the chat model the next node calls: fatigue states and compaction use its
            ``profile["max_input_tokens"]`` (see :func:`build_turn_graph`).

    Returns:
        The compiled one-node subgraph ``mnemon_model_call`` (no checkpointer of its own).

    Raises:
        InvalidInputError: ``model`` is neither ``None`` nor a LangChain chat model.

    Example:
        >>> builder.add_node("mnemos", build_model_call_graph(mem, model=model))
        >>> builder.add_edge("mnemos", "model")
    """
    chosen = check_window_model(model)
    # The profile is read once: a model's declared window does not change between calls.
    window = call_window(mem, chosen) if chosen is not None else None

    def node(state: _TurnIO, config: RunnableConfig) -> dict[str, Any]:
        tending = Tending.from_state(state.get("mnemon_seen"))
        messages = state.get("messages")
        update = model_call_update(mem, config, messages, root=root, window=window, tending=tending)
        # no reducer here: an empty list of messages changes nothing
        return {"messages": [], **update, "mnemon_seen": tending.state()}

    graph = StateGraph(_TurnIO)
    graph.add_node("mnemos", node)
    graph.add_edge(START, "mnemos")
    graph.add_edge("mnemos", END)
    return graph.compile(name="mnemon_model_call", checkpointer=False)
