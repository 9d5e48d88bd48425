"""A turn's state any process can read (issue 30, item 1).

Finding: a ``create_agent`` run with ``HumanInTheLoopMiddleware`` stopped at an interrupt on
host A and was resumed on host B; ``mnemon_recall`` then answered ``not-found``, the memory
system sections were missing from every later model call, and health showed degraded: the
turn's pin lived in one process's registry. Now a turn that outlives the step that began it
is stored in the host's database (``mnemon_turns`` / ``mnemon_turn_views``) with its view,
scope and retrieval state, every recorded call is written through, and a host that never saw
the turn continues it exactly as the first one would.

Two ``Mnemon`` hosts stand for two processes: on one SQLite file (one root) and on one
PostgreSQL schema (two roots). Every assertion is checked against a control: the same run
resumed on the host that began it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.types import Command, interrupt
from support import hitl
from support.hitl import APPROVE, tool_results
from turn_support import memory_graph

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.messages import plugin_form
from langgraph_mnemon.errors import NotFoundError
from langgraph_mnemon.graphs.turn import MnemonTurnState
from langgraph_mnemon.memory_layers.runtime import RUNTIME_MEMORY_PROTOCOL
from langgraph_mnemon.memory_layers.turns import (
    HINT_EXHAUSTED,
    HINT_REPLAY,
    TurnFacts,
    TurnRetrieval,
    TurnScope,
    TurnStore,
)
from langgraph_mnemon.testing import ScriptedChatModel


def _agent(mem: Mnemon, model: ScriptedChatModel) -> Any:
    return hitl.build(mem, model, checkpointer=mem.checkpointer())


@pytest.fixture(params=["sqlite", "postgresql"])
def hosts(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Mnemon, Mnemon]]:
    """Two hosts on one database: one root's SQLite file, or one PostgreSQL schema."""
    settings: dict[str, Any] = {"chroma": {"enabled": False}, "workspace": tmp_path}
    roots = (tmp_path / "root", tmp_path / "root")
    if request.param == "postgresql":
        settings["database_url"] = request.getfixturevalue("postgres_url")
        roots = (tmp_path / "a", tmp_path / "b")
    first, second = (Mnemon.open(root, **settings) for root in roots)
    hitl.seed(first)
    try:
        yield first, second
    finally:
        first.close()
        second.close()


def _normal(result: dict[str, Any]) -> dict[str, Any]:
    """A tool result without what differs between two runs (evidence ids and times)."""
    out = {k: v for k, v in result.items() if k != "evidence"}
    if "results" in out:
        out["results"] = [
            {k: v for k, v in row.items() if k not in ("created_at", "modified")}
            for row in out["results"]
        ]
    return out


def _run(begin: Mnemon, finish: Mnemon, thread: str) -> tuple[list[BaseMessage], dict[str, Any]]:
    """The turn, interrupted on ``begin`` and resumed on ``finish``."""
    model_a, model_b = ScriptedChatModel(script=hitl.script), ScriptedChatModel(script=hitl.script)
    cfg = {"configurable": {"thread_id": thread}}
    first = _agent(begin, model_a).invoke({"messages": [HumanMessage("Ship it to prod.")]}, cfg)
    assert first["__interrupt__"], "the deploy call waits for a person"
    turn = _agent(begin, model_a).get_state(cfg).values["mnemon_turn"]
    assert turn
    assert not begin.health.report().degraded
    out = _agent(finish, model_b).invoke(Command(resume=APPROVE), cfg)
    seen = {"turn": turn, "calls_a": model_a.calls, "calls_b": model_b.calls}
    return out["messages"], seen


