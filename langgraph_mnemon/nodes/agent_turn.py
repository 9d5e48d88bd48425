"""The turn lifecycle inside ``create_agent``'s model node: no graph step of its own.

The middleware's ``wrap_model_call`` runs :func:`plan_call` before the model call and
:func:`finish_call` after it. The first model call of a turn begins it (the turn's id and the
messages :func:`~langgraph_mnemon.nodes.turn.begin_update` appends: resume block, cue, Wake);
every call lets Mnemos tend the task (:func:`~langgraph_mnemon.nodes.mnemos.model_call_update`:
a REM warning, or the compacted history at EMERGENCY); a response without tool calls (or with
the structured response) ends the turn (:func:`~langgraph_mnemon.nodes.turn.end_update`).
A turn that outlives the model call that began it (tool calls follow) is stored for every
process sharing the database before the call's update is checkpointed: an interrupt resumed
on another replica, a retry or a restarted worker continues it there. A turn begun and ended
in one call is never stored.

The messages a separate hook node would have written before the call go in front of the model's
own messages in the model node's update, so the thread ends up exactly as with the hook nodes:
``[..., request, cue, Wake, answer]``. The stubs that replace the thread's older Wakes (same
ids) go in the call's extra update instead (:func:`finish_call`), applied after the model
node's messages: there they replace in place even when ``create_agent`` rewrites the history
it repaired. A turn left open (the agent ended without a final answer:
a ``return_direct`` tool, another middleware's jump to the end, a failed run) is ended when the
next request's first model call begins a new one.

Example:
    >>> plan = plan_call(mem, config, state["messages"], state.get("mnemon_turn"),
    ...                  agent_id="main", root=True)
    >>> response = model(plan.model_messages(request.messages))
    >>> before, update = finish_call(mem, config, plan, response.result, root=True)
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langgraph_mnemon.memory_layers.messages import read_messages, role_of
from langgraph_mnemon.memory_layers.mnemos import ContextWindow, SeenMessages
from langgraph_mnemon.nodes._guard import DEGRADED_TURN
from langgraph_mnemon.nodes._run import TurnHost
from langgraph_mnemon.nodes.mnemos import Tending, model_call_update
from langgraph_mnemon.nodes.turn import begin_update, end_update, is_request, share_turn

__all__ = ["CallPlan", "finish_call", "left_open", "plan_call", "release_begun", "turn_ends"]


@dataclass
class CallPlan:
    """What one model call does to the turn and the thread.

    ``turn_id``: the turn live during the call (``None`` when memory is off for it);
    ``begun``: set when this call began it (released again if the model call fails);
    ``fresh``: this call set ``turn_id`` (a begun turn, or a begin that failed);
    ``before``: the messages update that goes in front of the model's messages (appended
    messages, or ``RemoveMessage(REMOVE_ALL_MESSAGES)`` and the compacted history);
    ``replaced``: stubs that replace older Wakes of the thread by id (in the extra update);
    ``history``: the thread's messages as the model sees them (the state with ``before`` and
    ``replaced``).
    ``window``: the called model's context window, for Mnemos before and after the call.
    ``tending``: where Mnemos's last pass over the thread stopped (the state's
    ``mnemon_seen``), moved on by this call's passes.
    """

    turn_id: str | None
    begun: str | None = None
    fresh: bool = False
    before: list[BaseMessage] = field(default_factory=list)
    replaced: list[BaseMessage] = field(default_factory=list)
    history: list[BaseMessage] = field(default_factory=list)
    window: ContextWindow | None = None
    tending: Tending = field(default_factory=Tending)

    @property
    def rewrites(self) -> bool:
        """Whether ``before`` replaces the whole history (an EMERGENCY compaction)."""
        return bool(self.before) and _removes_all(self.before[0])

    def model_messages(self, request_messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """What to send the model: the request's own messages with ``before`` applied."""
        if self.rewrites:
            return list(self.before[1:])
        return [*_replace(request_messages, self.replaced), *self.before]


def _removes_all(message: BaseMessage) -> bool:
    return isinstance(message, RemoveMessage) and message.id == REMOVE_ALL_MESSAGES


