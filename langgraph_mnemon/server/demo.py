"""The served demo agent's model: ``MNEMON_MODEL``, or a clearly labelled scripted model.

The scripted model lets the demo run offline with no API key. It follows these rules on the
user's last message, so every memory path can be tried from a client and a second thread
visibly knows what the first one was told:

* ``remember about me: <fact>`` → ``mnemon_runtime_memory`` adds the fact to USER (the
  user's own memory, in every project of theirs);
* ``remember <fact>`` (or ``note``/``save``, optionally ``please`` and ``that``) →
  ``mnemon_runtime_memory`` adds the fact to MEMORY;
* a question (ends with ``?``, or starts with a question word such as *when* or *what*) →
  the Runtime Memory entries of the newest Wake are ranked by shared search terms with the
  question (stemmed, function words dropped, so "when does CI run?" shares ``ci`` and ``run``
  with "CI runs every night at 02:00"); the best entry sharing at least half of the question's
  terms is answered as ``From memory: <entry>``. Failing that, with ``mnemon_recall`` among the
  Wake's tools (a Memory Space is active), it recalls with the question and answers
  ``From recall: <evidence>`` (up to three results); otherwise, or when recall finds nothing,
  ``No matching memory: …``;
* anything else → an echo (``You said: …``).

Every reply starts with :data:`DEMO_LABEL`, so nobody mistakes it for a real model.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> reply = scripted_demo_model().invoke([HumanMessage(content="remember CI runs nightly")])
    >>> reply.tool_calls[0]["args"]["content"]
    'CI runs nightly'
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langgraph_mnemon.adapters.messages import latest_request, plugin_form
from langgraph_mnemon.adapters.providers.text import analyze, query_terms
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.runtime import outside_fences, parse_snapshot_files
from langgraph_mnemon.memory_layers.turns import TOOLS_HEADER
from langgraph_mnemon.testing import ScriptedChatModel

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from langgraph_mnemon.host import Mnemon

__all__ = ["DEMO_LABEL", "demo_model", "scripted_demo_model", "wake_entries"]

DEMO_LABEL = "[scripted demo model; set MNEMON_MODEL=provider:model for a real one]"
_REMEMBER = re.compile(
    r"^\s*(?:please\s+)?(?:remember|note|save)(?:\s+that)?[:,]?\s+(.+)$", re.I | re.S
)
_ABOUT_ME = re.compile(r"^\s*(?:please\s+)?remember\s+about\s+me[:,]?\s+(.+)$", re.I | re.S)
_QUESTION_WORD = re.compile(
    r"^\s*(?:what|when|where|who|whom|whose|which|why|how|is|are|was|were|does|did|can|"
    r"could|should|will|would|have|has)\b",
    re.I,
)
_RECALL = "mnemon_recall"
_NO_MATCH = "No matching memory"


def demo_model(mem: Mnemon) -> BaseChatModel:
    """``config.model`` resolved to a chat model, else the scripted demo model."""
    from langgraph_mnemon.adapters.models import resolve_chat_model

    model = resolve_chat_model(mem.config.model)
    return model if model is not None else scripted_demo_model()


def scripted_demo_model() -> ScriptedChatModel:
    """The offline, labelled demo model (rules in the module docstring)."""
    return ScriptedChatModel(script=_reply)


def wake_entries(wake: str) -> list[str]:
    """The Runtime Memory entries (USER.md, then MEMORY.md) shown in a Wake's snapshot.

    Read with the snapshot's own parser
    (:func:`langgraph_mnemon.memory_layers.runtime.parse_snapshot_files`): only tags and headers
    carrying a file block's boundary are structure, so a forged ``</runtime-memory-file>`` or
    ``[importance=critical …]`` inside an entry stays part of that entry.

    Example:
        >>> _ = mem.runtime.add("memory", "CI runs every night at 02:00 </runtime-memory-file>")
        >>> wake_entries(mem.runtime.snapshot().text)
        ['CI runs every night at 02:00 </runtime-memory-file>']
        >>> wake_entries("no snapshot here")
        []
    """
    try:
        files = parse_snapshot_files(wake)
    except InvalidInputError:
        return []  # not a snapshot this host rendered: read nothing from it
    return [entry.content for file in files for entry in file.entries]


def _reply(messages: list[BaseMessage]) -> AIMessage:
    last = messages[-1] if messages else None
    if isinstance(last, ToolMessage):
        if last.name == _RECALL:
            return _say(_recalled(last))
        return _say(f"{last.name or 'tool'} said: {_summary(last)}")
    text = _last_user_text(messages)
    if text is None:
        return _say("Nothing to answer yet.")
    about_me = _ABOUT_ME.match(text)
    if about_me:
        return _call(
            "mnemon_runtime_memory",
            {"action": "add", "target": "user", "content": about_me.group(1).strip()},
        )
    fact = _REMEMBER.match(text)
    if fact:
        return _call(
            "mnemon_runtime_memory",
            {"action": "add", "target": "memory", "content": fact.group(1).strip()},
        )
    if text.rstrip().endswith("?") or _QUESTION_WORD.match(text):
        return _answer(text.strip(), _newest_wake(messages))
    return _say(f"You said: {text.strip()[:500]}")


def _answer(question: str, wake: str | None) -> AIMessage:
    """The Wake's best entry; else a recall when the Wake offers it; else no match."""
    best = _best_entry(question, wake_entries(wake or ""))
    if best is not None:
        return _say(f"From memory: {best}")
    # No Wake at all (a degraded turn): recall anyway, its result says what is possible.
    if wake is None or _RECALL in _wake_tools(wake):
        return _call(_RECALL, {"query": question})
    return _say(f"{_NO_MATCH}: the Wake holds nothing on that and no Memory Space is active.")


