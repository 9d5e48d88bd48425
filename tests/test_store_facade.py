"""The LangGraph ``BaseStore`` facade (``Mnemon.store()``) on real SQLite files, no mocks."""

from __future__ import annotations

import asyncio
import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langchain.tools import ToolRuntime, tool
from langgraph.runtime import Runtime
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from langgraph_mnemon import Mnemon
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import InvalidInputError, ReadOnlyError
from langgraph_mnemon.store import NAMESPACE_PREFIX, MnemonStore

CORPUS = {
    "deploy": {"text": "Production deploys need two approvals from the platform team."},
    "db": {"text": "The staging database is db-stage-2 on port 5433."},
    "lunch": {"text": "The team orders pizza on Fridays."},
    "editor": {"text": "Alice prefers the dark theme with a 14 point font."},
}


@pytest.fixture
def store(mem: Mnemon) -> MnemonStore:
    return mem.store()


def _fill(store: BaseStore, namespace: tuple[str, ...] = ("team", "notes")) -> None:
    for key, value in CORPUS.items():
        store.put(namespace, key, value)


# --------------------------------------------------------------------------------------------
# put / get / overwrite / delete


def test_store_is_a_basestore_and_one_per_host(mem: Mnemon) -> None:
    store = mem.store()
    assert isinstance(store, BaseStore)
    assert mem.store() is store
    assert store.supports_ttl is True
    assert store.ttl_config is None
    assert store.host is mem


def test_put_then_get_returns_exactly_the_value(store: MnemonStore) -> None:
    value = {
        "text": 'Ünïcødé ✓ and "quotes" and \x00 nul',
        "n": 3,
        "ratio": 0.25,
        "ok": True,
        "none": None,
        "nested": {"list": [1, "two", {"three": 3.5}], "empty": {}},
        "z_first_a_last": 1,
        "a": 2,
    }
    store.put(("users", "alice"), "profile", value)
    item = store.get(("users", "alice"), "profile")
    assert item is not None
    assert item.value == value
    assert list(item.value) == list(value)  # key order kept
    assert item.key == "profile"
    assert item.namespace == ("users", "alice")
    assert isinstance(item.created_at, datetime)
    assert item.created_at.tzinfo is not None
    assert item.created_at == item.updated_at


def test_get_missing_key_or_namespace_is_none(store: MnemonStore) -> None:
    assert store.get(("nobody",), "x") is None
    store.put(("users", "alice"), "a", {"x": 1})
    assert store.get(("users", "alice"), "missing") is None
    assert store.get(("users",), "a") is None  # namespaces are exact for get


def test_overwrite_keeps_created_at_and_moves_updated_at(mem: Mnemon, store: MnemonStore) -> None:
    ns = ("users", "alice")
    store.put(ns, "editor", {"theme": "dark"})
    first = store.get(ns, "editor")
    store.put(ns, "editor", {"theme": "light", "font": 12})
    second = store.get(ns, "editor")
    assert first is not None
    assert second is not None
    assert second.value == {"theme": "light", "font": 12}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    # one live row per key: the old version was forgotten
    rows = mem.spaces.browse(MnemonStore.space_id_for(ns))
    assert len(rows) == 1
    assert json.loads(rows[0].content) == {"theme": "light", "font": 12}
    assert [i.key for i in store.search(ns)] == ["editor"]


def test_identical_put_is_a_deduplicated_no_op(mem: Mnemon, store: MnemonStore) -> None:
    ns = ("users", "alice")
    store.put(ns, "editor", {"theme": "dark"})
    first = store.get(ns, "editor")
    store.put(ns, "editor", {"theme": "dark"})
    again = store.get(ns, "editor")
    assert first is not None
    assert again is not None
    assert again.updated_at == first.updated_at
    assert len(mem.spaces.browse(MnemonStore.space_id_for(ns))) == 1
    # the same value under another key is a separate item
    store.put(ns, "copy", {"theme": "dark"})
    assert {i.key for i in store.search(ns)} == {"editor", "copy"}