def _replace(messages: Sequence[BaseMessage], replaced: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with each message whose id a ``replaced`` one has swapped for it."""
    by_id = {m.id: m for m in replaced}
    return [by_id.get(m.id, m) if m.id else m for m in messages] if by_id else list(messages)


def _apply(messages: Sequence[BaseMessage], update: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``messages`` after an append-or-rewrite update (the two shapes our steps return)."""
    if update and _removes_all(update[0]):
        return list(update[1:])
    return [*messages, *update]


def left_open(messages: Sequence[BaseMessage]) -> int | None:
    """The index of a real user request after the newest assistant message, if any.

    A turn still in ``mnemon_turn`` with such a request was left open by an agent that ended
    without a final answer: the request starts the next turn.

    Example:
        >>> left_open([HumanMessage("a"), AIMessage("x", tool_calls=[...]), HumanMessage("b")])
        2
    """
    # Only the tail after the newest assistant message is read: the whole history is not.
    tail = len(messages)
    while tail and role_of(messages[tail - 1]) != "assistant":
        tail -= 1
    read = read_messages(messages[tail:])
    for index in range(len(read) - 1, -1, -1):
        if is_request(read[index]):
            return tail + index
    return None


def plan_call(
    mem: TurnHost,
    config: RunnableConfig | None,
    messages: Sequence[BaseMessage] | None,
    turn_id: str | None,
    *,
    agent_id: str,
    root: bool,
    retained: str | None = None,
    window: ContextWindow | None = None,
    seen: SeenMessages | None = None,
) -> CallPlan:
    """Before a model call: end a turn left open, begin one if none is live, tend the task.

    Each step is guarded (``begin`` / ``end`` / ``mnemos`` in ``mem.health``): a failing step
    changes no message and the model call goes on.

    Args:
        mem: the host. config: the run's config. messages: the state's messages.
        turn_id: the state's ``mnemon_turn``. agent_id, root, retained: as for the middleware.
        window: the called model's context window (kept in the plan for :func:`finish_call`).
        seen: where Mnemos's last pass stopped (the state's ``mnemon_seen``): only the
            messages after it are observed.

    Returns:
        The :class:`CallPlan` for :func:`finish_call`.

    Example:
        >>> plan_call(mem, config, [HumanMessage("hi")], None, agent_id="main", root=True).begun
        '3f2a...'
    """
    history = list(messages or [])
    tending = Tending(seen)
    if turn_id:
        request = left_open(history)
        if request is None:
            plan = CallPlan(turn_id=turn_id, history=history, window=window, tending=tending)
            return _tended(mem, config, plan, root)
        # The turn left open ends without its messages (none now).
        end_update(
            mem, config, turn_id, history[:request], root=root, window=window, tending=tending
        )
    begin = begin_update(
        mem, config, history, agent_id=agent_id, root=root, retained=retained, share=False
    )
    return _tended(mem, config, _begun(begin, history, window, tending), root)


def _begun(
    begin: dict[str, Any],
    history: list[BaseMessage],
    window: ContextWindow | None,
    tending: Tending,
) -> CallPlan:
    """The plan of a call that began a turn: ``begin_update``'s messages split into those
    appended in front of the answer and the stubs that replace older ones by id."""
    begun = begin["mnemon_turn"]
    ids = {m.id for m in history if m.id}
    replaced = [m for m in begin["messages"] if m.id in ids]
    before = [m for m in begin["messages"] if m.id not in ids]
    if replaced:
        tending.seen = None  # older messages changed in place: the next pass reads them all
    return CallPlan(
        turn_id=begun,
        begun=begun if begun != DEGRADED_TURN else None,
        fresh=True,
        before=before,
        replaced=replaced,
        history=[*_replace(history, replaced), *before],
        window=window,
        tending=tending,
    )


def _tended(mem: TurnHost, config: RunnableConfig | None, plan: CallPlan, root: bool) -> CallPlan:
    """``plan`` with Mnemos's update before the call (a warning, or the compacted history)."""
    update = model_call_update(
        mem, config, plan.history, root=root, window=plan.window, tending=plan.tending
    )
    update = update.get("messages") or []
    if update:
        if _removes_all(update[0]):  # the rewrite holds the stubs already: none to apply
            plan.before, plan.replaced = list(update), []
        else:
            plan.before = [*plan.before, *update]
        plan.history = _apply(plan.history, update)
    return plan


def turn_ends(result: Sequence[BaseMessage], structured: Any = None) -> bool:
    """Whether the agent stops after this model response: no tool calls, or a structured
    response (its tool call is answered in the same step)."""
    if structured is not None:
        return True
    last = next((m for m in reversed(result) if isinstance(m, AIMessage)), None)
    return last is None or not last.tool_calls


def finish_call(
    mem: TurnHost,
    config: RunnableConfig | None,
    plan: CallPlan,
    result: Sequence[BaseMessage],
    *,
    root: bool,
    structured: Any = None,
) -> dict[str, Any]:
    """After a model call: the extra state update (``{}`` when there is none).

    When the response ends the turn, ``end_update``'s update (``mnemon_turn`` back to ``None``
    and its messages: a REM warning or the compacted history at EMERGENCY, after the answer);
    otherwise ``mnemon_turn`` when this call began the turn, which is then stored for every
    process (guarded: a failure is recorded in ``mem.health`` and the turn goes on here).
    The plan's stubs for older Wakes lead the update's messages. ``mnemon_seen`` carries where
    Mnemos's last pass stopped to the next call.

    Example:
        >>> finish_call(mem, config, plan, [AIMessage("done")], root=True)
        {'mnemon_turn': None, 'messages': []}
    """
    if plan.turn_id is None:
        return {}
    if turn_ends(result, structured):
        for message in result:  # the id the next pass finds it by (add_messages keeps it)
            if message.id is None:
                message.id = str(uuid.uuid4())
        history = [*plan.history, *result]
        update = end_update(
            mem, config, plan.turn_id, history, root=root, window=plan.window, tending=plan.tending
        )
    else:
        if plan.begun is not None:
            share_turn(mem, plan.begun)
        update = {"mnemon_turn": plan.turn_id} if plan.fresh else {}
    if plan.replaced:  # a compaction after them (RemoveMessage of all) holds them already
        update = {**update, "messages": [*plan.replaced, *(update.get("messages") or [])]}
    return {**update, "mnemon_seen": plan.tending.state()}


def release_begun(mem: TurnHost, plan: CallPlan | None) -> None:
    """Release the turn a failed model call began (a retry begins it again)."""
    if plan is not None and plan.begun is not None:
        mem.turns.end(plan.begun)
