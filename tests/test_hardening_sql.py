"""Issue 12, the database side: hostile values, damaged and full SQLite files, symlinks, a
read-only host and a read-only PostgreSQL role, Chroma with dense embeddings off.

Everything runs on real components: SQLite files, the PostgreSQL server of ``postgres_url``
(a fresh schema per test), a local Chroma folder and the ``chroma run`` server, a 4 MiB tmpfs of
the test's own (``small_disk``). Test names carry the item of the issue's list they cover.
"""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import uuid
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.store.base import InvalidNamespaceError

from langgraph_mnemon import Mnemon, MnemosSaver
from langgraph_mnemon.contracts import shown
from langgraph_mnemon.errors import (
    InvalidInputError,
    MnemonError,
    NotFoundError,
    ReadOnlyError,
    StorageError,
)

# --------------------------------------------------------------------------------------------
# Helpers

SURROGATE = "half \ud83d of an emoji"
HOSTILE: dict[str, Any] = {
    "surrogate": SURROGATE,
    "nul": "before\x00after",
    "huge": "x" * 100_001,
    "none": None,
    "int": 7,
    "huge-int": 10**5000,
    "bool": True,
    "nan": float("nan"),
    "bytes": b"bytes",
    "list": ["a"],
    "dict": {"a": 1},
}


def _tree(root: Path) -> dict[str, bytes]:
    """The bytes of every regular file under ``root`` (links are not followed)."""
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


def _outcome(call: Callable[[], Any], *allowed: type[BaseException]) -> Any:
    """The call's result, or the error it raised when that error is typed; anything else (a
    UnicodeEncodeError, a TypeError, a driver error) propagates and fails the test."""
    try:
        return call()
    except (MnemonError, *allowed) as exc:
        return exc


def _key(value: Any) -> Any:
    return value if isinstance(value, Hashable) else repr(value)


def _open(root: Path, url: str | None = None, **settings: Any) -> Mnemon:
    if url is not None:
        settings["database_url"] = url
    return Mnemon.open(root, embedding={"enabled": False}, **settings)


def _no_nul_stored(mem: Mnemon) -> list[str]:
    """Every text value in the Memory Space and Mnemos tables that holds a NUL."""
    found = []
    with mem.database.read() as conn:
        names = set(sa.inspect(conn).get_table_names())
        for table in sorted(n for n in names if n.startswith(("mnemon_", "mnemos_"))):
            if table.endswith("_fts") or "_fts_" in table:
                continue
            for row in conn.execute(sa.text(f'SELECT * FROM "{table}"')).all():
                found.extend(f"{table}: {v!r}" for v in row if isinstance(v, str) and "\x00" in v)
    return found


def _check_matrix(
    calls: dict[str, Callable[[Any], Any]], *allowed: type[BaseException]
) -> dict[tuple[str, str], Any]:
    """Run every call with every hostile value: only typed errors, never a StorageError."""
    outcomes = {}
    for name, call in calls.items():
        for label, value in HOSTILE.items():
            out = _outcome(lambda call=call, value=value: call(value), *allowed)
            assert not isinstance(out, StorageError), f"{name}({label}) reached the database: {out}"
            if label == "surrogate":
                assert isinstance(out, (InvalidInputError, NotFoundError, *allowed)), (
                    f"{name}({label}) was accepted: {out!r}"[:300]
                )
            outcomes[(name, label)] = out
    return outcomes


# --------------------------------------------------------------------------------------------
# Item 11: Chroma with dense embeddings off


def _chroma_round_trip(mem: Mnemon) -> None:
    space = mem.spaces.create_space("Ops", "Operations", provider_id="chroma", active=True).space
    assert space is not None
    receipt = mem.spaces.remember("The staging database listens on port 5433.", space_id=space.id)
    assert receipt.status == "committed", receipt.message
    found = mem.spaces.search("which port does staging use", space_ids=[space.id])
    assert [r.content for r in found.results] == ["The staging database listens on port 5433."]
    assert [r.id for r in mem.spaces.browse(space.id)] == [receipt.id]


def test_item11_chroma_local_folder_with_embeddings_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMON_EMBEDDING__ENABLED", "false")
    with Mnemon.open(tmp_path / "root") as mem:
        assert mem.config.embedding.enabled is False
        _chroma_round_trip(mem)
    assert (tmp_path / "root" / "chroma").is_dir()


def test_item11_chroma_server_with_embeddings_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chroma_server: tuple[str, int]
) -> None:
    host, port = chroma_server
    monkeypatch.setenv("MNEMON_EMBEDDING__ENABLED", "false")
    with Mnemon.open(tmp_path / "root", chroma={"host": host, "port": port}) as mem:
        _chroma_round_trip(mem)
    assert not (tmp_path / "root" / "chroma").exists()


# --------------------------------------------------------------------------------------------
# Item 5: hostile values at every public method (SQLite and PostgreSQL)


