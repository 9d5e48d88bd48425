"""The middleware's turn lifecycle runs inside create_agent's model node (issue 18, part 3).

The same run through ``create_agent`` with ``MnemonMiddleware`` and through the hand-built
graph (the turn subgraph before and after the agent, the per-model-call subgraph before every
model call: the hook-node design) gives the same thread, the same Wake and the same requests,
while the agent writes no more checkpoints per turn than the bare agent.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from langgraph_mnemon import Mnemon
from langgraph_mnemon.graphs import MnemonTurnState
from langgraph_mnemon.memory_layers.messages import plugin_form_of, read_messages
from langgraph_mnemon.memory_layers.turns import TurnFacts, TurnScope
from langgraph_mnemon.nodes.agent_turn import left_open
from langgraph_mnemon.testing import ScriptedChatModel


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key} " + "x" * 400


def _script(steps: int) -> Any:
    """``steps`` lookups per turn, then an answer; usage from the non-system input (chars / 4),
    so a compaction really lowers the next reading."""
    issued = [0]

    def script(messages: list[BaseMessage]) -> AIMessage:
        rest = [m for m in messages if not isinstance(m, SystemMessage)]
        tokens = round(sum(m.chars for m in read_messages(rest)) / 4)
        usage = {"input_tokens": tokens, "output_tokens": 5, "total_tokens": tokens + 5}
        last = [m for m in rest if plugin_form_of(m) is None][-1]
        if last.type == "tool" and issued[0] % steps == 0:
            return AIMessage(f"answer after {issued[0]}", usage_metadata=usage)
        call = {"name": "lookup", "args": {"key": f"k{issued[0]}"}, "id": f"c{issued[0]}"}
        issued[0] += 1
        return AIMessage("", tool_calls=[{**call, "type": "tool_call"}], usage_metadata=usage)

    return script


def _open(root: Path, **settings: Any) -> Mnemon:
    mem = Mnemon.open(root, workspace=root.parent, idle_review={"delay_ms": 600_000}, **settings)
    if not mem.runtime.entries("user"):
        mem.runtime.add("user", "Prefers concise answers.")
    return mem


def _agent(mem: Mnemon, model: ScriptedChatModel, checkpointer: Any) -> Any:
    return create_agent(
        model, tools=[lookup], middleware=[mem.middleware()], checkpointer=checkpointer
    )


def _hand_built(mem: Mnemon, model: ScriptedChatModel, checkpointer: Any) -> Any:
    """begin → mnemos → model ⇄ tools → end: the lifecycle as separate graph steps."""
    bound = model.bind_tools([lookup])
    sections = "\n\n".join(text for _, text in mem.turns.sections())

    def call_model(state: MnemonTurnState) -> dict[str, Any]:
        view = mem.turns.sections(state["mnemon_turn"])
        system = SystemMessage("\n\n".join(text for _, text in view) or sections)
        return {"messages": [bound.invoke([system, *state["messages"]])]}

    def route(state: MnemonTurnState) -> str:
        return "tools" if state["messages"][-1].tool_calls else "end"

    builder = StateGraph(MnemonTurnState)
    builder.add_node("begin", mem.turn_graph())
    builder.add_node("mnemos", mem.model_call_graph())
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_node("end", mem.turn_graph())
    builder.add_edge(START, "begin")
    builder.add_edge("begin", "mnemos")
    builder.add_edge("mnemos", "model")
    builder.add_conditional_edges("model", route, {"tools": "tools", "end": "end"})
    builder.add_edge("tools", "mnemos")
    builder.add_edge("end", END)
    return builder.compile(checkpointer=checkpointer)


def _shape(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    return [(plugin_form_of(m) or m.type, str(m.content)) for m in messages]


def _same_root(shape: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Two roots differ only in their revisions (random ids): compare without them."""
    return [(form, re.sub(r"\b[0-9a-f]{32,64}\b", "<rev>", text)) for form, text in shape]


def _run(app: Any, thread: str, requests: list[str]) -> list[BaseMessage]:
    cfg = {"configurable": {"thread_id": thread}, "recursion_limit": 200}
    out: dict[str, Any] = {}
    for text in requests:
        out = app.invoke({"messages": [HumanMessage(text)]}, cfg)
    return out["messages"]


