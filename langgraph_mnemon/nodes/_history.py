"""Message-history compaction that keeps tool-call groups intact.

An AI message that calls tools and the tool messages answering it form one group: a provider
rejects a history where a tool message lost its call, or a call lost its answer. Compaction
therefore cuts only at group boundaries and puts one summary message in place of what it cut.

Example:
    >>> update = compact_history(state["messages"], keep_last=12, summary="Earlier: ...")
    >>> return {"messages": update}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langgraph_mnemon.errors import InvalidInputError

__all__ = ["compact_history", "safe_cut", "valid_tool_sequence"]


def _groups(messages: Sequence[BaseMessage]) -> list[tuple[int, int]]:
    """``(start, end)`` spans: an AI message with tool calls plus its answers, or one message."""
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        end = i + 1
        if isinstance(message, AIMessage) and message.tool_calls:
            wanted = {call["id"] for call in message.tool_calls}
            while end < len(messages) and isinstance(messages[end], ToolMessage):
                wanted.discard(messages[end].tool_call_id)
                end += 1
                if not wanted:
                    break
        spans.append((i, end))
        i = end
    return spans


def safe_cut(messages: Sequence[BaseMessage], keep_last: int) -> int:
    """The index where the kept tail starts: at most ``keep_last`` messages, on a group boundary.

    Leading system messages are never cut. Returns 0 when nothing can be removed.
    """
    if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 1:
        raise InvalidInputError("keep_last must be a positive integer")
    head = 0
    while head < len(messages) and isinstance(messages[head], SystemMessage):
        head += 1
    target = max(len(messages) - keep_last, head)
    starts = [start for start, _ in _groups(messages) if start >= target]
    cut = starts[0] if starts else len(messages)
    return cut if cut > head else 0


def compact_history(
    messages: Sequence[BaseMessage],
    keep_last: int,
    summary: str,
    *,
    metadata: dict[str, Any] | None = None,
) -> list[BaseMessage]:
    """An ``add_messages`` update that replaces the older messages with one summary.

    The history is rewritten as leading system messages, the summary, then the kept tail (a
    plain append would put the summary after the tail). Returns ``[]`` when there is nothing to
    remove.
    """
    if not isinstance(summary, str) or not summary.strip():
        raise InvalidInputError("summary must be a non-empty string")
    cut = safe_cut(messages, keep_last)
    if cut == 0:
        return []
    head = [m for m in messages[:cut] if isinstance(m, SystemMessage)]
    note = HumanMessage(
        content=f"[Summary of the earlier conversation]\n{summary.strip()}",
        additional_kwargs={"mnemon": metadata or {"form": "summary"}},
    )
    return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *head, note, *messages[cut:]]


def valid_tool_sequence(messages: Sequence[BaseMessage]) -> bool:
    """True when every tool message answers a call made just before it and every call is
    answered: the order a chat provider accepts."""
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in open_calls:
                return False
            open_calls.discard(message.tool_call_id)
            continue
        if open_calls:
            return False
        if isinstance(message, AIMessage) and message.tool_calls:
            open_calls = {call["id"] for call in message.tool_calls}
    return not open_calls