def test_item05_memory_spaces_hostile_values(tmp_path: Path, database_url: str) -> None:
    with _open(tmp_path / "root", database_url) as mem:
        spaces = mem.spaces
        space = spaces.create_space("Ops", "Operations", active=True).space
        assert space is not None
        sid = space.id
        mid = spaces.remember("Deploys go through CI.", space_id=sid).id
        other = spaces.remember("CI runs on every push.", space_id=sid).id
        calls: dict[str, Callable[[Any], Any]] = {
            "create_space.name": lambda v: spaces.create_space(v),
            "create_space.description": lambda v: spaces.create_space("N", v),
            "create_space.provider_id": lambda v: spaces.create_space("N", provider_id=v),
            "create_space.space_id": lambda v: spaces.create_space("N", space_id=v),
            "create_space.active": lambda v: spaces.create_space("N", active=v),
            "create_space.config": lambda v: spaces.create_space("N", config=v),
            "create_space.secrets": lambda v: spaces.create_space("N", secrets={"token": v}),
            "list_spaces.active": lambda v: spaces.list_spaces(active=v),
            "get_space": lambda v: spaces.get_space(v),
            "set_active.space_id": lambda v: spaces.set_active(v, True),
            "set_active.active": lambda v: spaces.set_active(sid, v),
            "update_space.name": lambda v: spaces.update_space(sid, name=v),
            "search.query": lambda v: spaces.search(v),
            "asearch.query": lambda v: asyncio.run(spaces.asearch(v)),
            "search.limit": lambda v: spaces.search("deploys", limit=v),
            "search.mode": lambda v: spaces.search("deploys", mode=v),
            "search.space_ids": lambda v: spaces.search("deploys", space_ids=v),
            "search.space_ids[]": lambda v: spaces.search("deploys", space_ids=[v]),
            "search.category": lambda v: spaces.search("deploys", category=v),
            "search.source": lambda v: spaces.search("deploys", source=v),
            "search.intent": lambda v: spaces.search("deploys", intent=v),
            "search.policy": lambda v: spaces.search("deploys", policy=v),
            "remember.content": lambda v: spaces.remember(v, space_id=sid),
            "aremember.content": lambda v: asyncio.run(spaces.aremember(v, space_id=sid)),
            "remember.space_id": lambda v: spaces.remember("c", space_id=v),
            "remember.category": lambda v: spaces.remember("c", space_id=sid, category=v),
            "remember.importance": lambda v: spaces.remember("c", space_id=sid, importance=v),
            "remember.tags": lambda v: spaces.remember("c", space_id=sid, tags=v),
            "remember.tags[]": lambda v: spaces.remember("c", space_id=sid, tags=[v]),
            "remember.entities[]": lambda v: spaces.remember("c", space_id=sid, entities=[v]),
            "remember.source": lambda v: spaces.remember("c", space_id=sid, source=v),
            "remember.metadata": lambda v: spaces.remember("c", space_id=sid, metadata=v),
            "remember.metadata.value": lambda v: spaces.remember(
                "c", space_id=sid, metadata={"k": v}
            ),
            "remember.metadata.key": lambda v: spaces.remember(
                "c", space_id=sid, metadata={_key(v): 1}
            ),
            "remember_many": lambda v: spaces.remember_many(v, space_id=sid),
            "remember_many[]": lambda v: spaces.remember_many([v], space_id=sid),
            "remember_many.content": lambda v: spaces.remember_many([{"content": v}], space_id=sid),
            "related.memory_id": lambda v: spaces.related(v, space_id=sid),
            "related.depth": lambda v: spaces.related(mid, space_id=sid, depth=v),
            "related.edge": lambda v: spaces.related(mid, space_id=sid, edge=v),
            "related.limit": lambda v: spaces.related(mid, space_id=sid, limit=v),
            "link.source_id": lambda v: spaces.link(v, mid, space_id=sid),
            "link.target_id": lambda v: spaces.link(mid, v, space_id=sid),
            "link.type": lambda v: spaces.link(mid, other, space_id=sid, type=v),
            "link.weight": lambda v: spaces.link(mid, other, space_id=sid, weight=v),
            "link.reason": lambda v: spaces.link(mid, other, space_id=sid, reason=v),
            "forget.memory_id": lambda v: spaces.forget(v, space_id=sid),
            "forget.space_id": lambda v: spaces.forget(mid, space_id=v),
            "browse.space_id": lambda v: spaces.browse(v),
            "browse.limit": lambda v: spaces.browse(sid, limit=v),
            "browse.offset": lambda v: spaces.browse(sid, offset=v),
            "browse.category": lambda v: spaces.browse(sid, category=v),
            "entities.space_id": lambda v: spaces.entities(v),
            "entities.limit": lambda v: spaces.entities(sid, limit=v),
            "graph.space_id": lambda v: spaces.graph(v),
            "graph.limit": lambda v: spaces.graph(sid, limit=v),
            "merge_spaces.sources": lambda v: spaces.merge_spaces(sid, [v]),
            "discover.provider_id": lambda v: spaces.discover(v),
        }
        outcomes = _check_matrix(calls)
        # Wrong types and out-of-range text are refused, not coerced.
        for name in ("search.query", "remember.content", "create_space.name", "link.weight"):
            for label in ("int", "bytes", "list", "dict", "huge-int", "huge"):
                assert isinstance(outcomes[(name, label)], InvalidInputError), (name, label)
        # NUL is documented as dropped from Memory Space text; it never reaches SQL.
        nul = outcomes[("remember.content", "nul")]
        assert nul.status == "committed"
        assert [r.content for r in spaces.browse(sid) if r.id == nul.id] == ["beforeafter"]
        assert _no_nul_stored(mem) == []
        # The space still answers as before.
        assert "Deploys go through CI." in [r.content for r in spaces.search("deploys").results]


