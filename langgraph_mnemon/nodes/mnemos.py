"""Mnemos inside the turn: what runs before every model call, and again when a turn ends.

:func:`model_call_update` is the one piece of logic the middleware's ``before_model`` hook, the
per-model-call subgraph (:func:`langgraph_mnemon.graphs.turn.build_model_call_graph`) and the
end of a turn share. It shows Mnemos the request's messages (tool signals, the previous
response's ``usage_metadata``, derived nodes: one transaction), measures the task's fatigue and
acts on its state:

- COMPRESS: consolidation (``maintain`` does it).
- PRE_SLEEP / REM: a checkpoint (the cooldown applies); at REM one warning to the model when
  that checkpoint was just committed or the history holds no warning yet (not on every call).
- EMERGENCY: a checkpoint (cooldown too) and, before the model call, the history compacted:
  leading system messages, one plugin message (form ``resume``) with a summary of what was cut
  and the resume block rendered from the task's live state, the turn's user request, then the
  newest tool-call groups that fit ``compact_keep_share`` of the window (the called model's:
  :func:`call_window`). A reading of the compacted history is recorded so the next call does
  not read EMERGENCY again from the stale usage of the last AI message it kept.

Memory never ends the run: a failing step is logged and recorded in ``mem.health`` and the
request goes to the model unchanged.

Example:
    >>> update = model_call_update(mem, config, state["messages"], root=True)
    >>> update.get("messages")   # [] / a warning / RemoveMessage(all) + the compacted history
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langgraph_mnemon.adapters.messages import plugin_message
from langgraph_mnemon.adapters.models import model_window
from langgraph_mnemon.errors import NotFoundError
from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.memory_layers.messages import (
    MessageText,
    is_request,
    latest_request_index,
    message_id,
    messages_chars,
    read_messages,
)
from langgraph_mnemon.memory_layers.mnemos import (
    ContextWindow,
    FatigueResponse,
    Mnemos,
    SeenMessages,
)
from langgraph_mnemon.memory_layers.mnemos.fatigue import context_use
from langgraph_mnemon.memory_layers.turns import plugin_metadata
from langgraph_mnemon.nodes._guard import memory_step
from langgraph_mnemon.nodes._history import budget_cut, rewrite_history
from langgraph_mnemon.nodes._run import TurnHost, task_of, thread_of

__all__ = [
    "Tending",
    "call_window",
    "compaction_message",
    "model_call_update",
    "tend_task",
    "warned",
]

_QUOTE_CHARS = 300
_USER_QUOTES = 3


def call_window(mem: TurnHost, model: Any) -> ContextWindow:
    """The context window Mnemos measures a call of ``model`` against.

    ``mnemos.context_window`` when set, else the model's ``profile["max_input_tokens"]``,
    else ``mnemos.context_window_tokens``.

    Example:
        >>> call_window(mem, ScriptedChatModel(profile={"max_input_tokens": 8000})).label
        '8,000 tokens (model profile)'
    """
    return model_window(model, mem.config.mnemos)


@dataclass
class Tending:
    """Where Mnemos's last pass over one thread's messages stopped.

    A pass given it reads, derives and writes only the messages after ``seen`` and moves it
    on; a pass with nothing new does no I/O. ``seen`` is ``None`` before the first pass and
    after a compaction (the next pass reads the whole list). Carried between model calls in
    the agent's state (``mnemon_seen``, :meth:`SeenMessages.to_state`).

    Example:
        >>> tending = Tending()
        >>> tend_task(mem, "t", messages, tending=tending); tending.seen.count
        4
    """

    seen: SeenMessages | None = None

    @classmethod
    def from_state(cls, value: object) -> Tending:
        """The tending a graph state's ``mnemon_seen`` holds (a bad value: read everything)."""
        return cls(SeenMessages.from_state(value))

    def state(self) -> dict[str, Any] | None:
        """``seen`` in the JSON form a graph state keeps (``mnemon_seen``)."""
        return self.seen.to_state() if self.seen is not None else None

    def covers(self, messages: Sequence[BaseMessage]) -> bool:
        """Whether ``messages`` hold nothing after ``seen`` (the same last message)."""
        seen = self.seen
        return (
            seen is not None
            and seen.count == len(messages)
            and message_id(messages[-1]) == seen.last_id
        )


