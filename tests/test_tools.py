"""Memory tools in a real create_agent run: receipts, structured errors, read-only mode."""

from __future__ import annotations

import json
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.messages import plugin_form
from langgraph_mnemon.testing import ScriptedChatModel, tool_call


def _tool_results(messages: list) -> list[dict]:
    return [json.loads(m.content) for m in messages if m.type == "tool"]


def test_runtime_memory_tool_and_wake_refresh(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    model = ScriptedChatModel(
        responses=[
            tool_call(
                "mnemon_runtime_memory",
                {"action": "add", "target": "user", "content": "Prefers metric units."},
                "c1",
            ),
            tool_call(
                "mnemon_runtime_memory",
                {"action": "remove", "target": "memory", "old_text": "nothing like this"},
                "c2",
            ),
            tool_call("mnemon_runtime_memory", {"action": "add", "target": "both"}, "c3"),
            "Noted.",
            "Hello again.",
        ]
    )
    agent = create_agent(
        model, tools=mem.tools(), middleware=[mem.middleware()], checkpointer=mem.checkpointer()
    )
    cfg = {"configurable": {"thread_id": "t"}}
    first = agent.invoke({"messages": [HumanMessage("I use metric units.")]}, cfg)["messages"]
    results = [m.content for m in first if m.type == "tool"]
    added = json.loads(results[0])
    assert (added["status"], added["message"]) == ("committed", "Entry added.")
    assert json.loads(results[1]) == {
        "error": "no-match",
        "message": 'No memory entry contains "nothing like this".',
    }
    assert "target" in results[2]  # schema validation error, returned to the model
    assert [e.content for e in mem.runtime.entries("user")] == ["Prefers metric units."]
    second = agent.invoke({"messages": [HumanMessage("hi")]}, cfg)["messages"]
    new = second[len(first) :]
    wake = [m for m in new if plugin_form(m) == "recall"]
    assert len(wake) == 1  # the write changed the Wake
    assert "Prefers metric units." in wake[0].content
    mem.close()


def test_catalog_status_remember_and_document(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    model = ScriptedChatModel(
        responses=[
            tool_call("mnemon_remember", {"content": "Deploys need two approvals."}, "c1"),
            tool_call("mnemon_memory_bodies", {}, "c2"),
            tool_call("mnemon_status", {}, "c3"),
            tool_call(
                "mnemon_document_create",
                {"title": "Runbook", "content": "Restart: make restart."},
                "c4",
            ),
            "Done.",
        ]
    )
    agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
    out = agent.invoke(
        {"messages": [HumanMessage("save it")]}, {"configurable": {"thread_id": "t"}}
    )
    remembered, catalog, status, document = _tool_results(out["messages"])
    assert remembered["status"] == "committed"
    assert catalog["total"] == 1
    assert catalog["items"][0]["id"] == "default"
    assert "path" not in json.dumps(catalog)
    assert "config" not in catalog["items"][0]
    assert status["writeEnabled"] is True
    assert status["documents"]["active"] == 0  # read before the document was created
    assert document["status"] == "committed"
    assert [d.title for d in mem.documents.list("active")] == ["Runbook"]
    mem.close()


def test_read_only_has_no_write_tools(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path, write_enabled=False) as mem:
        names = {t.name for t in mem.tools()}
        assert names == {
            "mnemon_status",
            "mnemon_memory_bodies",
            "mnemon_recall",
            "mnemon_related",
            "mnemon_document_search",
            "mnemon_runtime_memory",  # its search is a read (add / replace / remove refuse)
        }


def test_recall_budget_per_turn_through_the_agent(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    space = mem.spaces.create_space("Ops", "Operations", active=True).space
    assert space is not None
    mem.spaces.remember("Production deploys need two approvals.", space_id=space.id)
    mem.documents.create("Runbook", "Deploy with make deploy after approvals.")
    calls: list[str] = []
    real = mem.spaces.search

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(str(args[0]))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    mem.spaces.search = counting  # type: ignore[method-assign]
    turn_one = [
        tool_call("mnemon_recall", {"query": "deploy approvals"}, "r1"),
        tool_call("mnemon_recall", {"query": "Deploy, APPROVALS!"}, "r2"),  # same query: replay
        tool_call("mnemon_recall", {"query": "x", "memory_body_ids": ["nope"]}, "r3"),
        tool_call("mnemon_document_search", {"query": "deploy"}, "d1"),
        tool_call("mnemon_document_search", {"query": "runbook"}, "d2"),  # one per turn
        "Answer.",
    ]
    model = ScriptedChatModel(
        responses=[*turn_one, tool_call("mnemon_recall", {"query": "deploy approvals"}, "r4"), "ok"]
    )
    agent = create_agent(
        model, tools=mem.tools(), middleware=[mem.middleware()], checkpointer=mem.checkpointer()
    )
    cfg = {"configurable": {"thread_id": "t"}}
    out = agent.invoke({"messages": [HumanMessage("how do we deploy?")]}, cfg)["messages"]
    first, replay, rejected, docs, docs_again = _tool_results(out)
    assert [r["content"] for r in first["results"]] == ["Production deploys need two approvals."]
    assert replay["results"] == first["results"]
    assert rejected["error"] == "recall-rejected"
    assert [r["title"] for r in docs["results"]] == ["Runbook"]
    assert docs_again["not_run"] is True
    assert len(calls) == 1  # the replay and the rejection asked no provider
    second = agent.invoke({"messages": [HumanMessage("again?")]}, cfg)["messages"]
    assert _tool_results(second[len(out) :])[0]["results"]  # a new turn: a fresh budget
    assert len(calls) == 2
    mem.close()


def test_turn_tools_need_a_pinned_turn(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path) as mem:
        model = ScriptedChatModel(
            responses=[tool_call("mnemon_recall", {"query": "anything"}, "r1"), "ok"]
        )
        out = create_agent(model, tools=mem.tools()).invoke({"messages": [HumanMessage("q")]})
        (result,) = _tool_results(out["messages"])
        assert result["error"] == "invalid-input"
        assert "mem.middleware()" in result["message"]
