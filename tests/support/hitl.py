"""A ``create_agent`` turn that stops at a human-in-the-loop interrupt, for the tests of a turn
resumed on another host or replica (``tests/test_turn_pin_shared.py``,
``tests/test_replicas_resume.py``).

The scripted model plays one turn from the tool results in the thread, so it answers the same
on any host: recall + a Documents search, then a gated ``deploy`` call (the interrupt), then,
once resumed, the same recall again (a replay), a refinement, Related from a row the first
recall admitted and the same Documents search in parallel, a third query (exhausted), and the
answer. Every answer carries what the model was shown (``additional_kwargs["saw"]``): whether
the memory system sections and the Wake were there.
"""

from __future__ import annotations

import json
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from langgraph_mnemon.adapters.messages import plugin_form
from langgraph_mnemon.memory_layers.runtime import RUNTIME_MEMORY_PROTOCOL
from langgraph_mnemon.testing import ScriptedChatModel

APPROVE = {"decisions": [{"type": "approve"}]}
"""The resume value that approves the gated call."""

FACTS = (
    "Production deploys need two approvals from the owning team.",
    "Staging deploys run nightly at 02:00 through CI.",
    "Rollbacks use the runbook in docs/ops and page the on-call owner.",
)
RUNBOOK = ("Rollback runbook", "Roll back with make rollback, then page on-call.")
MEMORY = "Deploys go through the release train."


@tool
def deploy(target: str) -> str:
    """Deploy to a target (a person approves it first)."""
    return f"deployed to {target}"


def _call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def tool_results(messages: list[BaseMessage]) -> dict[str, Any]:
    """JSON tool results by tool call id."""
    return {
        m.tool_call_id: json.loads(m.content)
        for m in messages
        if isinstance(m, ToolMessage) and isinstance(m.content, str) and m.content.startswith("{")
    }


def _next_calls(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    done = tool_results(messages)
    if "r1" not in done:
        return [
            _call("mnemon_recall", {"query": "deploy approvals"}, "r1"),
            _call("mnemon_document_search", {"query": "rollback runbook"}, "d1"),
        ]
    if not any(isinstance(m, ToolMessage) and m.tool_call_id == "x1" for m in messages):
        return [_call("deploy", {"target": "prod"}, "x1")]
    if "r2" not in done:
        row = done["r1"]["results"][0]
        related = {"id": row["id"], "memory_body_id": row["memory_body_id"], "depth": 1}
        return [
            _call("mnemon_recall", {"query": "Deploy APPROVALS!"}, "r2"),
            _call("mnemon_recall", {"query": "staging nightly CI schedule"}, "r3"),
            _call("mnemon_related", related, "l1"),
            _call("mnemon_document_search", {"query": "rollback runbook"}, "d2"),
        ]
    if "r4" not in done:
        return [_call("mnemon_recall", {"query": "on-call"}, "r4")]
    return []


def script(messages: list[BaseMessage]) -> AIMessage:
    """The model's next message (see the module docstring)."""
    system = messages[0] if messages and isinstance(messages[0], SystemMessage) else None
    saw = {
        "sections": system is not None and RUNTIME_MEMORY_PROTOCOL in str(system.content),
        "wake": any(plugin_form(m) == "recall" for m in messages),
    }
    calls = _next_calls(messages)
    text = "" if calls else "Approved and deployed; it needs two approvals."
    return AIMessage(text, tool_calls=calls, additional_kwargs={"saw": saw})


def build(mem: Any, model: ScriptedChatModel | None = None, *, checkpointer: Any = None) -> Any:
    """The agent over ``mem``'s tools and middleware, ``deploy`` gated by a person."""
    return create_agent(
        model or ScriptedChatModel(script=script),
        tools=[deploy, *mem.tools()],
        system_prompt="You deploy services.",
        middleware=[mem.middleware(), HumanInTheLoopMiddleware(interrupt_on={"deploy": True})],
        checkpointer=checkpointer,
    )


def seed(mem: Any) -> None:
    """What the turn recalls and searches: a MEMORY entry, a space of facts, a runbook."""
    mem.runtime.add("memory", MEMORY)
    space = mem.spaces.create_space("Ops", "Operations knowledge", active=True).space
    assert space is not None
    for fact in FACTS:
        assert mem.spaces.remember(fact, space_id=space.id).status == "committed"
    mem.documents.create(*RUNBOOK)
