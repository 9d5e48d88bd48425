"""General strategy call budgets per turn (issue 13, item 6), in real ``create_agent`` runs.

Like the Layered recall envelope: ``memory-spaces/search`` at most 2 distinct calls per turn (the
same query replays), ``memory-spaces/related`` 1, ``documents/search`` 1, ``runtime/search`` 2;
over budget is a structured ``route-budget`` refusal with no provider call; a new turn has a
fresh budget; parallel calls of one turn share it; the Wake advertises ``maxCalls``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_support import BASE
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.messages import plugin_form
from langgraph_mnemon.memory_layers.turns import ROUTES_HEADER
from langgraph_mnemon.testing import ScriptedChatModel


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Mnemon]:
    with Mnemon.open(tmp_path / "root", strategy="general", **BASE) as m:
        space = m.spaces.create_space("Ops", "Operations", active=True).space
        assert space is not None
        m.spaces.remember("Production deploys need two approvals.", space_id=space.id)
        m.spaces.remember("The staging database is on port 5433.", space_id=space.id)
        m.documents.create("Runbook", "Restart the queue worker with make restart.")
        yield m


class _Counter:
    """Counts the provider searches that actually run (thread-safe: parallel tool calls)."""

    def __init__(self, mem: Mnemon, method: str) -> None:
        self.calls: list[str] = []
        self._lock = threading.Lock()
        target = mem.documents if method == "documents" else mem.spaces
        real = target.search

        def counting(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.calls.append(str(args[0]))
            return real(*args, **kwargs)

        target.search = counting  # type: ignore[method-assign]


def _route(route_id: str, data: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "name": "mnemon_view_route",
        "args": {"route_id": route_id, "input": data},
        "id": call_id,
        "type": "tool_call",
    }


def _turn(mem: Mnemon, steps: list[Any], thread: str = "t") -> list[dict[str, Any]]:
    agent = create_agent(
        ScriptedChatModel(responses=[*steps, "Done."]),
        tools=mem.tools(),
        middleware=[mem.middleware()],
        checkpointer=mem.checkpointer(),
    )
    out = agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": thread}})
    messages = out["messages"]
    start = max(i for i, m in enumerate(messages) if m.type == "human" and m.content == "go")
    return [json.loads(m.content) for m in messages[start:] if m.type == "tool"]


def _one(route_id: str, data: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[_route(route_id, data, call_id)])


def test_item6_four_space_searches_reach_the_provider_at_most_twice(mem: Mnemon) -> None:
    counter = _Counter(mem, "spaces")
    queries = ["deploy approvals", "Deploy, APPROVALS!", "staging port", "database", "release"]
    results = _turn(
        mem,
        [_one("memory-spaces/search", {"query": q}, f"s{i}") for i, q in enumerate(queries)],
    )
    first, replay, second, third, fourth = results
    assert "Production deploys need two approvals." in {
        r["content"] for r in first["output"]["results"]
    }
    assert replay["output"]["replayed"] is True  # the same query (case / punctuation aside)
    assert replay["output"]["results"] == first["output"]["results"]
    assert second["output"]["results"]
    for refused in (third, fourth):
        assert refused["error"] == "route-budget"
        assert "memory-spaces/search" in refused["message"]
    assert counter.calls == ["deploy approvals", "staging port"]
    # A new turn has a fresh budget.
    (again,) = _turn(mem, [_one("memory-spaces/search", {"query": "database"}, "n1")])
    assert "error" not in again
    assert len(counter.calls) == 3


def test_item6_parallel_searches_of_one_turn_share_the_budget(mem: Mnemon) -> None:
    counter = _Counter(mem, "spaces")
    parallel = AIMessage(
        content="",
        tool_calls=[
            _route("memory-spaces/search", {"query": q}, f"p{i}")
            for i, q in enumerate(["deploy", "staging", "database", "approvals"])
        ],
    )
    results = _turn(mem, [parallel])
    assert sum(r.get("error") == "route-budget" for r in results) == 2
    assert len(counter.calls) == 2


def test_item6_documents_search_and_related_once_per_turn(mem: Mnemon) -> None:
    documents = _Counter(mem, "documents")
    (space,) = mem.spaces.list_spaces()
    rows = mem.spaces.search("approvals", space_ids=[space.id]).results
    docs, docs_again, docs_other, related, related_other = _turn(
        mem,
        [
            _one("documents/search", {"query": "restart"}, "d1"),
            _one("documents/search", {"query": "Restart!"}, "d2"),
            _one("documents/search", {"query": "queue worker"}, "d3"),
            _one("memory-spaces/related", {"id": rows[0].id}, "r1"),
            _one("memory-spaces/related", {"id": rows[0].id, "depth": 3}, "r2"),
        ],
    )
    assert [r["title"] for r in docs["output"]["results"]] == ["Runbook"]
    assert docs_again["output"]["replayed"] is True
    assert docs_other["error"] == "route-budget"
    assert len(documents.calls) == 1
    assert "error" not in related
    assert related_other["error"] == "route-budget"


def test_item6_the_wake_advertises_each_routes_budget(mem: Mnemon) -> None:
    agent = create_agent(
        ScriptedChatModel(responses=["ok"]), tools=mem.tools(), middleware=[mem.middleware()]
    )
    out = agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "w"}})
    (wake,) = [m for m in out["messages"] if plugin_form(m) == "recall"]
    line = next(p for p in str(wake.content).split("\n\n") if p.startswith(ROUTES_HEADER))
    routes = {
        r["id"]: r.get("maxCalls")
        for entry in json.loads(line.removeprefix(ROUTES_HEADER))
        for r in entry["routes"]
    }
    assert routes == {
        "runtime/search": 2,
        "documents/search": 1,
        "memory-spaces/inspect": None,  # a management read: unbounded
        "memory-spaces/search": 2,
        "memory-spaces/related": 1,
    }


def test_item6_a_failed_call_uses_no_budget(mem: Mnemon) -> None:
    counter = _Counter(mem, "spaces")
    failing = {"n": 0}
    real = mem.spaces.search

    def flaky(*args: Any, **kwargs: Any) -> Any:
        failing["n"] += 1
        if failing["n"] == 1:
            raise OSError("provider hiccup")
        return real(*args, **kwargs)

    mem.spaces.search = flaky  # type: ignore[method-assign]
    failed, retried, other, over = _turn(
        mem,
        [
            _one("memory-spaces/search", {"query": "deploy"}, "f1"),
            _one("memory-spaces/search", {"query": "deploy"}, "f2"),
            _one("memory-spaces/search", {"query": "staging"}, "f3"),
            _one("memory-spaces/search", {"query": "database"}, "f4"),
        ],
    )
    assert failed["error"] == "internal"
    assert retried["output"]["results"]
    assert "replayed" not in retried["output"]
    assert other["output"]["results"]
    assert over["error"] == "route-budget"
    assert failing["n"] == 3  # the failure, its retry, the second distinct query
    assert counter.calls == ["deploy", "staging"]
