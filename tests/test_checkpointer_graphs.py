"""Real LangGraph graphs on MnemosSaver / AsyncMnemosSaver, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import operator
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
import sqlalchemy as sa
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

from langgraph_mnemon.checkpointers import AsyncMnemosSaver, DeltaPruneError, MnemosSaver
from langgraph_mnemon.memory_layers.mnemos import Mnemos, parse_resume
from langgraph_mnemon.memory_layers.mnemos.schema import (
    CHECKPOINT_NODES,
    LG_BLOBS,
    LG_CHECKPOINTS,
    LG_ITEMS,
    LG_WRITES,
)


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    steps: Annotated[list[str], operator.add]
    mnemos: dict[str, Any]


def _agent(state: State) -> State:
    n = len(state.get("messages", []))
    return {
        "messages": [AIMessage(f"agent reply {n} " + "lorem ipsum " * 20)],
        "steps": ["agent"],
        "mnemos": {
            "goal": "Answer the user",
            "constraints": ["Never invent facts"],
            "results": [f"replied {n} times"],
            "current_subgoal": "Wait for approval",
        },
    }


def _approve(state: State) -> State:
    answer = interrupt({"question": "approve?"})
    return {"messages": [HumanMessage(f"approval: {answer}")], "steps": [f"approve:{answer}"]}


def _inner(state: State) -> State:
    answer = interrupt("inner?")
    return {"steps": [f"inner:{answer}"]}


def build_graph(*, with_subgraph: bool = False) -> StateGraph:
    builder = StateGraph(State)
    builder.add_node("agent", _agent)
    builder.add_node("approve", _approve)
    builder.add_edge(START, "agent")
    if with_subgraph:
        sub = StateGraph(State)
        sub.add_node("inner", _inner)
        sub.add_edge(START, "inner")
        sub.add_edge("inner", END)
        builder.add_node("sub", sub.compile())
        builder.add_edge("agent", "sub")
        builder.add_edge("sub", "approve")
    else:
        builder.add_edge("agent", "approve")
    builder.add_edge("approve", END)
    return builder


def _cfg(thread: str, **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, **extra}}


@pytest.fixture
def saver(database_url: str) -> Iterator[MnemosSaver]:
    with MnemosSaver.from_conn_string(database_url) as s:
        yield s


def _count(saver: MnemosSaver, table: sa.Table, thread: str) -> int:
    with saver.db.read() as conn:
        return int(
            conn.execute(
                sa.select(sa.func.count()).select_from(table).where(table.c.thread_id == thread)
            ).scalar_one()
        )


def test_interrupt_and_resume(saver: MnemosSaver) -> None:
    graph = build_graph().compile(checkpointer=saver)
    cfg = _cfg("interrupt")
    first = graph.invoke({"messages": [HumanMessage("hello")]}, cfg)
    assert first["__interrupt__"][0].value == {"question": "approve?"}
    snapshot = graph.get_state(cfg)
    assert snapshot.next == ("approve",)
    assert snapshot.tasks[0].interrupts[0].value == {"question": "approve?"}
    final = graph.invoke(Command(resume="yes"), cfg)
    assert final["steps"] == ["agent", "approve:yes"]
    assert [m.content for m in final["messages"]][-1] == "approval: yes"
    assert graph.get_state(cfg).next == ()


def test_subgraph_interrupt_and_state(saver: MnemosSaver) -> None:
    graph = build_graph(with_subgraph=True).compile(checkpointer=saver)
    cfg = _cfg("subgraph")
    graph.invoke({"messages": [HumanMessage("hi")]}, cfg)
    state = graph.get_state(cfg, subgraphs=True)
    assert state.next == ("sub",)
    sub_state = state.tasks[0].state
    assert sub_state is not None
    assert sub_state.next == ("inner",)
    assert sub_state.config["configurable"]["checkpoint_ns"].startswith("sub:")
    graph.invoke(Command(resume="in"), cfg)
    final = graph.invoke(Command(resume="out"), cfg)
    assert final["steps"][-2:] == ["inner:in", "approve:out"]
    with saver.db.read() as conn:
        namespaces = {
            r[0]
            for r in conn.execute(
                sa.select(LG_CHECKPOINTS.c.checkpoint_ns).where(
                    LG_CHECKPOINTS.c.thread_id == "subgraph"
                )
            )
        }
    assert "" in namespaces
    assert any(ns.startswith("sub:") for ns in namespaces)


def test_history_and_time_travel(saver: MnemosSaver) -> None:
    graph = build_graph().compile(checkpointer=saver)
    cfg = _cfg("travel")
    graph.invoke({"messages": [HumanMessage("v1")]}, cfg)
    graph.invoke(Command(resume="yes"), cfg)
    history = list(graph.get_state_history(cfg))
    assert [h.next for h in history] == [(), ("approve",), ("agent",), ("__start__",)]
    assert [h.metadata["step"] for h in history] == [2, 1, 0, -1]
    limited = list(graph.get_state_history(cfg, limit=2))
    assert len(limited) == 2
    before = list(graph.get_state_history(cfg, before=history[1].config))
    assert [h.config["configurable"]["checkpoint_id"] for h in before] == [
        h.config["configurable"]["checkpoint_id"] for h in history[2:]
    ]
    # fork from the checkpoint before "agent" ran, with an edited message
    at_agent = history[2]
    forked = graph.update_state(at_agent.config, {"messages": [HumanMessage("edited")]})
    result = graph.invoke(None, forked)
    assert "__interrupt__" in result
    assert [m.content for m in result["messages"]][:2] == ["v1", "edited"]
    # the original branch is still readable exactly as it was
    original = graph.get_state(history[0].config)
    assert original.values["steps"] == ["agent", "approve:yes"]
    assert len(list(graph.get_state_history(cfg))) == 6  # as InMemorySaver counts them
    assert graph.get_state(cfg).metadata["source"] == "loop"


def test_copy_and_prune_a_thread(saver: MnemosSaver) -> None:
    graph = build_graph(with_subgraph=True).compile(checkpointer=saver)
    cfg = _cfg("source")
    graph.invoke({"messages": [HumanMessage("hi " * 200)]}, cfg)
    graph.invoke(Command(resume="in"), cfg)
    saver.copy_thread("source", "copy")
    copy_cfg = _cfg("copy")
    assert graph.get_state(copy_cfg).values == graph.get_state(cfg).values
    assert len(list(graph.get_state_history(copy_cfg))) == len(list(graph.get_state_history(cfg)))
    # the copy goes on by itself
    done = graph.invoke(Command(resume="copy-only"), copy_cfg)
    assert done["steps"][-1] == "approve:copy-only"
    assert graph.get_state(cfg).next == ("approve",)
    values_before = graph.get_state(copy_cfg).values
    saver.prune(["copy"], strategy="keep_latest")
    assert len(list(graph.get_state_history(copy_cfg))) == 1
    assert graph.get_state(copy_cfg).values == values_before
    # nothing the kept checkpoint does not need is left behind
    with saver.db.read() as conn:
        namespaces = {
            r[0]
            for r in conn.execute(
                sa.select(LG_CHECKPOINTS.c.checkpoint_ns).where(
                    LG_CHECKPOINTS.c.thread_id == "copy"
                )
            )
        }
    assert namespaces == {""}
    assert _count(saver, LG_BLOBS, "copy") == sum(
        1 for v in saver.get_tuple(copy_cfg).checkpoint["channel_versions"]
    )
    assert _count(saver, LG_ITEMS, "copy") == 3  # the three messages of the kept state
    assert _count(saver, LG_ITEMS, "source") >= 2
    # the source thread is untouched, and still resumes
    assert graph.invoke(Command(resume="src"), cfg)["steps"][-1] == "approve:src"
    saver.prune(["copy"], strategy="delete")
    for table in (LG_CHECKPOINTS, LG_BLOBS, LG_ITEMS, LG_WRITES, CHECKPOINT_NODES):
        assert _count(saver, table, "copy") == 0
    assert graph.get_state(copy_cfg).values == {}


def test_delete_thread_and_runs(saver: MnemosSaver) -> None:
    graph = build_graph().compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("a")]}, _cfg("gone", run_id="run-a"))
    graph.invoke({"messages": [HumanMessage("b")]}, _cfg("stays", run_id="run-b"))
    mnemos = Mnemos(saver.db)
    mnemos.add_node("gone", "goal", "task memory of the deleted thread")
    saver.delete_for_runs(["run-a"])
    assert saver.get_tuple(_cfg("gone")) is None
    assert _count(saver, LG_ITEMS, "gone") == 0
    assert _count(saver, LG_BLOBS, "gone") == 0
    assert saver.get_tuple(_cfg("stays")) is not None
    saver.delete_thread("gone")
    assert mnemos.nodes("gone") == []  # the task named like the thread goes with it
    saver.delete_thread("stays")
    assert list(saver.list(_cfg("stays"))) == []


def test_mnemos_state_is_materialised_for_resume(saver: MnemosSaver) -> None:
    graph = build_graph().compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("hello")]}, _cfg("resume-me"))
    latest = saver.get_tuple(_cfg("resume-me"))
    mnemos = Mnemos(saver.db)
    record = mnemos.latest_checkpoint("resume-me")
    assert record is not None
    assert record.source == "langgraph"
    assert record.has_summary
    # the CheckpointNode is the one of the checkpoint LangGraph resumes from
    assert record.checkpoint_id == latest.config["configurable"]["checkpoint_id"]
    text = mnemos.resume("resume-me")
    block = parse_resume(text)
    assert block is not None
    sections = {s.title: s.text for s in block.sections}
    assert sections["Goal"].startswith("Answer the user")
    assert "- Never invent facts" in text
    assert sections["Current Sub-Goal"].startswith("Wait for approval")
    assert f"LangGraph checkpoint: {record.checkpoint_id} (thread resume-me)" in text
    assert len(mnemos.checkpoints("resume-me", limit=50)) == len(list(saver.list(None)))


def test_runs_without_mnemos_state_resume_from_live_nodes(saver: MnemosSaver) -> None:
    builder = StateGraph(State)
    builder.add_node("only", lambda s: {"steps": ["only"]})
    builder.add_edge(START, "only")
    graph = builder.compile(checkpointer=saver)
    mnemos = Mnemos(saver.db)
    mnemos.add_node("custom-task", "goal", "Goal kept in the node graph")
    graph.invoke({"steps": []}, _cfg("plain-thread", mnemos_task_id="custom-task"))
    record = mnemos.latest_checkpoint("custom-task")
    assert record is not None
    assert not record.has_summary
    assert record.thread_id == "plain-thread"
    assert "Goal kept in the node graph" in mnemos.resume("custom-task")
    # the task id became filterable metadata too
    assert len(list(saver.list(None, filter={"mnemos_task_id": "custom-task"}))) == 3


def test_bad_mnemos_state_is_a_typed_error(tmp_path: Path) -> None:
    from langgraph_mnemon.errors import InvalidInputError

    builder = StateGraph(State)
    builder.add_node("bad", lambda s: {"mnemos": {"goal": "x", "unknown_key": 1}})
    builder.add_edge(START, "bad")
    with MnemosSaver.from_conn_string(str(tmp_path / "x.db")) as s:
        graph = builder.compile(checkpointer=s)
        with pytest.raises(InvalidInputError, match="not a valid Mnemos summary"):
            graph.invoke({"steps": []}, _cfg("bad"))


def _extend(state: list[str], writes: list[list[str]]) -> list[str]:
    return [*state, *(item for batch in writes for item in batch)]


class DeltaState(TypedDict):
    log: Annotated[list[str], DeltaChannel(_extend, snapshot_frequency=3)]


def test_delta_channel_threads_refuse_keep_latest(tmp_path: Path) -> None:
    builder = StateGraph(DeltaState)
    builder.add_node("a", lambda s: {"log": ["a"]})
    builder.add_node("b", lambda s: {"log": ["b"]})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    with MnemosSaver.from_conn_string(str(tmp_path / "d.db")) as s:
        graph = builder.compile(checkpointer=s)
        for i in range(3):
            graph.invoke({"log": [f"in{i}"]}, _cfg("delta"))
        expected = ["in0", "a", "b", "in1", "a", "b", "in2", "a", "b"]
        assert graph.get_state(_cfg("delta")).values["log"] == expected
        before = len(list(s.list(_cfg("delta"))))
        with pytest.raises(DeltaPruneError, match="DeltaChannel") as err:
            s.prune(["delta"])
        assert isinstance(err.value, NotImplementedError)
        assert len(list(s.list(_cfg("delta")))) == before  # nothing was deleted
        # a copy keeps the whole chain, so the copy rebuilds the same state
        s.copy_thread("delta", "delta-copy")
        assert graph.get_state(_cfg("delta-copy")).values["log"] == expected
        s.prune(["delta"], strategy="delete")
        assert list(s.list(_cfg("delta"))) == []


def test_encrypted_serializer(tmp_path: Path) -> None:
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    serde = EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef0123456789abcdef")
    secret = "TOP-SECRET-PAYLOAD " * 80
    with MnemosSaver.from_conn_string(str(tmp_path / "enc.db"), serde=serde) as s:
        graph = build_graph().compile(checkpointer=s)
        cfg = _cfg("enc")
        graph.invoke({"messages": [HumanMessage(secret)]}, cfg)
        graph.invoke(Command(resume="ok"), cfg)
        assert graph.get_state(cfg).values["messages"][0].content == secret
        assert _count(s, LG_ITEMS, "enc") >= 3  # elements are still stored one by one
    raw = (tmp_path / "enc.db").read_bytes()
    wal = tmp_path / "enc.db-wal"
    raw += wal.read_bytes() if wal.exists() else b""
    assert b"TOP-SECRET" not in raw
    with sqlite3.connect(tmp_path / "enc.db") as conn:
        types = {r[0] for r in conn.execute("SELECT type FROM mnemos_lg_items")}
    assert types == {"msgpack+aes"}


def test_with_allowlist_and_copy(tmp_path: Path) -> None:
    import copy

    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    strict = JsonPlusSerializer(allowed_msgpack_modules=None)
    encrypted = EncryptedSerializer.from_pycryptodome_aes(strict, key=b"k" * 16)
    for n, serde in enumerate((strict, encrypted)):
        with MnemosSaver.from_conn_string(str(tmp_path / f"a{n}.db"), serde=serde) as saver:
            clone = saver.with_allowlist([("tests", "Thing")])
            assert clone is not saver
            assert clone.serde is not saver.serde
            assert clone.db is saver.db
            assert type(clone.serde) is type(saver.serde)
            shallow = copy.copy(saver)
            for s in (saver, clone, shallow):
                graph = build_graph().compile(checkpointer=s)
                graph.invoke({"messages": [HumanMessage("x " * 600)]}, _cfg(f"allow-{id(s)}"))
                assert s.get_tuple(_cfg(f"allow-{id(s)}")) is not None
                # the clones read what the original wrote
                assert clone.get_tuple(_cfg(f"allow-{id(s)}")) is not None


def test_list_filters_before_and_limit(saver: MnemosSaver) -> None:
    graph = build_graph().compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("a")]}, _cfg("f1", flag=True, score=1))
    graph.invoke({"messages": [HumanMessage("b")]}, _cfg("f2", flag=1, score=1.0))
    assert {
        t.config["configurable"]["thread_id"] for t in saver.list(None, filter={"flag": True})
    } == {"f1"}
    assert {
        t.config["configurable"]["thread_id"] for t in saver.list(None, filter={"flag": 1})
    } == {"f2"}
    assert len(list(saver.list(None, filter={"score": 1}))) == 6
    assert len(list(saver.list(None, filter={"parents": {}}))) == 6
    assert list(saver.list(None, filter={"score": 2})) == []
    assert len(list(saver.list(None, limit=4))) == 4
    assert list(saver.list(None, limit=0)) == []
    ids = [t.checkpoint["id"] for t in saver.list(None)]
    assert ids == sorted(ids, reverse=True)


def test_bad_input_raises_typed_errors(saver: MnemosSaver) -> None:
    from langgraph_mnemon.errors import ConflictError, InvalidInputError

    with pytest.raises(InvalidInputError, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(InvalidInputError, match="checkpoint_id"):
        saver.put_writes(_cfg("t"), [("a", 1)], "task")
    with pytest.raises(InvalidInputError):
        list(saver.list(None, limit=-1))
    with pytest.raises(InvalidInputError, match="strategy"):
        saver.prune(["t"], strategy="everything")
    with pytest.raises(InvalidInputError):
        saver.copy_thread("t", "t")
    with pytest.raises(InvalidInputError):
        saver.delete_for_runs("run-1")  # type: ignore[arg-type]
    graph = build_graph().compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("a")]}, _cfg("one"))
    graph.invoke({"messages": [HumanMessage("b")]}, _cfg("two"))
    with pytest.raises(ConflictError):
        saver.copy_thread("one", "two")
    with pytest.raises(InvalidInputError):
        MnemosSaver(42)  # type: ignore[arg-type]


def test_growing_message_lists_are_stored_once(tmp_path: Path) -> None:
    with MnemosSaver.from_conn_string(str(tmp_path / "grow.db")) as s:
        graph = build_graph().compile(checkpointer=s)
        cfg = _cfg("grow")
        graph.invoke({"messages": [HumanMessage("start")]}, cfg)
        for i in range(15):
            graph.invoke(Command(resume=str(i)), cfg)
            graph.invoke({"messages": [HumanMessage(f"next {i}")]}, cfg)
        messages = graph.get_state(cfg).values["messages"]
        assert len(messages) == 47
        assert _count(s, LG_ITEMS, "grow") == 47  # each message stored exactly once
        assert graph.get_state(cfg).values["steps"][-1] == "agent"


# ----------------------------------------------------------------------------- async


@pytest.mark.asyncio
async def test_async_graph_does_not_block_the_event_loop(database_url: str) -> None:
    from blockbuster import BlockingError, blockbuster_ctx

    async with AsyncMnemosSaver.from_conn_string(database_url) as s:
        graph = build_graph(with_subgraph=True).compile(checkpointer=s)
        cfg = _cfg("async")
        with blockbuster_ctx():
            # detection is live: a blocking sqlite3 call on the loop would fail
            with pytest.raises(BlockingError):
                sqlite3.connect(":memory:").execute("SELECT 1")
            await graph.ainvoke({"messages": [HumanMessage("hi")]}, cfg)
            await graph.ainvoke(Command(resume="in"), cfg)
            final = await graph.ainvoke(Command(resume="out"), cfg)
            assert final["steps"][-1] == "approve:out"
            history = [h async for h in graph.aget_state_history(cfg)]
            assert len(history) >= 4
            forked = await graph.aupdate_state(history[2].config, {"steps": ["forked"]})
            await graph.ainvoke(None, forked)
            await s.acopy_thread("async", "async-copy")
            await s.aprune(["async-copy"])
            copy_state = await graph.aget_state(_cfg("async-copy"))
            assert copy_state.values == (await graph.aget_state(cfg)).values
            await s.adelete_for_runs(["no-such-run"])
            await s.adelete_thread("async-copy")
            assert await s.aget_tuple(_cfg("async-copy")) is None


@pytest.mark.asyncio
async def test_async_saver_sync_methods(tmp_path: Path) -> None:
    from langgraph_mnemon.errors import InvalidInputError

    async with AsyncMnemosSaver.from_conn_string(str(tmp_path / "a.db")) as s:
        graph = build_graph().compile(checkpointer=s)
        await graph.ainvoke({"messages": [HumanMessage("x")]}, _cfg("t"))
        with pytest.raises(InvalidInputError, match="own event loop") as caught:
            s.get_tuple(_cfg("t"))
        # LangGraph's twin shape: the refusal names the method to await
        assert caught.value.code == "invalid-input"
        assert "await saver.aget_tuple(" in str(caught.value)
        # from another thread, the sync twins hand the work to the saver's loop
        found = await asyncio.to_thread(s.get_tuple, _cfg("t"))
        assert found is not None
        listed = await asyncio.to_thread(lambda: list(s.list(_cfg("t"))))
        assert len(listed) == 3


@pytest.mark.asyncio
async def test_sync_saver_async_methods_use_threads(tmp_path: Path) -> None:
    from blockbuster import blockbuster_ctx

    with MnemosSaver.from_conn_string(str(tmp_path / "s.db")) as s:
        graph = build_graph().compile(checkpointer=s)
        with blockbuster_ctx():
            await graph.ainvoke({"messages": [HumanMessage("x")]}, _cfg("t"))
            assert len([t async for t in s.alist(_cfg("t"))]) == 3


# ----------------------------------------------------------------------------- host


def test_host_checkpointer_shares_the_database(tmp_path: Path) -> None:
    from langgraph_mnemon import Mnemon
    from langgraph_mnemon import MnemosSaver as Exported

    with Mnemon.open(tmp_path / "root") as mem:
        saver = mem.checkpointer()
        assert isinstance(saver, Exported)
        assert saver.db is mem.database
        graph = build_graph().compile(checkpointer=saver)
        graph.invoke({"messages": [HumanMessage("hi")]}, _cfg("host"))
        assert "Answer the user" in mem.mnemos.resume("host")
    assert (tmp_path / "root" / "mnemon.db").exists()


@pytest.mark.asyncio
async def test_host_async_checkpointer(tmp_path: Path) -> None:
    from langgraph_mnemon import AsyncMnemosSaver as Exported
    from langgraph_mnemon import Mnemon

    mem = Mnemon.open(tmp_path / "root")
    async with mem.acheckpointer() as saver:
        assert isinstance(saver, Exported)
        graph = build_graph().compile(checkpointer=saver)
        await graph.ainvoke({"messages": [HumanMessage("hi")]}, _cfg("ahost"))
    assert "Answer the user" in mem.mnemos.resume("ahost")
    mem.close()
