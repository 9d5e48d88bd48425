"""The turn lifecycle's node logic, shared by the turn subgraph and the middleware.

Begin reads what the thread's own messages say (the last Wake digest sent, whether the cue was
sent, whether the thread is new) into :class:`~langgraph_mnemon.memory_layers.turns.TurnFacts`,
calls ``turns.begin`` and turns its answer into the messages to append: a task's resume block
on a new thread, the one cue, and the Wake when it changed (with it, a stub in place of each
older Wake of the thread, unless ``runtime.keep_snapshots``). Every one of them has an id that
starts with ``do-not-render-`` (:func:`~langgraph_mnemon.adapters.messages.plugin_message`).
End calls ``turns.end`` with the turn's activity and tends the task's fatigue: a warning at
REM; at EMERGENCY the history compacted around the resume block (tool-call groups kept whole).
What was last sent is read back from the thread's messages, so delivery survives restarts and
checkpoint resumes.

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
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from langgraph_mnemon.adapters.messages import plugin_form, plugin_message
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import NotFoundError
from langgraph_mnemon.memory_layers.activity import TurnActivity
from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.memory_layers.messages import (
    is_request,
    latest_request_index,
    read_messages,
)
from langgraph_mnemon.memory_layers.mnemos import ContextWindow, Mnemos
from langgraph_mnemon.memory_layers.turns import (
    TurnFacts,
    TurnScope,
    TurnStart,
    plugin_metadata,
)
from langgraph_mnemon.nodes._guard import DEGRADED_TURN, memory_step
from langgraph_mnemon.nodes._run import TurnHost, task_of, thread_of
from langgraph_mnemon.nodes._wakes import superseded_wakes, wake_source
from langgraph_mnemon.nodes.mnemos import Tending, tend_task

__all__ = [
    "DEGRADED_TURN",
    "TurnHost",
    "begin_turn",
    "begin_update",
    "end_turn",
    "end_update",
    "is_request",
    "lifecycle",
    "plugin_form",
    "share_turn",
    "task_of",
    "thread_facts",
    "thread_of",
    "turn_activity",
]

# --------------------------------------------------------------------------------------------
# Messages ⇄ facts


def thread_facts(messages: Sequence[BaseMessage]) -> TurnFacts:
    """What the thread's messages say: the newest Wake's digest, whether it holds the cue,
    and whether it is new (no assistant and no plugin message yet).

    Args:
        messages: the thread's messages, any shape (content blocks, dict forms), read with
            ``read_messages``.

    Returns:
        The :class:`TurnFacts` that ``turns.begin`` takes.

    Example:
        >>> thread_facts([HumanMessage("hi")]).new_thread
        True
    """
    read = read_messages(messages)
    digest = None
    for message, seen in zip(reversed(messages), reversed(read), strict=True):
        if seen.form == "recall":
            digest = wake_source(message).get("digest")
            break
    return TurnFacts(
        last_wake_digest=digest if isinstance(digest, str) else None,
        cued=any(m.form == "instructions" for m in read),
        new_thread=not any(m.role == "assistant" or m.is_plugin for m in read),
    )


def turn_activity(messages: Sequence[BaseMessage]) -> TurnActivity:
    """Activity of the turn that ends at the last message: text after the last real user
    message (plugin messages are not the user), and the tool calls that got a result.

    Every message shape counts: the user's text blocks, the assistant's text blocks (not its
    reasoning, not tool-call arguments), and tool calls listed in ``tool_calls`` or only as
    ``tool_use`` / ``function_call`` blocks, once each.

    Args:
        messages: the thread's messages up to the end of the turn (LangChain messages or their
            dict forms).

    Returns:
        The turn's :class:`TurnActivity` (no user text when no real user message is found).

    Example:
        >>> turn_activity([HumanMessage([{"type": "text", "text": "Fix it"}]),
        ...                AIMessage([{"type": "text", "text": "Done."}])]).assistant_chars
        5
    """
    read = read_messages(messages)
    start = latest_request_index(read)
    turn = read[start:] if start is not None else read
    user = turn[0].text if start is not None else ""
    answered = {m.tool_call_id for m in turn if m.role == "tool" and m.tool_call_id}
    calls = tuple(
        call.name
        for m in turn
        if m.role == "assistant"
        for call in m.tool_calls
        if call.id is not None and call.id in answered
    )
    assistant = sum(len(m.text) for m in turn if m.role == "assistant")
    return TurnActivity(user_text=user, assistant_chars=assistant, tool_calls=calls)


def _start_messages(
    start: TurnStart, resume: str | None, messages: Sequence[BaseMessage], *, keep: bool
) -> list[BaseMessage]:
    """The resume block, the cue, the stubs replacing older Wakes (unless ``keep``) and the
    Wake of a begun turn, in that order."""
    out: list[BaseMessage] = []
    if resume is not None:
        out.append(plugin_message(resume, plugin_metadata("resume")))
    if start.cue is not None:
        out.append(plugin_message(start.cue.text, start.cue.metadata))
    if start.wake is not None:
        if not keep:
            out.extend(superseded_wakes(messages, start.wake))
        out.append(plugin_message(start.wake.text, start.wake.metadata))
    return out


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
    share: bool = True,
) -> tuple[str, list[BaseMessage]]:
    """Begin the turn; return its id and the messages to append.

    Those are the task's resume block (a new thread of an existing task), the one cue, and the
    Wake when it changed, preceded by a stub with the id of each older Wake of the thread
    (``add_messages`` replaces those in place) unless ``runtime.keep_snapshots``. A begin
    that fails after pinning releases the turn before raising.
    ``memory_scope`` is whose memory the turn sees (default: the local scope); ``share``
    stores the turn for every process sharing the database (the turn subgraph's begin: the
    turn outlives the step), ``False`` leaves that to ``mem.turns.share`` (the middleware).
    """
    facts = thread_facts(messages)
    scope = TurnScope(
        thread_id=thread, agent_id=agent_id, root=root, memory_scope=memory_scope or Scope()
    )
    start = mem.turns.begin(scope, facts, retained=retained, share=share)
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
    keep = mem.config.runtime.keep_snapshots
    return start.turn_id, _start_messages(start, resume, messages, keep=keep)


def end_turn(
    mem: TurnHost,
    thread: str,
    turn_id: str,
    messages: Sequence[BaseMessage],
    *,
    root: bool,
    task: str | None = None,
    window: ContextWindow | None = None,
    tending: Tending | None = None,
) -> list[BaseMessage]:
    """End the turn; for a root agent record its activity and tend the task's fatigue.

    Returns the messages update of :func:`langgraph_mnemon.nodes.mnemos.tend_task` (the code
    that runs before every model call): a warning at REM when a checkpoint was just committed;
    at EMERGENCY the history compacted around the resume block (tool-call groups kept whole,
    the tail sized by tokens); nothing otherwise. The turn (its pin and its budgets) is
    released even when recording fails. ``window``: the agent model's context window;
    ``tending``: where Mnemos's last pass over ``messages`` stopped (``tend_task``).
    """
    try:
        activity = turn_activity(messages) if root else None  # a child records nothing
    except BaseException:
        mem.turns.end(turn_id)  # release the turn all the same
        raise
    mem.turns.end(turn_id, activity, thread_id=thread, transcript=messages)
    # The same code as before every model call.
    if not root:
        return []
    return tend_task(mem, task or thread, messages, window=window, tending=tending)


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
    share: bool = True,
) -> dict[str, Any]:
    """The state update that begins a turn: ``mnemon_turn`` and the messages to append.

    A failing begin is logged and recorded in ``mem.health``; the update is then
    :data:`DEGRADED_TURN` and no messages (no Wake this turn), and the agent runs on.
    ``share``: store the begun turn for every process (:func:`share_turn`).
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
            share=False,
        )
    if step.failed:
        return {"mnemon_turn": DEGRADED_TURN, "messages": []}
    mem.health.began(turn_id)
    if share:
        share_turn(mem, turn_id)
    return {"mnemon_turn": turn_id, "messages": new}


