"""Mnemos in the turn loop: fatigue from the run, REM warning, EMERGENCY compaction + resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.messages import plugin_form
from langgraph_mnemon.graphs import MnemonTurnState
from langgraph_mnemon.memory_layers.messages import messages_chars, read_messages
from langgraph_mnemon.nodes import valid_tool_sequence


def _heavy_turn(reread_every: int, error_every: int = 1, tokens: int = 990) -> list[BaseMessage]:
    """30 tool calls, failing every ``error_every``: scattered edits and repeated identical
    reads every ``reread_every``; a full context."""
    out: list[BaseMessage] = []
    for i in range(30):
        if i % reread_every == 0:
            name, path = "read_file", "/src/a/same.py"
        else:
            name, path = "edit_file", f"/src/d{i}/x{i}/f.py"
        call = {"name": name, "args": {"path": path}, "id": f"c{i}", "type": "tool_call"}
        out.append(AIMessage("", tool_calls=[call]))
        status = "error" if i % error_every == 0 else "success"
        out.append(ToolMessage("boom", tool_call_id=f"c{i}", status=status))
    usage = {"input_tokens": tokens, "output_tokens": 5, "total_tokens": tokens + 5}
    out.append(AIMessage("giving up for now", usage_metadata=usage))
    return out


def _graph(mem: Mnemon, turn: list[BaseMessage]) -> Any:
    def agent(state: MnemonTurnState) -> dict[str, Any]:
        return {"messages": turn}

    builder = StateGraph(MnemonTurnState)
    builder.add_node("begin", mem.turn_graph())
    builder.add_node("agent", agent)
    builder.add_node("end", mem.turn_graph())
    builder.add_edge(START, "begin")
    builder.add_edge("begin", "agent")
    builder.add_edge("agent", "end")
    builder.add_edge("end", END)
    return builder.compile(checkpointer=mem.checkpointer())


def test_emergency_compacts_around_the_resume_block(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, mnemos={"context_window_tokens": 1000})
    mem.mnemos.add_node("t", "goal", "Fix the flaky importer")
    cfg = {"configurable": {"thread_id": "t"}}
    out = _graph(mem, _heavy_turn(2)).invoke({"messages": [HumanMessage("fix it")]}, cfg)
    messages = out["messages"]
    assert plugin_form(messages[0]) == "resume"
    assert "Fix the flaky importer" in messages[0].content
    assert messages[1].content == "fix it"  # the turn's request is kept, right after the block
    # The kept tail fits a quarter of the 1000-token window (4 characters a token).
    assert messages_chars(read_messages(messages[2:])) <= 1000
    assert len(messages) < 62
    assert valid_tool_sequence(messages)  # no tool message lost its call
    (kept,) = [c for c in mem.mnemos.checkpoints("t", limit=100) if c.source == "mnemos"]
    assert kept.emergency
    assert kept.fatigue_state == "EMERGENCY"  # the emergency checkpoint was written
    # The reading now is that of the compacted history, not the overflowing one.
    assert mem.mnemos.fatigue("t", log=False).tokens_estimated is True
    mem.close()


def test_rem_warns_and_keeps_history(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, mnemos={"context_window_tokens": 1000})
    cfg = {"configurable": {"thread_id": "r"}}
    # 88 % of the window: REM (token use alone sets that floor), short of EMERGENCY's 95 %.
    turn = _heavy_turn(2, error_every=2, tokens=875)
    out = _graph(mem, turn).invoke({"messages": [HumanMessage("go")]}, cfg)
    assert mem.mnemos.fatigue("r", log=False).state == "REM"
    last = out["messages"][-1]
    assert plugin_form(last) == "warning"
    assert last.content.startswith("[MNEMON]")
    assert len(out["messages"]) > 60  # nothing was compacted
    mem.close()


def test_new_thread_of_a_task_starts_with_its_resume_block(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    mem.mnemos.add_node("import-task", "goal", "Migrate the importer to asyncio")
    mem.mnemos.checkpoint("import-task", force=True)
    quiet = [AIMessage("ok")]
    cfg = {"configurable": {"thread_id": "fresh", "mnemos_task_id": "import-task"}}
    graph = _graph(mem, quiet)
    first = graph.invoke({"messages": [HumanMessage("continue")]}, cfg)["messages"]
    resume = [m for m in first if plugin_form(m) == "resume"]
    assert len(resume) == 1
    assert "Migrate the importer to asyncio" in resume[0].content
    again = graph.invoke({"messages": [HumanMessage("next")]}, cfg)["messages"]
    assert sum(plugin_form(m) == "resume" for m in again) == 1  # injected once per thread
    mem.close()
