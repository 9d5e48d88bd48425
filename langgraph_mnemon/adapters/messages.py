"""Any LangChain message -> text and parts: the message shapes several surfaces share.

The plugin marks its own messages (the Wake, the cue, a resume block) with
``additional_kwargs["mnemon"]["source"]["form"]``; :func:`plugin_form` reads that mark, so
that a reviewer, a transcript or the demo never mistakes the plugin's text for the user's.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage

from langgraph_mnemon.contracts import safe_text

__all__ = ["plugin_form", "transcript", "user_texts"]

_KEY = "mnemon"
_ROLES = {"human": "user", "ai": "assistant", "tool": "tool result"}


def plugin_form(message: BaseMessage) -> str | None:
    """``recall`` (a Wake), ``instructions`` (a cue) or None for messages not from this plugin.

    Args:
        message: any LangChain message.

    Returns:
        The plugin form recorded on the message, or None when the plugin did not write it.

    Example:
        >>> plugin_form(HumanMessage("hi"))  # a user's message
        >>> [m for m in state["messages"] if plugin_form(m) == "recall"]  # the Wakes sent
    """
    meta = message.additional_kwargs.get(_KEY)
    if isinstance(meta, dict) and isinstance(meta.get("source"), dict):
        form = meta["source"].get("form")
        return form if isinstance(form, str) else None
    return None


def transcript(messages: Sequence[BaseMessage], max_chars: int) -> str:
    """The conversation as ``[role] text`` lines, its last ``max_chars`` characters.

    The plugin's own messages, empty messages and roles other than user / assistant / tool
    are left out; content blocks count by their text, never a lone surrogate or NUL.

    Args:
        messages: the turns to show.
        max_chars: how many trailing characters to keep.

    Returns:
        The transcript text (possibly empty).

    Example:
        >>> transcript([HumanMessage("hi"), AIMessage("hello")], 100)
        '[user] hi\\n[assistant] hello'
    """
    lines = []
    for message in messages:
        if plugin_form(message) is not None:
            continue  # our own Wake / cue / resume text is not part of the conversation
        text = safe_text(message.text)
        if not text.strip():
            continue
        role = _ROLES.get(message.type)
        if role:
            lines.append(f"[{role}] {text}")
    return "\n".join(lines)[-max_chars:]


def user_texts(messages: Sequence[BaseMessage]) -> list[str]:
    """What the user really wrote: plugin messages (Wake, cue, resume) are not the user.

    Args:
        messages: any LangChain messages.

    Returns:
        The text of each human message the plugin did not write, in order.

    Example:
        >>> user_texts([HumanMessage("remember: tabs"), AIMessage("ok")])
        ['remember: tabs']
    """
    return [
        safe_text(m.text)  # content blocks too (their text), never a lone surrogate or NUL
        for m in messages
        if isinstance(m, HumanMessage)
        and plugin_form(m) is None
        and (isinstance(m.content, str) or m.text)
    ]