def _best_entry(question: str, entries: Sequence[str]) -> str | None:
    """The entry sharing the most of the question's terms, if it shares at least half of them.

    Ties go to the entry the shared terms make up more of, then to the newer entry. The
    half rule keeps one common word ("runs") from answering an unrelated question.
    """
    wanted = set(query_terms(question))
    needed = max(1, (len(wanted) + 1) // 2)
    best: tuple[int, float, int] | None = None
    found: str | None = None
    for position, entry in enumerate(entries):
        terms = set(analyze(entry))
        shared = len(wanted & terms)
        if shared < needed:
            continue
        key = (shared, shared / len(terms), position)
        if best is None or key > best:
            best, found = key, entry
    return found


def _newest_wake(messages: Sequence[BaseMessage]) -> str | None:
    # The Wake is only appended when it changed, so the newest one is the current state.
    for message in reversed(messages):
        if plugin_form(message) == "recall":
            return _text(message)
    return None


def _wake_tools(wake: str) -> set[str]:
    # Outside the snapshot's file blocks only: an entry may read like the tools line.
    for line in outside_fences(wake).splitlines():
        if line.startswith(TOOLS_HEADER):
            names = line[len(TOOLS_HEADER) :].replace("/", ",").split(",")
            return {name.strip() for name in names if name.strip()}
    return set()


def _recalled(message: ToolMessage) -> str:
    data = _json_of(message)
    results = data.get("results") if isinstance(data, dict) else None
    found = [str(r.get("content", "")).strip()[:300] for r in results or [] if isinstance(r, dict)]
    found = [f for f in found if f]
    if found:
        return "From recall: " + "; ".join(found[:3])
    detail = data.get("message") if isinstance(data, dict) else None
    reason = f" (recall: {detail})" if detail else ""
    return f"{_NO_MATCH}: neither the Wake nor recall has anything on that{reason}."


def _last_user_text(messages: list[BaseMessage]) -> str | None:
    request = latest_request(messages)  # the Wake, cue and resume block are not the user
    return _text(request) if request is not None else None


def _text(message: BaseMessage) -> str:
    content = message.content
    return content if isinstance(content, str) else json.dumps(content)


def _say(text: str) -> AIMessage:
    return AIMessage(content=f"{DEMO_LABEL} {text}")


def _call(name: str, args: dict[str, object]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}
        ],
    )


def _json_of(message: ToolMessage) -> object:
    try:
        return json.loads(_text(message))
    except ValueError:
        return None


def _summary(message: ToolMessage) -> str:
    data = _json_of(message)
    if isinstance(data, dict) and "status" in data:
        return f"{data['status']}" + (f": {data['message']}" if data.get("message") else "")
    return _text(message)[:500]