def test_item05_mnemos_hostile_values(tmp_path: Path, database_url: str) -> None:
    with _open(tmp_path / "root", database_url) as mem:
        mnemos = mem.mnemos
        node = mnemos.add_node("task-1", "goal", "Ship the password reset flow").id
        peer = mnemos.add_node("task-1", "context", "The API lives in src/auth.").id
        calls: dict[str, Callable[[Any], Any]] = {
            "add_node.task_id": lambda v: mnemos.add_node(v, "goal", "c"),
            "add_node.type": lambda v: mnemos.add_node("task-1", v, "c"),
            "add_node.content": lambda v: mnemos.add_node("task-1", "context", v),
            "add_node.scope": lambda v: mnemos.add_node("task-1", "context", "c", scope=v),
            "add_node.scope[]": lambda v: mnemos.add_node("task-1", "context", "c", scope=[v]),
            "add_node.paths[]": lambda v: mnemos.add_node("task-1", "context", "c", paths=[v]),
            "add_node.summary": lambda v: mnemos.add_node("task-1", "context", "c", summary=v),
            "add_node.origin": lambda v: mnemos.add_node("task-1", "context", "c", origin=v),
            "add_node.confidence": lambda v: mnemos.add_node(
                "task-1", "context", "c", confidence=v
            ),
            "add_node.links[]": lambda v: mnemos.add_node("task-1", "context", "c", links=[v]),
            "touch": lambda v: mnemos.touch(v),
            "get_node": lambda v: mnemos.get_node(v),
            "link.source_id": lambda v: mnemos.link(v, node),
            "link.link_type": lambda v: mnemos.link(node, peer, v),
            "compress.summary": lambda v: mnemos.compress(peer, v),
            "nodes.task_id": lambda v: mnemos.nodes(v),
            "nodes.type": lambda v: mnemos.nodes("task-1", type=v),
            "nodes.status": lambda v: mnemos.nodes("task-1", status=v),
            "nodes.limit": lambda v: mnemos.nodes("task-1", limit=v),
            "fatigue.task_id": lambda v: mnemos.fatigue(v),
            "fatigue.log": lambda v: mnemos.fatigue("task-1", log=v),
            "fatigue_history.limit": lambda v: mnemos.fatigue_history("task-1", limit=v),
            "decay.factor": lambda v: mnemos.decay("task-1", v),
            "consolidate.scope": lambda v: mnemos.consolidate("task-1", scope=v),
            "checkpoint.task_id": lambda v: mnemos.checkpoint(v, force=True),
            "checkpoint.force": lambda v: mnemos.checkpoint("task-1", force=v),
            "checkpoint.emergency": lambda v: mnemos.checkpoint("task-1", force=True, emergency=v),
            "checkpoint.git": lambda v: mnemos.checkpoint("task-1", force=True, git=v),
            "checkpoints.limit": lambda v: mnemos.checkpoints("task-1", limit=v),
            "resume": lambda v: mnemos.resume(v),
            "summarize": lambda v: mnemos.summarize(v),
            "handoff": lambda v: mnemos.handoff(v),
            "status": lambda v: mnemos.status(v),
            "record_tool_call.tool_name": lambda v: mnemos.record_tool_call("task-1", v),
            "record_tool_call.call_id": lambda v: mnemos.record_tool_call(
                "task-1", "read_file", call_id=v
            ),
            "record_tool_result.call_id": lambda v: mnemos.record_tool_result("task-1", v),
            "record_usage.tokens": lambda v: mnemos.record_usage("task-1", v),
            "record_usage.call_id": lambda v: mnemos.record_usage("task-1", 10, call_id=v),
        }
        outcomes = _check_matrix(calls)
        for name in ("add_node.task_id", "add_node.content", "record_usage.tokens"):
            for label in ("surrogate", "nul", "int", "bytes", "list", "huge-int"):
                if (name, label) == ("record_usage.tokens", "int"):
                    continue
                if label in ("nul", "surrogate") and name == "record_usage.tokens":
                    continue
                assert isinstance(outcomes[(name, label)], InvalidInputError), (name, label)
        assert _no_nul_stored(mem) == []
        assert mnemos.tasks() == ["task-1"]
        assert mnemos.resume("task-1").startswith("## Mnemos Session Resume")


