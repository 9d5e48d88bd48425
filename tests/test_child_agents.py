"""A child agent keeps its parent's pinned view, with its own budgets and no cue or review."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, StateGraph

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.messages import plugin_form
from langgraph_mnemon.graphs import MnemonTurnState
from langgraph_mnemon.testing import ScriptedChatModel, tool_call


def test_child_keeps_the_parent_view_after_the_parent_moves_on(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    mem.runtime.add("memory", "Old rule: deploy on Fridays.")
    space = mem.spaces.create_space("Ops", "Operations", active=True).space
    assert space is not None
    mem.spaces.remember("Rollbacks use the blue/green switch.", space_id=space.id)
    children: list[Any] = []

    def parent_agent(state: MnemonTurnState) -> dict[str, Any]:
        # Delegate: the child is built during the parent's turn and keeps its view.
        middleware = mem.middleware(agent_id="child", parent_turn=state["mnemon_turn"])
        child_model = ScriptedChatModel(
            responses=[tool_call("mnemon_recall", {"query": "rollbacks switch"}, "c1"), "done"]
        )
        child = create_agent(child_model, tools=mem.tools(), middleware=[middleware])
        children.append((child, child_model, middleware))
        child.invoke({"messages": [HumanMessage("sub task")]}, {"configurable": {"thread_id": "c"}})
        return {"messages": [AIMessage("delegated")]}

    builder = StateGraph(MnemonTurnState)
    builder.add_node("begin", mem.turn_graph())
    builder.add_node("agent", parent_agent)
    builder.add_node("end", mem.turn_graph())
    builder.add_edge(START, "begin")
    builder.add_edge("begin", "agent")
    builder.add_edge("agent", "end")
    builder.add_edge("end", END)
    parent = builder.compile(checkpointer=mem.checkpointer())
    parent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "p"}})

    child, child_model, middleware = children[0]
    first_run = child_model.calls[0]
    assert all(plugin_form(m) != "instructions" for m in first_run)  # no cue for a child
    assert any("Old rule: deploy on Fridays." in m.content for m in first_run)
    assert mem.review_gate.activity("c").turns == []  # no idle review for a child

    # The parent's turn is over and memory changes; a later child turn still sees the view it
    # retained, and gets a recall budget of its own.
    mem.runtime.replace("memory", "Old rule", "New rule: deploy on Tuesdays.")
    child_model.responses = [tool_call("mnemon_recall", {"query": "rollbacks switch"}, "c2"), "ok"]
    child_model.i = 0
    later = child.invoke(
        {"messages": [HumanMessage("again")]}, {"configurable": {"thread_id": "c2"}}
    )
    wake = next(m for m in later["messages"] if plugin_form(m) == "recall")
    assert "Old rule: deploy on Fridays." in wake.content
    assert "New rule" not in wake.content
    results = [m for m in later["messages"] if m.type == "tool"]
    assert "blue/green" in results[0].content
    middleware.close()
    mem.close()


def test_only_the_root_agent_archives_documents(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    doc = mem.documents.create("Runbook", "Steps.").document
    results: list[str] = []

    def parent_agent(state: MnemonTurnState) -> dict[str, Any]:
        middleware = mem.middleware(agent_id="child", parent_turn=state["mnemon_turn"])
        child_model = ScriptedChatModel(
            responses=[
                tool_call("mnemon_document_manage", {"action": "archive", "id": doc.id}, "c1"),
                "done",
            ]
        )
        child = create_agent(child_model, tools=mem.tools(), middleware=[middleware])
        out = child.invoke(
            {"messages": [HumanMessage("tidy")]}, {"configurable": {"thread_id": "c"}}
        )
        results.extend(m.content for m in out["messages"] if m.type == "tool")
        middleware.close()
        return {"messages": [AIMessage("ok")]}

    builder = StateGraph(MnemonTurnState)
    builder.add_node("begin", mem.turn_graph())
    builder.add_node("agent", parent_agent)
    builder.add_node("end", mem.turn_graph())
    builder.add_edge(START, "begin")
    builder.add_edge("begin", "agent")
    builder.add_edge("agent", "end")
    builder.add_edge("end", END)
    builder.compile().invoke(
        {"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "p"}}
    )
    assert "only the root agent archives Documents" in results[0]
    assert mem.documents.get(doc.id).status == "active"
    assert mem.turns.live_turns == []
    mem.close()
