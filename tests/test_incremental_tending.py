"""Incremental tending (issue 33): a pass reads only the messages after where the last one
stopped, and ends up exactly where a pass over the whole list would.

Two hosts on real SQLite files watch the same growing conversation: one tends every prefix
in full (no cursor, the behaviour before), the other with the cursor carried between passes.
After every step their fatigue readings, token readings, tool signals and derived nodes are
the same. A pass with nothing new runs no SQL; the statements of a pass do not grow with the
history; an agent carries the cursor in its state (``mnemon_seen``) across turns and processes.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.mnemos import SeenMessages
from langgraph_mnemon.nodes.mnemos import Tending, tend_task
from langgraph_mnemon.testing import ScriptedChatModel

_FILES = ["src/app/main.py", "src/app/db.py", "docs/guide.md", "src/lib/util.py"]


def _conversation(seed: int, groups: int) -> list[list[BaseMessage]]:
    """Steps of a conversation: requests (constraints, a restatement), tool-call groups with
    outcomes (some failed, some re-reads), answers, usage on some AI messages, not others."""
    rng = random.Random(seed)
    steps: list[list[BaseMessage]] = [
        [HumanMessage("Fix the importer. Never touch main. Always run the tests.", id="u0")]
    ]
    for g in range(groups):
        calls = []
        for j in range(rng.randint(1, 2)):
            name = rng.choice(["read_file", "run_tests", "edit_file"])
            calls.append({"name": name, "args": {"path": rng.choice(_FILES)}, "id": f"c{g}-{j}"})
        usage = None
        if rng.random() < 0.6:
            total = 500 + 300 * g
            usage = {"input_tokens": total, "output_tokens": 10, "total_tokens": total + 10}
        plan = rng.choice(["", f"Step {g}: look at the importer."])
        ai = AIMessage(plan, tool_calls=calls, id=f"a{g}", usage_metadata=usage)
        answers: list[BaseMessage] = []
        for call in calls:
            failed = rng.random() < 0.25
            body = f"Error: exit code 1 in {call['args']['path']}" if failed else f"ok {g}"
            status = "error" if failed else "success"
            answers.append(
                ToolMessage(body, tool_call_id=call["id"], id=f"t{call['id']}", status=status)
            )
        if rng.random() < 0.3:  # the answers arrive in a later pass than the call (an interrupt)
            steps += [[ai], answers]
        else:
            steps.append([ai, *answers])
        if rng.random() < 0.3:
            steps.append([AIMessage(f"Done with part {g}.", id=f"d{g}")])
            text = (
                "Actually, port the CLI to typer." if g == groups // 2 else f"Next {g}; only main."
            )
            steps.append([HumanMessage(text, id=f"u{g + 1}")])
    return steps


def _host(root: Path) -> Mnemon:
    return Mnemon.open(root, mnemos={"context_window_tokens": 20_000, "git_state": False})


def _picture(mem: Mnemon, task: str) -> dict[str, Any]:
    """What Mnemos holds for the task: the latest reading, token reading, signals, nodes."""
    reading = mem.mnemos.fatigue_history(task, limit=1)[0]
    with mem.database.engine.connect() as conn:
        signals = conn.execute(
            sa.text(
                "SELECT kind, call_id, tool_name, status, tokens, estimated FROM mnemos_signals "
                "WHERE task_id = :t ORDER BY seq"
            ),
            {"t": task},
        ).all()
        nodes = conn.execute(
            sa.text(
                "SELECT type, status, content, summary, derived_key FROM mnemos_nodes "
                "WHERE task_id = :t AND origin = 'derived' ORDER BY derived_key, status, content"
            ),
            {"t": task},
        ).all()
    return {
        "reading": (
            reading.state,
            round(reading.composite, 9),
            reading.tokens_used,
            reading.tokens_estimated,
            reading.tool_calls,
        ),
        "signals": [tuple(row) for row in signals],
        "nodes": [tuple(row) for row in nodes],
    }


@pytest.fixture(params=["sqlite", "postgresql"])
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Mnemon]:
    """One host on SQLite or on PostgreSQL: the two ways of tending use two task ids."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    mem = Mnemon.open(
        tmp_path / "r",
        database_url=url,
        mnemos={"context_window_tokens": 20_000, "git_state": False},
    )
    yield mem
    mem.close()


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_passes_over_the_new_part_end_where_full_passes_do(host: Mnemon, seed: int) -> None:
    tending = Tending()
    history: list[BaseMessage] = []
    for step in _conversation(seed, groups=14):
        history = [*history, *step]
        tend_task(host, "full", history)
        tend_task(host, "cursor", history, tending=tending)
        assert tending.seen is not None
        assert tending.seen.count == len(history)
        assert _picture(host, "cursor") == _picture(host, "full"), len(history)


