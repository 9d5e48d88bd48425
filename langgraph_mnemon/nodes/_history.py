"""Message-history compaction that keeps tool-call groups intact.

An AI message that calls tools and the tool messages answering it form one group: a provider
rejects a history where a tool message lost its call, or a call lost its answer. Compaction
therefore cuts only at group boundaries and puts one summary message in place of what it cut.
The tail kept is sized either by a message count (:func:`compact_history`) or by a token budget
(:func:`compact_to_budget`; Mnemos at EMERGENCY uses its cut, :func:`budget_cut`, with a resume
note of its own). Messages are read with
:func:`~langgraph_mnemon.memory_layers.messages.read_message`, so content blocks (Anthropic
``tool_use``, OpenAI responses output) count as what they are.

Example:
    >>> update = compact_history(state["messages"], keep_last=12, summary="Earlier: ...")
    >>> return {"messages": update}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langgraph_mnemon.adapters.messages import plugin_message
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.messages import MessageText, read_messages

__all__ = [
    "budget_cut",
    "compact_history",
    "compact_to_budget",
    "rewrite_history",
    "safe_cut",
    "valid_tool_sequence",
]


def _group_starts(read: Sequence[MessageText]) -> list[int]:
    """Where each group starts: an AI message with tool calls absorbs the tool messages that
    answer it; every other message is a group of its own. A stray tool message is never a
    start (cutting there would leave it without its call)."""
    starts: list[int] = []
    i = 0
    while i < len(read):
        message = read[i]
        end = i + 1
        if message.role == "assistant" and message.tool_calls:
            wanted = {call.id for call in message.tool_calls}
            while end < len(read) and read[end].role == "tool" and wanted:
                wanted.discard(read[end].tool_call_id)
                end += 1
        if message.role != "tool":
            starts.append(i)
        i = end
    return starts


def _head(read: Sequence[MessageText]) -> int:
    """How many leading system messages there are (never cut)."""
    head = 0
    while head < len(read) and read[head].role == "system":
        head += 1
    return head


def safe_cut(messages: Sequence[Any], keep_last: int) -> int:
    """The index where the kept tail starts: at most ``keep_last`` messages, on a group boundary.

    Leading system messages are never cut. Returns 0 when nothing can be removed.

    Raises:
        InvalidInputError: ``keep_last`` is not a positive integer.

    Example:
        >>> safe_cut([SystemMessage("s"), HumanMessage("a"), HumanMessage("b")], 1)
        2
    """
    if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 1:
        raise InvalidInputError("keep_last must be a positive integer")
    read = read_messages(messages)
    head = _head(read)
    target = max(len(read) - keep_last, head)
    starts = [start for start in _group_starts(read) if start >= target]
    cut = starts[0] if starts else len(read)
    return cut if cut > head else 0


def budget_cut(messages: Sequence[Any], budget_chars: int) -> int:
    """The index where the longest tail that fits ``budget_chars`` starts, on a group boundary.

    The last group is always kept, even when it alone is over the budget (the model must see
    the newest results). Leading system messages are never cut.

    Args:
        messages: LangChain messages or their dict forms.
        budget_chars: the characters the kept tail may hold.

    Returns:
        The start of the kept tail; 0 when nothing can be removed.

    Raises:
        InvalidInputError: ``budget_chars`` is not a non-negative integer.

    Example:
        >>> budget_cut([HumanMessage("a" * 100), HumanMessage("b")], budget_chars=10)
        1
    """
    if isinstance(budget_chars, bool) or not isinstance(budget_chars, int) or budget_chars < 0:
        raise InvalidInputError("budget_chars must be a non-negative integer")
    read = read_messages(messages)
    head = _head(read)
    starts = [start for start in _group_starts(read) if start > head]
    if not starts:
        return 0
    suffix = [0] * (len(read) + 1)
    for i in range(len(read) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + read[i].chars
    cut = starts[-1]
    for start in reversed(starts[:-1]):
        if suffix[start] > budget_chars:
            break
        cut = start
    return cut


def rewrite_history(
    messages: Sequence[BaseMessage], cut: int, note: BaseMessage
) -> list[BaseMessage]:
    """An ``add_messages`` update: leading system messages, ``note``, then ``messages[cut:]``.

    A plain append would put the note after the tail, so the whole list is replaced
    (``RemoveMessage(REMOVE_ALL_MESSAGES)`` first). ``cut`` 0 means nothing to remove: ``[]``.

    Example:
        >>> rewrite_history(messages, budget_cut(messages, 4000), summary_message)
    """
    if cut <= 0:
        return []
    read = read_messages(messages[:cut])
    head = [m for m, r in zip(messages[:cut], read, strict=True) if r.role == "system"]
    return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *head, note, *messages[cut:]]


def _summary_note(summary: str, metadata: dict[str, Any] | None) -> HumanMessage:
    if not isinstance(summary, str) or not summary.strip():
        raise InvalidInputError("summary must be a non-empty string")
    return plugin_message(
        f"[Summary of the earlier conversation]\n{summary.strip()}", metadata or {"form": "summary"}
    )


def compact_history(
    messages: Sequence[BaseMessage],
    keep_last: int,
    summary: str,
    *,
    metadata: dict[str, Any] | None = None,
) -> list[BaseMessage]:
    """An ``add_messages`` update that replaces the older messages with one summary.

    The history is rewritten as leading system messages, the summary, then the kept tail (at
    most ``keep_last`` messages, on a group boundary).

    Returns:
        The update; ``[]`` when there is nothing to remove.

    Raises:
        InvalidInputError: a blank ``summary`` or a bad ``keep_last``.

    Example:
        >>> compact_history(state["messages"], 12, "Earlier: the importer was read.")
    """
    note = _summary_note(summary, metadata)
    return rewrite_history(messages, safe_cut(messages, keep_last), note)


def compact_to_budget(
    messages: Sequence[BaseMessage],
    budget_chars: int,
    summary: str,
    *,
    metadata: dict[str, Any] | None = None,
) -> list[BaseMessage]:
    """Like :func:`compact_history`, with the kept tail sized by characters (:func:`budget_cut`).

    Raises:
        InvalidInputError: a blank ``summary`` or a negative ``budget_chars``.

    Example:
        >>> compact_to_budget(state["messages"], 16_000, "Earlier: the importer was read.")
    """
    note = _summary_note(summary, metadata)
    return rewrite_history(messages, budget_cut(messages, budget_chars), note)


def valid_tool_sequence(messages: Sequence[Any]) -> bool:
    """True when every tool message answers a call made just before it and every call is
    answered: the order a chat provider accepts.

    Example:
        >>> valid_tool_sequence([ToolMessage("x", tool_call_id="zz")])
        False
    """
    open_calls: set[str | None] = set()
    for message in read_messages(messages):
        if message.role == "tool":
            if message.tool_call_id not in open_calls:
                return False
            open_calls.discard(message.tool_call_id)
            continue
        if open_calls:
            return False
        if message.role == "assistant" and message.tool_calls:
            open_calls = {call.id for call in message.tool_calls}
    return not open_calls