def test_delete_and_put_none_remove_the_item(store: MnemonStore) -> None:
    ns = ("users", "alice")
    store.put(ns, "a", {"x": 1})
    store.put(ns, "b", {"x": 2})
    store.delete(ns, "a")
    assert store.get(ns, "a") is None
    store.batch([PutOp(ns, "b", None)])
    assert store.get(ns, "b") is None
    store.delete(ns, "never-there")  # deleting a missing key is a no-op
    store.delete(("no", "such", "namespace"), "x")
    assert store.search(ns) == []


def test_put_after_delete_starts_a_new_item(store: MnemonStore) -> None:
    ns = ("users", "alice")
    store.put(ns, "a", {"x": 1})
    first = store.get(ns, "a")
    store.delete(ns, "a")
    store.put(ns, "a", {"x": 1})
    again = store.get(ns, "a")
    assert first is not None
    assert again is not None
    assert again.value == {"x": 1}
    assert again.created_at > first.created_at


def test_namespace_maps_to_a_native_memory_space(mem: Mnemon, store: MnemonStore) -> None:
    ns = ("users", "alice", "prefs")
    assert mem.spaces.list_spaces() == []
    assert store.get(ns, "x") is None  # reads never create spaces
    assert mem.spaces.list_spaces() == []
    store.put(ns, "x", {"v": 1})
    record = mem.spaces.get_space(MnemonStore.space_id_for(ns))
    assert record.provider_id == "mnemos"
    assert record.name == "store:users/alice/prefs"
    assert record.description == NAMESPACE_PREFIX + '["users","alice","prefs"]'
    assert record.active  # the first committed write activates it (joins recall)
    # the description is repaired by the next put when someone edits it
    mem.spaces.update_space(record.id, description="edited by hand")
    assert store.list_namespaces() == []
    store.put(ns, "y", {"v": 2})
    assert store.list_namespaces() == [ns]


def test_rows_from_other_mnemon_paths_appear_as_items(mem: Mnemon, store: MnemonStore) -> None:
    ns = ("shared",)
    store.put(ns, "k", {"text": "from the store"})
    receipt = mem.spaces.remember(
        "Written by the write worker about Kubernetes upgrades.",
        space_id=MnemonStore.space_id_for(ns),
        tags=["ops"],
    )
    assert receipt.id
    item = store.get(ns, receipt.id)
    assert item is not None
    assert item.value["content"] == "Written by the write worker about Kubernetes upgrades."
    assert item.value["tags"] == ["ops"]
    assert {i.key for i in store.search(ns)} == {"k", receipt.id}
    # and they can be replaced or deleted through the store
    store.put(ns, receipt.id, {"text": "now a store item"})
    replaced = store.get(ns, receipt.id)
    assert replaced is not None
    assert replaced.value == {"text": "now a store item"}
    store.delete(ns, receipt.id)
    assert store.get(ns, receipt.id) is None


# --------------------------------------------------------------------------------------------
# search


def test_search_with_query_ranks_the_right_item_first(store: MnemonStore) -> None:
    _fill(store)
    store.put(("other",), "decoy", {"text": "Deploys of the other team need no approvals."})
    results = store.search(("team",), query="how many approvals does a production deploy need")
    assert results
    assert results[0].key == "deploy"
    assert results[0].namespace == ("team", "notes")
    assert all(r.namespace[0] == "team" for r in results)
    scores = [r.score for r in results]
    # every item of the namespace is ranked: the unrelated ones last, at 0 or above
    assert len(results) == len(CORPUS)
    assert all(isinstance(s, float) and 0 <= s <= 1 for s in scores)
    assert scores[0] > 0
    assert scores == sorted(scores, reverse=True)
    assert store.search(("team",), query="which port does staging use")[0].key == "db"
    # the empty prefix searches every namespace
    everywhere = store.search((), query="deploy approvals other team")
    assert {(r.namespace, r.key) for r in everywhere} >= {(("other",), "decoy")}


