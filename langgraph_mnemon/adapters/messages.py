"""Any LangChain message -> text and parts: the message shapes several surfaces share.

The reading itself is :func:`langgraph_mnemon.memory_layers.messages.read_message` (content
blocks of every provider shape); this module turns it into what the review and the demo show.
The plugin marks its own messages (the Wake, the cue, a resume block) with
``additional_kwargs["mnemon"]["source"]["form"]``; :func:`plugin_form` reads that mark, so
that a reviewer, a transcript or the demo never mistakes the plugin's text for the user's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from langgraph_mnemon.memory_layers.messages import MessageText, plugin_form_of, read_message

__all__ = ["plugin_form", "transcript", "user_texts"]

_ROLES = {"user": "user", "assistant": "assistant", "tool": "tool result"}


def plugin_form(message: BaseMessage) -> str | None:
    """``recall`` (a Wake), ``instructions`` (a cue) or None for messages not from this plugin.

    Args:
        message: any LangChain message (or its dict form).

    Returns:
        The plugin form recorded on the message, or None when the plugin did not write it.

    Example:
        >>> plugin_form(HumanMessage("hi"))  # a user's message
        >>> [m for m in state["messages"] if plugin_form(m) == "recall"]  # the Wakes sent
    """
    return plugin_form_of(message)


def _lines(read: MessageText) -> list[str]:
    """The transcript lines of one message: its words (an image as ``[image]``), then any
    tool results it carries; reasoning and tool-call arguments are left out."""
    role = _ROLES.get(read.role)
    if role is None:
        return []
    if read.role == "tool":
        return [f"[tool result] {read.text}"] if read.text.strip() else []
    words = []
    for part in read.parts:
        if part.kind == "text" and part.text.strip():
            words.append(part.text)
        elif part.kind == "image":
            words.append("[image]")
    lines = [f"[{role}] " + "\n".join(words)] if words else []
    lines += [
        f"[tool result] {p.text}" for p in read.parts if p.kind == "tool_result" and p.text.strip()
    ]
    return lines


def transcript(messages: Sequence[BaseMessage | Any], max_chars: int) -> str:
    """The conversation as ``[role] text`` lines, its last ``max_chars`` characters.

    Content blocks of every provider shape count by their text; an image shows as ``[image]``,
    a tool's answer as ``[tool result] ...``; reasoning, tool-call arguments, the plugin's own
    messages, empty messages and system messages are left out. Never a lone surrogate or NUL.

    Args:
        messages: the turns to show (LangChain messages or their dict forms).
        max_chars: how many trailing characters to keep.

    Returns:
        The transcript text (possibly empty).

    Example:
        >>> transcript([HumanMessage("hi"), AIMessage("hello")], 100)
        '[user] hi\\n[assistant] hello'
    """
    lines = []
    for message in messages:
        read = read_message(message)
        if read.is_plugin:
            continue  # our own Wake / cue / resume text is not part of the conversation
        lines += _lines(read)
    return "\n".join(lines)[-max_chars:] if max_chars > 0 else ""


def user_texts(messages: Sequence[BaseMessage | Any]) -> list[str]:
    """What the user really wrote: plugin messages (Wake, cue, resume) are not the user.

    Args:
        messages: any LangChain messages (or their dict forms).

    Returns:
        The text of each user message the plugin did not write, in order (text blocks joined;
        a message of only images or tool results is left out).

    Example:
        >>> user_texts([HumanMessage("remember: tabs"), AIMessage("ok")])
        ['remember: tabs']
    """
    out = []
    for message in messages:
        read = read_message(message)
        if read.role != "user" or read.is_plugin:
            continue
        if isinstance(message, HumanMessage) and isinstance(message.content, str):
            out.append(read.text)  # a string message counts even when empty, as before
        elif read.text:
            out.append(read.text)
    return out
