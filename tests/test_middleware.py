"""create_agent with MnemonMiddleware over MnemosSaver: Wake, cue, system sections, activity."""

from __future__ import annotations

from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.messages import plugin_form
from langgraph_mnemon.memory_layers.runtime import RUNTIME_MEMORY_PROTOCOL
from langgraph_mnemon.testing import ScriptedChatModel, tool_call


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def test_create_agent_with_memory(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    mem.runtime.add("user", "Prefers concise answers.")
    model = ScriptedChatModel(
        responses=[tool_call("lookup", {"key": "a"}, "c1"), "done", "second", "third"]
    )
    agent = create_agent(
        model,
        tools=[lookup],
        system_prompt="You are helpful.",
        middleware=[mem.middleware()],
        checkpointer=mem.checkpointer(),
    )
    cfg = {"configurable": {"thread_id": "t"}}
    first = agent.invoke({"messages": [HumanMessage("hi")]}, cfg)["messages"]
    forms = [plugin_form(m) or m.type for m in first]
    assert forms == ["human", "instructions", "recall", "ai", "tool", "ai"]
    # Both model calls of the turn saw one system message: the prompt, then the sections.
    for call in model.calls:
        assert isinstance(call[0], SystemMessage)
        assert call[0].content.startswith("You are helpful.")
        assert RUNTIME_MEMORY_PROTOCOL in call[0].content
        assert "mnemon" not in str(call[0].additional_kwargs)
    prefix = model.calls[0][0].content
    second = agent.invoke({"messages": [HumanMessage("more")]}, cfg)["messages"]
    assert [plugin_form(m) or m.type for m in second[len(first) :]] == ["human", "ai"]
    mem.runtime.add("memory", "Deploy with make deploy.")
    third = agent.invoke({"messages": [HumanMessage("now?")]}, cfg)["messages"]
    assert [plugin_form(m) or m.type for m in third[len(second) :]] == ["human", "recall", "ai"]
    assert model.calls[-1][0].content == prefix  # the system prefix is byte-stable across writes
    activity = mem.review_gate.activity("t")
    assert len(activity.turns) == 3
    assert activity.turns[0].tool_calls == ("lookup",)
    assert mem.turns.live_turns == []
    assert agent.get_state(cfg).values["mnemon_turn"] is None
    mem.close()


def test_routing_guidance_off_removes_only_routing(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, routing_guidance=False)
    model = ScriptedChatModel(responses=[AIMessage(content="ok")])
    agent = create_agent(model, tools=[], middleware=[mem.middleware()])
    agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "x"}})
    system = model.calls[0][0].content
    assert RUNTIME_MEMORY_PROTOCOL in system
    with_routing = Mnemon.open(tmp_path / "root2", workspace=tmp_path)
    model2 = ScriptedChatModel(responses=[AIMessage(content="ok")])
    create_agent(model2, tools=[], middleware=[with_routing.middleware()]).invoke(
        {"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "x"}}
    )
    assert len(model2.calls[0][0].content) > len(system)
    mem.close()
    with_routing.close()


def _first_turn(tmp_path: Path, name: str, **settings: object) -> list:
    with Mnemon.open(tmp_path / name) as setup:  # an active space, so recall is on offer
        setup.spaces.create_space("Ops", "Operations", active=True)
    mem = Mnemon.open(tmp_path / name, workspace=tmp_path, **settings)
    model = ScriptedChatModel(responses=[AIMessage(content="ok")])
    agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
    out = agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "s"}})
    mem.close()
    return out["messages"]


def test_every_switch_shapes_the_cue(tmp_path: Path) -> None:
    def cue(messages: list) -> str | None:
        found = [m.content for m in messages if plugin_form(m) == "instructions"]
        return found[0] if found else None

    both = cue(_first_turn(tmp_path, "a"))
    assert both is not None
    assert "mnemon_recall" in both
    assert "mnemon_runtime_memory" in both
    assert cue(_first_turn(tmp_path, "b", lifecycle_enabled=False)) is None
    read_only = cue(_first_turn(tmp_path, "c", write_enabled=False))
    assert read_only is not None
    assert "mnemon_runtime_memory" not in read_only
    no_recall = cue(_first_turn(tmp_path, "d", recall_mode="off"))
    assert no_recall is not None
    assert "mnemon_recall" not in no_recall
    assert cue(_first_turn(tmp_path, "e", recall_mode="off", writeback_mode="off")) is None
    # The Wake is delivered whatever the cue switches say.
    assert any(
        plugin_form(m) == "recall" for m in _first_turn(tmp_path, "f", lifecycle_enabled=False)
    )
