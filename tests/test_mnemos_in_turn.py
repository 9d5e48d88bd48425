"""Mnemos inside one long turn: checkpoints, the REM warning and EMERGENCY compaction happen
before the model calls that would overflow, for create_agent and for a hand-built StateGraph.

The scripted model reports ``usage_metadata`` from the size of what it is sent (characters / 4,
the host's ``chars_per_token``), so a compaction really lowers the next reading.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from langgraph_mnemon import Mnemon
from langgraph_mnemon.graphs import MnemonTurnState
from langgraph_mnemon.memory_layers.messages import plugin_form_of, read_messages
from langgraph_mnemon.nodes import compact_to_budget, valid_tool_sequence
from langgraph_mnemon.nodes.mnemos import tend_task
from langgraph_mnemon.testing import ScriptedChatModel

WINDOW = 6_000
GOAL = "Review every customer record and report the overdue totals."
REQUEST = f"{GOAL} Never change a record."
FINAL = "All records reviewed: 12 overdue."
STEPS = 75
LATE_RULE = "Report the amounts in EUR only."  # a constraint noted after the checkpoint


@tool
def read_record(record_id: str) -> str:
    """Read one customer record."""
    filler = " ".join(
        f"line {k} of record {record_id}: balance {k * 17 % 97} EUR." for k in range(14)
    )
    return f"Record {record_id}\n{filler}"


def _tokens(messages: list[BaseMessage]) -> int:
    return round(sum(m.chars for m in read_messages(messages)) / 4)


class Scripted:
    """Calls ``read_record`` ``steps`` times, then answers; reports usage from its input and
    notes how many Mnemos checkpoints existed at each call (``mem`` set by the test)."""

    def __init__(self, mem: Mnemon, task: str, steps: int = STEPS, usage: int | None = None):
        self.mem, self.task, self.steps, self.usage = mem, task, steps, usage
        self.calls = 0
        self.reported: list[int] = []
        self.checkpoints_seen: list[int] = []

    def __call__(self, messages: list[BaseMessage]) -> AIMessage:
        tokens = self.usage if self.usage is not None else _tokens(messages)
        self.reported.append(tokens)
        mnemos = [
            c for c in self.mem.mnemos.checkpoints(self.task, limit=1000) if c.source == "mnemos"
        ]
        self.checkpoints_seen.append(len(mnemos))
        usage = {"input_tokens": tokens, "output_tokens": 10, "total_tokens": tokens + 10}
        i, self.calls = self.calls, self.calls + 1
        if i == 40:  # as the model's own curation would: a constraint after the checkpoint
            self.mem.mnemos.add_node(self.task, "constraint", LATE_RULE)
        if i >= self.steps:
            return AIMessage(FINAL, usage_metadata=usage)
        call = {
            "name": "read_record",
            "args": {"record_id": f"r{i}"},
            "id": f"call{i}",
            "type": "tool_call",
        }
        return AIMessage("", tool_calls=[call], usage_metadata=usage)


def _open(tmp_path: Path, **mnemos: Any) -> Mnemon:
    return Mnemon.open(
        tmp_path / "root",
        workspace=tmp_path,
        mnemos={"context_window_tokens": WINDOW, "git_state": False, **mnemos},
    )


def _agent(mem: Mnemon, model: ScriptedChatModel) -> Any:
    return create_agent(
        model,
        tools=[read_record],
        system_prompt="You review records.",
        middleware=[mem.middleware()],
        checkpointer=mem.checkpointer(),
    )


def _resume_notes(request: list[BaseMessage]) -> list[BaseMessage]:
    return [m for m in request if plugin_form_of(m) == "resume"]


def _assert_long_turn(mem: Mnemon, model: ScriptedChatModel, script: Scripted, out: dict) -> None:
    requests = model.calls
    assert len(requests) == STEPS + 1
    answers = [m for m in out["messages"] if isinstance(m, AIMessage)]
    assert answers[-1].content == FINAL  # the run ended normally with the answer
    for request in requests:
        assert valid_tool_sequence(request)  # every call next to its result, none dangling
        assert _tokens(request) <= WINDOW
    # A Mnemos checkpoint existed before the last model call: it was written during the turn.
    assert script.checkpoints_seen[-1] >= 1
    first = next(i for i, r in enumerate(requests) if _resume_notes(r))
    assert first < STEPS  # compacted before a later model call, not at the end of the turn
    assert script.reported[first] < script.reported[first - 1] * 0.6  # compaction lowered it
    assert script.reported[first - 1] >= 0.9 * WINDOW
    for request in requests[first:]:
        (note,) = _resume_notes(request)
        text = note.content
        assert "## Mnemos Session Resume" in text
        assert GOAL in text  # the goal (derived from the request) is in the resume block
        assert "- Never change a record." in text  # and the user's constraint, verbatim
        assert "earlier messages were compacted" in text
        users = [m for m in request if m.type == "human" and plugin_form_of(m) is None]
        assert [m.content for m in users] == [REQUEST]  # the request itself kept, verbatim
        # the newest results are kept with their calls (a REM warning may follow them)
        conversation = [m for m in request if plugin_form_of(m) is None]
        assert isinstance(conversation[-1], ToolMessage) or request is requests[-1]
    # Not compacted on every call: the stale usage of a kept AI message is not EMERGENCY again.
    shrinks = [i + 1 for i, (a, b) in enumerate(itertools.pairwise(requests)) if len(b) < len(a)]
    assert 2 <= len(shrinks) <= 3  # at 95 %, and again each time it climbs back there
    # The second compaction fell in the checkpoint's cooldown: its resume block is rendered from
    # the live nodes, so the constraint noted after that checkpoint is there.
    assert LATE_RULE not in _resume_notes(requests[shrinks[0]])[0].content
    assert LATE_RULE in _resume_notes(requests[shrinks[1]])[0].content
    assert out.get("mnemon_turn") is None


def test_one_long_turn_of_create_agent_is_checkpointed_and_compacted(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    script = Scripted(mem, "t")
    model = ScriptedChatModel(script=script)
    cfg = {"configurable": {"thread_id": "t"}, "recursion_limit": 500}
    out = _agent(mem, model).invoke({"messages": [HumanMessage(REQUEST)]}, cfg)
    _assert_long_turn(mem, model, script, out)
    last = model.calls[-1]
    # The history the model got last was compacted: far fewer than the 90 tool messages.
    assert sum(isinstance(m, ToolMessage) for m in last) < STEPS // 2
    assert [n.origin for n in mem.mnemos.nodes("t", type="goal")] == ["derived"]  # no add_node
    (kept,) = [c for c in mem.mnemos.checkpoints("t", limit=1000) if c.source == "mnemos"]
    assert kept.fatigue_state == "PRE_SLEEP"  # written at 70 %; the cooldown held after it
    mem.close()


def _hand_built(mem: Mnemon, model: ScriptedChatModel) -> Any:
    bound = model.bind_tools([read_record])

    def call_model(state: MnemonTurnState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    def route(state: MnemonTurnState) -> str:
        return "tools" if state["messages"][-1].tool_calls else "end"

    builder = StateGraph(MnemonTurnState)
    builder.add_node("begin", mem.turn_graph())
    builder.add_node("mnemos", mem.model_call_graph())
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode([read_record]))
    builder.add_node("end", mem.turn_graph())
    builder.add_edge(START, "begin")
    builder.add_edge("begin", "mnemos")
    builder.add_edge("mnemos", "model")
    builder.add_conditional_edges("model", route, {"tools": "tools", "end": "end"})
    builder.add_edge("tools", "mnemos")
    builder.add_edge("end", END)
    return builder.compile(checkpointer=mem.checkpointer())


def test_hand_built_state_graph_gets_the_same_checkpoints_and_compaction(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    script = Scripted(mem, "g")
    model = ScriptedChatModel(script=script)
    cfg = {"configurable": {"thread_id": "g"}, "recursion_limit": 500}
    out = _hand_built(mem, model).invoke({"messages": [HumanMessage(REQUEST)]}, cfg)
    _assert_long_turn(mem, model, script, out)
    mem.close()


def test_compacted_history_does_not_read_emergency_again(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    usage = {"input_tokens": 5_900, "output_tokens": 10, "total_tokens": 5_910}
    history: list[BaseMessage] = [HumanMessage(REQUEST, id="u")]
    for i in range(30):
        call = {
            "name": "read_record",
            "args": {"record_id": f"r{i}"},
            "id": f"c{i}",
            "type": "tool_call",
        }
        history.append(AIMessage("", tool_calls=[call], id=f"a{i}", usage_metadata=usage))
        history.append(
            ToolMessage(
                read_record.invoke({"record_id": f"r{i}"}), tool_call_id=f"c{i}", id=f"t{i}"
            )
        )
    update = tend_task(mem, "s", history)
    assert update
    assert update[0].type == "remove"
    compacted = update[1:]
    assert valid_tool_sequence(compacted)
    assert compacted[-1].id == "t29"  # the newest group kept; the kept AI still says 5 910
    assert mem.mnemos.fatigue("s", log=False).state not in ("REM", "EMERGENCY")
    # Observing the compacted history again (its last AI message's usage is the stale 98 %)
    # changes nothing: the reading of the compacted history stays the newest.
    assert tend_task(mem, "s", compacted) == []
    assert mem.mnemos.fatigue("s", log=False).tokens_estimated is True
    mem.close()


def test_rem_warns_once_and_the_cooldown_holds(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    script = Scripted(mem, "r", steps=6, usage=int(0.88 * WINDOW))  # REM, never EMERGENCY
    model = ScriptedChatModel(script=script)
    cfg = {"configurable": {"thread_id": "r"}, "recursion_limit": 100}
    out = _agent(mem, model).invoke({"messages": [HumanMessage(REQUEST)]}, cfg)
    warnings = [m for m in out["messages"] if plugin_form_of(m) == "warning"]
    assert len(warnings) == 1  # one warning, not one per call
    assert warnings[0].content.startswith("[MNEMON] ")
    assert any(plugin_form_of(m) == "warning" for m in model.calls[1])  # the next call saw it
    mnemos = [c for c in mem.mnemos.checkpoints("r", limit=1000) if c.source == "mnemos"]
    assert len(mnemos) == 1  # six REM readings within the cooldown: one checkpoint
    assert mem.mnemos.fatigue("r", log=False).state == "REM"
    assert out["messages"][-1].content == FINAL
    mem.close()


def test_a_failing_mnemos_step_leaves_the_request_untouched(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    mem.mnemos.setup()
    with mem.mnemos.db.write() as conn:  # the database refuses every signal write from now on
        conn.execute(
            sa.text(
                "CREATE TRIGGER refuse BEFORE INSERT ON mnemos_signals "
                "BEGIN SELECT RAISE(ABORT, 'attempt to write a readonly database'); END"
            )
        )
    script = Scripted(mem, "f", steps=3, usage=int(0.99 * WINDOW))
    model = ScriptedChatModel(script=script)
    cfg = {"configurable": {"thread_id": "f"}, "recursion_limit": 100}
    out = _agent(mem, model).invoke({"messages": [HumanMessage(REQUEST)]}, cfg)
    assert out["messages"][-1].content == FINAL
    for request in model.calls:
        assert not [m for m in request if plugin_form_of(m) in ("warning", "resume")]
    # The last request is the state as the agent left it, the system prompt first.
    assert [m.id for m in model.calls[-1][1:]] == [m.id for m in out["messages"][:-1]]
    steps = {p.step for p in mem.status().health.problems}
    assert "mnemos" in steps
    assert [c for c in mem.mnemos.checkpoints("f", limit=1000) if c.source == "mnemos"] == []
    mem.close()


def test_ainvoke_runs_mnemos_off_the_event_loop(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    script = Scripted(mem, "a")
    model = ScriptedChatModel(script=script)
    agent = _agent(mem, model)
    threads: list[int] = []

    @sa.event.listens_for(mem.mnemos.db.engine, "before_cursor_execute")
    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "mnemos_signals" in statement:
            threads.append(threading.get_ident())

    async def run() -> tuple[dict, int, int]:
        loop_thread = threading.get_ident()
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                # a 1 ms beat, not a busy spin: a spinning loop starves the worker threads of
                # the GIL on 2 cores, and a starved writer holds the SQLite lock past the
                # checkpointer's busy timeout
                await asyncio.sleep(0.001)
                ticks += 1

        ticker = asyncio.create_task(tick())
        cfg = {"configurable": {"thread_id": "a"}, "recursion_limit": 500}
        out = await agent.ainvoke({"messages": [HumanMessage(REQUEST)]}, cfg)
        ticker.cancel()
        return out, loop_thread, ticks

    out, loop_thread, ticks = asyncio.run(run())
    assert [m for m in out["messages"] if isinstance(m, AIMessage)][-1].content == FINAL
    assert ticks > STEPS  # the loop kept running during the turn
    assert threads
    assert loop_thread not in threads  # every signal write ran in a worker thread
    assert any(_resume_notes(r) for r in model.calls)  # the same compaction, async
    mem.close()


def _block_conversation(groups: list[int], size: int) -> list[BaseMessage]:
    """A system prompt, the request, then AI messages in Anthropic's content-block shape
    (text + tool_use blocks, tool_calls parsed) each answered by its tool messages."""
    messages: list[BaseMessage] = [SystemMessage("be brief"), HumanMessage(REQUEST, id="u")]
    for g, calls in enumerate(groups):
        ids = [f"g{g}c{k}" for k in range(calls)]
        blocks: list[Any] = [{"type": "text", "text": f"step {g}"}]
        blocks += [
            {"type": "tool_use", "id": i, "name": "read_record", "input": {"record_id": i}}
            for i in ids
        ]
        parsed = [
            {"name": "read_record", "args": {"record_id": i}, "id": i, "type": "tool_call"}
            for i in ids
        ]
        messages.append(AIMessage(blocks, tool_calls=parsed, id=f"a{g}"))
        messages += [
            ToolMessage([{"type": "text", "text": "x" * size}], tool_call_id=i, id=f"t{i}")
            for i in ids
        ]
    return messages


@settings(max_examples=150, deadline=None)
@given(
    groups=st.lists(st.integers(1, 3), min_size=1, max_size=12),
    size=st.integers(1, 400),
    budget=st.integers(0, 4_000),
)
def test_budget_compaction_keeps_whole_groups(groups: list[int], size: int, budget: int) -> None:
    messages = _block_conversation(groups, size)
    update = compact_to_budget(messages, budget, "what was cut")
    after = add_messages(messages, update) if update else messages
    assert valid_tool_sequence(after)
    assert isinstance(after[0], SystemMessage)
    if not update:
        return
    tail = after[2:]
    assert [m.id for m in tail] == [m.id for m in messages[len(messages) - len(tail) :]]
    assert isinstance(tail[0], AIMessage)  # a cut starts a group, never at a tool message
    one_group = tail[0].id == messages[-1 - groups[-1]].id
    assert one_group or sum(m.chars for m in read_messages(tail)) <= budget