def test_a_pass_with_nothing_new_runs_no_sql(tmp_path: Path) -> None:
    mem = _host(tmp_path / "r")
    history = [m for step in _conversation(7, groups=4) for m in step]
    tending = Tending()
    tend_task(mem, "task", history, tending=tending)
    statements: list[str] = []
    sa.event.listen(
        mem.database.engine, "before_cursor_execute", lambda *a: statements.append(a[2])
    )
    assert tend_task(mem, "task", list(history), tending=tending) == []
    assert statements == []
    mem.close()


def _group(i: int) -> list[BaseMessage]:
    call = {"name": "read_file", "args": {"path": f"src/m{i}.py"}, "id": f"k{i}"}
    usage = {"input_tokens": 900 + i, "output_tokens": 5, "total_tokens": 905 + i}
    return [
        AIMessage("", tool_calls=[call], id=f"ai{i}", usage_metadata=usage),
        ToolMessage(f"def f{i}(): pass", tool_call_id=f"k{i}", id=f"tm{i}"),
    ]


def _pass_cost(mem: Mnemon, task: str, length: int) -> tuple[int, int]:
    """Statements of one pass over one new tool-call group after ``length`` messages (tended
    before, with the cursor), and the length the cursor then covers."""
    history: list[BaseMessage] = [HumanMessage("Fix it. Never push.", id=f"{task}-u")]
    i = 0
    while len(history) < length:
        history += _group(i)
        i += 1
    tending = Tending()
    tend_task(mem, task, history, tending=tending)
    seen: list[int] = []

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(1)

    sa.event.listen(mem.database.engine, "before_cursor_execute", before)
    tend_task(mem, task, [*history, *_group(i)], tending=tending)
    sa.event.remove(mem.database.engine, "before_cursor_execute", before)
    return len(seen), tending.seen.count if tending.seen else 0


def test_a_pass_costs_the_same_statements_after_50_or_1000_messages(tmp_path: Path) -> None:
    mem = _host(tmp_path / "r")
    short, _ = _pass_cost(mem, "short", 50)
    long, count = _pass_cost(mem, "long", 1_000)
    assert count >= 1_000
    assert long == short <= 8
    mem.close()


def test_a_rewritten_history_is_read_again_whole(host: Mnemon) -> None:
    history = [m for step in _conversation(3, groups=6) for m in step]
    tending = Tending()
    tend_task(host, "cursor", history, tending=tending)
    kept = [HumanMessage("Summary of what was cut.", id="note"), *history[-3:]]
    tend_task(host, "cursor", kept, tending=tending)  # not the list the cursor knows
    tend_task(host, "full", history)
    tend_task(host, "full", kept)
    assert _picture(host, "cursor") == _picture(host, "full")


def test_seen_messages_from_state_refuses_what_it_cannot_read() -> None:
    good = SeenMessages(last_id="m", count=3, chars=12)
    assert SeenMessages.from_state(good.to_state()) == good
    for bad in (None, "m", {"last_id": "", "count": 3, "chars": 1}, {"count": -1}, [1, 2]):
        assert SeenMessages.from_state(bad) is None


def test_maintain_refuses_a_since_that_is_not_seen_messages(tmp_path: Path) -> None:
    mem = _host(tmp_path / "r")
    with pytest.raises(InvalidInputError, match="SeenMessages"):
        mem.mnemos.maintain("task", messages=[HumanMessage("x", id="1")], since={"count": 1})  # type: ignore[arg-type]
    mem.close()


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def _reader_model() -> ScriptedChatModel:
    """Reads file ``f<n>.py`` in the n-th turn of the thread (whichever process runs it)."""

    def script(messages: list[BaseMessage]) -> AIMessage:
        if messages[-1].type == "tool":
            return AIMessage(f"Read it: {messages[-1].content}")
        n = sum(1 for m in messages if m.type == "ai" and not m.tool_calls) + 1
        call = {"name": "read_file", "args": {"path": f"f{n}.py"}, "id": f"r{n}"}
        return AIMessage("", tool_calls=[call])

    return ScriptedChatModel(script=script)