def model_call_update(
    mem: TurnHost,
    config: RunnableConfig | None,
    messages: Sequence[BaseMessage] | None,
    *,
    root: bool,
    window: ContextWindow | None = None,
    tending: Tending | None = None,
) -> dict[str, Any]:
    """The state update to apply before a model call (``{}`` when there is nothing to do).

    Runs as an automatic trigger, for root agents only, and only when the kernel admits a
    Mnemos write. A failing step is logged and recorded in ``mem.health`` and changes nothing.

    Args:
        mem: the host (``Mnemon``).
        config: the run's config (its ``thread_id`` / Mnemos task id).
        messages: the state's messages (what the model is about to be sent).
        root: ``False`` for a child agent: nothing is observed.
        window: the called model's window (:func:`langgraph_mnemon.adapters.models.model_window`);
            ``None``: the one stored with the task's token reading, else the settings'.
        tending: where the previous pass stopped (only what is new is read; moved on).

    Returns:
        ``{"messages": [...]}`` with a REM warning to append, or the compacted history
        (``RemoveMessage(REMOVE_ALL_MESSAGES)`` first) at EMERGENCY; ``{}`` otherwise.

    Example:
        >>> def before_model(state, runtime):
        ...     return model_call_update(mem, get_config(), state["messages"], root=True) or None
    """
    if not root or not messages:
        return {}
    update: list[BaseMessage] = []
    with acting("automatic"), memory_step(mem.health, "mnemos") as step:
        task = task_of(mem, config, thread_of(config))
        update = tend_task(mem, task, list(messages), window=window, tending=tending)
    if step.failed or not update:
        return {}
    return {"messages": update}


def tend_task(
    mem: TurnHost,
    task: str,
    messages: Sequence[BaseMessage],
    *,
    window: ContextWindow | None = None,
    tending: Tending | None = None,
) -> list[BaseMessage]:
    """Observe ``messages`` for ``task``, maintain it and return the messages update.

    Unguarded (the caller guards it): :func:`model_call_update` and the end of a turn.

    Args:
        mem: the host. task: the Mnemos task. messages: the run's messages.
        window: the called model's window (see :func:`model_call_update`).
        tending: where the previous pass over these messages stopped: only the messages
            after it are observed, and none at all (no I/O) when there are none; moved on
            (``None`` after a compaction). ``None``: the whole list.

    Returns:
        ``[]``, a REM warning (a checkpoint was just committed, or none is in the history), or
        the compacted history at EMERGENCY.

    Raises:
        MnemonError: a Mnemos write or read failed (the caller records it).

    Example:
        >>> tend_task(mem, "thread-1", state["messages"])
        []
    """
    if not mem.kernel.admits("mnemos", "write"):
        return []  # recording signals and checkpoints is a write: a read-only host does neither
    if tending is not None and tending.covers(messages):
        return []  # nothing new since the last pass: nothing to observe, no I/O
    since = tending.seen if tending is not None else None
    # Observation and the fatigue reading in one transaction (one commit when no action runs).
    response = mem.mnemos.maintain(task, messages=messages, window=window, since=since)
    if tending is not None:
        tending.seen = response.seen
    state = response.reading.state
    committed = response.checkpoint is not None and response.checkpoint.status == "committed"
    if state == "EMERGENCY":
        compacted = _compact(mem, task, messages, response)
        if compacted:
            if tending is not None:
                tending.seen = None  # the history is rewritten: the next pass reads it all
            return compacted
    if state in ("REM", "EMERGENCY") and response.message and (committed or not warned(messages)):
        return [_plugin_message(f"[MNEMON] {response.message}", "warning")]
    return []


def warned(messages: Sequence[Any]) -> bool:
    """Whether the history already holds a Mnemos warning (a plugin message, form warning).

    A warning is added when a checkpoint was just committed, or when the history holds none:
    the cooldown of a PRE_SLEEP checkpoint would otherwise hide the REM warning entirely.

    Example:
        >>> warned(state["messages"])
        False
    """
    return any(m.form == "warning" for m in read_messages(messages))