def test_item05_store_facade_hostile_values(tmp_path: Path, database_url: str) -> None:
    deep: dict[str, Any] = {}
    for _ in range(5000):
        deep = {"a": deep}
    deep_list: list[Any] = []
    for _ in range(5000):
        deep_list = [deep_list]
    namespaces: list[Any] = [
        ("a\ud83d",),
        ("a\x00b",),
        ("",),
        (5,),
        "plain-string",
        None,
        ("x" * 10_000,),
        (),
        ("langgraph",),
        ("a.b",),
        10**5000,
        [("nested",)],
    ]
    keys: list[Any] = [SURROGATE, "a\x00b", "k" * 2000, 5, None, b"k", 10**5000]
    values: list[Any] = [
        {"a": SURROGATE},
        {SURROGATE: 1},
        deep,
        {5: 1},
        "not-a-dict",
        {"a": float("nan")},
        {"a": 10**5000},
        {"a": b"bytes"},
        {"a": object()},
        {"a": "x" * 70_000},
    ]
    filters: list[Any] = [
        deep,
        {"n": deep_list},
        {"n": {"$gt": 10**400}},
        {"n": {"$bad": 1}},
        {"n": {10**5000: 1}},
        "not-a-dict",
        {5: 1},
    ]
    windows: list[Any] = [-1, 10**5000, "x", True, None, 2.5]
    allowed = (InvalidNamespaceError, NotImplementedError)
    with _open(tmp_path / "root", database_url) as mem:
        store = mem.store()
        store.put(("ok",), "known", {"n": 5, "text": "Deploys go through CI."})
        calls: list[tuple[str, Callable[[], Any]]] = []
        for ns in namespaces:
            calls += [
                (f"put ns={shown(ns)}", lambda ns=ns: store.put(ns, "k", {"a": 1})),
                (f"get ns={shown(ns)}", lambda ns=ns: store.get(ns, "k")),
                (f"delete ns={shown(ns)}", lambda ns=ns: store.delete(ns, "k")),
                (f"search ns={shown(ns)}", lambda ns=ns: store.search(ns)),
                (f"list prefix={shown(ns)}", lambda ns=ns: store.list_namespaces(prefix=ns)),
                (f"aput ns={shown(ns)}", lambda ns=ns: asyncio.run(store.aput(ns, "k", {"a": 1}))),
            ]
        for key in keys:
            calls += [
                (f"put key={shown(key)}", lambda key=key: store.put(("ok",), key, {"a": 1})),
                (f"get key={shown(key)}", lambda key=key: store.get(("ok",), key)),
                (f"delete key={shown(key)}", lambda key=key: store.delete(("ok",), key)),
            ]
        for value in values:
            calls.append(
                (f"put value={shown(value)}", lambda value=value: store.put(("ok",), "v", value))
            )
        for spec in filters:
            calls.append(
                (
                    f"search filter={shown(spec)}",
                    lambda spec=spec: store.search(("ok",), filter=spec),
                )
            )
        for query in (SURROGATE, "a\x00b", 5, "x" * 100_000, b"q"):
            calls.append(
                (f"search query={shown(query)}", lambda q=query: store.search(("ok",), query=q))
            )
        for w in windows:
            calls += [
                (f"search limit={shown(w)}", lambda w=w: store.search(("ok",), limit=w)),
                (f"search offset={shown(w)}", lambda w=w: store.search(("ok",), offset=w)),
                (f"list limit={shown(w)}", lambda w=w: store.list_namespaces(limit=w)),
                (f"list depth={shown(w)}", lambda w=w: store.list_namespaces(max_depth=w)),
            ]
        calls.append(("batch of a number", lambda: store.batch(5)))  # type: ignore[arg-type]
        calls.append(("put ttl", lambda: store.put(("ok",), "t", {"a": 1}, ttl=5)))
        for name, call in calls:
            out = _outcome(call, *allowed)
            assert not isinstance(out, StorageError), f"{name} reached the database: {out}"
        # NUL inside a value is JSON-escaped: stored and returned exactly.
        store.put(("ok",), "nul", {"text": "a\x00b"})
        item = store.get(("ok",), "nul")
        assert item is not None
        assert item.value == {"text": "a\x00b"}
        assert store.get(("ok",), "known").value == {"n": 5, "text": "Deploys go through CI."}
        assert _no_nul_stored(mem) == []