def test_search_with_query_respects_filter_limit_offset(store: MnemonStore) -> None:
    ns = ("kb",)
    for i in range(6):
        store.put(ns, f"k{i}", {"text": f"release checklist step {i}", "step": i})
    hits = store.search(ns, query="release checklist step", limit=10)
    assert {h.key for h in hits} == {f"k{i}" for i in range(6)}
    page = store.search(ns, query="release checklist step", limit=2, offset=1)
    assert [h.key for h in page] == [h.key for h in hits[1:3]]
    even = store.search(ns, query="release checklist", filter={"step": {"$lt": 2}})
    assert {h.key for h in even} == {"k0", "k1"}
    assert store.search(ns, query="release checklist", limit=0) == []
    assert store.search(("nothing", "here"), query="release") == []


def test_index_false_stores_but_hides_from_query_search(store: MnemonStore) -> None:
    ns = ("kb",)
    store.put(ns, "secret", {"text": "The vault rotation happens monthly."}, index=False)
    store.put(ns, "public", {"text": "The vault is in the basement."}, index=["text"])
    assert [h.key for h in store.search(ns, query="vault rotation monthly")] == ["public"]
    hidden = store.get(ns, "secret")
    assert hidden is not None
    assert hidden.value["text"].startswith("The vault rotation")
    assert {i.key for i in store.search(ns)} == {"secret", "public"}


def test_search_without_query_lists_newest_first_with_filters(store: MnemonStore) -> None:
    ns = ("tasks", "u1")
    values = [
        {"title": "a", "priority": 1, "status": "open", "meta": {"owner": "ann"}},
        {"title": "b", "priority": 2, "status": "done", "meta": {"owner": "bob"}},
        {"title": "c", "priority": 3, "status": "open", "meta": {"owner": "ann"}},
        {"title": "d", "priority": 4, "status": "open", "tags": ["x", "y"]},
    ]
    for value in values:
        store.put(ns, value["title"], value)
    store.put(("tasks", "u2"), "e", {"title": "e", "priority": 5, "status": "open"})

    def keys(**kwargs: Any) -> list[str]:
        return [i.key for i in store.search(("tasks", "u1"), **kwargs)]

    listed = store.search(ns)
    assert [i.key for i in listed] == ["d", "c", "b", "a"]
    assert all(i.score is None for i in listed)
    assert keys(filter={"status": "open"}) == ["d", "c", "a"]
    assert keys(filter={"status": {"$eq": "done"}}) == ["b"]
    assert keys(filter={"status": {"$ne": "open"}}) == ["b"]
    assert keys(filter={"priority": {"$gt": 2}}) == ["d", "c"]
    assert keys(filter={"priority": {"$gte": 2, "$lte": 3}}) == ["c", "b"]
    assert keys(filter={"priority": {"$lt": 2}}) == ["a"]
    assert keys(filter={"meta": {"owner": "ann"}}) == ["c", "a"]
    assert keys(filter={"tags": ["x", "y"]}) == ["d"]
    assert keys(filter={"status": "open", "priority": {"$gt": 1}}) == ["d", "c"]
    assert keys(filter={"missing": {"$gt": 0}}) == []
    assert keys(limit=2) == ["d", "c"]
    assert keys(limit=2, offset=2) == ["b", "a"]
    assert keys(offset=10) == []
    assert [i.key for i in store.search(("tasks",), limit=1)] == ["e"]
    assert len(store.search(("tasks",))) == 5


# --------------------------------------------------------------------------------------------
# list_namespaces


