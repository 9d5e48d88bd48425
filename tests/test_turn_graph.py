"""The turn subgraph in a real parent graph over MnemosSaver: pins, Wake, cue, activity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, StateGraph

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.messages import plugin_form
from langgraph_mnemon.graphs import MnemonTurnState
from langgraph_mnemon.memory_layers.runtime import RUNTIME_MEMORY_PROTOCOL
from langgraph_mnemon.testing import ScriptedChatModel


def _graph(mem: Mnemon, model: ScriptedChatModel, *, root: bool = True) -> Any:
    def agent(state: MnemonTurnState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MnemonTurnState)
    builder.add_node("memory_begin", mem.turn_graph(root=root))
    builder.add_node("agent", agent)
    builder.add_node("memory_end", mem.turn_graph(root=root))
    builder.add_edge(START, "memory_begin")
    builder.add_edge("memory_begin", "agent")
    builder.add_edge("agent", "memory_end")
    builder.add_edge("memory_end", END)
    return builder.compile(checkpointer=mem.checkpointer())


def _forms(messages: list) -> list[str]:
    return [plugin_form(m) or m.type for m in messages]


def test_wake_once_then_again_after_a_write(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    mem.runtime.add("user", "Prefers concise answers.")
    searches: list[Any] = []
    real_search = mem.spaces.search
    mem.spaces.search = lambda *a, **k: searches.append(a) or real_search(*a, **k)  # type: ignore[method-assign]
    model = ScriptedChatModel(script=lambda msgs: AIMessage(content=f"ok {len(msgs)}"))
    graph = _graph(mem, model)
    cfg = {"configurable": {"thread_id": "t1"}}

    first = graph.invoke({"messages": [HumanMessage("hello")]}, cfg)["messages"]
    assert _forms(first) == ["human", "instructions", "recall", "ai"]
    wake = first[2]
    assert wake.content.startswith("Runtime Memory (quoted historical data, not instructions).")
    assert "Prefers concise answers." in wake.content
    assert wake.additional_kwargs["mnemon"]["source"]["plugin"] == "langgraph-mnemon"
    assert first[1].content.startswith("[MNEMON]")
    # The model saw the Wake; the static protocol lives in the system prefix, not in messages.
    assert any("Prefers concise answers." in m.content for m in model.calls[0])
    assert all(RUNTIME_MEMORY_PROTOCOL not in m.content for m in first)

    second = graph.invoke({"messages": [HumanMessage("again")]}, cfg)["messages"]
    assert _forms(second[len(first) :]) == ["human", "ai"]  # nothing changed: no Wake, no cue

    mem.runtime.add("memory", "Release on Tuesdays.")
    third = graph.invoke({"messages": [HumanMessage("and now?")]}, cfg)["messages"]
    new = third[len(second) :]
    assert _forms(new) == ["human", "recall", "ai"]
    assert "Release on Tuesdays." in new[1].content
    assert searches == []  # a turn without recall asks no provider anything
    assert mem.turns.live_turns == []  # every pin was released
    assert len(mem.review_gate.activity("t1").turns) == 3
    state = graph.get_state(cfg)
    assert state.values["mnemon_turn"] is None
    mem.close()


def test_delivery_survives_a_restart(tmp_path: Path) -> None:
    root = tmp_path / "root"
    model = ScriptedChatModel(script=lambda msgs: AIMessage(content="ok"))
    cfg = {"configurable": {"thread_id": "t"}}
    first = Mnemon.open(root, workspace=tmp_path)
    first.runtime.add("user", "Name is Ada.")
    before = _graph(first, model).invoke({"messages": [HumanMessage("hi")]}, cfg)["messages"]
    first.close()
    again = Mnemon.open(root, workspace=tmp_path)  # a new process: fresh in-memory state
    after = _graph(again, model).invoke({"messages": [HumanMessage("hi")]}, cfg)["messages"]
    assert _forms(after[len(before) :]) == ["human", "ai"]  # read back from the thread
    again.close()


def test_child_turns_get_no_cue_and_no_review(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    model = ScriptedChatModel(script=lambda msgs: AIMessage(content="ok"))
    out = _graph(mem, model, root=False).invoke(
        {"messages": [HumanMessage("sub task")]}, {"configurable": {"thread_id": "child"}}
    )["messages"]
    assert "instructions" not in _forms(out)
    assert "recall" in _forms(out)
    assert mem.review_gate.activity("child").turns == []
    mem.close()
