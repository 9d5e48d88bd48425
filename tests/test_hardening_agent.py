"""Issue 12 item 3: memory never ends an agent run.

Real LangGraph runs (``create_agent`` with the middleware, and a hand-built ``StateGraph`` with
the turn subgraph) with deterministic chat models: hostile values in user text, AI text, app-tool
and memory-tool arguments (lone surrogates, NUL, huge strings, content blocks, non-string
values), on SQLite and PostgreSQL; PostgreSQL stopped in the middle of a run (a private server);
a full disk. Each run finishes, the app tool runs, memory tools answer with structured errors,
a real failure is shown by ``mem.status().health``, and the thread's next turn works.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from pg_support import private_postgres
from server_support import free_port
from turn_support import memory_graph

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.messages import plugin_form
from langgraph_mnemon.adapters.mnemos_callbacks import MnemosSignalHandler
from langgraph_mnemon.contracts import text_problem
from langgraph_mnemon.graphs import MnemonTurnState
from langgraph_mnemon.memory_layers.mnemos.schema import SIGNALS
from langgraph_mnemon.testing import ScriptedChatModel

SURROGATE = json.loads('"\\ud83d"')  # half an emoji, as json.loads yields it from model output
NUL = "\x00"
HOSTILE = f"deploy {SURROGATE} now{NUL}"

# Memory-tool calls a confused model might make; each must come back as a structured error
# (the code, when given; "" = any error code).
_RM, _BAD = "mnemon_runtime_memory", "invalid-input"
HOSTILE_MEMORY_CALLS: list[tuple[str, dict[str, Any], str]] = [
    (_RM, {"action": "add", "target": "memory", "content": HOSTILE}, _BAD),
    (_RM, {"action": "add", "target": "user", "content": f"x{NUL}y"}, _BAD),
    (_RM, {"action": "remove", "target": "memory", "old_text": SURROGATE}, _BAD),
    (_RM, {"action": "add", "target": "memory", "content": None}, ""),
    (_RM, {"action": "add", "target": "memory", "content": {"a": 1}}, _BAD),
    ("mnemon_recall", {"query": HOSTILE}, _BAD),
    ("mnemon_recall", {"query": ["a", "b"]}, _BAD),
    ("mnemon_document_search", {"query": f"q{SURROGATE}"}, _BAD),
    ("mnemon_remember", {"content": HOSTILE, "tags": [SURROGATE]}, _BAD),
    ("mnemon_remember", {"content": 12345}, _BAD),
    ("mnemon_document_create", {"title": f"T{SURROGATE}", "content": "body"}, _BAD),
    ("mnemon_document_create", {"title": "Huge", "content": "x" * 3_000_000}, ""),
    ("mnemon_document_manage", {"action": "update", "id": f"d{NUL}", "content": "c"}, _BAD),
    ("mnemon_memory_body_create", {"name": f"N{SURROGATE}", "description": "d"}, _BAD),
    ("mnemon_memory_body_update", {"memory_body_id": f"s{NUL}", "active": True}, _BAD),
    ("mnemon_memory_body_merge", {"source_memory_body_ids": [SURROGATE]}, _BAD),
    ("mnemon_related", {"id": SURROGATE}, _BAD),
]


_BIG_WINDOW = {"context_window_tokens": 10_000_000}
"""The hostile values hold millions of characters: past a real window Mnemos would compact the
history (tests/test_mnemos_in_turn.py) and these tests read every result from the final state."""


def _app_tool(calls: list[dict[str, Any]]) -> Any:
    @tool
    def inspect_file(path: str, payload: Any = None) -> str:
        """Inspect a file of the project."""
        calls.append({"path": path, "payload": payload})
        return f"inspected {len(path)} characters"

    return inspect_file


def _hostile_call(index: int) -> AIMessage:
    """One AI message (text with a surrogate) calling the app tool and every hostile memory call."""
    calls = [
        {
            "name": "inspect_file",
            "args": {
                "path": f"src/{SURROGATE}/a{NUL}.py",
                "payload": {"n": 1, "none": None, "nested": {"k": [SURROGATE, 2.5, True]}},
            },
            "id": f"app-{index}",
            "type": "tool_call",
        }
    ]
    for i, (name, args, _code) in enumerate(HOSTILE_MEMORY_CALLS):
        calls.append({"name": name, "args": args, "id": f"mem-{index}-{i}", "type": "tool_call"})
    return AIMessage(content=f"Let me look {SURROGATE}{NUL}", tool_calls=calls)


def _hostile_script() -> list[Any]:
    """Turn 1: hostile tool calls, then an answer with a surrogate. Turn 2: a plain answer."""
    return [_hostile_call(1), AIMessage(content=f"done {SURROGATE}"), AIMessage(content="fine")]


def _hostile_user() -> HumanMessage:
    # Content blocks (not a plain string), with a lone surrogate and NUL in the text.
    return HumanMessage(
        content=[
            {"type": "text", "text": f"check {SURROGATE} this{NUL}"},
            "and this " + SURROGATE,
            {"type": "text", "text": "y" * 300_000},  # huge
        ]
    )


def _agent(mem: Mnemon, model: ScriptedChatModel, app: Any, checkpointer: Any) -> Any:
    return create_agent(
        model,
        tools=[app, *mem.tools()],
        system_prompt="You are helpful.",
        middleware=[mem.middleware()],
        checkpointer=checkpointer,
    )


def _turn_graph(mem: Mnemon, model: ScriptedChatModel, app: Any, checkpointer: Any) -> Any:
    tools = [app, *mem.tools()]
    bound = model.bind_tools(tools)

    def agent(state: MnemonTurnState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    return memory_graph(mem, agent, tools=tools, checkpointer=checkpointer)


def _results(messages: list[BaseMessage]) -> dict[str, Any]:
    """Tool results by call id (memory tools' results parsed as JSON)."""
    out: dict[str, Any] = {}
    for m in messages:
        if isinstance(m, ToolMessage):
            mine = (m.name or "").startswith("mnemon_")
            out[m.tool_call_id] = json.loads(m.content) if mine else m.content
    return out


def _check_hostile_turn(mem: Mnemon, messages: list[BaseMessage], calls: list[dict[str, Any]]):
    """The hostile turn finished: app tool ran, memory tools answered, nothing is degraded."""
    assert calls
    assert calls[0]["path"] == f"src/{SURROGATE}/a{NUL}.py"
    assert calls[0]["payload"]["nested"]["k"][0] == SURROGATE
    assert isinstance(messages[-1], AIMessage)
    assert messages[-1].content == f"done {SURROGATE}"
    results = _results(messages)
    assert results["app-1"].startswith("inspected")
    for i, (name, _args, code) in enumerate(HOSTILE_MEMORY_CALLS):
        result = results[f"mem-1-{i}"]
        assert "error" in result, (name, result)
        if code:
            assert result["error"] == code, (name, result)
        assert text_problem(json.dumps(result, ensure_ascii=False)) is None  # storable text
    assert mem.turns.live_turns == []
    # The end of the turn was recorded (the tool-call digests no longer fail on surrogates).
    turns = mem.review_gate.activity("t").turns
    assert turns
    assert "inspect_file" in turns[0].tool_calls
    assert text_problem(turns[0].user_text) is None
    assert mem.status().health.degraded is False


def _check_next_turn(mem: Mnemon, before: list[BaseMessage], after: list[BaseMessage]) -> None:
    new = after[len(before) :]
    assert [plugin_form(m) or m.type for m in new][-1] == "ai"
    assert new[-1].content == "fine"
    assert mem.turns.live_turns == []


@pytest.mark.parametrize("shape", ["create_agent", "turn_graph"])
def test_item03_hostile_values_do_not_end_the_run(
    tmp_path: Path, database_url: str, shape: str
) -> None:
    """Lone surrogates and NUL in user text (content blocks), AI text, app-tool and memory-tool
    arguments, on SQLite and PostgreSQL (NUL used to end the turn there with a StorageError)."""
    mem = Mnemon.open(
        tmp_path / "root", workspace=tmp_path, database_url=database_url, mnemos=_BIG_WINDOW
    )
    calls: list[dict[str, Any]] = []
    model = ScriptedChatModel(responses=_hostile_script())
    build = _agent if shape == "create_agent" else _turn_graph
    graph = build(mem, model, _app_tool(calls), mem.checkpointer())
    cfg = {"configurable": {"thread_id": "t"}}
    first = graph.invoke({"messages": [_hostile_user()]}, cfg)["messages"]
    _check_hostile_turn(mem, first, calls)
    second = graph.invoke({"messages": [HumanMessage("and now?")]}, cfg)["messages"]
    _check_next_turn(mem, first, second)
    assert graph.get_state(cfg).values["mnemon_turn"] is None
    mem.close()


def test_item03_general_strategy_view_tools_answer_hostile_inputs(tmp_path: Path) -> None:
    """The General strategy's two tools with hostile offer ids and inputs: structured errors."""
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, strategy="general", mnemos=_BIG_WINDOW)
    mem.documents.create("Runbook", "Deploys go through CI.")
    # No lone surrogate as a dict KEY: LangGraph's own checkpoint serializer (ormsgpack)
    # refuses to store one, with or without memory.
    hostile = [
        ("mnemon_view_route", {"route_id": SURROGATE, "input": {}}),
        ("mnemon_view_route", {"route_id": "documents/search", "input": {"query": HOSTILE}}),
        ("mnemon_view_route", {"route_id": "documents/search", "input": {f"k{NUL}": 1}}),
        ("mnemon_view_route", {"route_id": "documents/search", "input": "not a dict"}),
        ("mnemon_view_route", {"route_id": "documents/search", "input": {"query": "x" * 10**6}}),
        ("mnemon_view_action", {"offer_id": f"runtime/write{NUL}", "input": {}}),
        (
            "mnemon_view_action",
            {
                "offer_id": "runtime/write",
                "input": {"action": "add", "target": "memory", "content": HOSTILE},
            },
        ),
        ("mnemon_view_action", {"offer_id": "runtime/write", "input": {"content": None}}),
    ]
    calls = [_call(name, args, f"v{i}") for i, (name, args) in enumerate(hostile)]
    model = ScriptedChatModel(
        responses=[AIMessage(f"{SURROGATE}", tool_calls=calls), "done", "fine"]
    )
    agent = _agent(mem, model, _app_tool([]), mem.checkpointer())
    cfg = {"configurable": {"thread_id": "t"}}
    first = agent.invoke({"messages": [HumanMessage(f"go {SURROGATE}")]}, cfg)["messages"]
    results = _results(first)
    for i in range(len(hostile)):
        assert results[f"v{i}"]["error"] in {"invalid-input", "not-found"}, results[f"v{i}"]
    assert mem.runtime.entries("memory") == []
    assert mem.status().health.degraded is False
    second = agent.invoke({"messages": [HumanMessage("and?")]}, cfg)["messages"]
    _check_next_turn(mem, first, second)
    mem.close()


