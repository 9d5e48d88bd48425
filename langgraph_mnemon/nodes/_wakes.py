"""Older Wakes of a thread, superseded by a new one: each becomes a one-line stub.

A Wake is complete state (the whole Runtime snapshot, the covers, the tools line), so a newer
Wake leaves nothing in an older one worth sending; yet every model call sends the thread again,
and a thread that saw ten Runtime changes carried ten snapshots. :func:`superseded_wakes` makes,
for each older complete Wake, a stub with the same id (``add_messages`` replaces it in place)
that names the revision it showed and the one replacing it. With ``runtime.keep_snapshots`` the
caller asks for none: the history before the new Wake then stays byte-identical, a stable
prompt-cache prefix.

Example:
    >>> stubs = superseded_wakes(state["messages"], start.wake)
    >>> stubs[0].content
    '[Runtime Memory snapshot r1f0c2a9be4d7 superseded by r8e11d03c5a62]'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from langgraph_mnemon.adapters.messages import plugin_message
from langgraph_mnemon.memory_layers.messages import read_messages
from langgraph_mnemon.memory_layers.turns import Wake, plugin_metadata

__all__ = ["SUPERSEDED_FORM", "superseded_wakes", "wake_source"]

SUPERSEDED_FORM = "superseded"
"""The plugin form of a stub that replaced an older Wake."""

# A Wake written before its metadata carried the revision still shows it in the snapshot.
_REVISION_LINE = re.compile(r"^Revision: ([0-9a-f]{12,64})$", re.MULTILINE)
_SHOWN = 12  # hex digits of a revision or digest the stub names


def wake_source(message: Any) -> Mapping[str, Any]:
    """The ``source`` mark of a plugin message (``{}`` when it has none).

    Example:
        >>> wake_source(wake_message)["digest"]
        '5d1c...'
    """
    extra = message.get("additional_kwargs") if isinstance(message, Mapping) else None
    if extra is None:
        extra = getattr(message, "additional_kwargs", None)
    meta = extra.get("mnemon") if isinstance(extra, Mapping) else None
    source = meta.get("source") if isinstance(meta, Mapping) else None
    return source if isinstance(source, Mapping) else {}


def _revision(source: Mapping[str, Any], text: str) -> str | None:
    revision = source.get("runtime_revision")
    if isinstance(revision, str) and revision:
        return revision
    found = _REVISION_LINE.search(text)
    return found.group(1) if found else None


def _label(revision: str | None, digest: Any) -> str:
    """``r<revision>`` for a Wake showing Runtime Memory, else ``Wake <digest>``."""
    if revision:
        return f"r{revision[:_SHOWN]}"
    if isinstance(digest, str) and digest:
        return f"Wake {digest[:_SHOWN]}"
    return "an earlier revision"


def superseded_wakes(messages: Sequence[BaseMessage], wake: Wake) -> list[HumanMessage]:
    """A stub for every complete Wake in ``messages``, now that ``wake`` is appended.

    Args:
        messages: the thread's messages before ``wake``.
        wake: the Wake being appended.

    Returns:
        One stub per older Wake that has an id (a message without one cannot be replaced in
        place), in thread order: the old message's id, a one-line text naming the revision it
        showed and the new one, and the plugin form ``superseded``.

    Example:
        >>> [m.id for m in superseded_wakes(messages, wake)] == [old_wake.id]
        True
    """
    new_source = wake.metadata.get("source") or {}
    new = _label(_revision(new_source, wake.text), wake.digest)
    stubs = []
    for message, read in zip(messages, read_messages(messages), strict=True):
        if read.form != "recall" or not read.id:
            continue
        source = wake_source(message)
        revision = _revision(source, read.text)
        old = _label(revision, source.get("digest"))
        extra = {"runtime_revision": revision} if revision else {}
        metadata = plugin_metadata(
            SUPERSEDED_FORM, digest=source.get("digest"), superseded_by=wake.digest, **extra
        )
        text = f"[Runtime Memory snapshot {old} superseded by {new}]"
        stubs.append(plugin_message(text, metadata, replaces=read.id))
    return stubs
