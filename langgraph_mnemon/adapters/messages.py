"""Any LangChain message -> text and parts: the message shapes several surfaces share.

The reading itself is :func:`langgraph_mnemon.memory_layers.messages.read_message` (content
blocks of every provider shape); this module turns it into what the review and the demo show.
The plugin marks its own messages (the Wake, the cue, a resume block) with
``additional_kwargs["mnemon"]["source"]["form"]``; :func:`plugin_form` reads that mark, so
that a reviewer, a transcript or the demo never mistakes the plugin's text for the user's.
:func:`plugin_message` makes every such message, with an id that starts with
``do-not-render-`` (chat UIs such as LangChain's Agent Chat UI hide those);
:func:`latest_request` finds the user's own newest request among them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, convert_to_messages

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.messages import (
    MessageText,
    latest_request_index,
    plugin_form_of,
    read_message,
    read_messages,
)

__all__ = [
    "PLUGIN_ID_PREFIX",
    "latest_request",
    "plugin_form",
    "plugin_message",
    "transcript",
    "user_texts",
]

PLUGIN_ID_PREFIX = "do-not-render-mnemon-"
"""How the id of every message this plugin adds to a thread starts (``do-not-render-``: chat
UIs hide such messages; the ``mnemon`` mark in ``additional_kwargs`` says what it is)."""

_ROLES = {"user": "user", "assistant": "assistant", "tool": "tool result"}
_SLUG = re.compile(r"[^a-z0-9]+")


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


def plugin_message(
    text: str, metadata: Mapping[str, Any], *, replaces: str | None = None
) -> HumanMessage:
    """A message this plugin adds to a thread (Wake, cue, resume block, warning, stub).

    A ``HumanMessage`` (every provider accepts one anywhere in a history, unlike a system
    message) whose id starts with :data:`PLUGIN_ID_PREFIX`, so chat UIs do not show it as the
    user's, and whose ``additional_kwargs["mnemon"]`` is ``metadata`` (the plugin mark).

    Args:
        text: the message text.
        metadata: the plugin mark (``plugin_metadata(form, ...)``).
        replaces: the id of the message this one replaces (``add_messages`` replaces it in
            place); None gives a new unique id.

    Returns:
        The message.

    Example:
        >>> plugin_message("[MNEMON] ...", plugin_metadata("warning")).id.startswith(
        ...     "do-not-render-mnemon-warning-")
        True
    """
    message_id = replaces
    if message_id is None:
        form = plugin_form_of({"additional_kwargs": {"mnemon": metadata}}) or "message"
        slug = _SLUG.sub("-", form.lower()).strip("-") or "message"
        message_id = f"{PLUGIN_ID_PREFIX}{slug}-{uuid.uuid4().hex}"
    return HumanMessage(content=text, id=message_id, additional_kwargs={"mnemon": dict(metadata)})


def latest_request(messages: Sequence[BaseMessage | Any]) -> HumanMessage | None:
    """The user's newest request in a thread: what a node should answer.

    The plugin appends its own human-typed messages after the user's (the Wake, the cue, a
    resume block), so "the last ``HumanMessage``" is often the Wake. This skips every plugin
    message, AI and tool messages, system messages, and user messages that only carry tool
    results; a request made of content blocks (text and images) counts.

    Args:
        messages: the thread's messages (``state["messages"]``); dicts, ``(role, text)``
            tuples and strings are read as LangChain reads them.

    Returns:
        That ``HumanMessage`` (the thread's own object when given messages), or None when the
        user asked nothing.

    Raises:
        InvalidInputError: ``messages`` is not a list of messages.

    Example:
        >>> from langgraph_mnemon import latest_request
        >>> thread = [HumanMessage("Fix it"), wake, AIMessage("Done.")]  # wake: the plugin's
        >>> latest_request(thread).content
        'Fix it'
        >>> def agent(state):   # a node of your graph
        ...     request = latest_request(state["messages"])   # not the Wake
        ...     return {"messages": [AIMessage(f"You asked: {request.content}")]}
    """
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise InvalidInputError(
            f"latest_request takes the list of messages (state['messages']), "
            f"not {type(messages).__name__}"
        )
    items: Sequence[Any] = messages
    if not all(isinstance(m, BaseMessage) for m in items):
        try:
            items = convert_to_messages(items)
        except (NotImplementedError, ValueError, TypeError) as exc:
            raise InvalidInputError(
                f"latest_request could not read a message: {exc}; pass LangChain messages"
            ) from exc
    index = latest_request_index(read_messages(items))
    if index is None:
        return None
    found = items[index]
    if isinstance(found, HumanMessage):
        return found
    return HumanMessage(content=found.content, id=found.id, name=found.name)  # a ChatMessage


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