def test_an_interrupted_turn_resumes_on_another_host(hosts: tuple[Mnemon, Mnemon]) -> None:
    a, b = hosts
    control, _ = _run(a, a, "control")  # resumed where it began: what B must match
    messages, seen = _run(a, b, "moved")
    got, want = tool_results(messages), tool_results(control)
    assert set(got) == {"r1", "d1", "r2", "r3", "l1", "d2", "r4"}
    assert {k: _normal(v) for k, v in got.items()} == {k: _normal(v) for k, v in want.items()}
    # The budgets carried over: A's attempt replays on B with A's evidence id, B's refinement is
    # attempt 2, the third query is exhausted, Related starts from a row A admitted, and the
    # Documents search A ran is not run again (the same call gets its results).
    assert got["r2"]["evidence"]["id"] == got["r1"]["evidence"]["id"]
    assert got["r2"]["hint"] == HINT_REPLAY
    assert got["r3"]["evidence"]["id"] != got["r1"]["evidence"]["id"]
    assert got["r4"]["hint"] == HINT_EXHAUSTED
    assert got["l1"]["hint"].startswith("Related memories") or "No related" in got["l1"]["hint"]
    assert got["d2"]["not_run"] is True
    assert got["d2"]["results"] == got["d1"]["results"]
    admitted = [*got["r1"]["results"], *got["r3"]["results"]]
    assert len(admitted) <= 6
    assert sum(len(r["content"]) for r in admitted) <= 4800
    # Every model call on B had the system sections, byte for byte as on A; the Wake A sent is
    # in the thread B continued.
    prompt = seen["calls_a"][0][0]
    assert isinstance(prompt, SystemMessage)
    assert RUNTIME_MEMORY_PROTOCOL in prompt.content
    assert seen["calls_b"]
    assert all(call[0] == prompt for call in seen["calls_b"])
    wakes = [m for m in messages if plugin_form(m) == "recall"]
    assert len(wakes) == 1
    assert "release train" in str(wakes[0].content)
    assert messages[-1].content.startswith("Approved")
    for host in hosts:
        assert not host.health.report().degraded, host.health.report()
    # B ended the turn: gone there at once, and from the database with B's next write.
    assert b.turns.live_turns == []
    with pytest.raises(NotFoundError):
        b.turns.pinned(seen["turn"])
    b.turns.close()
    assert a.turns.store is not None
    assert a.turns.store.load(seen["turn"]) is None


def test_the_turn_subgraph_begins_on_one_host_and_ends_on_another(
    hosts: tuple[Mnemon, Mnemon],
) -> None:
    a, b = hosts

    def graph(mem: Mnemon) -> Any:
        def agent(state: MnemonTurnState) -> dict[str, Any]:
            answer = interrupt("go on?")  # the turn outlives this run: it resumes elsewhere
            return {"messages": [AIMessage(f"Resumed: {answer}")]}

        return memory_graph(mem, agent)

    cfg = {"configurable": {"thread_id": "subgraph"}}
    graph(a).invoke({"messages": [HumanMessage("Please remember: deploys need approvals.")]}, cfg)
    turn = graph(a).get_state(cfg).values["mnemon_turn"]
    assert b.turns.pinned(turn) == a.turns.pinned(turn)  # B reads A's pin
    assert b.system_prompt(turn) == a.system_prompt(turn)
    out = graph(b).invoke(Command(resume="yes"), cfg)
    assert out["mnemon_turn"] is None
    assert out["messages"][-1].content == "Resumed: yes"
    assert not b.health.report().degraded
    assert b.review_gate.activity("subgraph").turns[0].explicit_save  # B recorded the turn


def test_parallel_calls_of_a_read_back_turn_count_once(hosts: tuple[Mnemon, Mnemon]) -> None:
    a, b = hosts
    start = a.turns.begin(TurnScope(thread_id="parallel"), TurnFacts(), share=True)
    queries = [f"deploy question {i}" for i in range(8)]
    barrier = threading.Barrier(len(queries))
    found: list[str] = []

    def ask(query: str) -> None:
        barrier.wait()
        found.append(b.turns.retrieval(start.turn_id).recall(b.spaces, query).status)

    threads = [threading.Thread(target=ask, args=(q,)) for q in queries]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(found).count("searched") == 2  # two attempts, whatever the order
    assert sorted(found).count("exhausted") == 6
    stored = b.turns.store.load(start.turn_id) if b.turns.store else None
    assert stored is not None
    assert len(stored.state.attempts) == 2
    assert stored.version == 3  # begun, then one write per recorded attempt
    seen = a.turns.retrieval(start.turn_id)  # A's cached copy catches up before its use
    assert len(seen.attempts) == 2
    assert seen.recall_usage == stored.state.recall_usage
    assert a.turns.retrieval(start.turn_id).recall(a.spaces, "one more").status == "exhausted"
    a.turns.end(start.turn_id)


