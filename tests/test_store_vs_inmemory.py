"""``mem.store()`` against LangGraph's ``InMemoryStore`` (the reference) with the same inputs.

Every test runs on a real SQLite file and on the real PostgreSQL (``database_url``).
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from langgraph_mnemon import Mnemon
from langgraph_mnemon.store import MnemonStore


@pytest.fixture
def mem(tmp_path: Path, database_url: str) -> Iterator[Mnemon]:
    with Mnemon.open(tmp_path / "m", database_url=database_url) as host:
        yield host


def _both(mem: Mnemon) -> tuple[BaseStore, MnemonStore]:
    return InMemoryStore(), mem.store()


def _keys(items: list[Any]) -> list[tuple[tuple[str, ...], str]]:
    return sorted((tuple(i.namespace), i.key) for i in items)


DOCS = {
    # InMemoryStore raises on an ordering filter over a missing field: every doc has n, title
    "a": {"kind": "note", "n": 1, "title": "c", "meta": {"lang": "en", "tier": 2}, "tags": ["y"]},
    "b": {"kind": "note", "n": 5, "title": "b", "meta": {"lang": "de", "tier": 1}, "tags": ["y"]},
    "c": {"kind": "todo", "n": 3, "title": "a", "meta": {"lang": "en", "tier": 3}, "tags": []},
    "d": {"kind": "todo", "n": 7.5, "title": "zeta", "meta": {"lang": "fr"}},
    "e": {"kind": "note", "n": -2, "title": "alpha"},
}


def test_put_get_overwrite_delete_and_put_none(mem: Mnemon) -> None:
    ref, ours = _both(mem)
    ns = ("users", "alice")
    for store in (ref, ours):
        store.put(ns, "k", {"v": 1, "nested": {"a": [1, 2]}})
    got, want = ours.get(ns, "k"), ref.get(ns, "k")
    assert got is not None
    assert want is not None
    assert (got.value, got.key, got.namespace) == (want.value, want.key, want.namespace)
    time.sleep(0.01)
    for store in (ref, ours):
        store.put(ns, "k", {"v": 2})
    again = ours.get(ns, "k")
    assert again is not None
    assert again.value == ref.get(ns, "k").value == {"v": 2}  # type: ignore[union-attr]
    assert again.created_at == got.created_at  # the first write time is kept
    assert again.updated_at > got.updated_at
    for store in (ref, ours):
        store.delete(ns, "k")
        store.put(ns, "n", {"v": 3})
        store.put(ns, "n", None)
    assert ours.get(ns, "k") is None
    assert ref.get(ns, "k") is None
    assert ours.get(ns, "n") is None
    assert ref.get(ns, "n") is None
    assert ours.search(ns) == []
    assert ref.search(ns) == []


@pytest.mark.parametrize(
    "spec",
    [
        {"kind": "note"},
        {"kind": {"$eq": "todo"}},
        {"kind": {"$ne": "note"}},
        {"n": {"$gt": 3}},
        {"n": {"$gte": 3}},
        {"n": {"$lt": 5}},
        {"n": {"$lte": 5}},
        {"n": {"$gt": 1, "$lt": 7.5}},
        {"meta": {"lang": "en"}},
        {"meta": {"lang": "en", "tier": 3}},
        {"tags": ["y"]},
        {"missing": 1},
    ],
)
def test_search_without_query_filters_like_inmemory(mem: Mnemon, spec: dict[str, Any]) -> None:
    ref, ours = _both(mem)
    for store in (ref, ours):
        store.batch([PutOp(("docs", "x"), k, v) for k, v in DOCS.items()])
    assert _keys(ours.search(("docs",), filter=spec, limit=100)) == _keys(
        ref.search(("docs",), filter=spec, limit=100)
    )


def test_offset_limit_windows_and_order(mem: Mnemon) -> None:
    ref, ours = _both(mem)
    for index in range(12):
        for store in (ref, ours):
            store.put(("w", str(index % 3)), f"k{index:02d}", {"i": index})
    full = ours.search(("w",), limit=100)
    assert _keys(full) == _keys(ref.search(("w",), limit=100))
    assert [i.updated_at for i in full] == sorted((i.updated_at for i in full), reverse=True)
    for offset, limit in itertools.product((0, 1, 5, 11, 12, 20), (0, 1, 3, 12)):
        window = ours.search(("w",), limit=limit, offset=offset)
        assert [i.key for i in window] == [i.key for i in full[offset : offset + limit]]
        assert len(window) == len(ref.search(("w",), limit=limit, offset=offset))
    filtered = ours.search(("w",), filter={"i": {"$gte": 4}}, limit=3, offset=2)
    assert [i.key for i in filtered] == ["k09", "k08", "k07"]


NAMESPACES = [
    ("a",),
    ("a", "b"),
    ("a", "b", "c"),
    ("a", "x", "c"),
    ("users", "alice", "prefs"),
    ("users", "bob", "prefs"),
    ("users", "bob", "notes"),
    ("z", "c"),
]


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"prefix": ("a",)},
        {"prefix": ("users", "*", "prefs")},
        {"suffix": ("c",)},
        {"suffix": ("*", "c")},
        {"prefix": ("a",), "suffix": ("c",)},
        {"max_depth": 1},
        {"max_depth": 2},
        {"prefix": ("users",), "max_depth": 2},
        {"limit": 3},
        {"limit": 2, "offset": 3},
        {"offset": 100},
        {"prefix": ("nothing",)},
    ],
)
def test_list_namespaces_like_inmemory(mem: Mnemon, kwargs: dict[str, Any]) -> None:
    ref, ours = _both(mem)
    for store in (ref, ours):
        for ns in NAMESPACES:
            store.put(ns, "k", {"v": 1})
    ours.put(("gone",), "k", {"v": 1})
    ours.delete(("gone",), "k")  # emptied: not listed (InMemoryStore keeps listing it)
    assert ours.list_namespaces(**kwargs) == ref.list_namespaces(**kwargs)


def test_query_search_returns_up_to_limit_ranked_items(mem: Mnemon) -> None:
    ours = mem.store()
    ns = ("kb",)
    ours.batch(
        [
            PutOp(ns, f"k{i}", {"text": f"The deploy pipeline step {i} runs tests on staging."})
            for i in range(25)
        ]
    )
    found = ours.search(ns, query="deploy pipeline staging tests", limit=10)
    assert len(found) == 10  # no strict cut: as many as asked when that many match
    scores = [i.score for i in found]
    assert all(s is not None and 0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    page = ours.search(ns, query="deploy pipeline staging tests", limit=5, offset=5)
    assert [i.key for i in page] == [i.key for i in found[5:10]]
    assert len(ours.search(ns, query="deploy pipeline staging tests", limit=40)) == 25


class _CountingEmbedder:
    """A real (hashing) embedder that counts its calls."""

    model_id = "counting-hash-16"

    def __init__(self) -> None:
        self.calls = 0

    def _vector(self, text: str) -> list[float]:
        out = [0.0] * 16
        for word in text.lower().split():
            out[hash(word) % 16] += 1.0
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def test_batched_puts_are_one_transaction_and_one_embedder_call(mem: Mnemon) -> None:
    import asyncio

    ours = mem.store()
    ours.put(("bulk",), "seed", {"text": "first"})  # creates the spaces and the tables
    ours.put(("bulk", "other"), "seed", {"text": "first"})
    provider = mem.spaces.provider("mnemos")
    embedder = _CountingEmbedder()
    provider.embedder = embedder  # type: ignore[attr-defined]
    commits: list[int] = []

    def on_commit(conn: Any) -> None:  # write transactions only (reads commit too)
        if conn.get_execution_options().get("mnemon_write"):
            commits.append(1)

    engine = provider.db.engine  # type: ignore[attr-defined]
    sa.event.listen(engine, "commit", on_commit)
    try:
        ops = [PutOp(("bulk",), f"k{i}", {"text": f"item number {i}"}) for i in range(200)]
        ops += [PutOp(("bulk", "other"), f"o{i}", {"text": f"other {i}"}) for i in range(20)]
        ops.append(PutOp(("bulk",), "seed", {"text": "replaced"}))
        ops.append(PutOp(("bulk",), "k3", None))
        asyncio.run(ours.abatch(ops))
    finally:
        sa.event.remove(engine, "commit", on_commit)
    assert len(commits) == 1  # 222 puts and deletes over two namespaces: one transaction
    assert embedder.calls == 1
    assert len(ours.search(("bulk",), limit=1000)) == 200 + 20 + 1
    assert ours.get(("bulk",), "seed").value == {"text": "replaced"}  # type: ignore[union-attr]
    assert ours.get(("bulk",), "k3") is None


def test_identical_reput_is_not_embedded_again_and_a_change_is(mem: Mnemon) -> None:
    ours = mem.store()
    ours.put(("re",), "k", {"text": "same words"})
    first = ours.get(("re",), "k")
    provider = mem.spaces.provider("mnemos")
    embedder = _CountingEmbedder()
    provider.embedder = embedder  # type: ignore[attr-defined]
    ours.put(("re",), "k", {"text": "same words"})
    assert embedder.calls == 0  # compared before embedding: nothing to write
    again = ours.get(("re",), "k")
    assert again is not None
    assert first is not None
    assert again.updated_at == first.updated_at  # an identical re-put changes nothing
    ours.put(("re",), "k", {"text": "new words"})
    assert embedder.calls == 1
    assert ours.get(("re",), "k").value == {"text": "new words"}  # type: ignore[union-attr]


def test_a_filter_matching_only_old_rows_pages_back_to_them(mem: Mnemon) -> None:
    ref, ours = _both(mem)
    ns = ("paged",)
    ops = [PutOp(ns, f"k{i}", {"old": i < 5, "i": i}) for i in range(700)]
    for store in (ref, ours):
        store.batch(ops)
    got = ours.search(ns, filter={"old": True}, limit=10)
    want = ref.search(ns, filter={"old": True}, limit=10)
    assert sorted(i.key for i in got) == sorted(i.key for i in want) == [f"k{i}" for i in range(5)]


def test_a_namespace_another_host_creates_is_seen_at_once(
    tmp_path: Path, database_url: str
) -> None:
    # The decoded catalog is cached by catalog revision: a write of another handle on the
    # same database (another process, here a second host) must show up in the next read.
    with (
        Mnemon.open(tmp_path / "a", database_url=database_url) as one,
        Mnemon.open(tmp_path / "b", database_url=database_url) as two,
    ):
        first, second = one.store(), two.store()
        first.put(("shared", "x"), "k", {"v": 1})
        assert first.list_namespaces(prefix=("shared",)) == [("shared", "x")]
        second.put(("shared", "y"), "k", {"v": 2})
        assert first.list_namespaces(prefix=("shared",)) == [("shared", "x"), ("shared", "y")]
        assert [i.key for i in first.search(("shared", "y"))] == ["k"]
        second.delete(("shared", "y"), "k")
        assert first.list_namespaces(prefix=("shared",)) == [("shared", "x")]


def test_store_items_stay_in_federated_recall(mem: Mnemon) -> None:
    ours = mem.store()
    ours.put(("kb",), "port", {"text": "The staging database listens on port 5433."})
    ours.put(("kb",), "port", {"text": "The staging database moved to port 6543."})
    found = mem.spaces.search("staging database port", policy="exhaustive-v1").results
    assert [r.content for r in found] == ["The staging database moved to port 6543."]  # its text
    kept = mem.spaces.search("staging database port", policy="exhaustive-v1", verbatim=True)
    assert [r.content for r in kept.results] == [
        '{"text": "The staging database moved to port 6543."}'
    ]


def test_migration_upgrades_a_database_of_the_previous_schema(tmp_path: Path) -> None:
    """Built with schema step 1 (no ``store_key``), rows written as the old facade wrote them,
    then reopened: keys are back-filled, a superseded copy is retired, nothing is lost."""
    from langgraph_mnemon.adapters.providers.mnemos import _write
    from langgraph_mnemon.memory_layers.spaces import RememberItem, SpaceBinding
    from langgraph_mnemon.memory_layers.spaces._catalog import OWNER_MIGRATIONS
    from langgraph_mnemon.memory_layers.spaces.schema import MIGRATIONS, SPACES
    from langgraph_mnemon.storage.db import Database, create_engine

    url = f"sqlite:///{tmp_path}/old.db"
    ns = ("legacy", "notes")
    sid = MnemonStore.space_id_for(ns)
    db = Database(create_engine(url))
    db.setup(MIGRATIONS[:1])
    db.setup(OWNER_MIGRATIONS)
    with db.write() as conn:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("mnemon_insights")}
        assert "store_key" not in columns
        now = time.time()
        conn.execute(
            SPACES.insert().values(
                id=sid,
                name="store:legacy/notes",
                description='LangGraph store namespace: ["legacy","notes"]',
                provider_id="mnemos",
                active=True,
                config={},
                created_at=now,
                updated_at=now,
            )
        )
        old = [
            ("a", '{"v": "old a"}', now - 30),
            ("b", '{"v": "b"}', now - 20),
            ("a", '{"v": "new a"}', now - 10),  # a concurrent put left two live copies of a
        ]
        for key, content, written in old:
            item = RememberItem(
                content=content,
                source="external",
                metadata={"store_key": key, "store_indexed": True, "store_created_at": now - 30}
                if key == "a"
                else {"store_key": key, "store_indexed": True},
            )
            analysis = _write.Analysis(content)
            _write.insert(
                conn, SpaceBinding(id=sid, name="x"), [item], [analysis],
                [_write.content_hash(item)], None, None, written,
            )  # fmt: skip
    db.dispose()
    with Mnemon.open(tmp_path / "m", database_url=url) as host:
        store = host.store()
        a = store.get(ns, "a")
        assert a is not None
        assert a.value == {"v": "new a"}
        assert a.created_at.timestamp() == pytest.approx(now - 30)
        assert store.get(ns, "b").value == {"v": "b"}  # type: ignore[union-attr]
        assert sorted(i.key for i in store.search(ns)) == ["a", "b"]
        assert store.list_namespaces() == [ns]
        store.put(ns, "a", {"v": "newest a"})
        ranked = store.search(ns, query="newest")  # every item, the match first
        assert [i.value for i in ranked] == [{"v": "newest a"}, {"v": "b"}]
        assert ranked[0].score > ranked[1].score  # type: ignore[operator]
    with Database(create_engine(url)).read() as conn:
        versions = conn.execute(
            sa.text("SELECT version FROM mnemon_schema_version WHERE component = 'spaces'")
        ).scalars()
        assert sorted(versions) == [1, 2, 3, 4]
        live = conn.execute(
            sa.text("SELECT store_key FROM mnemon_insights WHERE deleted_at IS NULL")
        ).scalars()
        assert sorted(live) == ["a", "b"]


_KEYS = st.sampled_from(["k1", "k2", "k3"])
_NS = st.sampled_from([("h",), ("h", "a"), ("h", "b", "c")])
_VALUES = st.dictionaries(
    st.sampled_from(["x", "y", "z"]), st.one_of(st.integers(-3, 3), st.sampled_from(["p", "q"]))
)
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), _NS, _KEYS, _VALUES),
        st.tuples(st.just("delete"), _NS, _KEYS, st.none()),
        st.tuples(st.just("get"), _NS, _KEYS, st.none()),
    ),
    max_size=12,
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_OPS)
def test_random_op_sequences_match_inmemory(mem: Mnemon, ops: list[Any]) -> None:
    ref, ours = InMemoryStore(), mem.store()
    root = uuid.uuid4().hex[:8]  # a fresh namespace tree per example (the host is shared)
    for kind, ns, key, value in ops:
        ns = (root, *ns)
        if kind == "put":
            ref.put(ns, key, value)
            ours.put(ns, key, value)
        elif kind == "delete":
            ref.delete(ns, key)
            ours.delete(ns, key)
        else:
            want, got = ref.get(ns, key), ours.get(ns, key)
            assert (got.value if got else None) == (want.value if want else None)
    assert _keys(ours.search((root,), limit=100)) == _keys(ref.search((root,), limit=100))
    # InMemoryStore keeps listing an emptied namespace; ours lists namespaces with items
    holding = sorted({tuple(i.namespace) for i in ref.search((root,), limit=100)})
    assert ours.list_namespaces(prefix=(root,)) == holding