def test_list_namespaces_prefix_suffix_depth_and_paging(store: MnemonStore) -> None:
    for ns in [
        ("users", "alice", "prefs"),
        ("users", "alice", "notes"),
        ("users", "bob", "prefs"),
        ("teams", "core", "notes"),
        ("misc",),
    ]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [
        ("misc",),
        ("teams", "core", "notes"),
        ("users", "alice", "notes"),
        ("users", "alice", "prefs"),
        ("users", "bob", "prefs"),
    ]
    assert store.list_namespaces(prefix=("users",)) == [
        ("users", "alice", "notes"),
        ("users", "alice", "prefs"),
        ("users", "bob", "prefs"),
    ]
    assert store.list_namespaces(suffix=("prefs",)) == [
        ("users", "alice", "prefs"),
        ("users", "bob", "prefs"),
    ]
    assert store.list_namespaces(prefix=("*", "alice")) == [
        ("users", "alice", "notes"),
        ("users", "alice", "prefs"),
    ]
    assert store.list_namespaces(suffix=("*", "notes")) == [
        ("teams", "core", "notes"),
        ("users", "alice", "notes"),
    ]
    assert store.list_namespaces(prefix=("users",), suffix=("notes",)) == [
        ("users", "alice", "notes")
    ]
    assert store.list_namespaces(max_depth=1) == [("misc",), ("teams",), ("users",)]
    assert store.list_namespaces(prefix=("users",), max_depth=2) == [
        ("users", "alice"),
        ("users", "bob"),
    ]
    assert store.list_namespaces(limit=2) == [("misc",), ("teams", "core", "notes")]
    assert store.list_namespaces(limit=2, offset=4) == [("users", "bob", "prefs")]
    assert store.list_namespaces(prefix=("nobody",)) == []
    # a namespace whose items are all deleted is no longer listed
    store.delete(("misc",), "k")
    assert ("misc",) not in store.list_namespaces()


# --------------------------------------------------------------------------------------------
# validation and errors


@pytest.mark.parametrize(
    "namespace",
    [(), ("a.b",), ("",), ("ok", ""), ("x\x00y",), ("users", 1)],
)
def test_put_rejects_invalid_namespaces(store: MnemonStore, namespace: Any) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(namespace, "k", {"v": 1})])
    assert store.list_namespaces() == []


def test_reads_reject_invalid_labels(store: MnemonStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.get(("a.b",), "k")
    with pytest.raises(InvalidNamespaceError):
        store.search(("",))
    with pytest.raises(InvalidNamespaceError):
        store.list_namespaces(prefix=("a.b",))
    with pytest.raises(InvalidNamespaceError):
        store.batch([SearchOp(("x.y",))])
    with pytest.raises(InvalidNamespaceError, match="too long"):
        store.put(("n" * 300, "m" * 300), "k", {"v": 1})


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("k", ["not", "a", "dict"], "must be dicts"),
        ("k", {"when": datetime(2026, 1, 1)}, "JSON-serializable"),
        ("k", {"tags": {"a", "b"}}, "JSON-serializable"),
        ("k", {"x": math.nan}, "JSON-serializable"),
        ("k", {1: "int key"}, "string keys"),
        ("k", {"text": "x" * 70_000}, "the limit is 65536"),
        ("k" * 1001, {"v": 1}, "shorter key"),
    ],
)
def test_put_rejects_bad_values_and_keys(
    store: MnemonStore, key: str, value: Any, message: str
) -> None:
    ns = ("users", "alice")
    store.put(ns, "k", {"v": "before"})
    with pytest.raises(InvalidInputError, match=message):
        store.put(ns, key, value)
    item = store.get(ns, "k")  # a failed put leaves everything as it was
    assert item is not None
    assert item.value == {"v": "before"}
    assert [i.key for i in store.search(ns)] == ["k"]


def test_bad_filters_limits_and_index_are_typed_errors(store: MnemonStore) -> None:
    store.put(("ns",), "k", {"v": 1})
    with pytest.raises(InvalidInputError, match=r"\$regex"):
        store.search(("ns",), filter={"v": {"$regex": "x"}})
    with pytest.raises(InvalidInputError, match="filter must be a dict"):
        store.batch([SearchOp(("ns",), filter=["v"])])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="limit"):
        store.search(("ns",), limit=-1)
    with pytest.raises(InvalidInputError, match="index must be"):
        store.put(("ns",), "k2", {"v": 2}, index="text")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="max_depth"):
        store.list_namespaces(max_depth=0)
    with pytest.raises(InvalidInputError, match="unknown store operation"):
        store.batch(["get"])  # type: ignore[list-item]
    assert store.get(("ns",), "k2") is None