def test_item05_checkpointer_refuses_unstorable_ids(tmp_path: Path, database_url: str) -> None:
    with _open(tmp_path / "root", database_url) as mem:
        saver = mem.checkpointer()
        configs = [{"thread_id": thread} for thread in (SURROGATE, "a\x00b", 10**5000, b"t")]
        configs += [{"thread_id": "t", "checkpoint_ns": ns} for ns in (SURROGATE, "a\x00b")]
        for configurable in configs:
            config = {"configurable": configurable}
            with pytest.raises(InvalidInputError):
                saver.put(config, empty_checkpoint(), {"source": "input", "step": 0}, {})
            with pytest.raises(InvalidInputError):
                saver.get_tuple(config)
        assert _no_nul_stored(mem) == []


def test_item05_unreachable_postgres_is_a_typed_error_without_the_password(
    tmp_path: Path,
) -> None:
    import socket

    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql+psycopg://mnemon:s3cret-pw@127.0.0.1:{port}/mnemon"
    with _open(tmp_path / "root", url) as mem:
        for call in (mem.mnemos.tasks, mem.spaces.list_spaces, lambda: mem.spaces.remember("x")):
            with pytest.raises(StorageError) as caught:
                call()
            assert caught.value.code == "database-unavailable"
            assert "s3cret-pw" not in str(caught.value)
            assert f"127.0.0.1:{port}" in str(caught.value)


# --------------------------------------------------------------------------------------------
# Item 5: a damaged SQLite file is a StorageError naming the file


def _scramble_pages(path: Path) -> None:
    data = bytearray(path.read_bytes())
    rnd = random.Random(12)
    pages = len(data) // 4096
    for page in range(1, pages):  # the schema page stays, every data page does not
        offset = page * 4096 + rnd.randrange(0, 4096 - 16)
        data[offset : offset + 16] = bytes(rnd.randrange(256) for _ in range(16))
    path.write_bytes(bytes(data))


def _not_a_database(path: Path) -> None:
    path.write_bytes(b"these are meeting notes, not a database\n" * 200)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])


@pytest.fixture(scope="module")
def populated_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("populated") / "root"
    with _open(root) as mem:
        space = mem.spaces.create_space("Ops", "Operations", active=True).space
        assert space is not None
        mem.spaces.remember_many(
            [
                {"content": f"Memory {i}: deploys of café ünïcödé go through CI."}
                for i in range(300)
            ],
            space_id=space.id,
        )
        mem.mnemos.add_node("task-1", "goal", "Ship the reset flow")
        mem.mnemos.checkpoint("task-1")
    return root


@pytest.mark.parametrize(
    "damage",
    [_scramble_pages, _not_a_database, _truncate],
    ids=["scrambled-pages", "not-a-database", "truncated"],
)
def test_item05_damaged_sqlite_is_storage_damaged(
    tmp_path: Path, populated_root: Path, damage: Callable[[Path], None]
) -> None:
    import shutil

    root = tmp_path / "root"
    shutil.copytree(populated_root, root)
    db = root / "mnemon.db"
    damage(db)
    before = _tree(root)
    with _open(root) as mem:
        calls: list[Callable[[], Any]] = [
            mem.spaces.list_spaces,
            lambda: mem.spaces.search("deploys"),
            lambda: mem.spaces.browse("default", limit=500),
            lambda: mem.spaces.remember("A new memory.", space_id="default"),
            mem.mnemos.tasks,
            lambda: mem.mnemos.resume("task-1"),
            lambda: mem.mnemos.nodes("task-1"),
            lambda: mem.mnemos.add_node("task-1", "context", "More."),
            lambda: mem.checkpointer().get_tuple({"configurable": {"thread_id": "t"}}),
        ]
        for call in calls:
            with pytest.raises(StorageError) as caught:
                call()
            assert caught.value.code == "storage-damaged", caught.value
            assert str(db) in str(caught.value)
    after = _tree(root)
    assert {k: after[k] for k in before} == before  # every file is byte-identical
    assert set(after) - set(before) <= {"mnemon.db-wal", "mnemon.db-shm"}


