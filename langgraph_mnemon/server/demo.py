"""The served demo agent's model: ``MNEMON_MODEL``, or a clearly labelled scripted model.

The scripted model lets the demo run offline with no API key. It follows three rules on the
user's last message, so every memory path can be tried from a client:

* ``remember <fact>`` (or ``note``/``save``) → ``mnemon_runtime_memory`` adds the fact to MEMORY;
* a question (ends with ``?``) → ``mnemon_recall`` with the question, then the evidence is quoted;
* anything else → an echo.

Every reply starts with :data:`DEMO_LABEL`, so nobody mistakes it for a real model.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import TYPE_CHECKING

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_mnemon.graphs.turn import plugin_form
from langgraph_mnemon.testing import ScriptedChatModel

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from langgraph_mnemon.host import Mnemon

__all__ = ["DEMO_LABEL", "demo_model", "scripted_demo_model"]

DEMO_LABEL = "[scripted demo model; set MNEMON_MODEL=provider:model for a real one]"
_REMEMBER = re.compile(
    r"^\s*(?:please\s+)?(?:remember|note|save)(?:\s+that)?[:,]?\s+(.+)$", re.I | re.S
)


def demo_model(mem: Mnemon) -> BaseChatModel:
    """``config.model`` resolved to a chat model, else the scripted demo model."""
    from langgraph_mnemon.adapters.models import resolve_chat_model

    model = resolve_chat_model(mem.config.model)
    return model if model is not None else scripted_demo_model()


def scripted_demo_model() -> ScriptedChatModel:
    """The offline, labelled demo model (rules in the module docstring)."""
    return ScriptedChatModel(script=_reply)


def _reply(messages: list[BaseMessage]) -> AIMessage:
    last = messages[-1] if messages else None
    if isinstance(last, ToolMessage):
        return AIMessage(content=f"{DEMO_LABEL} {last.name or 'tool'} said: {_summary(last)}")
    text = _last_user_text(messages)
    if text is None:
        return AIMessage(content=f"{DEMO_LABEL} Nothing to answer yet.")
    fact = _REMEMBER.match(text)
    if fact:
        return _call(
            "mnemon_runtime_memory",
            {"action": "add", "target": "memory", "content": fact.group(1).strip()},
        )
    if text.rstrip().endswith("?"):
        return _call("mnemon_recall", {"query": text.strip()})
    return AIMessage(content=f"{DEMO_LABEL} You said: {text.strip()[:500]}")


def _last_user_text(messages: list[BaseMessage]) -> str | None:
    for message in reversed(messages):
        # The Wake, cue and resume block are plugin messages, not the user.
        if isinstance(message, HumanMessage) and plugin_form(message) is None:
            content = message.content
            return content if isinstance(content, str) else json.dumps(content)
    return None


def _call(name: str, args: dict[str, object]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}
        ],
    )


def _summary(message: ToolMessage) -> str:
    content = message.content if isinstance(message.content, str) else json.dumps(message.content)
    try:
        data = json.loads(content)
    except ValueError:
        return content[:500]
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        found = [str(r.get("content", ""))[:200] for r in data["results"] if isinstance(r, dict)]
        return "; ".join(found) if found else "no matching memory"
    if isinstance(data, dict) and "status" in data:
        return f"{data['status']}" + (f": {data['message']}" if data.get("message") else "")
    return content[:500]