def test_bad_ttls_are_typed_errors_before_anything_is_written(store: MnemonStore) -> None:
    for ttl in (0, -1, float("nan"), float("inf"), True, "5", 10**400):
        with pytest.raises(InvalidInputError, match="ttl must be"):
            store.put(("ns",), "k", {"v": 1}, ttl=ttl)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="ttl must be"):
            store.batch([PutOp(("ns",), "k", {"v": 1}, ttl=ttl)])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="refresh_ttl must be True or False"):
        store.batch([GetOp(("ns",), "k", refresh_ttl="yes")])  # type: ignore[arg-type]
    assert store.get(("ns",), "k") is None
    assert store.list_namespaces() == []


def test_a_batch_is_validated_before_anything_runs(store: MnemonStore) -> None:
    ns = ("users", "alice")
    with pytest.raises(InvalidInputError):
        store.batch(
            [
                PutOp(ns, "good", {"v": 1}),
                PutOp(ns, "bad", {"v": {1, 2}}),  # type: ignore[dict-item]
            ]
        )
    assert store.get(ns, "good") is None
    assert store.list_namespaces() == []


def test_batch_runs_ops_in_order(store: MnemonStore) -> None:
    ns = ("b",)
    results = store.batch(
        [
            PutOp(ns, "a", {"v": 1}),
            GetOp(ns, "a"),
            PutOp(ns, "a", {"v": 2}),
            GetOp(ns, "a"),
            SearchOp(ns),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ns),)),
            PutOp(ns, "a", None),
            GetOp(ns, "a"),
        ]
    )
    assert results[0] is None
    assert results[1].value == {"v": 1}
    assert results[3].value == {"v": 2}
    assert [i.value for i in results[4]] == [{"v": 2}]
    assert results[5] == [ns]
    assert results[7] is None


# --------------------------------------------------------------------------------------------
# read-only mode and persistence


def test_read_only_host_rejects_writes_but_reads(tmp_path: Path) -> None:
    root = tmp_path / "m"
    with Mnemon.open(root) as writer:
        writer.store().put(("users", "alice"), "k", {"text": "kept"})
    with Mnemon.open(root, write_enabled=False) as reader:
        store = reader.store()
        with pytest.raises(ReadOnlyError, match="write_enabled"):
            store.put(("users", "alice"), "k", {"text": "changed"})
        with pytest.raises(ReadOnlyError):
            store.put(("users", "alice"), "new", {"text": "new"})
        with pytest.raises(ReadOnlyError):
            store.delete(("users", "alice"), "k")
        with pytest.raises(ReadOnlyError):
            asyncio.run(store.aput(("users", "alice"), "k", {"text": "changed"}))
        item = store.get(("users", "alice"), "k")
        assert item is not None
        assert item.value == {"text": "kept"}
        assert [i.key for i in store.search(("users",), query="kept")] == ["k"]
        assert store.list_namespaces() == [("users", "alice")]


def test_items_persist_across_reopening_the_host(tmp_path: Path) -> None:
    root = tmp_path / "m"
    with Mnemon.open(root) as first:
        store = first.store()
        _fill(store)
        store.put(("team", "notes"), "lunch", {"text": "Tacos on Thursdays now."})
        before = store.get(("team", "notes"), "lunch")
    with Mnemon.open(root) as again:
        store = again.store()
        after = store.get(("team", "notes"), "lunch")
        assert before is not None
        assert after is not None
        assert after.value == {"text": "Tacos on Thursdays now."}
        assert (after.created_at, after.updated_at) == (before.created_at, before.updated_at)
        assert store.list_namespaces() == [("team", "notes")]
        assert store.search(("team",), query="staging database port")[0].key == "db"
        assert len(store.search(("team",))) == len(CORPUS)


# --------------------------------------------------------------------------------------------
# async twins


def test_async_twins_match_the_sync_api(store: MnemonStore) -> None:
    async def scenario() -> None:
        ns = ("async", "u1")
        for key, value in CORPUS.items():
            await store.aput(ns, key, value)
        item = await store.aget(ns, "db")
        assert item is not None
        assert item.value == CORPUS["db"]
        found = await store.asearch(("async",), query="staging database port")
        assert found[0].key == "db"
        listed = await store.asearch(ns, limit=2)
        assert len(listed) == 2
        assert await store.alist_namespaces(prefix=("async",)) == [ns]
        await store.adelete(ns, "db")
        assert await store.aget(ns, "db") is None
        # many concurrent reads on one event loop
        got = await asyncio.gather(*(store.aget(ns, k) for k in CORPUS))
        assert [g is None for g in got] == [k == "db" for k in CORPUS]

    asyncio.run(scenario())
    assert store.get(("async", "u1"), "deploy") is not None