def test_a_retried_call_replays_and_counts_once(hosts: tuple[Mnemon, Mnemon]) -> None:
    a, b = hosts
    start = a.turns.begin(TurnScope(thread_id="retry"), TurnFacts(), share=True)
    first = a.turns.retrieval(start.turn_id).recall(a.spaces, "deploy approvals")
    docs = a.turns.retrieval(start.turn_id).search_documents(a.documents, "rollback")
    # A's worker dies here; the run is retried on B with the same calls.
    provider_calls: list[str] = []
    real = b.spaces.search

    def counted(*args: Any, **kwargs: Any) -> Any:
        provider_calls.append(str(args[0]))
        return real(*args, **kwargs)

    b.spaces.search = counted  # type: ignore[method-assign]
    try:
        turn = b.turns.retrieval(start.turn_id)
        again = turn.recall(b.spaces, "deploy approvals")
        docs_again = turn.search_documents(b.documents, "rollback")
    finally:
        del b.spaces.search
    assert (again.status, again.evidence.id) == ("replayed", first.evidence.id)
    assert provider_calls == []
    assert docs_again.not_run
    assert docs_again.results == docs.results
    assert turn.recall_usage == (len(first.results), sum(len(r.content) for r in first.results))
    b.turns.end(start.turn_id)


def test_writes_of_two_hosts_to_one_turn_merge(hosts: tuple[Mnemon, Mnemon]) -> None:
    a, b = hosts
    start = a.turns.begin(TurnScope(thread_id="merge"), TurnFacts(), share=True)
    on_a = a.turns.retrieval(start.turn_id)
    on_b = b.turns.retrieval(start.turn_id)  # both read version 1
    on_a.recall(a.spaces, "deploy approvals")  # version 2
    on_b.search_documents(b.documents, "rollback")  # written over 1: merged, then written
    store = a.turns.store
    assert store is not None
    stored = store.load(start.turn_id)
    assert stored is not None
    assert stored.version == 3
    assert len(stored.state.attempts) == 1
    assert stored.state.documents is not None
    assert len(on_b.attempts) == 1  # B took A's attempt in while merging
    # Each call resolves the turn again (as a tool does): A catches up with B's search first.
    assert a.turns.retrieval(start.turn_id).search_documents(a.documents, "other").not_run
    a.turns.end(start.turn_id)


def test_a_child_agent_pins_a_view_retained_on_another_host(hosts: tuple[Mnemon, Mnemon]) -> None:
    a, b = hosts
    parent = a.turns.begin(TurnScope(thread_id="parent"), TurnFacts(), share=True)
    kept = a.turns.retain(parent.view)
    a.turns.end(parent.turn_id)
    child = b.turns.begin(
        TurnScope(thread_id="parent", agent_id="kid", root=False), retained=kept, share=True
    )
    assert child.view == parent.view
    assert child.cue is None
    assert b.turns.retrieval(child.turn_id).attempts == []  # its own budgets
    b.turns.end(child.turn_id)
    assert b.turns.unretain(kept) == 0
    with pytest.raises(NotFoundError):
        b.turns.unretain(kept)
    with pytest.raises(NotFoundError):
        b.turns.begin(TurnScope(thread_id="late", root=False), retained=kept)


def test_turns_end_and_expire_so_nothing_grows(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, chroma={"enabled": False})
    try:
        hitl.seed(mem)
        ended = [mem.turns.begin(TurnScope(thread_id=f"t{i}"), share=True) for i in range(3)]
        for start in ended:
            mem.turns.end(start.turn_id)
        kept = mem.turns.begin(TurnScope(thread_id="next"), share=True)  # takes the ends along
        now = [time.time()]
        store = TurnStore(mem.database, ttl=60, clock=lambda: now[0])
        assert [store.load(s.turn_id) for s in ended] == [None, None, None]
        assert store.load(kept.turn_id) is not None
        # A turn nobody ends (a crashed worker) expires, and so does a view nobody pins any
        # more, even one a child agent that was never closed still counts as retained.
        assert store.retain(kept.view) == 1
        assert store.retained(kept.view.id) == kept.view
        now[0] += 7 * 24 * 3600 + 1
        assert store.load(kept.turn_id) is None
        assert store.version(kept.turn_id) is None
        assert store.expire() == 2  # the turn, then its view
        assert store.retained(kept.view.id) is None
        assert store.unretain(kept.view.id) is None
        assert store.expire() == 0
    finally:
        mem.close()


def test_a_read_only_host_keeps_turns_in_process(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path / "root", workspace=tmp_path) as mem:
        mem.runtime.add("memory", "Seed.")
    with Mnemon.open(tmp_path / "root", workspace=tmp_path, write_enabled=False) as mem:
        assert mem.turns.store is None
        start = mem.turns.begin(TurnScope(thread_id="ro"), share=True)
        assert isinstance(mem.turns.retrieval(start.turn_id), TurnRetrieval)
        mem.turns.end(start.turn_id)
