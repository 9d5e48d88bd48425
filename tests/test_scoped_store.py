"""The BaseStore facade inside the caller's scope: two users' namespaces never mix.

Real components only: a real SQLite file and the real PostgreSQL server (``database_url``),
real LangGraph graphs and a real ``create_agent`` with LangMem's memory tools, driven by the
deterministic ``ScriptedChatModel``.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableLambda
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from langgraph_mnemon import Mnemon
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import InvalidInputError, ScopeMismatchError
from langgraph_mnemon.store import MnemonStore
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

ALICE = Scope(user="alice")
BOB = Scope(user="bob")
NS = ("memories",)


@pytest.fixture
def mem(database_url: str, tmp_path: Path) -> Iterator[Mnemon]:
    """A host whose spaces live on ``database_url`` (Runtime Memory and Documents on files)."""
    host = Mnemon.open(
        tmp_path / "m",
        database_url=database_url,
        memory_storage="files",
        chroma={"enabled": False},
        embedding={"enabled": False},
    )
    try:
        yield host
    finally:
        host.close()


def _texts(items: list[Any]) -> list[str]:
    return sorted(i.value["text"] for i in items)


# ------------------------------------------------------------------ scoped() siblings


def test_scoped_stores_are_siblings_one_per_scope_and_trigger(mem: Mnemon) -> None:
    store = mem.store()
    alice = store.scoped(ALICE)
    assert store.scope is None
    assert alice.scope == ALICE
    assert store.scoped(Scope(user="alice")) is alice
    assert mem.scoped(user="alice").store() is alice
    assert alice.acting_as("automatic") is mem.store(trigger="automatic").scoped(ALICE)
    assert alice.acting_as("automatic").trigger == "automatic"
    assert store.scoped(Scope()) is not store  # bound to the local scope: runs are ignored
    assert store.scoped(Scope()).scoped(Scope()) is store.scoped(Scope())
    assert alice.host is mem
    assert "alice@local" in repr(alice)
    with pytest.raises(InvalidInputError, match="takes a Scope"):
        store.scoped("alice")  # type: ignore[arg-type]


def test_two_users_same_namespace_are_two_spaces_and_never_mix(mem: Mnemon) -> None:
    alice, bob = mem.store().scoped(ALICE), mem.store().scoped(BOB)
    alice.put(NS, "pet", {"text": "Alice's cat is called Miso."})
    alice.put(("memories", "work"), "desk", {"text": "Alice sits by the window."})
    bob.put(NS, "pet", {"text": "Bob's dog is called Rex."})
    # get / search (listing and query) / list_namespaces: each sees its own only
    assert alice.get(NS, "pet").value == {"text": "Alice's cat is called Miso."}  # type: ignore[union-attr]
    assert bob.get(NS, "pet").value == {"text": "Bob's dog is called Rex."}  # type: ignore[union-attr]
    assert bob.get(("memories", "work"), "desk") is None
    assert _texts(alice.search(NS)) == [
        "Alice sits by the window.",
        "Alice's cat is called Miso.",
    ]
    assert _texts(bob.search(NS)) == ["Bob's dog is called Rex."]
    # a query search ranks every item of the user's own namespaces, never the other's
    assert _texts(bob.search(NS, query="Miso")) == ["Bob's dog is called Rex."]
    found = alice.search(NS, query="Miso")
    assert found[0].value["text"] == "Alice's cat is called Miso."
    assert _texts(found) == ["Alice sits by the window.", "Alice's cat is called Miso."]
    assert alice.list_namespaces() == [NS, ("memories", "work")]
    assert bob.list_namespaces() == [NS]
    # each namespace is a Memory Space owned by its user, with an id of its own
    ids = {MnemonStore.space_id_for(NS, s) for s in (ALICE, BOB, Scope())}
    assert len(ids) == 3
    every = mem.spaces.every_owner()
    assert every.get_space(MnemonStore.space_id_for(NS, ALICE)).owner == "user:alice"
    assert every.get_space(MnemonStore.space_id_for(NS, BOB)).owner == "user:bob"
    assert [s.owner for s in mem.scoped(user="bob").spaces.list_spaces()] == ["user:bob"]
    # deleting alice's item leaves bob's alone
    alice.delete(NS, "pet")
    assert alice.get(NS, "pet") is None
    assert bob.get(NS, "pet") is not None
    bob.delete(("memories", "work"), "desk")  # not bob's: a no-op
    assert alice.get(("memories", "work"), "desk") is not None
    assert mem.spaces.list_spaces() == []  # the local scope's spaces hold none of it


def test_the_local_store_maps_as_before_and_never_reads_a_users_items(mem: Mnemon) -> None:
    local, alice = mem.store(), mem.store().scoped(ALICE)
    local.put(NS, "office", {"text": "The office closes at six."})
    assert MnemonStore.space_id_for(NS) == MnemonStore.space_id_for(NS, Scope())
    assert mem.spaces.get_space(MnemonStore.space_id_for(NS)).owner is None
    assert alice.get(NS, "office") is None  # a user never reads the local user's items
    alice.put(NS, "pet", {"text": "Alice's cat is called Miso."})
    # ... and the local user (outside any run, or a run naming no user) never reads hers
    assert _texts(local.search(NS)) == ["The office closes at six."]
    assert local.get(NS, "pet") is None
    assert local.list_namespaces() == [NS]
    assert _texts(alice.search(NS)) == ["Alice's cat is called Miso."]
    local.delete(NS, "pet")  # deletes nothing of hers
    assert alice.get(NS, "pet").value == {"text": "Alice's cat is called Miso."}  # type: ignore[union-attr]


# ------------------------------------------------------------------ LangGraph runs


class _Note(TypedDict):
    text: str
    seen: list[str]


def _notes_graph(mem: Mnemon, store: MnemonStore | None = None) -> Any:
    def write(state: _Note, runtime: Runtime) -> dict[str, Any]:
        assert runtime.store is not None  # a sync node: the sync store path
        runtime.store.put(NS, uuid.uuid4().hex, {"text": state["text"]})
        return {}

    def read(state: _Note) -> dict[str, Any]:
        return {"seen": _texts(get_store().search(NS))}

    async def aread(state: _Note) -> dict[str, Any]:  # ainvoke: the async store path
        return {"seen": _texts(await get_store().asearch(NS))}

    builder = StateGraph(_Note)
    builder.add_node("write", write)
    builder.add_node("read", RunnableLambda(read, afunc=aread))
    builder.add_edge(START, "write")
    builder.add_edge("write", "read")
    builder.add_edge("read", END)
    return builder.compile(store=store if store is not None else mem.store())


def _as(user: str, key: str = "user_id") -> dict[str, Any]:
    return {"configurable": {key: user}}


def test_graph_runs_use_the_runs_user_and_never_see_another(mem: Mnemon) -> None:
    graph = _notes_graph(mem)
    out = graph.invoke({"text": "Alice likes tea.", "seen": []}, config=_as("alice"))
    assert out["seen"] == ["Alice likes tea."]
    out = asyncio.run(graph.ainvoke({"text": "Bob likes coffee.", "seen": []}, config=_as("bob")))
    assert out["seen"] == ["Bob likes coffee."]
    out = graph.invoke({"text": "Alice likes jam.", "seen": []}, config=_as("alice"))
    assert out["seen"] == ["Alice likes jam.", "Alice likes tea."]
    # LangMem's key for the user lands in that user's scope too
    out = graph.invoke(
        {"text": "Bob likes toast.", "seen": []}, config=_as("bob", "langgraph_user_id")
    )
    assert out["seen"] == ["Bob likes coffee.", "Bob likes toast."]
    # the same from outside the runs, through scoped stores
    assert _texts(mem.store().scoped(ALICE).search(NS)) == ["Alice likes jam.", "Alice likes tea."]
    assert _texts(mem.store().scoped(BOB).search(NS)) == ["Bob likes coffee.", "Bob likes toast."]
    # the local store outside a run reads neither user's items
    assert mem.store().search(NS) == []
    # a bound scope wins over the run's
    bound = _notes_graph(mem, mem.store().scoped(ALICE))
    out = bound.invoke({"text": "Written for alice.", "seen": []}, config=_as("bob"))
    assert "Written for alice." in out["seen"]
    assert "Written for alice." not in _texts(mem.store().scoped(BOB).search(NS))


def test_the_authenticated_user_decides_the_scope_of_a_run(mem: Mnemon) -> None:
    graph = _notes_graph(mem)
    authed = {"langgraph_auth_user_id": "alice", "langgraph_user_id": "mallory"}
    out = graph.invoke({"text": "Alice's private note.", "seen": []}, {"configurable": authed})
    assert out["seen"] == ["Alice's private note."]
    assert mem.store().scoped(Scope(user="mallory")).search(NS) == []
    named = {"langgraph_auth_user_id": "alice", "user_id": "bob"}
    with pytest.raises(ScopeMismatchError, match="not the authenticated user"):
        graph.invoke({"text": "Sneaky.", "seen": []}, {"configurable": named})
    assert _texts(mem.store().scoped(BOB).search(NS)) == []


# ------------------------------------------------------------------ LangMem


def _langmem_agent(mem: Mnemon, responses: list[Any], namespace: tuple[str, ...]) -> Any:
    langmem = pytest.importorskip("langmem")
    from langchain.agents import create_agent

    manage = langmem.create_manage_memory_tool(namespace=namespace)
    search = langmem.create_search_memory_tool(namespace=namespace)
    model = ScriptedChatModel(responses=responses)
    return create_agent(model, tools=[manage, search], store=mem.store())


def _tool_results(out: dict[str, Any]) -> list[str]:
    return [m.content for m in out["messages"] if m.type == "tool"]


def test_langmem_tools_with_langgraph_user_id_are_isolated_per_user(mem: Mnemon) -> None:
    template = ("memories", "{langgraph_user_id}")
    for user, fact in (("alice", "User's dog is called Rex."), ("bob", "User's dog is Fido.")):
        agent = _langmem_agent(
            mem,
            [
                tool_call("manage_memory", {"content": fact}, "c1"),
                tool_call("search_memory", {"query": "dog called"}, "c2"),
                "Noted.",
            ],
            template,
        )
        out = agent.invoke({"messages": [HumanMessage("hi")]}, _as(user, "langgraph_user_id"))
        created, found = _tool_results(out)
        assert created.startswith("created memory ")
        assert [(f["namespace"], f["value"]) for f in json.loads(found)] == [
            (["memories", user], {"content": fact})
        ]
    # bob's run naming alice's namespace outright still reads bob's scope only
    spy = _langmem_agent(
        mem, [tool_call("search_memory", {"query": "dog"}, "c1"), "None."], ("memories", "alice")
    )
    out = spy.invoke({"messages": [HumanMessage("hi")]}, _as("bob", "langgraph_user_id"))
    assert json.loads(_tool_results(out)[0]) == []
    alice = mem.store().scoped(ALICE)
    assert [i.value for i in alice.search(("memories", "alice"))] == [
        {"content": "User's dog is called Rex."}
    ]
    assert alice.search(("memories", "bob")) == []
    assert mem.store().scoped(BOB).list_namespaces() == [("memories", "bob")]