def test_item03_async_twin_survives_the_same_values(tmp_path: Path) -> None:
    """``ainvoke`` and ``astream`` of the same agent, with the async checkpointer."""
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, mnemos=_BIG_WINDOW)
    calls: list[dict[str, Any]] = []

    async def run() -> tuple[list[BaseMessage], list[BaseMessage], list[Any]]:
        async with mem.acheckpointer() as saver:
            model = ScriptedChatModel(responses=_hostile_script())
            agent = _agent(mem, model, _app_tool(calls), saver)
            cfg = {"configurable": {"thread_id": "t"}}
            first = (await agent.ainvoke({"messages": [_hostile_user()]}, cfg))["messages"]
            chunks = [c async for c in agent.astream({"messages": [HumanMessage("more")]}, cfg)]
            state = await agent.aget_state(cfg)
            return first, state.values["messages"], chunks

    first, second, chunks = asyncio.run(run())
    _check_hostile_turn(mem, first, calls)
    _check_next_turn(mem, first, second)
    assert chunks  # the stream ran to its end
    mem.close()


def test_item03_failing_layer_degrades_and_clears(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A layer raising anything at begin (after the view is pinned) and at end: one warning
    line each, the degraded flag in status, no Wake, no pin left behind, the messages untouched;
    the next good turn clears the flag."""
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    mem.runtime.add("memory", "Deploy with make deploy.")
    calls: list[dict[str, Any]] = []
    model = ScriptedChatModel(
        responses=[
            AIMessage("", tool_calls=[_call("inspect_file", {"path": "a.py"}, "a1")]),
            AIMessage("", tool_calls=[_call("mnemon_recall", {"query": "deploy"}, "r1")]),
            "first answer",
            "second answer",
        ]
    )
    agent = _agent(mem, model, _app_tool(calls), mem.checkpointer())
    cfg = {"configurable": {"thread_id": "t"}}
    real_begin, real_observe = mem.turns.budgets.begin, mem.mnemos.maintain

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("layer exploded; secret=hunter2")

    mem.turns.budgets.begin = broken  # type: ignore[method-assign]
    mem.mnemos.maintain = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="langgraph_mnemon.health"):
        first = agent.invoke({"messages": [HumanMessage("hi")]}, cfg)["messages"]
    assert [plugin_form(m) or m.type for m in first] == ["human", "ai", "tool", "ai", "tool", "ai"]
    assert calls == [{"path": "a.py", "payload": None}]
    recall = _results(first)["r1"]
    assert recall["error"] == "memory-degraded"  # not "run the agent with mem.middleware()"
    health = mem.status().health
    assert health.degraded is True
    # end had nothing to end; Mnemos before the model calls failed too (its own step)
    assert {p.step for p in health.problems} == {"begin", "mnemos"}
    problem = health.problems[0]
    assert problem.code == "internal"
    assert "RuntimeError" in problem.message
    assert "hunter2" not in problem.message
    assert any("memory step begin degraded" in r.getMessage() for r in caplog.records)
    status_tool = {t.name: t for t in mem.tools()}["mnemon_status"]
    report = json.loads(status_tool.invoke({}))
    assert report["healthy"] is False
    assert set(report["degraded"]) == {"begin: internal", "mnemos: internal"}
    assert agent.get_state(cfg).values["mnemon_turn"] is None
    assert mem.turns.live_turns == []

    # Begin works again, end still fails: the begin problem clears, the end one appears; the
    # pin is released all the same.
    mem.turns.budgets.begin = real_begin  # type: ignore[method-assign]
    second = agent.invoke({"messages": [HumanMessage("again")]}, cfg)["messages"]
    assert second[-1].content == "second answer"
    assert any(plugin_form(m) == "recall" for m in second[len(first) :])  # the Wake is back
    assert {p.step for p in mem.status().health.problems} == {"mnemos", "end"}
    assert mem.turns.live_turns == []

    mem.mnemos.maintain = real_observe  # type: ignore[method-assign]
    model.responses.append("third answer")
    agent.invoke({"messages": [HumanMessage("once more")]}, cfg)
    assert mem.status().health.model_dump() == {"degraded": False, "problems": []}
    mem.close()


def test_item03_child_agent_of_a_degraded_turn(tmp_path: Path) -> None:
    """A child started during a parent turn whose begin failed gets no parent view to keep:
    it runs on with views of its own instead of failing the parent's node."""
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    mem.runtime.add("memory", "Deploy with make deploy.")
    seen: list[str | None] = []

    def parent_agent(state: MnemonTurnState) -> dict[str, Any]:
        seen.append(state["mnemon_turn"])
        middleware = mem.middleware(agent_id="child", parent_turn=state["mnemon_turn"])
        child = create_agent(ScriptedChatModel(responses=["child done"]), tools=mem.tools(),
                             middleware=[middleware])  # fmt: skip
        out = child.invoke(
            {"messages": [HumanMessage("sub")]}, {"configurable": {"thread_id": "c"}}
        )
        middleware.close()
        return {"messages": [AIMessage(out["messages"][-1].content)]}

    builder = StateGraph(MnemonTurnState)
    builder.add_node("begin", mem.turn_graph())
    builder.add_node("agent", parent_agent)
    builder.add_node("end", mem.turn_graph())
    builder.add_edge(START, "begin")
    builder.add_edge("begin", "agent")
    builder.add_edge("agent", "end")
    builder.add_edge("end", END)
    parent = builder.compile(checkpointer=InMemorySaver())
    real_pin = mem.turns.composer.pin
    calls = {"n": 0}

    def pin_fails_once(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:  # the parent's begin
            raise OSError(5, "Input/output error")
        return real_pin(*args, **kwargs)

    mem.turns.composer.pin = pin_fails_once  # type: ignore[method-assign]
    out = parent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "p"}})
    assert out["messages"][-1].content == "child done"
    assert seen == ["mnemon:degraded"]
    assert mem.status().health.degraded is False  # the child's own begin worked: cleared
    assert mem.turns.live_turns == []
    mem.close()


