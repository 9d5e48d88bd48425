"""Memory Space catalog, secrets, activation, merge, discovery and native-provider features."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from spaces_support import SecretStoreProvider, hashing, make_spaces, unique_id

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.providers.chroma import ChromaProvider
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.errors import (
    InvalidInputError,
    NotFoundError,
    ProviderError,
    ReadOnlyError,
)
from langgraph_mnemon.memory_layers.spaces import DEFAULT_SPACE_ID, MemorySpaces
from langgraph_mnemon.storage.db import Database, create_engine


@pytest.fixture
def spaces(tmp_path: Path) -> Iterator[MemorySpaces]:
    opened = make_spaces(tmp_path, [SecretStoreProvider()])
    yield opened
    opened.close()


@pytest.fixture
def native(database_url: str, tmp_path: Path) -> Iterator[MemorySpaces]:
    """The native provider alone, on SQLite and on PostgreSQL."""
    database = Database(create_engine(database_url))
    opened = MemorySpaces(
        database, root=tmp_path, providers=[MnemosProvider(database, embedder=hashing())]
    )
    yield opened
    opened.close()
    database.dispose()


# ------------------------------------------------------------------ catalog


def test_first_space_gets_the_native_default_id(spaces: MemorySpaces) -> None:
    first = spaces.create_space("Project notes", "What the project decided.")
    assert first.committed
    assert first.space is not None
    assert first.space.id == DEFAULT_SPACE_ID
    assert first.space.active is False
    second = spaces.create_space("Another")
    assert second.space is not None
    assert second.space.id.startswith("space-")
    assert [s.id for s in spaces.list_spaces()] == [DEFAULT_SPACE_ID, second.space.id]
    with pytest.raises(InvalidInputError, match="already exists"):
        spaces.create_space("Again", space_id=DEFAULT_SPACE_ID)


def test_remember_without_a_space_on_an_empty_catalog_creates_the_default(
    spaces: MemorySpaces,
) -> None:
    receipt = spaces.remember("Use uv for Python environments.")
    assert receipt.committed
    assert receipt.space_id == DEFAULT_SPACE_ID
    record = spaces.get_space(DEFAULT_SPACE_ID)
    assert record.provider_id == "mnemos"
    assert record.active is True


def test_activation_on_first_committed_write_only(spaces: MemorySpaces) -> None:
    spaces.create_space("Inactive", space_id="quiet")
    assert spaces.search("anything").sources == []
    with pytest.raises(InvalidInputError):
        spaces.remember(" ", space_id="quiet")
    assert spaces.get_space("quiet").active is False
    assert spaces.remember("first memory", space_id="quiet").activated is True
    assert spaces.get_space("quiet").active is True
    off = spaces.set_active("quiet", False)
    assert off.committed
    assert off.space is not None
    assert off.space.active is False
    assert spaces.search("first memory").results == []
    named = spaces.search("first memory", space_ids=["quiet"])
    assert [r.content for r in named.results] == ["first memory"]


def test_several_active_spaces_need_an_explicit_target(spaces: MemorySpaces) -> None:
    spaces.create_space("A", space_id="a", active=True)
    spaces.create_space("B", space_id="b", active=True)
    with pytest.raises(InvalidInputError, match="requires an explicit Memory Space"):
        spaces.remember("which one?")
    assert spaces.browse("a") == []
    assert spaces.browse("b") == []


@pytest.mark.parametrize(
    ("kwargs", "error", "fragment"),
    [
        ({"name": ""}, InvalidInputError, "name must not be empty"),
        ({"name": "x" * 121}, InvalidInputError, "limit is 120"),
        ({"name": "ok", "provider_id": "nosuch"}, NotFoundError, "no provider 'nosuch'"),
        ({"name": "ok", "space_id": "bad id!"}, InvalidInputError, "space_id must be"),
        ({"name": "ok", "config": {"extra": 1}}, InvalidInputError, "takes no configuration"),
        ({"name": "ok", "secrets": {"api_key": "k"}}, InvalidInputError, "takes no secrets"),
        ({"name": "ok", "active": "yes"}, InvalidInputError, "active must be"),
    ],
)
def test_create_space_rejects_bad_input(
    spaces: MemorySpaces, kwargs: dict, error: type[Exception], fragment: str
) -> None:
    with pytest.raises(error, match=fragment):
        spaces.create_space(**kwargs)
    assert spaces.list_spaces() == []


def test_read_only_configuration_blocks_every_write(tmp_path: Path) -> None:
    spaces = make_spaces(tmp_path, write_enabled=False)
    try:
        for call in (
            lambda: spaces.create_space("x"),
            lambda: spaces.remember("x"),
            lambda: spaces.remember_many([{"content": "x"}]),
            lambda: spaces.forget("abc", space_id="default"),
            lambda: spaces.link("a", "b", space_id="default"),
        ):
            with pytest.raises(ReadOnlyError, match="read-only"):
                call()
        assert spaces.list_spaces() == []
    finally:
        spaces.close()


# ------------------------------------------------------------------ secrets


def test_secrets_stay_host_side(spaces: MemorySpaces, tmp_path: Path) -> None:
    secret = "sk-live-DO-NOT-LEAK-42"
    receipt = spaces.create_space(
        "Vault", provider_id="vault", space_id="vault", secrets={"api_key": secret}
    )
    spaces.remember("vault memory about invoices", space_id="vault")
    provider = spaces.provider("vault")
    assert provider.seen_keys == [secret]  # type: ignore[attr-defined]
    outputs = [
        receipt.model_dump_json(),
        json.dumps([s.model_dump(mode="json") for s in spaces.list_spaces()]),
        spaces.get_space("vault").model_dump_json(),
        spaces.status().model_dump_json(),
        spaces.search("invoices").model_dump_json(),
        repr(spaces.get_space("vault")),
        repr(spaces._binding(spaces.get_space("vault"))),
        spaces._binding(spaces.get_space("vault")).model_dump_json(),
    ]
    for text in outputs:
        assert secret not in text
    assert spaces.get_space("vault").secrets_configured == ["api_key"]
    # Kept in the database beside the catalog (no file on this host's disk); without a
    # secret_key as plain text (tests/test_secrets_db.py: encrypted with one).
    assert not (tmp_path / "state" / "space-secrets.json").exists()
    with spaces.db.read() as conn:
        row = conn.execute(sa.text("SELECT names, scheme FROM mnemon_space_secrets")).one()
    assert (json.loads(row.names), row.scheme) == (["api_key"], "plain")


def test_credentials_in_config_or_missing_secrets_are_rejected(spaces: MemorySpaces) -> None:
    with pytest.raises(InvalidInputError, match="looks like a credential"):
        spaces.create_space("Vault", provider_id="vault", config={"api_key": "x"})
    with pytest.raises(InvalidInputError, match="need secrets"):
        spaces.create_space("Vault", provider_id="vault")
    with pytest.raises(InvalidInputError, match="takes the secrets api_key"):
        spaces.create_space("Vault", provider_id="vault", secrets={"token": "x"})
    assert spaces.list_spaces() == []


# ------------------------------------------------------------------ merge and discovery


def test_merge_native_spaces_is_non_destructive(spaces: MemorySpaces, tmp_path: Path) -> None:
    spaces.create_space("Target", space_id="target")
    spaces.create_space("Source", space_id="source")
    spaces.remember("shared fact", space_id="target")
    spaces.remember_many(
        [{"content": "shared fact"}, {"content": "only in source", "tags": ["s"]}],
        space_id="source",
    )
    receipt = spaces.merge_spaces("target", ["source"])
    assert receipt.committed
    assert receipt.provider_receipt["imported"] == 1
    assert receipt.provider_receipt["skipped_duplicates"] == 1
    assert sorted(r.content for r in spaces.browse("target")) == ["only in source", "shared fact"]
    assert sorted(r.content for r in spaces.browse("source")) == ["only in source", "shared fact"]
    assert spaces.get_space("source").active is False
    with pytest.raises(InvalidInputError, match="into itself"):
        spaces.merge_spaces("target", ["target"])
    spaces.create_space("Vault", provider_id="vault", space_id="vault", secrets={"api_key": "k"})
    with pytest.raises(ProviderError, match="only between native"):
        spaces.merge_spaces("target", ["vault"])


def test_native_discovery_maps_orphaned_spaces(tmp_path: Path) -> None:
    first = make_spaces(tmp_path)
    first.create_space("Old", space_id="old-notes")
    first.remember("kept across a catalog loss", space_id="old-notes")
    with first.db.write() as conn:
        conn.exec_driver_sql("DELETE FROM mnemon_spaces")
    found = first.discover("mnemos")
    assert [d.external_id for d in found] == ["old-notes"]  # type: ignore[union-attr]
    receipt = first.discover("mnemos", sync=True)
    assert receipt.committed
    assert [s.id for s in receipt.spaces] == ["old-notes"]
    assert first.search("catalog loss", space_ids=["old-notes"]).results
    first.close()


def test_chroma_discovery_maps_collections(tmp_path: Path) -> None:
    chroma = ChromaProvider(hashing(), path=tmp_path / "chroma")
    spaces = make_spaces(tmp_path, [chroma])
    try:
        spaces.create_space("Notes", provider_id="chroma", space_id="notes")
        spaces.remember("chroma keeps this", space_id="notes")
        receipt = spaces.discover("chroma", sync=True)
        mapped = {s.external_id: s for s in receipt.spaces}  # type: ignore[union-attr]
        # A new chroma space gets a collection of its own, unique beyond this catalog.
        collection = spaces.get_space("notes").config["collection"]
        assert collection.startswith("mnemon-notes-")
        assert set(mapped) == {collection, None}
        assert mapped[collection].config == {"collection": collection}
    finally:
        spaces.close()


# ------------------------------------------------------------------ native provider features


def test_native_automatic_edges_and_related(native: MemorySpaces) -> None:
    sid = unique_id()
    native.create_space("Graph", space_id=sid)
    a = native.remember("Payments moved to Stripe.", space_id=sid, entities=["Stripe"])
    b = native.remember("Invoices still come from the old ERP.", space_id=sid)
    c = native.remember("Stripe webhooks retry for 3 days.", space_id=sid, entities=["stripe"])
    graph = native.graph(sid)
    edges = {(e.source, e.target, e.type) for e in graph.edges}
    assert (a.id, b.id, "temporal") in edges
    assert (b.id, c.id, "temporal") in edges
    assert (a.id, c.id, "entity") in edges
    assert {n.id for n in graph.nodes} == {a.id, b.id, c.id}
    near = native.related(a.id, space_id=sid, depth=1)
    assert {r.id: r.edge_type for r in near.results} == {b.id: "temporal", c.id: "entity"}
    only_entity = native.related(a.id, space_id=sid, depth=3, edge="entity")
    assert [r.id for r in only_entity.results] == [c.id]
    two = native.related(a.id, space_id=sid, depth=2, edge="temporal")
    assert {r.id: r.depth for r in two.results} == {b.id: 1, c.id: 2}
    for bad in ({"depth": 0}, {"depth": 6}, {"edge": "friend"}):
        with pytest.raises(InvalidInputError):
            native.related(a.id, space_id=sid, **bad)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        native.related("missing", space_id=sid)


def test_native_link_weights_and_validation(native: MemorySpaces) -> None:
    sid = unique_id()
    native.create_space("Links", space_id=sid)
    a = native.remember("Cause: the cache TTL was 0.", space_id=sid)
    b = native.remember("Effect: database load doubled.", space_id=sid)
    receipt = native.link(a.id, b.id, space_id=sid, type="causal", weight=0.9, reason="postmortem")
    assert receipt.committed
    assert receipt.id == f"{a.id}->{b.id}"
    causal = [e for e in native.graph(sid).edges if e.type == "causal"]
    assert [(e.source, e.target, e.weight) for e in causal] == [(a.id, b.id, 0.9)]
    for kwargs in ({"weight": 1.5}, {"weight": -0.1}, {"type": "friend"}, {"weight": True}):
        with pytest.raises(InvalidInputError):
            native.link(a.id, b.id, space_id=sid, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="itself"):
        native.link(a.id, a.id, space_id=sid)
    with pytest.raises(NotFoundError):
        native.link(a.id, "missing", space_id=sid)
    assert len([e for e in native.graph(sid).edges if e.type == "causal"]) == 1


def test_native_soft_delete_duplicates_and_modes(native: MemorySpaces) -> None:
    sid = unique_id()
    native.create_space("Modes", space_id=sid)
    first = native.remember("Backups run nightly at 02:00 to the eu bucket.", space_id=sid)
    again = native.remember("Backups run nightly at 02:00 to the eu bucket.", space_id=sid)
    assert again.committed
    assert again.changed is False
    assert again.id == first.id
    other = native.remember("Restores are tested every month.", space_id=sid)
    basic = native.search("nightly backups bucket", mode="basic", space_ids=[sid])
    assert [r.id for r in basic.results] == [first.id]
    assert native.search("nightly restores", mode="basic", space_ids=[sid]).results == []
    native.forget(other.id, space_id=sid)
    status = next(h for h in native.status().spaces if h.space.id == sid).status
    assert (status.total_insights, status.deleted_insights) == (1, 1)
    assert status.edge_count == 1
    # The forgotten row is gone; a search's depth may still offer the remaining one.
    found = native.search("restores tested monthly", space_ids=[sid])
    assert other.id not in [r.id for r in found.results]
    cut = native.search("restores tested monthly", space_ids=[sid], policy="strict-v1")
    assert cut.results == []


def test_native_category_and_source_filters(native: MemorySpaces) -> None:
    sid = unique_id()
    native.create_space("Filters", space_id=sid)
    native.remember("Prefer tabs in Go code.", space_id=sid, category="preference")
    native.remember("Decided: Go code uses gofmt defaults.", space_id=sid, category="decision")
    found = native.search("Go code", space_ids=[sid], category="decision")
    assert [r.category for r in found.results] == ["decision"]
    assert native.browse(sid, category="preference")[0].content == "Prefer tabs in Go code."


def test_host_wires_spaces_and_reports_them(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path / "root", chroma={"path": tmp_path / "chroma"}) as mem:
        assert mem.status().spaces is not None
        assert mem.status().spaces.total == 0
        mem.spaces.remember("The host builds Memory Spaces lazily.")
        status = mem.status().spaces
        assert status is not None
        assert (status.total, status.active) == (1, 1)
        # Every provider whose dependencies are installed is registered (mem0 is an extra).
        expected = {"chroma", "facts", "http", "mnemos"}
        if importlib.util.find_spec("mem0") is not None:
            expected.add("mem0")
        assert status.providers == sorted(expected)
        assert mem.spaces.search("host builds spaces").results


def test_native_chinese_and_mixed_text(native: MemorySpaces) -> None:
    sid = unique_id()
    native.create_space("中文", space_id=sid)
    native.remember("数据库迁移计划在周五开始，负责人是王工。", space_id=sid, entities=["王工"])
    native.remember("The frontend release uses feature-flag checkout_v2.", space_id=sid)
    found = native.search("数据库迁移什么时候开始", space_ids=[sid])
    assert found.results[0].content.startswith("数据库迁移计划")
    mixed = native.search("checkout_v2 feature flag", space_ids=[sid], mode="keyword")
    assert mixed.results[0].content.startswith("The frontend release")


def test_async_api_never_blocks_the_event_loop(tmp_path: Path) -> None:
    import asyncio
    import sqlite3

    from blockbuster import BlockingError, blockbuster_ctx

    spaces = make_spaces(
        tmp_path, [SecretStoreProvider(), ChromaProvider(hashing(), path=tmp_path / "ch")]
    )

    async def scenario() -> None:
        await spaces.acreate_space("Native", space_id="native")
        await spaces.acreate_space(
            "Vault", provider_id="vault", space_id="vault", secrets={"api_key": "k"}
        )
        await spaces.acreate_space("Vectors", provider_id="chroma", space_id="vectors")
        with blockbuster_ctx():
            with pytest.raises(BlockingError):  # detection is live
                sqlite3.connect(":memory:").execute("SELECT 1")
            first = await spaces.aremember("Blocking calls belong in threads.", space_id="native")
            await spaces.aremember("Threads keep the loop free.", space_id="native")
            await spaces.aremember_many([{"content": "vault item"}], space_id="vault")
            await spaces.aremember("vectors in chroma", space_id="vectors")
            found = await spaces.asearch("blocking calls threads loop")
            assert found.results
            await spaces.arelated(first.id, space_id="native")
            await spaces.abrowse("native")
            await spaces.agraph("native")
            await spaces.astatus()
            await spaces.aforget(first.id, space_id="native")

    try:
        asyncio.run(scenario())
    finally:
        spaces.close()


def test_local_only_strategy_rejects_remote_providers(tmp_path: Path) -> None:
    spaces = make_spaces(tmp_path, [SecretStoreProvider()], local_only=True)
    try:
        with pytest.raises(InvalidInputError, match="local-only"):
            spaces.create_space("Remote", provider_id="vault", secrets={"api_key": "k"})
        assert spaces.list_spaces() == []
        assert spaces.create_space("Local").space.provider_id == "mnemos"  # type: ignore[union-attr]
    finally:
        spaces.close()