def _agent(mem: Mnemon) -> Any:
    return create_agent(
        _reader_model(),
        tools=[read_file, *mem.tools()],
        middleware=[mem.middleware()],
        checkpointer=mem.checkpointer(),
    )


def test_an_agent_carries_the_cursor_in_its_state_across_turns_and_processes(
    tmp_path: Path,
) -> None:
    root = tmp_path / "shared"
    cfg = {"configurable": {"thread_id": "thread-1"}}
    first = _host(root)
    state = _agent(first).invoke({"messages": [HumanMessage("Read f1. Never edit it.")]}, cfg)
    seen = SeenMessages.from_state(state["mnemon_seen"])
    assert seen is not None
    assert seen.count == len(state["messages"])
    assert seen.last_id == state["messages"][-1].id
    first.close()
    # Another process on the same database continues from the checkpointed cursor.
    second = _host(root)
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "mnemos_nodes" in statement:
            statements.append(statement)

    sa.event.listen(second.database.engine, "before_cursor_execute", record)
    state = _agent(second).invoke({"messages": [HumanMessage("Now read f2.")]}, cfg)
    sa.event.remove(second.database.engine, "before_cursor_execute", record)
    assert SeenMessages.from_state(state["mnemon_seen"]).count == len(state["messages"])
    # every derivation read of this turn was the narrow one (named keys, not every node)
    assert len(statements) == 3  # the passes before both model calls and at the end
    assert all("substr" in s.lower() for s in statements)
    results = [n.content for n in second.mnemos.nodes("thread-1") if n.type == "result"]
    assert any("f2.py" in text for text in results), results
    assert any("f1.py" in text for text in results), results
    second.close()


def test_a_hand_built_graph_carries_the_cursor_in_mnemon_seen(tmp_path: Path) -> None:
    from langgraph.graph import END, START, StateGraph

    from langgraph_mnemon.graphs import MnemonTurnState

    mem = _host(tmp_path / "r")
    model = _reader_model()
    tools = {"read_file": read_file}

    def agent(state: MnemonTurnState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def act(state: MnemonTurnState) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]
        out = tools[call["name"]].invoke(call["args"])
        return {"messages": [ToolMessage(out, tool_call_id=call["id"])]}

    builder = StateGraph(MnemonTurnState)
    builder.add_node("memory_begin", mem.turn_graph())
    builder.add_node("mnemos", mem.model_call_graph(model=model))
    builder.add_node("agent", agent)
    builder.add_node("act", act)
    builder.add_node("memory_end", mem.turn_graph())
    builder.add_edge(START, "memory_begin")
    builder.add_edge("memory_begin", "mnemos")
    builder.add_edge("mnemos", "agent")
    builder.add_conditional_edges(
        "agent", lambda s: "act" if s["messages"][-1].tool_calls else "memory_end"
    )
    builder.add_edge("act", "mnemos")
    builder.add_edge("memory_end", END)
    graph = builder.compile(checkpointer=mem.checkpointer())
    cfg = {"configurable": {"thread_id": "hand"}}
    graph.invoke({"messages": [HumanMessage("Read f1.")]}, cfg)
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "mnemos_nodes" in statement:
            statements.append(statement)

    sa.event.listen(mem.database.engine, "before_cursor_execute", record)
    state = graph.invoke({"messages": [HumanMessage("Now read f2.")]}, cfg)
    sa.event.remove(mem.database.engine, "before_cursor_execute", record)
    seen = SeenMessages.from_state(state["mnemon_seen"])
    assert seen is not None
    assert seen.count == len(state["messages"])
    assert statements
    assert all("substr" in s.lower() for s in statements)
    results = [n.content for n in mem.mnemos.nodes("hand") if n.type == "result"]
    assert any("f2.py" in text for text in results), results
    mem.close()
