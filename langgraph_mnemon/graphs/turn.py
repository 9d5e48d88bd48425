"""The turn lifecycle as a LangGraph subgraph: begin before the agent, end after it.

Begin pins one immutable TurnView for the turn and appends the Wake (this plugin's message with
``form=recall`` metadata) only when it differs from the last Wake in the thread, plus at most one
reminder cue per thread. End releases the pin and records the turn's activity for idle review.
What was last sent is read back from the thread's own messages, so delivery survives restarts
and checkpoint resumes.

Nothing here ends the agent's run: a failing begin or end is logged, recorded in
``mem.health`` and skipped (no Wake that turn; the agent's messages untouched).

Add the same compiled subgraph before and after the agent node of a parent graph whose state
includes :class:`MnemonTurnState` (``messages`` with ``add_messages`` and ``mnemon_turn``)::

    class State(MnemonTurnState): ...
    builder.add_node("memory_begin", mem.turn_graph())
    builder.add_node("agent", agent)
    builder.add_node("memory_end", mem.turn_graph())
    builder.add_edge(START, "memory_begin"); builder.add_edge("memory_begin", "agent")
    builder.add_edge("agent", "memory_end"); builder.add_edge("memory_end", END)
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph

from langgraph_mnemon.contracts import safe_text
from langgraph_mnemon.errors import NotFoundError
from langgraph_mnemon.memory_layers.activity import TurnActivity
from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.memory_layers.turns import PLUGIN_NAME, TurnScope
from langgraph_mnemon.nodes._guard import DEGRADED_TURN, memory_step
from langgraph_mnemon.nodes.history import compact_history

if TYPE_CHECKING:
    from langgraph_mnemon.host import Mnemon

__all__ = [
    "DEGRADED_TURN",
    "MnemonTurnState",
    "begin_turn",
    "begin_update",
    "build_turn_graph",
    "end_turn",
    "end_update",
    "plugin_form",
    "task_of",
    "thread_of",
    "turn_activity",
]

_KEY = "mnemon"
EMERGENCY_KEEP_MESSAGES = 12


class MnemonTurnState(TypedDict, total=False):
    """The state keys the turn subgraph reads and writes in its parent graph."""

    messages: Annotated[list[AnyMessage], add_messages]
    mnemon_turn: str | None


class _TurnIO(TypedDict, total=False):
    # No reducer here: the parent's messages come in, and what goes out is only the update
    # (new messages, or RemoveMessage operations) for the parent's add_messages to apply. A
    # reducer would hand the parent the whole list back, which cannot express a removal.
    messages: list[AnyMessage]
    mnemon_turn: str | None


def plugin_form(message: BaseMessage) -> str | None:
    """``recall`` (a Wake), ``instructions`` (a cue) or None for messages not from this plugin."""
    meta = message.additional_kwargs.get(_KEY)
    if isinstance(meta, dict) and isinstance(meta.get("source"), dict):
        form = meta["source"].get("form")
        return form if isinstance(form, str) else None
    return None


def _last_wake_digest(messages: Sequence[BaseMessage]) -> str | None:
    for message in reversed(messages):
        if plugin_form(message) == "recall":
            return message.additional_kwargs[_KEY]["source"].get("digest")
    return None


def turn_activity(messages: Sequence[BaseMessage]) -> TurnActivity:
    """Activity of the turn that ends at the last message: text after the last real user
    message (plugin messages are not the user), and the tool calls that got a result."""
    start = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage) and plugin_form(message) is None:
            start = index
            break
    turn = messages[start:]
    # ``.text`` joins content blocks; what the model or user sent may hold lone surrogates.
    user = safe_text(turn[0].text) if turn and isinstance(turn[0], HumanMessage) else ""
    answered = {m.tool_call_id for m in turn if isinstance(m, ToolMessage)}
    calls = tuple(
        safe_text(call["name"])
        for m in turn
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if call["id"] in answered
    )
    assistant = sum(
        len(m.content) for m in turn if isinstance(m, AIMessage) and isinstance(m.content, str)
    )
    return TurnActivity(
        user_text=user,
        assistant_chars=assistant,
        tool_calls=calls,
    )


def begin_turn(
    mem: Mnemon,
    thread: str,
    messages: Sequence[BaseMessage],
    *,
    agent_id: str,
    root: bool,
    task: str | None = None,
    retained: str | None = None,
) -> tuple[str, list[BaseMessage]]:
    """Pin the turn's view; return the turn id and the messages to append.

    Those are the task's resume block (a new thread of an existing task), the one cue, and the
    Wake when it changed. A begin that fails after pinning releases the pin before raising.
    """
    turn = uuid.uuid4().hex
    try:
        out = _begin(mem, turn, thread, messages, agent_id, root, task, retained)
    except BaseException:
        with contextlib.suppress(Exception):  # the begin's own error is the one to report
            _release(mem, turn)
        raise
    return turn, out


def _begin(
    mem: Mnemon,
    turn: str,
    thread: str,
    messages: Sequence[BaseMessage],
    agent_id: str,
    root: bool,
    task: str | None,
    retained: str | None,
) -> list[BaseMessage]:
    if root:
        mem.reviews.turn_started(thread)
    # A child agent pins the view it retained from its parent's turn, not a fresh one.
    scope = TurnScope(thread_id=thread, agent_id=agent_id, root=root)
    view = mem.views.pin(turn, scope, retained=retained)
    mem.retrievals.begin(turn, view.grants.space_ids, view_id=view.id)
    key = f"{thread}/{agent_id}"
    tracker = mem.wake_tracker
    cued = any(plugin_form(m) == "instructions" for m in messages)
    tracker.restore(key, digest=_last_wake_digest(messages), cued=cued)
    out: list[BaseMessage] = []
    if root and task is not None and task != thread and _is_new_thread(messages):
        block = _resume_block(mem, task)
        if block is not None:
            out.append(HumanMessage(content=block, additional_kwargs={_KEY: _metadata("resume")}))
    cue = tracker.cue_for(key, mem.config, view, root=root)
    if cue is not None:
        out.append(HumanMessage(content=cue.text, additional_kwargs={_KEY: cue.metadata}))
    wake = tracker.wake_for(key, view)
    if wake is not None:
        out.append(HumanMessage(content=wake.text, additional_kwargs={_KEY: wake.metadata}))
    return out


def end_turn(
    mem: Mnemon,
    thread: str,
    turn: str,
    messages: Sequence[BaseMessage],
    *,
    root: bool,
    task: str | None = None,
) -> list[BaseMessage]:
    """Release the turn's pin; for a root agent record activity and tend the task's fatigue.

    Returns the messages update: a warning at REM; at EMERGENCY the history compacted around
    the resume block (tool-call groups kept whole); nothing otherwise. The pin and the recall
    budgets are released even when recording fails.
    """
    try:
        if not root:
            return []
        mem.reviews.turn_finished(thread, list(messages), turn_activity(messages))
        return _tend_fatigue(mem, task or thread, messages)
    finally:
        _release(mem, turn)


def _release(mem: Mnemon, turn: str) -> None:
    """Drop the turn's pin and recall budgets, whichever exist (a turn pinned by a process
    that has since restarted has none)."""
    try:
        with contextlib.suppress(NotFoundError):
            mem.views.release(turn)
    finally:
        mem.retrievals.end(turn)


def begin_update(
    mem: Mnemon,
    config: RunnableConfig | None,
    messages: Sequence[BaseMessage] | None,
    *,
    agent_id: str,
    root: bool,
    retained: str | None = None,
) -> dict[str, Any]:
    """The state update that begins a turn: ``mnemon_turn`` and the messages to append.

    A failing begin is logged and recorded in ``mem.health``; the update is then
    :data:`DEGRADED_TURN` and no messages (no Wake this turn), and the agent runs on. The turn
    lifecycle is an automatic trigger: the kernel admits what it does as it would a model's.
    """
    with acting("automatic"), memory_step(mem.health, "begin") as step:
        thread = thread_of(config)
        turn, new = begin_turn(
            mem,
            thread,
            list(messages or []),
            agent_id=agent_id,
            root=root,
            task=task_of(mem, config, thread),
            retained=retained,
        )
    if step.failed:
        return {"mnemon_turn": DEGRADED_TURN, "messages": []}
    mem.health.began(turn)
    return {"mnemon_turn": turn, "messages": new}


def end_update(
    mem: Mnemon,
    config: RunnableConfig | None,
    turn: str | None,
    messages: Sequence[BaseMessage] | None,
    *,
    root: bool,
) -> dict[str, Any]:
    """The state update that ends a turn (``mnemon_turn`` back to None).

    A failing end is logged and recorded in ``mem.health`` and changes no message; a turn
    whose begin failed (:data:`DEGRADED_TURN`) has nothing to end. Like the begin, the end is
    an automatic trigger.
    """
    update: list[BaseMessage] = []
    if turn and turn != DEGRADED_TURN:
        with acting("automatic"), memory_step(mem.health, "end") as step:
            thread = thread_of(config)
            update = end_turn(
                mem,
                thread,
                turn,
                list(messages or []),
                root=root,
                task=task_of(mem, config, thread),
            )
        if step.failed:
            update = []
        else:
            mem.health.settle(turn)  # begin and end both worked: older failures are over
    return {"mnemon_turn": None, "messages": update}


def _tend_fatigue(mem: Mnemon, task: str, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    if not mem.kernel.admits("mnemos", "write"):
        return []  # recording signals and checkpoints is a write: a read-only host does neither
    mem.mnemos.observe_messages(task, messages)
    response = mem.mnemos.maintain(task)
    state = response.reading.state
    if state == "EMERGENCY":
        block = _resume_block(mem, task) or response.message or "Context is nearly full."
        return compact_history(
            messages, EMERGENCY_KEEP_MESSAGES, block, metadata=_metadata("resume")
        )
    if state == "REM" and response.message:
        text = f"[MNEMON] {response.message}"
        return [HumanMessage(content=text, additional_kwargs={_KEY: _metadata("warning")})]
    return []


def _resume_block(mem: Mnemon, task: str) -> str | None:
    try:
        return mem.mnemos.resume(task)
    except NotFoundError:
        return None


def _metadata(form: str) -> dict[str, Any]:
    return {"source": {"kind": "plugin", "plugin": PLUGIN_NAME, "form": form}}


def task_of(mem: Mnemon, config: RunnableConfig | None, thread: str) -> str:
    """The Mnemos task of a run: ``configurable[mnemos.task_id_key]``, else the thread id."""
    value = ((config or {}).get("configurable") or {}).get(mem.config.mnemos.task_id_key)
    return str(value) if value else thread


def _is_new_thread(messages: Sequence[BaseMessage]) -> bool:
    return not any(isinstance(m, AIMessage) or plugin_form(m) for m in messages)


def thread_of(config: RunnableConfig | None) -> str:
    """The thread id of a run (``"default"`` when the run has none)."""
    return str(((config or {}).get("configurable") or {}).get("thread_id") or "default")


def build_turn_graph(
    mem: Mnemon, *, agent_id: str = "main", root: bool = True, retained: str | None = None
) -> CompiledStateGraph:
    """Compile the turn subgraph over a host. Use it before and after the agent node.

    ``root=False`` marks a child agent: no reminder cue and no idle review for its turns.
    ``retained`` (from ``mem.views.retain(parent_view)``) makes every turn pin that view.
    """

    def lifecycle(state: _TurnIO, config: RunnableConfig) -> dict[str, Any]:
        messages = state.get("messages")
        turn = state.get("mnemon_turn")
        if turn:
            return end_update(mem, config, turn, messages, root=root)
        return begin_update(mem, config, messages, agent_id=agent_id, root=root, retained=retained)

    graph = StateGraph(_TurnIO)
    graph.add_node("lifecycle", lifecycle)
    graph.add_edge(START, "lifecycle")
    graph.add_edge("lifecycle", END)
    # One node, no interrupts: nothing to resume, so it writes no checkpoints of its own (the
    # parent's checkpoint after this node already holds its update).
    return graph.compile(name="mnemon_turn", checkpointer=False)
