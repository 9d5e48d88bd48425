"""The turn lifecycle's node logic, shared by the turn subgraph and the middleware.

Begin reads what the thread's own messages say (the last Wake digest sent, whether the cue was
sent, whether the thread is new) into :class:`~langgraph_mnemon.memory_layers.turns.TurnFacts`,
calls ``turns.begin`` and turns its answer into the messages to append: a task's resume block
on a new thread, the one cue, and the Wake when it changed. End calls ``turns.end`` with the
turn's activity and tends the task's fatigue: a warning at REM; at EMERGENCY the history
compacted around the resume block (tool-call groups kept whole). What was last sent is read
back from the thread's messages, so delivery survives restarts and checkpoint resumes.

Nothing here ends the agent's run: a failing begin or end is logged, recorded in ``health``
and skipped (no Wake that turn; the agent's messages untouched). Every step runs as an
automatic trigger: the kernel admits what it does as it would a model's.

Example:
    >>> update = begin_update(mem, config, state["messages"], agent_id="main", root=True)
    >>> update["mnemon_turn"]            # the turn id the tools resolve
    >>> end_update(mem, config, update["mnemon_turn"], messages, root=True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from langgraph_mnemon.adapters.messages import plugin_form
from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.contracts import Scope, safe_text
from langgraph_mnemon.errors import NotFoundError
from langgraph_mnemon.memory_layers.activity import TurnActivity
from langgraph_mnemon.memory_layers.health import HealthRecord
from langgraph_mnemon.memory_layers.kernel import Kernel, acting
from langgraph_mnemon.memory_layers.mnemos import Mnemos
from langgraph_mnemon.memory_layers.turns import (
    TurnFacts,
    Turns,
    TurnScope,
    TurnStart,
    plugin_metadata,
)
from langgraph_mnemon.nodes._guard import DEGRADED_TURN, memory_step
from langgraph_mnemon.nodes._history import compact_history

__all__ = [
    "DEGRADED_TURN",
    "EMERGENCY_KEEP_MESSAGES",
    "TurnHost",
    "begin_turn",
    "begin_update",
    "end_turn",
    "end_update",
    "lifecycle",
    "plugin_form",
    "task_of",
    "thread_facts",
    "thread_of",
    "turn_activity",
]

_KEY = "mnemon"
EMERGENCY_KEEP_MESSAGES = 12
"""Messages kept after the resume block when the history is compacted at EMERGENCY."""


class TurnHost(Protocol):
    """What the turn lifecycle needs of the host (``Mnemon`` satisfies it)."""

    @property
    def turns(self) -> Turns: ...

    @property
    def health(self) -> HealthRecord: ...

    @property
    def kernel(self) -> Kernel: ...

    @property
    def config(self) -> MnemonConfig: ...

    @property
    def mnemos(self) -> Mnemos: ...

    def resolve_scope(self, config: Mapping[str, Any] | None) -> Scope:
        """The user and project of a run (``Mnemon.resolve_scope``)."""
        ...


# --------------------------------------------------------------------------------------------
# Messages ⇄ facts


def thread_facts(messages: Sequence[BaseMessage]) -> TurnFacts:
    """What the thread's messages say: the newest Wake's digest, whether it holds the cue,
    and whether it is new (no assistant and no plugin message yet)."""
    digest = None
    for message in reversed(messages):
        if plugin_form(message) == "recall":
            digest = message.additional_kwargs[_KEY]["source"].get("digest")
            break
    return TurnFacts(
        last_wake_digest=digest,
        cued=any(plugin_form(m) == "instructions" for m in messages),
        new_thread=not any(isinstance(m, AIMessage) or plugin_form(m) for m in messages),
    )


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
    return TurnActivity(user_text=user, assistant_chars=assistant, tool_calls=calls)


def _plugin_message(text: str, metadata: dict[str, Any]) -> HumanMessage:
    return HumanMessage(content=text, additional_kwargs={_KEY: metadata})


def _start_messages(start: TurnStart, resume: str | None) -> list[BaseMessage]:
    """The resume block, the cue and the Wake of a begun turn, in that order."""
    out: list[BaseMessage] = []
    if resume is not None:
        out.append(_plugin_message(resume, plugin_metadata("resume")))
    if start.cue is not None:
        out.append(_plugin_message(start.cue.text, start.cue.metadata))
    if start.wake is not None:
        out.append(_plugin_message(start.wake.text, start.wake.metadata))
    return out


def thread_of(config: RunnableConfig | None) -> str:
    """The thread id of a run (``"default"`` when the run has none)."""
    return str(((config or {}).get("configurable") or {}).get("thread_id") or "default")


def task_of(mem: TurnHost, config: RunnableConfig | None, thread: str) -> str:
    """The Mnemos task of a run: ``configurable[mnemos.task_id_key]``, else the thread id."""
    value = ((config or {}).get("configurable") or {}).get(mem.config.mnemos.task_id_key)
    return str(value) if value else thread


# --------------------------------------------------------------------------------------------
# Begin and end


def _resume_block(mnemos: Mnemos, task: str) -> str | None:
    try:
        return mnemos.resume(task)
    except NotFoundError:
        return None


def begin_turn(
    mem: TurnHost,
    thread: str,
    messages: Sequence[BaseMessage],
    *,
    agent_id: str,
    root: bool,
    task: str | None = None,
    retained: str | None = None,
    memory_scope: Scope | None = None,
) -> tuple[str, list[BaseMessage]]:
    """Begin the turn; return its id and the messages to append.

    Those are the task's resume block (a new thread of an existing task), the one cue, and the
    Wake when it changed. A begin that fails after pinning releases the turn before raising.
    ``memory_scope`` is whose memory the turn sees (default: the local scope).
    """
    facts = thread_facts(messages)
    scope = TurnScope(
        thread_id=thread, agent_id=agent_id, root=root, memory_scope=memory_scope or Scope()
    )
    start = mem.turns.begin(scope, facts, retained=retained)
    if root and task is not None and not scope.memory_scope.is_local:
        try:  # the task is the user's: the control plane shows it to them only
            if mem.kernel.admits("mnemos", "write"):
                mem.mnemos.claim_task(task, scope.memory_scope.user_key)
        except BaseException:
            mem.turns.end(start.turn_id)
            raise
    resume = None
    if root and task is not None and task != thread and facts.new_thread:
        try:
            resume = _resume_block(mem.mnemos, task)
        except BaseException:
            mem.turns.end(start.turn_id)  # release the turn; the resume error is reported
            raise
    return start.turn_id, _start_messages(start, resume)


def _tend_fatigue(mem: TurnHost, task: str, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    if not mem.kernel.admits("mnemos", "write"):
        return []  # recording signals and checkpoints is a write: a read-only host does neither
    mem.mnemos.observe_messages(task, messages)
    response = mem.mnemos.maintain(task)
    state = response.reading.state
    if state == "EMERGENCY":
        block = _resume_block(mem.mnemos, task) or response.message or "Context is nearly full."
        return compact_history(
            messages, EMERGENCY_KEEP_MESSAGES, block, metadata=plugin_metadata("resume")
        )
    if state == "REM" and response.message:
        return [_plugin_message(f"[MNEMON] {response.message}", plugin_metadata("warning"))]
    return []


def end_turn(
    mem: TurnHost,
    thread: str,
    turn_id: str,
    messages: Sequence[BaseMessage],
    *,
    root: bool,
    task: str | None = None,
) -> list[BaseMessage]:
    """End the turn; for a root agent record its activity and tend the task's fatigue.

    Returns the messages update: a warning at REM; at EMERGENCY the history compacted around
    the resume block (tool-call groups kept whole); nothing otherwise. The turn (its pin and
    its budgets) is released even when recording fails.
    """
    try:
        activity = turn_activity(messages) if root else None  # a child records nothing
    except BaseException:
        mem.turns.end(turn_id)  # release the turn all the same
        raise
    mem.turns.end(turn_id, activity, thread_id=thread, transcript=messages)
    return _tend_fatigue(mem, task or thread, messages) if root else []


# --------------------------------------------------------------------------------------------
# State updates (what the graph node and the middleware hooks return)


def begin_update(
    mem: TurnHost,
    config: RunnableConfig | None,
    messages: Sequence[BaseMessage] | None,
    *,
    agent_id: str,
    root: bool,
    retained: str | None = None,
) -> dict[str, Any]:
    """The state update that begins a turn: ``mnemon_turn`` and the messages to append.

    A failing begin is logged and recorded in ``mem.health``; the update is then
    :data:`DEGRADED_TURN` and no messages (no Wake this turn), and the agent runs on.
    """
    with acting("automatic"), memory_step(mem.health, "begin") as step:
        thread = thread_of(config)
        scope = mem.resolve_scope(config)  # refused (another user named): no memory this turn
        turn_id, new = begin_turn(
            mem,
            thread,
            list(messages or []),
            agent_id=agent_id,
            root=root,
            task=task_of(mem, config, thread),
            retained=retained,
            memory_scope=scope,
        )
    if step.failed:
        return {"mnemon_turn": DEGRADED_TURN, "messages": []}
    mem.health.began(turn_id)
    return {"mnemon_turn": turn_id, "messages": new}


def end_update(
    mem: TurnHost,
    config: RunnableConfig | None,
    turn_id: str | None,
    messages: Sequence[BaseMessage] | None,
    *,
    root: bool,
) -> dict[str, Any]:
    """The state update that ends a turn (``mnemon_turn`` back to None).

    A failing end is logged and recorded in ``mem.health`` and changes no message; a turn
    whose begin failed (:data:`DEGRADED_TURN`) has nothing to end.
    """
    update: list[BaseMessage] = []
    if turn_id and turn_id != DEGRADED_TURN:
        with acting("automatic"), memory_step(mem.health, "end") as step:
            thread = thread_of(config)
            update = end_turn(
                mem,
                thread,
                turn_id,
                list(messages or []),
                root=root,
                task=task_of(mem, config, thread),
            )
        if step.failed:
            update = []
        else:
            mem.health.settle(turn_id)  # begin and end both worked: older failures are over
    return {"mnemon_turn": None, "messages": update}


def lifecycle(
    state: Mapping[str, Any],
    config: RunnableConfig,
    *,
    mem: TurnHost,
    agent_id: str,
    root: bool,
    retained: str | None,
) -> dict[str, Any]:
    """The turn subgraph's one node: end the turn in ``mnemon_turn``, else begin one."""
    messages = state.get("messages")
    turn_id = state.get("mnemon_turn")
    if turn_id:
        return end_update(mem, config, turn_id, messages, root=root)
    return begin_update(mem, config, messages, agent_id=agent_id, root=root, retained=retained)