def test_async_api_never_blocks_the_event_loop(store: MnemonStore) -> None:
    import sqlite3

    from blockbuster import BlockingError, blockbuster_ctx

    async def scenario() -> None:
        await store.aput(("warm",), "k", {"v": 0})  # build the host's services first
        with blockbuster_ctx():
            with pytest.raises(BlockingError):  # detection is live
                sqlite3.connect(":memory:").execute("SELECT 1")
            ns = ("bb", "u1")
            await store.aput(ns, "a", {"text": "Blocking calls belong in worker threads."})
            await store.aput(ns, "a", {"text": "Threads keep the event loop free."})
            await store.aput(ns, "b", {"text": "Something else entirely."}, index=False)
            item = await store.aget(ns, "a")
            assert item is not None
            assert item.value["text"].startswith("Threads")
            found = await store.asearch(("bb",), query="event loop threads")
            assert found[0].key == "a"
            assert len(await store.asearch(ns, filter={"text": {"$ne": "x"}})) == 2
            assert await store.alist_namespaces(suffix=("u1",)) == [ns]
            await store.adelete(ns, "a")
            assert await store.aget(ns, "a") is None
            await store.abatch([PutOp(ns, "c", {"v": 1}), GetOp(ns, "c")])

    asyncio.run(scenario())


def test_sync_calls_work_inside_a_running_event_loop(store: MnemonStore) -> None:
    async def scenario() -> None:
        store.put(("loop",), "k", {"v": 1})  # e.g. a sync tool called from a notebook cell
        item = store.get(("loop",), "k")
        assert item is not None
        assert item.value == {"v": 1}

    asyncio.run(scenario())


# --------------------------------------------------------------------------------------------
# LangGraph / LangChain integration


def test_create_agent_tools_read_and_write_through_the_store(mem: Mnemon) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.config import get_store

    from langgraph_mnemon.testing import ScriptedChatModel, tool_call

    @tool
    def save_preference(name: str, value: str) -> str:
        """Save a user preference."""
        get_store().put(("prefs", "alice"), name, {"value": value})
        return f"saved {name}"

    @tool
    def read_preference(name: str, runtime: ToolRuntime) -> str:
        """Read a user preference."""
        assert runtime.store is not None
        item = runtime.store.get(("prefs", "alice"), name)
        return "unknown" if item is None else item.value["value"]

    model = ScriptedChatModel(
        responses=[
            tool_call("save_preference", {"name": "theme", "value": "dark"}, "c1"),
            tool_call("read_preference", {"name": "theme"}, "c2"),
            "Your theme is dark.",
        ]
    )
    agent = create_agent(model, tools=[save_preference, read_preference], store=mem.store())
    out = agent.invoke({"messages": [HumanMessage("remember dark theme, then read it")]})
    tool_results = [m.content for m in out["messages"] if m.type == "tool"]
    assert tool_results == ["saved theme", "dark"]
    assert out["messages"][-1].content == "Your theme is dark."
    item = mem.store().get(("prefs", "alice"), "theme")
    assert item is not None
    assert item.value == {"value": "dark"}


def test_create_agent_async_run_uses_the_async_store(mem: Mnemon) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    from langgraph_mnemon.testing import ScriptedChatModel, tool_call

    mem.store().put(("kb",), "wifi", {"text": "The office wifi password is on the fridge."})

    @tool
    async def lookup(query: str, runtime: ToolRuntime) -> str:
        """Search the knowledge base."""
        assert runtime.store is not None
        hits = await runtime.store.asearch(("kb",), query=query)
        return hits[0].value["text"] if hits else "nothing"

    model = ScriptedChatModel(
        responses=[tool_call("lookup", {"query": "wifi password"}, "c1"), "On the fridge."]
    )
    agent = create_agent(model, tools=[lookup], store=mem.store())
    out = asyncio.run(agent.ainvoke({"messages": [HumanMessage("where is the wifi password?")]}))
    assert [m.content for m in out["messages"] if m.type == "tool"] == [
        "The office wifi password is on the fridge."
    ]