def test_item03_unexpected_tool_failure_answers_internal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A memory tool whose layer raises something untyped: an ``internal`` result that says
    memory is degraded and the agent can go on, the traceback in the log, the flag in status;
    the tool's next success clears it."""
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    add = {"action": "add", "target": "memory", "content": "Deploys go through CI."}
    model = ScriptedChatModel(
        responses=[
            AIMessage("", tool_calls=[_call("mnemon_runtime_memory", add, "w1")]),
            "went on",
            AIMessage("", tool_calls=[_call("mnemon_runtime_memory", add, "w2")]),
            "saved",
        ]
    )
    agent = _agent(mem, model, _app_tool([]), InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    real = mem.write_runtime

    def broken(*args: Any, **kwargs: Any) -> Any:
        return 1 / 0

    mem.write_runtime = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="langgraph_mnemon.health"):
        first = agent.invoke({"messages": [HumanMessage("remember CI")]}, cfg)["messages"]
    assert first[-1].content == "went on"
    result = _results(first)["w1"]
    assert result["error"] == "internal"
    assert "degraded" in result["message"]
    assert "go on" in result["message"]
    logged = [r for r in caplog.records if "tool:mnemon_runtime_memory" in r.getMessage()]
    assert logged
    assert logged[0].exc_info is not None  # with its traceback
    assert [p.step for p in mem.status().health.problems] == ["tool:mnemon_runtime_memory"]
    mem.write_runtime = real  # type: ignore[method-assign]
    second = agent.invoke({"messages": [HumanMessage("again")]}, cfg)["messages"]
    assert _results(second)["w2"]["status"] == "committed"
    assert mem.status().health.degraded is False
    mem.close()