def test_item05_damaged_json_value_is_storage_damaged(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with _open(root) as mem:
        mem.mnemos.add_node("task-1", "context", "The API lives in src/auth.", scope=["src"])
    with sqlite3.connect(root / "mnemon.db") as conn:
        conn.execute("UPDATE mnemos_nodes SET scope_tags = '[not json'")
    with _open(root) as mem, pytest.raises(StorageError) as caught:
        mem.mnemos.nodes("task-1")
    assert caught.value.code == "storage-damaged"
    assert str(root / "mnemon.db") in str(caught.value)


# --------------------------------------------------------------------------------------------
# Item 4: a full disk under the SQLite file


def test_item04_sqlite_full_disk_is_storage_full_and_reads_go_on(small_disk: Any) -> None:
    root = small_disk.path / "root"
    with _open(root) as mem:
        space = mem.spaces.create_space("Ops", "Operations", active=True).space
        assert space is not None
        mem.spaces.remember("Deploys go through CI.", space_id=space.id)
        mem.mnemos.add_node("task-1", "goal", "Ship the reset flow")
        saver = mem.checkpointer()
        small_disk.fill()
        big = " ".join(f"word{i}" for i in range(8000))  # larger than any free WAL page
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"notes": big}
        checkpoint["channel_versions"] = {"notes": "1"}
        writes: list[Callable[[], Any]] = [
            lambda: mem.spaces.remember(big[:60_000], space_id=space.id),
            lambda: mem.mnemos.add_node("task-1", "context", big[:60_000]),
            lambda: saver.put(
                {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
                checkpoint,
                {"source": "input", "step": 0},
                {"notes": "1"},
            ),
        ]
        main_file = (root / "mnemon.db").read_bytes()
        for write in writes:
            with pytest.raises(StorageError) as caught:
                write()
            assert caught.value.code == "storage-full", caught.value
            assert "free disk space" in str(caught.value)
        assert (root / "mnemon.db").read_bytes() == main_file
        # Reads still answer while the disk is full.
        assert [r.content for r in mem.spaces.search("deploys CI").results] == [
            "Deploys go through CI."
        ]
        assert mem.mnemos.tasks() == ["task-1"]
        assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is None
    small_disk.free()
    with _open(root) as mem:  # the database opens, reads and writes again
        assert [n.content for n in mem.mnemos.nodes("task-1")] == ["Ship the reset flow"]
        assert mem.spaces.remember("After the disk was freed.").status == "committed"


def test_item04_sqlite_read_only_file_system(small_disk: Any) -> None:
    root = small_disk.path / "root"
    with _open(root) as mem:
        mem.spaces.remember("Deploys go through CI.")
        mem.mnemos.add_node("task-1", "goal", "Ship the reset flow")
    before = _tree(root)
    small_disk.read_only(True)
    try:
        with _open(root) as mem:
            for write in (
                lambda: mem.spaces.remember("Another memory."),
                lambda: mem.mnemos.add_node("task-1", "context", "More."),
            ):
                with pytest.raises(StorageError) as caught:
                    write()
                assert caught.value.code == "storage-read-only", caught.value
        # A host that only reads still reads a database on read-only media.
        with _open(root, write_enabled=False) as mem:
            found = mem.spaces.search("deploys CI")
            assert [r.content for r in found.results] == ["Deploys go through CI."]
            assert mem.mnemos.tasks() == ["task-1"]
            assert mem.checkpointer().get_tuple({"configurable": {"thread_id": "t"}}) is None
    finally:
        small_disk.read_only(False)
    assert _tree(root) == before


# --------------------------------------------------------------------------------------------
# Item 6: symlinks are never followed out of the root


def test_item06_sqlite_file_symlink_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other"
    with _open(other) as mem:
        mem.spaces.remember("The other root's memory.")
        mem.mnemos.add_node("their-task", "goal", "Theirs")
    theirs = _tree(other)
    root = tmp_path / "root"
    root.mkdir()
    (root / "mnemon.db").symlink_to(other / "mnemon.db")
    with _open(root) as mem:
        for call in (
            lambda: mem.spaces.list_spaces(),
            lambda: mem.mnemos.tasks(),
            lambda: mem.spaces.remember("Mine."),
            mem.checkpointer,
        ):
            with pytest.raises(StorageError) as caught:
                call()
            assert caught.value.code == "symlink-refused"
            assert str(root / "mnemon.db") in str(caught.value)
    assert _tree(other) == theirs


def test_item06_sqlite_wal_symlink_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with _open(root) as mem:
        mem.mnemos.add_node("task-1", "goal", "Ship it")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "mnemon.db-wal").symlink_to(elsewhere / "captured-wal")
    with _open(root) as mem, pytest.raises(StorageError) as caught:
        mem.mnemos.add_node("task-1", "context", "More")
    assert caught.value.code == "symlink-refused"
    assert "mnemon.db-wal" in str(caught.value)
    assert list(elsewhere.iterdir()) == []


def test_item06_chroma_folder_symlink_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    target = tmp_path / "someone-elses-chroma"
    target.mkdir()
    root.mkdir()
    (root / "chroma").symlink_to(target)
    with _open(root) as mem:
        space = mem.spaces.create_space("Vectors", provider_id="chroma", active=True).space
        assert space is not None
        with pytest.raises(StorageError) as caught:
            mem.spaces.remember("Into the link?", space_id=space.id)
        assert caught.value.code == "symlink-refused"
        assert str(root / "chroma") in str(caught.value)
        # Recall never fails for one space: the refusal is that space's hint.
        found = mem.spaces.search("link", space_ids=[space.id])
        assert found.results == []
        assert "symbolic link" in (found.sources[0].hint or "")
    assert list(target.iterdir()) == []


def test_item06_space_secrets_folder_symlink_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with _open(root) as mem:
        mem.spaces.create_space("Ops", "Operations")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "space-secrets.json").write_text('{"default": {"token": "theirs"}}')
    (root / "state").symlink_to(elsewhere)
    with _open(root) as mem, pytest.raises(StorageError) as caught:
        mem.spaces.list_spaces()
    assert caught.value.code == "symlink-refused"
    assert str(root / "state") in str(caught.value)


