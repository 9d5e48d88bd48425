"""What the checkpointer's fast paths must not change: a committed put is durable and visible
to other processes at once, and the element caches (reuse of stored bytes for unchanged
messages, clones instead of decoding) never persist or return stale or shared objects."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Annotated, Any

import pytest
import sqlalchemy as sa
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from langgraph_mnemon import AsyncMnemosSaver, MnemosSaver
from langgraph_mnemon.memory_layers.mnemos.schema import CHECKPOINT_NODES

PAD = "x" * 700  # lists of >= 1 KiB are stored element by element


class State(TypedDict):
    messages: Annotated[list, add_messages]


def _message(step: int) -> AIMessage | ToolMessage:
    if step % 2 == 0:
        return AIMessage(
            content=f"call {step} {PAD}",
            id=f"ai-{step}",
            tool_calls=[
                {
                    "name": "read",
                    "args": {"path": f"f{step}.py"},
                    "id": f"c{step}",
                    "type": "tool_call",
                }
            ],
        )
    return ToolMessage(content=f"result {step} {PAD}", tool_call_id=f"c{step - 1}", id=f"t-{step}")


def _builder(edit_old: bool = False) -> StateGraph:
    def step(state: State) -> dict[str, Any]:
        count = len(state["messages"])
        if edit_old and count == 4:
            # An in-place edit of an old message, deep inside it, in a step that also appends.
            state["messages"][0].tool_calls[0]["args"]["path"] = "edited.py"
        return {"messages": [_message(count)]}

    builder = StateGraph(State)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    return builder


def _run(saver: Any, steps: int, edit_old: bool = False) -> list[Any]:
    graph = _builder(edit_old).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    for _ in range(steps):
        graph.invoke({"messages": []}, config)
    return graph.get_state(config).values["messages"]


def test_graph_loop_state_equals_sqlitesaver(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "ref.db")) as reference:
        expected = _run(reference, 12)
    with MnemosSaver.from_conn_string(f"sqlite:///{tmp_path / 'ours.db'}") as saver:
        got = _run(saver, 12)
    with MnemosSaver.from_conn_string(f"sqlite:///{tmp_path / 'ours.db'}") as fresh:
        reread = fresh.get_tuple({"configurable": {"thread_id": "t"}})
    assert got == expected
    assert reread is not None
    assert reread.checkpoint["channel_values"]["messages"] == expected


def test_in_place_edit_of_an_old_message_is_persisted(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ours.db'}"
    with SqliteSaver.from_conn_string(str(tmp_path / "ref.db")) as reference:
        expected = _run(reference, 8, edit_old=True)
    with MnemosSaver.from_conn_string(url) as saver:
        got = _run(saver, 8, edit_old=True)
    # A new saver (no caches) reads what was stored.
    with MnemosSaver.from_conn_string(url) as fresh:
        stored = fresh.get_tuple({"configurable": {"thread_id": "t"}})
    assert expected[0].tool_calls[0]["args"]["path"] == "edited.py"
    assert got == expected
    assert stored is not None
    assert stored.checkpoint["channel_values"]["messages"] == expected


def test_get_tuple_returns_fresh_objects(tmp_path: Path) -> None:
    config = {"configurable": {"thread_id": "t"}}
    with MnemosSaver.from_conn_string(f"sqlite:///{tmp_path / 'ours.db'}") as saver:
        _run(saver, 6)
        first = saver.get_tuple(config).checkpoint["channel_values"]["messages"]
        second = saver.get_tuple(config).checkpoint["channel_values"]["messages"]
        assert first == second
        assert all(a is not b for a, b in zip(first, second, strict=True))
        # Mutating what one reader got changes nothing another reader gets.
        first[0].tool_calls[0]["args"]["path"] = "mutated.py"
        first[1].content = "mutated"
        third = saver.get_tuple(config).checkpoint["channel_values"]["messages"]
    assert third == second
    assert third[0].tool_calls[0]["args"]["path"] == "f0.py"
    assert third[0].tool_calls[0] is not first[0].tool_calls[0]


def test_async_graph_loop_state_equals_sqlitesaver(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "ref.db")) as reference:
        expected = _run(reference, 10, edit_old=True)

    async def go() -> list[Any]:
        url = f"sqlite:///{tmp_path / 'ours.db'}"
        async with AsyncMnemosSaver.from_conn_string(url) as saver:
            graph = _builder(edit_old=True).compile(checkpointer=saver)
            config = {"configurable": {"thread_id": "t"}}
            for _ in range(10):
                await graph.ainvoke({"messages": []}, config)
        async with AsyncMnemosSaver.from_conn_string(url) as fresh:
            stored = await fresh.aget_tuple(config)
        return stored.checkpoint["channel_values"]["messages"]

    assert asyncio.run(go()) == expected


_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {tests!r})
    from test_checkpointer_durability import _run
    from langgraph_mnemon import MnemosSaver
    saver = MnemosSaver.from_conn_string({url!r}).__enter__()
    _run(saver, 5)
    print("done", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # no close, no WAL checkpoint, no atexit
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_put_survives_sigkill_and_is_read_by_another_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ours.db'}"
    code = _CHILD.format(tests=str(Path(__file__).parent), url=url)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert "done" in done.stdout
    with MnemosSaver.from_conn_string(url) as saver:
        stored = saver.get_tuple({"configurable": {"thread_id": "t"}})
        with saver.db.read() as conn:
            nodes = conn.execute(
                sa.select(CHECKPOINT_NODES.c.checkpoint_id).where(
                    CHECKPOINT_NODES.c.thread_id == "t"
                )
            ).all()
        ids = [t.config["configurable"]["checkpoint_id"] for t in saver.list(None)]
    assert stored is not None
    assert [m.id for m in stored.checkpoint["channel_values"]["messages"]] == [
        _message(i).id for i in range(5)
    ]
    # Every checkpoint (3 per invoke) has its CheckpointNode, written in the same transaction.
    assert len(ids) == 15
    assert sorted(n[0] for n in nodes) == sorted(ids)
