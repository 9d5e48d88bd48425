"""``mem.store()`` search filters and namespace rules as LangGraph's SQL stores apply them
(dotted paths into nested values, keys with hyphens or leading digits, the six operators;
empty labels, dots and the reserved ``langgraph`` root refused before anything is written),
on a real SQLite file and the real PostgreSQL (``database_url``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError as LangGraphNamespaceError
from langgraph.store.base import PutOp, SearchOp

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import InvalidInputError, InvalidNamespaceError, MnemonError
from langgraph_mnemon.store import MnemonStore

DOCS: dict[str, dict[str, Any]] = {
    "hyphen": {"access-level": "public", "user": {"access-level": "nested", "tier": 2}},
    "digit": {"123abc": "ok", "user": {"123abc": "ok2", "tier": 5}},
    "deep": {"meta": {"owner": {"name": "ann"}, "score": 4.5}, "flag": True, "n": 10},
    "flat": {"meta.score": 9, "flag": False, "n": -3, "name": "zed"},
    "big": {"n": 10**100, "name": "amy", "meta": {"score": 1}},
}


@pytest.fixture
def store(database_url: str, tmp_path: Path) -> Iterator[MnemonStore]:
    with Mnemon.open(
        tmp_path / "h", database_url=database_url, embedding={"enabled": False}
    ) as host:
        store = host.store()
        store.batch([PutOp(("docs",), key, value) for key, value in DOCS.items()])
        yield store


@pytest.mark.parametrize(
    ("spec", "keys"),
    [
        ({"access-level": "public"}, {"hyphen"}),
        ({"user.access-level": "nested"}, {"hyphen"}),
        ({"123abc": "ok"}, {"digit"}),
        ({"user.123abc": "ok2"}, {"digit"}),
        ({"meta.owner.name": "ann"}, {"deep"}),
        ({"meta.owner": {"name": "ann"}}, {"deep"}),
        ({"user.tier": {"$gt": 2}}, {"digit"}),
        ({"user.tier": {"$gte": 2, "$lt": 5}}, {"hyphen"}),
        ({"meta.score": {"$lte": 4.5}}, {"deep", "big"}),  # "flat" holds no meta object
        ({"meta.score": 9}, {"flat"}),  # no nested value: the literal key "meta.score"
        ({"n": {"$gt": 0}}, {"deep", "big"}),
        ({"n": {"$lt": float("inf")}}, {"deep", "flat", "big"}),
        ({"n": {"$gt": float("-inf")}}, {"deep", "flat", "big"}),
        ({"n": {"$eq": float("nan")}}, set()),
        ({"n": {"$lt": 10**101}}, {"deep", "flat", "big"}),
        ({"n": {"$eq": 10**100}}, {"big"}),
        ({"name": {"$gte": "b"}}, {"flat"}),
        ({"name": {"$ne": "zed"}}, {"big"}),  # a missing field satisfies no operator
        ({"name": None}, {"hyphen", "digit", "deep"}),  # ...and equals None
        ({"flag": True}, {"deep"}),
        ({"flag": {"$eq": False}}, {"flat"}),
        ({"user.missing": {"$gt": 0}}, set()),  # a missing value satisfies no ordering
        ({"user.tier.deeper": 1}, set()),  # the path runs into a number
    ],
)
def test_filters_reach_nested_values_like_langgraphs_sql_stores(
    store: MnemonStore, spec: dict[str, Any], keys: set[str]
) -> None:
    assert {i.key for i in store.search(("docs",), filter=spec, limit=50)} == keys


def test_a_query_search_filters_its_results_the_same_way(store: MnemonStore) -> None:
    store.put(("notes",), "a", {"text": "badger release notes", "info": {"v": 1}})
    store.put(("notes",), "b", {"text": "badger release plan", "info": {"v": 2}})
    found = store.search(("notes",), query="badger release", filter={"info.v": {"$gte": 2}})
    assert [i.key for i in found] == ["b"]


def test_filter_keys_are_still_checked(store: MnemonStore) -> None:
    with pytest.raises(InvalidInputError, match=r"unknown filter operator '\$in'"):
        store.search(("docs",), filter={"user.tier": {"$in": [1, 2]}})
    with pytest.raises(InvalidInputError, match="filter keys must be strings"):
        store.batch([SearchOp(("docs",), filter={1: "x"})])  # type: ignore[dict-item]


# --------------------------------------------------------------------------------------------
# namespaces


REFUSED = [
    ((), "give at least one label"),
    (("",), "cannot be empty strings"),
    (("users", ""), "cannot be empty strings"),
    (("users.alice",), "split it into two labels"),
    (("users", "a.b"), "split it into two labels"),
    (("nul\x00",), "NUL"),
    (("users", 7), "must be strings"),
]


@pytest.mark.parametrize(("namespace", "message"), REFUSED)
def test_bad_namespaces_are_refused_before_anything_is_written(
    store: MnemonStore, namespace: Any, message: str
) -> None:
    before = store.host.spaces.list_spaces()
    calls = [
        lambda: store.put(namespace, "k", {"v": 1}),
        lambda: asyncio.run(store.aput(namespace, "k", {"v": 1})),
        lambda: store.batch([PutOp(("docs",), "first", {"v": 1}), PutOp(namespace, "k", {"v": 1})]),
        lambda: asyncio.run(store.abatch([PutOp(namespace, "k", {"v": 1})])),
    ]
    for call in calls:
        with pytest.raises(InvalidNamespaceError, match=message) as caught:
            call()
        error = caught.value
        assert isinstance(error, LangGraphNamespaceError)  # LangGraph's contract
        assert isinstance(error, InvalidInputError)
        assert isinstance(error, MnemonError)
        assert error.code == "invalid-namespace"
    assert store.get(("docs",), "first") is None  # the batch was refused as a whole
    assert store.host.spaces.list_spaces() == before
    assert store.list_namespaces() == [("docs",)]


@pytest.mark.parametrize(
    ("namespace", "message"),
    [(("langgraph",), 'root "langgraph" is reserved'), (("langgraph", "x"), "another first")],
)
def test_put_refuses_the_reserved_root_and_batch_takes_it(
    store: MnemonStore, namespace: tuple[str, ...], message: str
) -> None:
    # LangGraph's stores: the public put refuses the root, a PutOp given to batch may use it.
    for call in (
        lambda: store.put(namespace, "k", {"v": 1}),
        lambda: asyncio.run(store.aput(namespace, "k", {"v": 1})),
    ):
        with pytest.raises(InvalidNamespaceError, match=message):
            call()
    assert store.get(namespace, "k") is None
    store.batch([PutOp(namespace, "k", {"v": 1})])
    assert store.get(namespace, "k").value == {"v": 1}
    asyncio.run(store.abatch([PutOp(namespace, "k", None)]))
    assert store.get(namespace, "k") is None


@pytest.mark.parametrize("path", [("a.b",), ("",), ("ok", "")])
def test_reads_refuse_labels_langgraph_refuses(store: MnemonStore, path: tuple[str, ...]) -> None:
    calls = [
        lambda: store.get(path, "k"),
        lambda: store.delete(path, "k"),
        lambda: store.search(path),
        lambda: store.list_namespaces(prefix=path),
        lambda: store.list_namespaces(suffix=path),
        lambda: asyncio.run(store.asearch(path, query="x")),
    ]
    for call in calls:
        with pytest.raises(InvalidNamespaceError):
            call()


def test_langgraph_is_only_reserved_as_the_root(store: MnemonStore) -> None:
    ns = ("app", "langgraph", "notes")
    store.put(ns, "k", {"v": 1})
    assert store.get(ns, "k").value == {"v": 1}  # type: ignore[union-attr]
    assert ns in store.list_namespaces()
    assert store.get(("langgraph", "x"), "k") is None  # a read of the root finds nothing
    assert store.search(("langgraph",)) == []


@pytest.mark.parametrize("key", ["access') = 'public' OR '1'='1", "a b", "naïve", ""])
def test_filter_keys_outside_langgraphs_sql_alphabet_are_refused(
    store: MnemonStore, key: str
) -> None:
    store.put(("docs",), "public", {"access": "public"})
    with pytest.raises(InvalidInputError, match="Invalid filter key") as caught:
        store.search(("docs",), filter={key: "dummy"})
    assert isinstance(caught.value, ValueError)  # what LangGraph's SQL stores raise
    assert [i.key for i in store.search(("docs",), filter={"access": "public"})] == ["public"]
