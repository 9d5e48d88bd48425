"""``mnemon_task`` in real create_agent runs: the model sets the goal, adds constraints, records
results and marks the task done (origin ``model``); bad input is a structured tool error and
the run goes on; a read-only host refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import ReadOnlyError
from langgraph_mnemon.memory_layers.mnemos.store import fetch_nodes
from langgraph_mnemon.testing import ScriptedChatModel, tool_call
from langgraph_mnemon.tools._build import TOOLS, call_tool

TASK_SPEC = next(s for s in TOOLS if s.name == "mnemon_task")


def _answers(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    return [json.loads(str(m.content)) for m in messages if m.type == "tool"]


def _run(mem: Mnemon, script: list[Any], configurable: dict[str, Any]) -> list[BaseMessage]:
    agent = create_agent(
        ScriptedChatModel(responses=script),
        tools=mem.tools(),
        middleware=[mem.middleware()],
        checkpointer=mem.checkpointer(),
    )
    request = HumanMessage("Port the CSV importer to the new API. Never change the file format.")
    out = agent.invoke({"messages": [request]}, {"configurable": configurable})
    return list(out["messages"])


def _nodes(mem: Mnemon, task: str, status: str) -> list[Any]:
    with mem.mnemos.db.read() as conn:
        return fetch_nodes(conn, task_id=task, statuses=[status], order="seq")


def test_the_model_curates_its_task_in_a_run(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    script = [
        tool_call("mnemon_task", {"action": "set_goal", "text": "Port the CSV importer"}, "t1"),
        tool_call("mnemon_task", {"action": "add_constraint", "text": "Keep the v1 API"}, "t2"),
        tool_call("mnemon_task", {"action": "add_constraint", "text": "keep the v1 API."}, "t3"),
        tool_call("mnemon_task", {"action": "record_result", "text": "Parser ported"}, "t4"),
        tool_call("mnemon_task", {"action": "set_goal", "text": "Port CSV and JSON"}, "t5"),
        tool_call("mnemon_task", {"action": "mark_done"}, "t6"),
        "All done.",
    ]
    messages = _run(mem, script, {"thread_id": "t"})
    answers = _answers(messages)
    assert [a["status"] for a in answers] == [
        "committed",
        "committed",
        "skipped",  # the same constraint again
        "committed",
        "committed",
        "committed",
    ]
    # the first set_goal supersedes the goal derived from the user's request
    assert len(answers[0]["superseded"]) == 1
    assert answers[4]["superseded"] == [answers[0]["node"]["id"]]
    assert answers[5]["node"]["content"] == "Done: Port CSV and JSON"
    active = {(n.type, n.content, n.origin) for n in _nodes(mem, "t", "active")}
    assert ("goal", "Port CSV and JSON", "model") in active
    assert ("constraint", "Keep the v1 API", "model") in active
    assert ("result", "Parser ported", "model") in active
    assert ("result", "Done: Port CSV and JSON", "model") in active
    assert [n.origin for n in _nodes(mem, "t", "active") if n.type == "goal"] == ["model"]
    superseded = [n for n in _nodes(mem, "t", "compressed") if n.type == "goal"]
    assert [(n.origin, n.summary) for n in superseded] == [
        (
            "derived",
            "Superseded: Port the CSV importer to the new API.",
        ),
        ("model", "Superseded: Port the CSV importer"),
    ]
    # derivation goes on next to the model's nodes: the user's constraint, the final answer
    assert ("constraint", "Never change the file format.", "derived") in active
    assert ("result", "Answered: All done.", "derived") in active
    resume = mem.mnemos.resume("t")
    assert "Port CSV and JSON" in resume
    assert "Keep the v1 API" in resume
    mem.close()


def test_bad_input_is_a_structured_error_and_the_run_goes_on(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    script = [
        tool_call("mnemon_task", {"action": "set_goal"}, "b1"),
        tool_call("mnemon_task", {"action": "explode", "text": "x"}, "b2"),
        tool_call("mnemon_task", {"action": "record_result", "text": "x" * 2001}, "b3"),
        tool_call("mnemon_task", {"action": "record_result", "text": "   "}, "b4"),
        "Carrying on without it.",
    ]
    messages = _run(mem, script, {"thread_id": "t"})
    answers = _answers(messages)
    assert [a["error"] for a in answers] == ["invalid-input"] * 4
    assert "text is required for set_goal" in answers[0]["message"]
    assert "action" in answers[1]["message"]
    assert "2000" in answers[2]["message"]
    assert messages[-1].content == "Carrying on without it."
    assert not [n for n in _nodes(mem, "t", "active") if n.origin == "model"]
    mem.close()


def test_the_task_is_the_runs_task_id_else_its_thread(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    script = [tool_call("mnemon_task", {"action": "set_goal", "text": "Release 7"}, "g1"), "ok"]
    _run(mem, script, {"thread_id": "t", "mnemos_task_id": "release-7"})
    assert [n.content for n in _nodes(mem, "release-7", "active") if n.origin == "model"] == [
        "Release 7"
    ]
    assert not [n for n in _nodes(mem, "t", "active") if n.origin == "model"]
    # outside a run there is no task to record: a typed error, nothing written
    (tool,) = [t for t in mem.tools() if t.name == "mnemon_task"]
    outside = json.loads(tool.invoke({"action": "set_goal", "text": "x"}))
    assert outside["error"] == "invalid-input"
    assert "configurable.thread_id" in outside["message"]
    mem.close()


def test_a_read_only_host_refuses(tmp_path: Path) -> None:
    root = tmp_path / "root"
    Mnemon.open(root, workspace=tmp_path).close()
    with Mnemon.open(root, workspace=tmp_path, write_enabled=False) as mem:
        assert "mnemon_task" not in {t.name for t in mem.tools()}
        # a tool built earlier, called now: the kernel refuses before any I/O
        refused = json.loads(call_tool(mem, TASK_SPEC, action="set_goal", text="x"))
        assert refused["error"] == "read-only"
        assert refused["decision"]["setting"] == "write_enabled"
        with pytest.raises(ReadOnlyError):
            mem.mnemos.curate("t", "set_goal", "x")