def test_state_graph_node_uses_runtime_store(mem: Mnemon) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        user: str
        fact: str
        recalled: list[str]

    def write(state: State, runtime: Runtime) -> dict[str, Any]:
        assert runtime.store is not None
        count = len(runtime.store.search(("facts", state["user"])))
        runtime.store.put(("facts", state["user"]), f"f{count}", {"text": state["fact"]})
        return {}

    async def read(state: State, runtime: Runtime) -> dict[str, Any]:
        assert runtime.store is not None
        hits = await runtime.store.asearch(("facts", state["user"]), query=state["fact"])
        return {"recalled": [h.value["text"] for h in hits]}

    builder = StateGraph(State)
    builder.add_node("write", write)
    builder.add_node("read", read)
    builder.add_edge(START, "write")
    builder.add_edge("write", "read")
    builder.add_edge("read", END)
    graph = builder.compile(store=mem.store())
    asyncio.run(graph.ainvoke({"user": "u1", "fact": "Bob has a cat named Miso.", "recalled": []}))
    out = asyncio.run(
        graph.ainvoke({"user": "u1", "fact": "The cat Miso likes tuna.", "recalled": []})
    )
    assert out["recalled"][0] == "The cat Miso likes tuna."
    assert "Bob has a cat named Miso." in out["recalled"]
    assert mem.store().list_namespaces(prefix=("facts",)) == [("facts", "u1")]


def test_langmem_memory_tools_work_against_the_facade(mem: Mnemon) -> None:
    langmem = pytest.importorskip("langmem")
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    from langgraph_mnemon.testing import ScriptedChatModel, tool_call

    manage = langmem.create_manage_memory_tool(namespace=("memories", "{user_id}"))
    search = langmem.create_search_memory_tool(namespace=("memories", "{user_id}"))
    model = ScriptedChatModel(
        responses=[
            tool_call("manage_memory", {"content": "User's dog is called Rex."}, "c1"),
            tool_call("manage_memory", {"content": "User works night shifts."}, "c2"),
            tool_call("search_memory", {"query": "what is the dog called"}, "c3"),
            "Your dog is Rex.",
        ]
    )
    agent = create_agent(model, tools=[manage, search], store=mem.store())
    config = {"configurable": {"user_id": "u42"}}
    out = agent.invoke({"messages": [HumanMessage("hi")]}, config)
    tool_msgs = [m for m in out["messages"] if m.type == "tool"]
    assert tool_msgs[0].content.startswith("created memory ")
    found = json.loads(tool_msgs[2].content)
    assert found[0]["value"] == {"content": "User's dog is called Rex."}
    assert found[0]["namespace"] == ["memories", "u42"]
    assert isinstance(found[0]["score"], float)

    # The run named user u42: its items are in u42's scope, and only there (issue 15).
    assert mem.store().search(("memories", "u42")) == []
    store = mem.store().scoped(Scope(user="u42"))
    memories = store.search(("memories", "u42"))
    assert {m.value["content"] for m in memories} == {
        "User's dog is called Rex.",
        "User works night shifts.",
    }
    # update and delete by id through LangMem's async tool path, with the store given explicitly
    rex = next(m for m in memories if "Rex" in m.value["content"])
    bound_manage = langmem.create_manage_memory_tool(("memories", "{user_id}"), store=store)
    bound_search = langmem.create_search_memory_tool(("memories", "{user_id}"), store=store)

    async def update_and_delete() -> None:
        await bound_manage.ainvoke(
            {"content": "User's dog is called Max.", "action": "update", "id": rex.key},
            config,
        )
        item = await store.aget(("memories", "u42"), rex.key)
        assert item is not None
        assert item.value == {"content": "User's dog is called Max."}
        hits = await bound_search.ainvoke({"query": "dog name"}, config)
        assert json.loads(hits)[0]["key"] == rex.key
        await bound_manage.ainvoke({"action": "delete", "id": rex.key}, config)
        assert await store.aget(("memories", "u42"), rex.key) is None

    asyncio.run(update_and_delete())