def test_same_thread_and_wake_as_the_hook_nodes(tmp_path: Path) -> None:
    requests = ["first", "second"]
    a = _open(tmp_path / "a")
    model_a = ScriptedChatModel(script=_script(1))
    ours = _run(_agent(a, model_a, a.checkpointer()), "t", requests)
    b = _open(tmp_path / "b")
    model_b = ScriptedChatModel(script=_script(1))
    hooks = _run(_hand_built(b, model_b, b.checkpointer()), "t", requests)
    assert _same_root(_shape(ours)) == _same_root(_shape(hooks))
    forms = [form for form, _ in _shape(ours)]
    first = ["human", "instructions", "recall", "ai", "tool", "ai"]
    assert forms == [*first, "human", "ai", "tool", "ai"]  # the Wake is unchanged: not resent
    # The Wake and cue are what the layers compose for a new thread right now.
    start = a.turns.begin(TurnScope(thread_id="probe"), TurnFacts(new_thread=True))
    a.turns.end(start.turn_id)
    assert start.wake is not None
    assert start.cue is not None
    assert [c for f, c in _shape(ours) if f == "recall"] == [start.wake.text]
    assert [c for f, c in _shape(ours) if f == "instructions"] == [start.cue.text]
    # The model saw the same non-system messages on every call.
    assert [_same_root(_shape(c[1:])) for c in model_a.calls] == [
        _same_root(_shape(c[1:])) for c in model_b.calls
    ]
    assert model_a.calls[0][0].content == model_b.calls[0][0].content  # the same sections
    assert a.review_gate.activity("t").turns[0].tool_calls == ("lookup",)
    assert len(a.review_gate.activity("t").turns) == 2
    assert a.turns.live_turns == []
    a.close()
    b.close()