def test_item03_interrupts_still_propagate(tmp_path: Path) -> None:
    """GraphInterrupt is control flow: the guard lets it through, and resume works."""
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)

    @tool
    def ask_human(question: str) -> str:
        """Ask the human."""
        return str(interrupt(question))

    model = ScriptedChatModel(
        responses=[AIMessage("", tool_calls=[_call("ask_human", {"question": "ok?"}, "h1")]), "ok"]
    )
    agent = create_agent(model, tools=[ask_human], middleware=[mem.middleware()],
                         checkpointer=mem.checkpointer())  # fmt: skip
    cfg = {"configurable": {"thread_id": "t"}}
    paused = agent.invoke({"messages": [HumanMessage("go")]}, cfg)
    assert paused["__interrupt__"][0].value == "ok?"
    done = agent.invoke(Command(resume="yes"), cfg)["messages"]
    assert done[-1].content == "ok"
    assert mem.status().health.degraded is False
    assert mem.turns.live_turns == []
    mem.close()


def _call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def test_item03_nul_in_an_app_tool_argument_on_postgresql(
    tmp_path: Path, postgres_url: str
) -> None:
    """PostgreSQL text cannot hold NUL: observing the call used to end the turn."""
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, database_url=postgres_url)
    calls: list[dict[str, Any]] = []
    model = ScriptedChatModel(
        responses=[
            AIMessage("", tool_calls=[_call("inspect_file", {"path": f"src/a{NUL}.py"}, "a1")]),
            "done",
            "fine",
        ]
    )
    agent = _agent(mem, model, _app_tool(calls), mem.checkpointer())
    # The callback handler observes the same call (LangChain would only log its failure).
    cfg = {"configurable": {"thread_id": "t"}, "callbacks": [MnemosSignalHandler(mem.mnemos)]}
    first = agent.invoke({"messages": [HumanMessage("look")]}, cfg)["messages"]
    assert calls == [{"path": f"src/a{NUL}.py", "payload": None}]
    assert first[-1].content == "done"
    assert mem.status().health.degraded is False  # observed, not failed: NUL is dropped
    assert mem.review_gate.activity("t").turns[0].tool_calls == ("inspect_file",)
    with mem.database.read() as conn:
        rows = conn.execute(
            sa.select(SIGNALS.c.call_id, SIGNALS.c.path).where(SIGNALS.c.kind == "tool")
        ).all()
    assert [tuple(r) for r in rows] == [("a1", "src/a.py")]
    second = agent.invoke({"messages": [HumanMessage("and?")]}, cfg)["messages"]
    _check_next_turn(mem, first, second)
    mem.close()