def test_concurrent_puts_to_one_key_converge(mem: Mnemon, store: MnemonStore) -> None:
    ns = ("race",)

    async def scenario() -> None:
        await asyncio.gather(*(store.aput(ns, "k", {"v": i}) for i in range(6)))
        item = await store.aget(ns, "k")
        assert item is not None
        assert item.value in [{"v": i} for i in range(6)]
        assert [i.key for i in await store.asearch(ns)] == ["k"]
        await store.aput(ns, "k", {"v": "final"})  # also clears superseded copies

    asyncio.run(scenario())
    assert [json.loads(r.content) for r in mem.spaces.browse(MnemonStore.space_id_for(ns))] == [
        {"v": "final"}
    ]


def test_large_namespace_pages_through_the_provider(store: MnemonStore) -> None:
    ns = ("big",)
    count = 520  # more than one provider page (500 rows)
    store.batch([PutOp(ns, f"k{i:03d}", {"i": i}) for i in range(count)])
    assert len(store.search(ns, limit=1000)) == count
    newest = store.search(ns, limit=3, offset=1)
    assert [i.key for i in newest] == ["k518", "k517", "k516"]
    assert [i.key for i in store.search(ns, filter={"i": {"$lt": 2}}, limit=1000)] == [
        "k001",
        "k000",
    ]
    oldest = store.get(ns, "k000")
    assert oldest is not None
    assert oldest.value == {"i": 0}
    store.delete(ns, "k000")
    assert store.get(ns, "k000") is None
    assert len(store.search(ns, limit=1000)) == count - 1


def test_native_provider_finds_rows_by_metadata(mem: Mnemon, store: MnemonStore) -> None:
    from langgraph_mnemon.memory_layers.spaces import SpaceBinding

    store.put(("find",), "needle", {"text": "here"})
    store.put(("find",), "other", {"text": "there"})
    record = mem.spaces.get_space(MnemonStore.space_id_for(("find",)))
    provider = mem.spaces.provider("mnemos")
    binding = SpaceBinding(id=record.id, name=record.name)
    rows = provider.find_by_metadata(binding, "store_key", "needle")  # type: ignore[attr-defined]
    assert [json.loads(r.content) for r in rows] == [{"text": "here"}]
    assert provider.find_by_metadata(binding, "store_key", "absent") == []  # type: ignore[attr-defined]
    with pytest.raises(InvalidInputError):
        provider.find_by_metadata(binding, "bad key'", "x")  # type: ignore[attr-defined]


def test_list_namespaces_from_the_server_are_accepted(store: MnemonStore) -> None:
    store.batch([PutOp(["from", "json"], "k", {"v": 1})])  # type: ignore[arg-type]
    results = store.batch([GetOp(["from", "json"], "k"), SearchOp(["from"])])  # type: ignore[arg-type]
    assert results[0].value == {"v": 1}
    assert [i.namespace for i in results[1]] == [("from", "json")]


def test_facade_on_each_database_backend(tmp_path: Path, database_url: str) -> None:
    with Mnemon.open(tmp_path / "m", database_url=database_url) as host:
        store = host.store()
        ns = ("db", "backend")
        _fill(store, ns)
        store.put(ns, "lunch", {"text": "Tacos on Thursdays now.", "n": 2})
        first = store.get(ns, "lunch")
        assert first is not None
        assert first.value == {"text": "Tacos on Thursdays now.", "n": 2}
        assert store.search(("db",), query="staging database port")[0].key == "db"
        assert [i.key for i in store.search(ns, filter={"n": {"$gte": 2}})] == ["lunch"]
        assert store.list_namespaces(prefix=("db",)) == [ns]
        store.delete(ns, "lunch")
        assert store.get(ns, "lunch") is None
        assert len(store.search(ns)) == len(CORPUS) - 1