def test_compaction_and_warning_match_the_hook_nodes(tmp_path: Path) -> None:
    """A long turn on a small window: REM warnings and EMERGENCY compactions, the same ones."""
    settings = {"mnemos": {"context_window_tokens": 3_000, "git_state": False}}
    a = _open(tmp_path / "a", **settings)
    model_a = ScriptedChatModel(script=_script(30))
    ours = _run(_agent(a, model_a, a.checkpointer()), "long", ["Read every key."])
    b = _open(tmp_path / "b", **settings)
    model_b = ScriptedChatModel(script=_script(30))
    hooks = _run(_hand_built(b, model_b, b.checkpointer()), "long", ["Read every key."])
    forms = [form for form, _ in _shape(ours)]
    assert "resume" in forms  # compacted at EMERGENCY
    assert any(plugin_form_of(m) == "resume" for call in model_a.calls for m in call)
    assert any(plugin_form_of(m) == "warning" for call in model_a.calls for m in call)

    def without_volatile(shape: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return _same_root([(f, c if f != "resume" else c.split("\n")[0]) for f, c in shape])

    assert without_volatile(_shape(ours)) == without_volatile(_shape(hooks))
    assert [without_volatile(_shape(c[1:])) for c in model_a.calls] == [
        without_volatile(_shape(c[1:])) for c in model_b.calls
    ]
    a.close()
    b.close()


def test_no_more_checkpoints_than_the_bare_agent(tmp_path: Path) -> None:
    mem = _open(tmp_path / "root")
    saver = mem.checkpointer()
    ours = _agent(mem, ScriptedChatModel(script=_script(1)), saver)
    cfg = {"configurable": {"thread_id": "c"}}
    ours.invoke({"messages": [HumanMessage("go")]}, cfg)
    with SqliteSaver.from_conn_string(str(tmp_path / "bare.db")) as bare_saver:
        bare = create_agent(
            ScriptedChatModel(script=_script(1)), tools=[lookup], checkpointer=bare_saver
        )
        bare.invoke({"messages": [HumanMessage("go")]}, cfg)
        bare_count = len(list(bare_saver.list(cfg)))
    # input, start, model, tools, model: the middleware adds none (the hook nodes added 4).
    assert bare_count == 5
    assert len(list(saver.list(cfg))) == bare_count + 0
    assert ours.get_state(cfg).values["mnemon_turn"] is None
    mem.close()


def test_end_of_turn_commits_are_counted(tmp_path: Path) -> None:
    mem = _open(tmp_path / "root")
    agent = _agent(mem, ScriptedChatModel(script=_script(1)), mem.checkpointer())
    cfg = {"configurable": {"thread_id": "e"}}
    agent.invoke({"messages": [HumanMessage("warm")]}, cfg)
    import langgraph_mnemon.nodes.agent_turn as agent_turn

    commits: list[str] = []
    ending: set[int] = set()  # threads inside end_update (checkpoint writes run beside it)
    real_end = agent_turn.end_update

    def end_update(*args: Any, **kwargs: Any) -> Any:
        ending.add(threading.get_ident())
        try:
            return real_end(*args, **kwargs)
        finally:
            ending.discard(threading.get_ident())

    # The idle-review hooks run in the caller's thread (no hop): their commits are theirs.
    reviewing: set[int] = set()
    real_finished = mem.reviews.turn_finished

    def turn_finished(*args: Any, **kwargs: Any) -> Any:
        reviewing.add(threading.get_ident())
        try:
            return real_finished(*args, **kwargs)
        finally:
            reviewing.discard(threading.get_ident())

    def listener(conn: Any) -> None:
        me = threading.get_ident()
        commits.append("review" if me in reviewing else "end" if me in ending else "other")

    sa.event.listen(mem.database.engine, "commit", listener)
    mem.reviews.turn_finished = turn_finished  # type: ignore[method-assign]
    agent_turn.end_update = end_update
    try:
        agent.invoke({"messages": [HumanMessage("again")]}, cfg)
    finally:
        agent_turn.end_update = real_end
        sa.event.remove(mem.database.engine, "commit", listener)
    # Ending a turn writes the observed signals, derived nodes and the fatigue reading at once.
    assert commits.count("end") == 1
    mem.close()


def test_a_turn_left_open_ends_when_the_next_request_begins(tmp_path: Path) -> None:
    mem = _open(tmp_path / "root")
    agent = _agent(mem, ScriptedChatModel(script=_script(1)), mem.checkpointer())
    cfg = {"configurable": {"thread_id": "o"}}
    agent.invoke({"messages": [HumanMessage("one")]}, cfg)
    # A run that stopped between the tool call and the answer leaves its turn in the state.
    stale = mem.turns.begin(TurnScope(thread_id="o"), TurnFacts())
    agent.update_state(cfg, {"mnemon_turn": stale.turn_id})
    assert left_open([AIMessage("x"), HumanMessage("next")]) == 1
    assert left_open([HumanMessage("next"), AIMessage("x")]) is None
    agent.invoke({"messages": [HumanMessage("two")]}, cfg)
    assert stale.turn_id not in mem.turns.live_turns
    assert mem.turns.live_turns == []
    assert agent.get_state(cfg).values["mnemon_turn"] is None
    assert len(mem.review_gate.activity("o").turns) == 3
    mem.close()


def _wake(messages: list[BaseMessage]) -> list[str]:
    return [str(m.content) for m in messages if plugin_form_of(m) == "recall"]


def test_the_view_is_reused_across_turns_and_threads(tmp_path: Path) -> None:
    mem = _open(tmp_path / "root")
    agent = _agent(mem, ScriptedChatModel(script=_script(1)), mem.checkpointer())
    reuse = mem.turns.composer.view_reuse
    first = _run(agent, "v1", ["one"])
    assert reuse == {"hits": 0, "misses": 1}
    second = _run(agent, "v2", ["two"])  # another thread, nothing written: the same view
    assert reuse == {"hits": 1, "misses": 1}
    assert len(_wake(first)) == 1
    assert _wake(second) == _wake(first)
    assert mem.turns.live_turns == []
    mem.close()


def test_a_runtime_write_in_another_process_shows_in_the_next_wake(tmp_path: Path) -> None:
    mem = _open(tmp_path / "root")
    agent = _agent(mem, ScriptedChatModel(script=_script(1)), mem.checkpointer())
    reuse = mem.turns.composer.view_reuse
    before = _wake(_run(agent, "w1", ["one"]))
    other = Mnemon.open(tmp_path / "root", workspace=tmp_path, idle_review={"delay_ms": 600_000})
    other.runtime.add("memory", "The staging deploy needs two approvals.")
    other.close()
    after = _wake(_run(agent, "w2", ["two"]))
    assert reuse["hits"] == 0
    assert reuse["misses"] == 2
    assert "two approvals" not in before[0]
    assert "two approvals" in after[0]
    mem.close()


def test_a_message_read_again_is_not_reread_unless_it_changed() -> None:
    call = {"name": "lookup", "args": {"key": "a"}, "id": "c1", "type": "tool_call"}
    message = AIMessage("plan", tool_calls=[call])
    first = read_messages([message])[0]
    assert read_messages([message])[0] is first  # the turn's later steps reuse the reading
    message.content = "changed plan"
    again = read_messages([message])[0]
    assert again.text == "changed plan"
    assert again.tool_calls[0].name == "lookup"
    assert read_messages([{"type": "ai", "content": "dict"}])[0].text == "dict"
    # With an id (every state message has one): a checkpoint's copy hits, a change does not.
    stored = AIMessage("answer", id="m-1", tool_calls=[call])
    reading = read_messages([stored])[0]
    copy = AIMessage("answer", id="m-1", tool_calls=[dict(call)])
    assert read_messages([copy])[0] is reading
    edited = AIMessage("another answer", id="m-1")
    assert read_messages([edited])[0].text == "another answer"
    assert read_messages([edited])[0].tool_calls == ()