def _compact(
    mem: TurnHost, task: str, messages: Sequence[BaseMessage], response: FatigueResponse
) -> list[BaseMessage]:
    """The compacted history (``[]`` when nothing can be cut), and its token reading."""
    config = mem.config.mnemos
    window = response.reading.window  # the called model's, as the reading measured it
    budget = int(window.tokens * config.compact_keep_share * config.chars_per_token)
    cut = budget_cut(messages, budget)
    if cut == 0:
        return []
    read = read_messages(messages)
    request = _last_request(read, cut)
    if request is not None and read[request].chars > budget // 2:
        request = None  # a request too big to keep is quoted in the summary instead
    cut_part = [m for i, m in enumerate(read[:cut]) if i != request]  # the request stays
    if not cut_part:
        return []  # only the request would go, and it stays: nothing to compact
    resume = _live_resume(mem.mnemos, task, response)
    note = compaction_message(cut_part, resume, context=context_use(response.reading))
    update = rewrite_history(messages, cut, note)
    if request is not None:  # the turn's own request stays, verbatim, right after the note
        at = next(i for i, m in enumerate(update) if m is note)
        update.insert(at + 1, messages[request])
    kept = read_messages(update[1:])
    tokens = round(messages_chars(kept) / config.chars_per_token)
    # The kept AI messages still carry the pre-compaction usage; usage rows are kept once per
    # call id, so this reading stays the newest until the model reports a new one.
    call_id = f"compacted:{uuid.uuid4()}"
    mem.mnemos.record_usage(task, tokens, context_window=window, estimated=True, call_id=call_id)
    return update


def _last_request(read: Sequence[MessageText], cut: int) -> int | None:
    """The index of the newest real user message when it falls in the cut part."""
    index = latest_request_index(read)
    return index if index is not None and index < cut else None


def _live_resume(mnemos: Mnemos, task: str, response: FatigueResponse) -> str:
    """The resume block from the task's live nodes (results after the checkpoint included)."""
    try:
        return mnemos.resume(task, live=True)
    except NotFoundError:
        return response.message or "Context is nearly full."


def compaction_message(
    cut: Sequence[MessageText], resume: str, *, context: str | None = None
) -> HumanMessage:
    """The plugin message (form ``resume``) that replaces the cut part of the history.

    Args:
        cut: the removed messages, read with ``read_messages``.
        resume: the resume block (Markdown).
        context: how full the context was, naming the window
            (``fatigue.context_use(reading)``, e.g. "99% of 8,000 tokens used (model profile)").

    Returns:
        A ``HumanMessage`` marked as this plugin's: what was cut, then the resume block.

    Example:
        >>> compaction_message(read_messages(old), mem.mnemos.resume("t")).content[:9]
        '[MNEMON] '
    """
    full = f", {context}" if context else ""
    lines = [
        f"[MNEMON] The context was nearly full{full}: {len(cut)} earlier messages were compacted.",
        *_cut_lines(cut),
        "",
        resume.strip(),
    ]
    return _plugin_message("\n".join(lines), "resume")


def _cut_lines(cut: Sequence[MessageText]) -> list[str]:
    """A deterministic summary of the removed messages: requests, tool use, the last reply."""
    calls = Counter(call.name for m in cut if m.role == "assistant" for call in m.tool_calls)
    failed = sum(1 for m in cut if m.role == "tool" and m.is_error)
    requests = [m.text for m in cut if is_request(m) and m.text.strip()]
    replies = [m.text for m in cut if m.role == "assistant" and m.text.strip()]
    lines = ["Summary of what was cut:"]
    for text in requests[-_USER_QUOTES:]:
        lines.append(f"- The user asked: {_quote(text)}")
    if calls:
        named = ", ".join(f"{name} ×{count}" for name, count in sorted(calls.items()))
        lines.append(f"- {sum(calls.values())} tool calls ({named}); {failed} failed.")
    if replies:
        lines.append(f"- Your last reply there: {_quote(replies[-1])}")
    return lines if len(lines) > 1 else []  # only plugin messages were cut (an older note)


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _QUOTE_CHARS else flat[: _QUOTE_CHARS - 1] + "…"


def _plugin_message(text: str, form: str) -> HumanMessage:
    return plugin_message(text, plugin_metadata(form))