def share_turn(mem: TurnHost, turn_id: str) -> None:
    """Store a begun turn for every process sharing the database (``mem.turns.share``).

    Guarded as the ``share`` step: when the database cannot take it (a full disk), the failure
    is logged and recorded in ``mem.health`` and the turn goes on in this process only.
    """
    with acting("automatic"), memory_step(mem.health, "share"):
        mem.turns.share(turn_id)


def end_update(
    mem: TurnHost,
    config: RunnableConfig | None,
    turn_id: str | None,
    messages: Sequence[BaseMessage] | None,
    *,
    root: bool,
    window: ContextWindow | None = None,
    tending: Tending | None = None,
) -> dict[str, Any]:
    """The state update that ends a turn (``mnemon_turn`` back to None).

    A failing end is logged and recorded in ``mem.health`` and changes no message; a turn
    whose begin failed (:data:`DEGRADED_TURN`) has nothing to end. ``window``: the agent
    model's context window (Mnemos tends the task against it); ``tending``: where Mnemos's
    last pass stopped.
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
                window=window,
                tending=tending,
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
    window: ContextWindow | None = None,
) -> dict[str, Any]:
    """The turn subgraph's one node: end the turn in ``mnemon_turn``, else begin one.

    ``window``: the agent model's context window, when the graph was built with the model.
    The end tends Mnemos from ``mnemon_seen`` (only the messages new since the last pass) and
    moves it on; a begin that replaced older messages in place resets it.
    """
    messages = state.get("messages")
    turn_id = state.get("mnemon_turn")
    if turn_id:
        tending = Tending.from_state(state.get("mnemon_seen"))
        update = end_update(
            mem, config, turn_id, messages, root=root, window=window, tending=tending
        )
        return {**update, "mnemon_seen": tending.state()}
    update = begin_update(mem, config, messages, agent_id=agent_id, root=root, retained=retained)
    ids = {m.id for m in messages or () if getattr(m, "id", None)}
    if any(m.id in ids for m in update["messages"]):
        return {**update, "mnemon_seen": None}  # older Wakes replaced: the next pass reads all
    return update