@pytest.mark.parametrize("shape", ["create_agent", "turn_graph"])
def test_item03_postgresql_stopped_in_the_middle_of_a_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, shape: str
) -> None:
    """A private PostgreSQL (never the shared one) goes down inside the app tool: the run
    finishes, status shows degraded; back up, the next turn works and the flag clears.

    The agent's checkpoints are in memory: a checkpointer whose database is down must fail the
    run (state would be lost), and that is the application's database, not memory.
    """
    with private_postgres() as pg:
        mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, database_url=pg.url)
        space = mem.spaces.create_space("Ops", "Operations", active=True).space
        assert space is not None
        mem.spaces.remember("Deploys go through the CI pipeline.", space_id=space.id)

        @tool
        def outage(note: str) -> str:
            """Take the database down (as an outage would)."""
            pg.stop()
            return "the database is down"

        model = ScriptedChatModel(
            responses=[
                AIMessage("", tool_calls=[_call("outage", {"note": "now"}, "o1")]),
                AIMessage("", tool_calls=[_call("mnemon_recall", {"query": "deploys CI"}, "r1")]),
                AIMessage("", tool_calls=[_call("mnemon_memory_bodies", {}, "b1")]),
                "answered without memory",
                AIMessage("", tool_calls=[_call("mnemon_recall", {"query": "deploys CI"}, "r2")]),
                "answered with memory",
            ]
        )
        build = _agent if shape == "create_agent" else _turn_graph
        agent = build(mem, model, outage, InMemorySaver())
        cfg = {"configurable": {"thread_id": "t"}}
        with caplog.at_level(logging.WARNING, logger="langgraph_mnemon.health"):
            first = agent.invoke({"messages": [HumanMessage("deploy?")]}, cfg)["messages"]
        assert not pg.running
        assert first[-1].content == "answered without memory"
        recall = _results(first)["r1"]
        assert "error" in recall or recall.get("hint"), recall  # an answer, not a crash
        catalog = _results(first)["b1"]
        assert catalog["error"] == "database-unavailable", catalog
        assert "not available" in catalog["message"]  # the model never sees where memory lives
        assert str(pg.port) not in json.dumps(catalog), catalog
        status = mem.status()
        assert status.health.degraded is True
        steps = {p.step for p in status.health.problems}
        assert "end" in steps
        assert "status:spaces" in steps
        assert status.spaces is None  # the catalog is in the database; status still answers
        assert all(p.code != "internal" for p in status.health.problems)  # typed errors
        assert any("memory step end degraded" in r.getMessage() for r in caplog.records)
        assert mem.turns.live_turns == []

        pg.start()
        second = agent.invoke({"messages": [HumanMessage("and now?")]}, cfg)["messages"]
        new = second[len(first) :]
        assert new[-1].content == "answered with memory"
        found = _results(new)["r2"]
        assert "error" not in found
        assert "Deploys go through the CI pipeline." in json.dumps(found)
        after = mem.status()
        assert after.health.model_dump() == {"degraded": False, "problems": []}
        assert after.spaces is not None
        assert after.spaces.total == 1
        mem.close()


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` and its bytes, except the SQLite database's own files: SQLite
    may commit a small transaction into WAL space it already holds (atomic, its own business),
    and it rolls back one that needs more."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith("mnemon.db")
    }


def _saves_twice(
    mem: Mnemon, target: str, content: str, shape: str = "create_agent"
) -> tuple[Any, dict[str, Any]]:
    """An agent whose second and third turns each add ``content`` with the Runtime tool
    (calls ``w1`` and ``w2``): one turn to warm up, one that fails, one that works."""
    add = {"action": "add", "target": target, "content": content}
    model = ScriptedChatModel(
        responses=[
            "warmed up",
            AIMessage("", tool_calls=[_call("mnemon_runtime_memory", add, "w1")]),
            "could not save",
            AIMessage("", tool_calls=[_call("mnemon_runtime_memory", add, "w2")]),
            "saved",
        ]
    )
    build = _agent if shape == "create_agent" else _turn_graph
    agent = build(mem, model, _app_tool([]), InMemorySaver())
    return agent, {"configurable": {"thread_id": "t"}}


@pytest.mark.parametrize("shape", ["create_agent", "turn_graph"])
def test_item03_full_disk_answers_a_storage_error(
    tmp_path: Path, small_disk: Any, shape: str
) -> None:
    """The root on a full tmpfs: the run finishes, the memory tool answers with a structured
    storage error, every file under the root is byte-identical; freed, the next turn writes.

    The agent's checkpoints are in memory (a checkpointer that cannot write must fail the run).
    """
    root = small_disk.path / "root"
    mem = Mnemon.open(root, workspace=tmp_path)
    mem.runtime.add("memory", "Existing entry.")
    agent, cfg = _saves_twice(mem, "memory", "Deploys go through CI.", shape)
    agent.invoke({"messages": [HumanMessage("hello")]}, cfg)  # the database exists now
    small_disk.fill()
    before = _tree(root)
    first = agent.invoke({"messages": [HumanMessage("remember: deploys go through CI")]}, cfg)
    messages = first["messages"]
    assert messages[-1].content == "could not save"
    result = _results(messages)["w1"]
    assert result["error"] == "storage-full", result
    assert "Nothing was changed" in result["message"] or "nothing was changed" in result["message"]
    assert _tree(root) == before  # nothing written, nothing torn
    health = mem.status().health
    assert health.degraded is True
    assert {"tool:mnemon_runtime_memory", "end"} <= {p.step for p in health.problems}
    assert str(root) not in result["message"]  # the model is not shown where memory lives
    with sqlite3.connect(root / "mnemon.db") as db:  # still a sound database
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert [e.content for e in mem.runtime.entries("memory")] == ["Existing entry."]

    small_disk.free()
    second = agent.invoke({"messages": [HumanMessage("try again")]}, cfg)["messages"]
    assert second[-1].content == "saved"
    assert _results(second)["w2"]["status"] == "committed"
    assert [e.content for e in mem.runtime.entries("memory")] == [
        "Existing entry.",
        "Deploys go through CI.",
    ]
    assert mem.status().health.degraded is False
    mem.close()


def test_item03_read_only_file_system(tmp_path: Path, small_disk: Any) -> None:
    """The root's file system remounted read-only mid-thread: the run finishes, the tool
    answers ``storage-read-only``, status is degraded; read-write again, the next turn writes."""
    root = small_disk.path / "root"
    mem = Mnemon.open(root, workspace=tmp_path)
    agent, cfg = _saves_twice(mem, "user", "Prefers tea.")
    agent.invoke({"messages": [HumanMessage("hello")]}, cfg)
    before = _tree(root)
    mem.database.dispose()  # a file open for writing would keep the remount from happening
    small_disk.read_only(True)
    try:
        first = agent.invoke({"messages": [HumanMessage("I prefer tea")]}, cfg)["messages"]
    finally:
        small_disk.read_only(False)
    assert first[-1].content == "could not save"
    assert _results(first)["w1"]["error"] == "storage-read-only"
    assert _tree(root) == before
    assert mem.status().health.degraded is True
    second = agent.invoke({"messages": [HumanMessage("again")]}, cfg)["messages"]
    assert _results(second)["w2"]["status"] == "committed"
    assert mem.status().health.degraded is False
    mem.close()


def test_item03_locked_sqlite_database(tmp_path: Path) -> None:
    """Another process holds the SQLite write lock past the busy timeout: the end of the turn
    degrades (no crash, pin released); once the lock is gone the next turn clears the flag."""
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, mnemos={"sqlite_busy_timeout_ms": 50})
    model = ScriptedChatModel(responses=["first", "second"])
    agent = _agent(mem, model, _app_tool([]), InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    mem.mnemos.setup()
    holder = sqlite3.connect(tmp_path / "root" / "mnemon.db", isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        first = agent.invoke({"messages": [HumanMessage("hi")]}, cfg)["messages"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert first[-1].content == "first"
    problems = mem.status().health.problems
    assert [p.step for p in problems] == ["mnemos", "end"]  # before the model call, and at end
    assert all(p.code != "internal" for p in problems)  # a typed storage error, what to do
    assert mem.turns.live_turns == []
    second = agent.invoke({"messages": [HumanMessage("again")]}, cfg)["messages"]
    assert second[-1].content == "second"
    assert mem.status().health.degraded is False
    mem.close()


def test_item03_system_sections_failure_keeps_the_model_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """wrap_model_call: when the sections cannot be built the model still gets the agent's own
    request; the next model call that works clears the flag."""
    import langgraph_mnemon.middleware as middleware

    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    model = ScriptedChatModel(responses=["first", "second"])
    agent = _agent(mem, model, _app_tool([]), InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    real = middleware.system_sections

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(middleware, "system_sections", broken)
    assert agent.invoke({"messages": [HumanMessage("hi")]}, cfg)["messages"][-1].content == "first"
    assert model.calls[0][0].content == "You are helpful."  # untouched, not lost
    assert [p.step for p in mem.status().health.problems] == ["model-call"]
    monkeypatch.setattr(middleware, "system_sections", real)
    agent.invoke({"messages": [HumanMessage("again")]}, cfg)
    assert model.calls[1][0].content.startswith("You are helpful.\n\n")
    assert mem.status().health.degraded is False
    mem.close()


def test_item03_guard_passes_control_flow_and_stays_bounded() -> None:
    """Cancellation, KeyboardInterrupt and LangGraph's interrupts are not memory failures; the
    record keeps the last 20 failures and is safe to fill from many threads."""
    from langgraph.errors import GraphInterrupt

    from langgraph_mnemon.memory_layers.health import HealthRecord
    from langgraph_mnemon.nodes import memory_step

    health = HealthRecord()
    for exc in (asyncio.CancelledError(), KeyboardInterrupt(), GraphInterrupt(())):
        with pytest.raises(type(exc)), memory_step(health, "begin"):
            raise exc
    assert health.report().degraded is False

    def fail(i: int) -> None:
        with memory_step(health, f"tool:t{i % 30}"):
            raise ValueError(f"broken {i}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(fail, range(200)))
    problems = health.report().problems
    assert len(problems) == 20
    assert all(p.code == "internal" for p in problems)
    for i in range(30):
        with memory_step(health, f"tool:t{i}"):
            pass
    assert health.report().model_dump() == {"degraded": False, "problems": []}


def test_item03_cli_status_shows_the_degraded_database(tmp_path: Path) -> None:
    """``mnemon status`` with the database down still answers and says what is failing."""
    env = dict(
        os.environ,
        MNEMON_ROOT=str(tmp_path / "root"),
        MNEMON_DATABASE_URL=f"postgresql+psycopg://nobody@127.0.0.1:{free_port()}/none",
        COLUMNS="200",
    )
    done = subprocess.run(
        [sys.executable, "-m", "langgraph_mnemon.cli", "status"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "memory degraded: status:spaces:" in done.stdout


def test_item03_a_clean_turn_settles_failures_from_before_it() -> None:
    """A tool that failed during an outage and is not called again does not keep the flag up:
    a later turn whose begin and end both work settles everything recorded before it began."""
    from datetime import UTC, datetime, timedelta

    from langgraph_mnemon.errors import StorageError
    from langgraph_mnemon.memory_layers.health import HealthRecord

    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    health = HealthRecord(clock=lambda: now[0])
    with health.guard("tool:mnemon_memory_bodies", answers=True):
        raise StorageError("down", code="database-unavailable")
    now[0] += timedelta(seconds=1)
    health.began("turn-2")
    now[0] += timedelta(seconds=1)
    with health.guard("tool:mnemon_recall", answers=True):
        raise StorageError("down again", code="database-unavailable")  # during turn-2
    health.settle("turn-2")
    assert [p.step for p in health.report().problems] == ["tool:mnemon_recall"]
    health.settle("turn-2")  # settling twice (or an unknown turn) changes nothing
    health.settle("never-began")
    assert health.report().degraded