def test_item06_explicitly_named_database_symlink_is_the_users_choice(tmp_path: Path) -> None:
    """A ``database_url`` the user names is theirs: a link there is opened as given."""
    real = tmp_path / "disk" / "shared.db"
    real.parent.mkdir()
    link = tmp_path / "link.db"
    link.symlink_to(real)
    with _open(tmp_path / "root", f"sqlite:///{link}") as mem:
        mem.mnemos.add_node("task-1", "goal", "Ship it")
    assert real.stat().st_size > 0
    assert link.is_symlink()


# --------------------------------------------------------------------------------------------
# Item 10: write_enabled=false creates nothing and works against a read-only role


def _read_everything(mem: Mnemon) -> None:
    """The whole read path; each call must answer (empty when nothing is stored)."""
    mem.status()
    mem.spaces.list_spaces()
    mem.spaces.status()
    mem.spaces.search("anything at all")
    mnemos = mem.mnemos
    mnemos.tasks()
    mnemos.status()
    mnemos.status("task-1")
    mnemos.nodes("task-1")
    mnemos.nodes()
    mnemos.fatigue("task-1")
    mnemos.fatigue_history("task-1")
    mnemos.checkpoints("task-1")
    mnemos.latest_checkpoint("task-1")
    mnemos.summarize("task-1")
    with pytest.raises(NotFoundError):
        mnemos.resume("task-1")
    with pytest.raises(NotFoundError):
        mem.spaces.get_space("default")
    # The checkpointer's reads too (``mem.checkpointer()`` itself runs the explicit setup).
    saver = MnemosSaver(mem.database, config=mem.config.mnemos)
    assert saver.get_tuple({"configurable": {"thread_id": "thread-1"}}) is None
    assert list(saver.list({"configurable": {"thread_id": "thread-1"}})) == []


def test_item10_read_only_sqlite_creates_no_file_tables_or_folder(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with _open(root, write_enabled=False) as mem:
        _read_everything(mem)
        assert mem.spaces.list_spaces() == []
        assert mem.mnemos.tasks() == []
    assert not (root / "mnemon.db").exists()
    assert not (root / "chroma").exists()
    # A database file that exists but holds no tables stays without tables.
    sqlite3.connect(root / "mnemon.db").close()
    with _open(root, write_enabled=False) as mem:
        _read_everything(mem)
    with sqlite3.connect(root / "mnemon.db") as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []


def _tables(plain_url: str, schema: str) -> list[str]:
    with psycopg.connect(plain_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        ).fetchall()
    return sorted(r[0] for r in rows)


def _schema_of(url: str) -> str:
    return url.rsplit("search_path%3D", 1)[1]


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1).split("?", 1)[0]


def test_item10_read_only_postgres_creates_no_tables(tmp_path: Path, postgres_url: str) -> None:
    with _open(tmp_path / "root", postgres_url, write_enabled=False) as mem:
        _read_everything(mem)
    assert _tables(_plain(postgres_url), _schema_of(postgres_url)) == []


@pytest.fixture
def read_only_role(postgres_url: str) -> Iterator[tuple[str, str]]:
    """A LOGIN role with only USAGE + SELECT on the test's schema: ``(role, password)``.

    Privileges are granted by the test once its tables exist; the role is dropped afterwards.
    """
    role = f"mnemon_ro_{uuid.uuid4().hex[:12]}"
    password = uuid.uuid4().hex
    plain = _plain(postgres_url)
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    try:
        yield role, password
    finally:
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


def test_item10_read_only_postgres_role_serves_every_read(
    tmp_path: Path, postgres_url: str, read_only_role: tuple[str, str]
) -> None:
    root = tmp_path / "root"
    with _open(root, postgres_url) as mem:
        space = mem.spaces.create_space("Ops", "Operations", active=True).space
        assert space is not None
        mem.spaces.remember("The staging database listens on port 5433.", space_id=space.id)
        mem.mnemos.add_node("task-1", "goal", "Ship the reset flow")
        mem.mnemos.record_tool_call("task-1", "read_file", {"path": "src/auth/login.py"})
        mem.mnemos.checkpoint("task-1")
        checkpoint = empty_checkpoint()
        config = {"configurable": {"thread_id": "thread-1", "checkpoint_ns": ""}}
        mem.checkpointer().put(config, checkpoint, {"source": "input", "step": 0}, {})
    role, password = read_only_role
    schema = _schema_of(postgres_url)
    with psycopg.connect(_plain(postgres_url), autocommit=True) as conn:
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO {role}')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO {role}')
    tables = _tables(_plain(postgres_url), schema)
    user = postgres_url.split("://", 1)[1].split("@", 1)[0]
    ro_url = postgres_url.replace(f"{user}@", f"{role}:{password}@", 1)
    with _open(root, ro_url, write_enabled=False) as mem:
        overview = mem.status().spaces
        assert overview is not None
        assert overview.total == 1
        assert [s.id for s in mem.spaces.list_spaces()] == [space.id]
        found = mem.spaces.search("which port does staging use")
        assert [r.content for r in found.results] == ["The staging database listens on port 5433."]
        assert len(mem.spaces.browse(space.id)) == 1
        assert mem.spaces.status().healthy == 1
        assert mem.mnemos.tasks() == ["task-1", "thread-1"]
        assert [n.content for n in mem.mnemos.nodes("task-1")] == ["Ship the reset flow"]
        assert mem.mnemos.fatigue("task-1").tool_calls == 1  # a pure read on a read-only host
        assert len(mem.mnemos.fatigue_history("task-1")) == 1  # checkpoint()'s, none new
        assert mem.mnemos.resume("task-1").startswith("## Mnemos Session Resume")
        assert mem.mnemos.status("task-1")[0].checkpoints == 1
        saver = mem.checkpointer()
        assert saver.get_tuple({"configurable": {"thread_id": "thread-1"}}) is not None
        assert len(list(saver.list({"configurable": {"thread_id": "thread-1"}}))) == 1
        # A read-only host refuses every write in the kernel, before any I/O.
        with pytest.raises(ReadOnlyError) as refused:
            mem.mnemos.add_node("task-1", "context", "More.")
        assert refused.value.decision["setting"] == "write_enabled"
    with _open(root, ro_url) as mem:
        # A write the role may not do is a typed error saying what to do.
        with pytest.raises(StorageError) as caught:
            mem.mnemos.add_node("task-1", "context", "More.")
        assert caught.value.code == "storage-permission"
        assert password not in str(caught.value)
    assert _tables(_plain(postgres_url), schema) == tables


# --------------------------------------------------------------------------------------------
# The typed-error translation keeps the database usable after a failure


def test_item05_database_keeps_working_after_translated_errors(tmp_path: Path) -> None:
    with _open(tmp_path / "root") as mem:
        mem.mnemos.add_node("task-1", "goal", "Ship it")
        with pytest.raises(InvalidInputError), mem.database.write() as conn:
            conn.execute(sa.text("SELECT :x"), {"x": SURROGATE})
        with pytest.raises(InvalidInputError), mem.database.write() as conn:
            conn.execute(sa.text("SELECT :x"), {"x": 10**30})
        assert [n.content for n in mem.mnemos.nodes("task-1")] == ["Ship it"]
    assert os.path.exists(tmp_path / "root" / "mnemon.db")


def test_item10_read_only_agent_turn_creates_no_file_or_table(tmp_path: Path) -> None:
    """A whole agent run on a read-only host: the turn's end records no Mnemos signals or
    checkpoints (a write), so no database file or table appears."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from langgraph_mnemon.testing import ScriptedChatModel

    root = tmp_path / "root"
    root.mkdir()
    with _open(root, write_enabled=False) as mem:
        saver = mem.checkpointer()  # no eager setup on a read-only host
        assert saver is not None
        model = ScriptedChatModel(
            responses=[AIMessage(content="Noted."), AIMessage(content="Noted.")]
        )
        agent = create_agent(
            model, tools=mem.tools(), middleware=[mem.middleware()], checkpointer=InMemorySaver()
        )
        config = {"configurable": {"thread_id": "t-read-only"}}
        for _ in range(2):
            out = agent.invoke({"messages": [("user", "What do you know?")]}, config)
            assert out["messages"][-1].content == "Noted."
        assert not mem.health.report().degraded
    assert not (root / "mnemon.db").exists()
    assert sorted(p.name for p in root.iterdir()) == []


def test_item06_async_checkpointer_refuses_a_linked_database(tmp_path: Path) -> None:
    root, other = tmp_path / "root", tmp_path / "other"
    root.mkdir()
    other.mkdir()
    target = other / "mnemon.db"
    sqlite3.connect(target).close()
    before = target.read_bytes()
    (root / "mnemon.db").symlink_to(target)
    mem = _open(root)
    try:

        async def enter() -> None:
            async with mem.acheckpointer():
                pass

        with pytest.raises(StorageError) as refused:
            asyncio.run(enter())
        assert refused.value.code == "symlink-refused"
    finally:
        mem.close()
    assert target.read_bytes() == before


def test_item07_query_with_empty_or_unknown_space_ids_is_typed(tmp_path: Path) -> None:
    with _open(tmp_path / "root") as mem:
        mem.spaces.remember("The API lives in api/.")
        with pytest.raises(InvalidInputError, match="omit it"):
            mem.query("where is the API?", space_ids=[])
        with pytest.raises(NotFoundError):
            mem.query("where is the API?", space_ids=["no-such-space"])
        with pytest.raises(InvalidInputError):
            mem.query("half \ud83d")
        assert mem.query("where is the API?").citations
