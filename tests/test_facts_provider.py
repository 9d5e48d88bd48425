"""FactFileProvider: every operation on real fact files, crash-safety units and concurrency.

Everything runs on real files under ``tmp_path``; the multi-process test starts real Python
processes that write the same file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import langgraph_mnemon.adapters.providers._facts_file as facts_file
from langgraph_mnemon.adapters.embeddings import HashingEmbedder
from langgraph_mnemon.adapters.providers.facts import MAX_CONTENT_BYTES, FactFileProvider
from langgraph_mnemon.errors import (
    CapacityError,
    InvalidInputError,
    NotFoundError,
    StorageError,
)
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    LinkRequest,
    ProviderSearchRequest,
    RelatedRequest,
    RememberItem,
    SpaceBinding,
    is_committed,
)
from langgraph_mnemon.storage.files import locked


class Clock:
    """A deterministic clock: one second per call."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def make(root: Path, **kwargs: Any) -> FactFileProvider:
    kwargs.setdefault("clock", Clock())
    return FactFileProvider(root, **kwargs)


def bind(provider: FactFileProvider, space_id: str = "notes", **config: Any) -> SpaceBinding:
    checked = provider.check_config(config, {})
    return SpaceBinding(
        id=space_id, name=space_id.title(), config=provider.place(space_id, checked)
    )


def remember(provider: FactFileProvider, space: SpaceBinding, content: str, **kw: Any) -> str:
    receipt = provider.remember(space, RememberItem(content=content, **kw))
    assert is_committed(receipt), receipt
    return str(receipt["id"])


def search(provider: FactFileProvider, space: SpaceBinding, query: str, **kw: Any) -> list[Any]:
    return provider.search(space, ProviderSearchRequest(query=query, **kw)).results


def load(space: SpaceBinding) -> dict[str, Any]:
    return json.loads(Path(space.config["path"]).read_text())


# --- construction, configuration, placement ----------------------------------------------------


def test_construction_and_placement_touch_no_disk(tmp_path: Path) -> None:
    root = tmp_path / "root"
    provider = make(root)
    space = bind(provider)
    assert space.config["path"] == str(root / "facts" / "notes.json")
    assert not root.exists()
    # Reads of a space that was never written are empty and create nothing either.
    assert search(provider, space, "anything") == []
    assert provider.browse(space, BrowseRequest()) == []
    assert provider.status(space).total_insights == 0
    assert not root.exists()


def test_descriptor_declares_the_reference_semantics_and_config_fields(tmp_path: Path) -> None:
    d = make(tmp_path, default_trust=0.6).descriptor
    assert (d.id, d.label, d.local) == ("facts", "Fact file", True)
    assert (d.write_mode, d.deletion_mode, d.score_semantics) == ("exact", "hard", "normalized")
    assert d.capabilities.link
    assert d.capabilities.related
    assert d.capabilities.entities
    fields = {f.name: f for f in d.config_fields}
    assert set(fields) == {"path", "default_trust", "min_trust"}
    assert fields["default_trust"].default == 0.6
    assert all(f.kind != "secret" for f in fields.values())


@pytest.mark.parametrize(
    ("config", "secrets", "message"),
    [
        ({"dataPath": "/x.json"}, {}, "take only"),
        ({}, {"token": "s3cret"}, "no secrets"),
        ({"path": "relative/facts.json"}, {}, "absolute"),
        ({"path": "/srv/facts.txt"}, {}, ".json"),
        ({"path": "/srv/../etc/facts.json"}, {}, ".."),
        ({"path": "/srv/fa\x00cts.json"}, {}, "NUL"),
        ({"default_trust": 1.5}, {}, "between 0 and 1"),
        ({"min_trust": True}, {}, "number"),
        ({"default_trust": 0.2}, {}, "above default_trust"),
        ({"min_trust": 0.4, "default_trust": 0.3}, {}, "above default_trust"),
    ],
)
def test_check_config_refuses_bad_settings(
    tmp_path: Path, config: dict[str, Any], secrets: dict[str, str], message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        make(tmp_path).check_config(config, secrets)


def test_check_config_normalises_and_place_keeps_a_given_path(tmp_path: Path) -> None:
    provider = make(tmp_path)
    target = tmp_path / "elsewhere" / "team.json"
    checked = provider.check_config({"path": str(target), "min_trust": 0}, {})
    assert checked == {"path": str(target), "min_trust": 0.0}
    assert provider.place("team", checked)["path"] == str(target)
    space = SpaceBinding(id="team", name="Team", config=provider.place("team", checked))
    remember(provider, space, "Written to the configured path")
    assert target.exists()
    assert not (tmp_path / "facts").exists()


def test_odd_space_ids_get_a_safe_distinct_file_name(tmp_path: Path) -> None:
    provider = make(tmp_path)
    a = Path(provider.place("team.notes", {})["path"])
    b = Path(provider.place("team-notes", {})["path"])
    assert a != b
    assert a.parent == b.parent == tmp_path / "facts"
    assert a.name.endswith(".json")
    assert "." not in a.name[: -len(".json")]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"default_trust": -0.1},
        {"min_trust": 0.9},
        {"embedder": HashingEmbedder},
        {"lock_timeout": 0},
        {"clock": 3},
    ],
)
def test_bad_constructor_arguments_raise_typed_errors(tmp_path: Path, kwargs: Any) -> None:
    with pytest.raises(InvalidInputError):
        FactFileProvider(tmp_path, **kwargs)


# --- remember and the file format --------------------------------------------------------------


def test_remember_commits_the_documented_format(tmp_path: Path) -> None:
    provider = make(tmp_path)
    space = bind(provider)
    item = RememberItem(
        content="Ada prefers green tea",
        category="preference",
        importance=4,
        tags=("drinks", "drinks"),
        entities=("Ada",),
        source="user",
        metadata={"origin": "chat", "turn": 3},
    )
    receipt = provider.remember(space, item)
    assert receipt == {"status": "stored", "id": receipt["id"], "created": 1, "revision": 1}
    data = load(space)
    assert (data["version"], data["revision"], data["links"]) == (1, 1, [])
    [fact] = data["facts"]
    assert fact == {
        "id": receipt["id"],
        "content": "Ada prefers green tea",
        "category": "preference",
        "importance": 4,
        "tags": ["drinks"],
        "entities": ["Ada"],
        "source": "user",
        "metadata": {"origin": "chat", "turn": 3},
        "trust": 0.5,
        "created_at": fact["created_at"],
        "updated_at": fact["created_at"],
    }


def test_remember_many_is_one_commit_with_ordered_receipts(tmp_path: Path) -> None:
    provider = make(tmp_path)
    space = bind(provider)
    items = [RememberItem(content=f"fact number {i}") for i in range(5)]
    receipts = provider.remember_many(space, items)
    assert [r["revision"] for r in receipts] == [1] * 5
    assert [f["id"] for f in load(space)["facts"]] == [r["id"] for r in receipts]
    assert load(space)["revision"] == 1


def test_trust_default_override_and_reinforcement(tmp_path: Path) -> None:
    provider = make(tmp_path)
    space = bind(provider, default_trust=0.7, min_trust=0.3)
    first = remember(provider, space, "Deploys run on Fridays", tags=("ops",))
    again = provider.remember(space, RememberItem(content="Deploys run on Fridays", tags=("ci",)))
    assert again == {"status": "updated", "id": first, "created": 0, "updated": 1, "revision": 2}
    [fact] = load(space)["facts"]
    assert fact["trust"] == pytest.approx(0.8)
    assert fact["tags"] == ["ops", "ci"]
    for _ in range(5):
        remember(provider, space, "Deploys run on Fridays")
    assert load(space)["facts"][0]["trust"] == 1.0
    remember(provider, space, "Low trust rumour", metadata={"trust": 0.1})
    trusts = {f["content"]: f["trust"] for f in load(space)["facts"]}
    assert trusts["Low trust rumour"] == 0.1


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (RememberItem(content="x" * (MAX_CONTENT_BYTES + 1)), "at most 16,384 bytes"),
        (RememberItem(content="é" * (MAX_CONTENT_BYTES // 2 + 1)), "bytes of UTF-8"),
        (RememberItem(content="nul \x00 inside"), "NUL"),
        (RememberItem(content="half \ud83d"), "surrogate"),
        (RememberItem(content="   "), "empty"),
        (RememberItem(content="ok", metadata={"trust": 2.0}), "between 0 and 1"),
        (RememberItem(content="ok", metadata={"trust": "high"}), "number"),
        (RememberItem(content="ok", metadata={"v": float("nan")}), "finite"),
        (RememberItem(content="ok", tags=tuple(f"t{i}" for i in range(21))), "at most 20"),
        (RememberItem(content="ok", entities=("",)), "1-200"),
    ],
)
def test_bad_items_raise_typed_errors_and_write_nothing(
    tmp_path: Path, item: RememberItem, message: str
) -> None:
    provider = make(tmp_path)
    space = bind(provider)
    with pytest.raises(InvalidInputError, match=message):
        provider.remember_many(space, [RememberItem(content="fine"), item])
    assert not (tmp_path / "facts").exists()


def test_content_of_exactly_16_kib_is_kept_byte_for_byte(tmp_path: Path) -> None:
    provider = make(tmp_path)
    space = bind(provider)
    content = ("数" * (MAX_CONTENT_BYTES // 3)) + "ab" * ((MAX_CONTENT_BYTES % 3) // 2)
    content += "a" * (MAX_CONTENT_BYTES - len(content.encode()))
    assert len(content.encode()) == MAX_CONTENT_BYTES
    fact_id = remember(provider, space, content)
    [row] = provider.browse(space, BrowseRequest())
    assert (row.id, row.content) == (fact_id, content)


def test_a_file_is_capped_at_100000_facts(tmp_path: Path) -> None:
    provider = make(tmp_path)
    space = bind(provider)
    path = Path(space.config["path"])
    path.parent.mkdir(parents=True)
    fact = (
        '{"id":"f%d","content":"fact %d","category":"fact","importance":3,"tags":[],'
        '"entities":[],"source":"agent","metadata":{},"trust":0.5,"created_at":1.0,'
        '"updated_at":1.0}'
    )
    body = ",\n".join(fact % (i, i) for i in range(facts_file.MAX_FACTS))
    path.write_text(f'{{"version": 1, "revision": 1, "facts": [\n{body}\n], "links": []}}\n')
    before = path.read_bytes()
    with pytest.raises(CapacityError, match="at most 100,000 facts"):
        remember(provider, space, "one too many")
    assert path.read_bytes() == before
    # Reinforcing a stored fact adds nothing, so it still commits.
    receipt = provider.remember(space, RememberItem(content="fact 7"))
    assert receipt["status"] == "updated"


# --- search ------------------------------------------------------------------------------------


def seeded(tmp_path: Path, **kwargs: Any) -> tuple[FactFileProvider, SpaceBinding, dict[str, str]]:
    provider = make(tmp_path, **kwargs)
    space = bind(provider)
    ids = {
        "tea": remember(
            provider,
            space,
            "Ada prefers green tea",
            category="preference",
            entities=("Ada",),
            source="user",
        ),
        "deploy": remember(
            provider,
            space,
            "Deploys go through CI on Fridays",
            category="decision",
            entities=("CI",),
        ),
        "pipeline": remember(
            provider, space, "Ada maintains the deploy pipeline", entities=("Ada", "CI")
        ),
        "rumour": remember(provider, space, "Ada dislikes green tea", metadata={"trust": 0.2}),
    }
    return provider, space, ids


def test_keyword_search_ranks_by_relevance_times_trust(tmp_path: Path) -> None:
    provider, space, ids = seeded(tmp_path)
    rows = search(provider, space, "green tea", mode="keyword")
    assert [r.id for r in rows] == [ids["tea"]]  # the 0.2-trust rumour is below min_trust
    [row] = rows
    assert row.matched_via == "keyword"
    assert row.confidence == 0.5
    assert 0 < row.score <= 0.75
    assert row.space_id == "notes"
    assert row.entities == ["Ada"]
    assert row.category == "preference"


def test_scores_are_normalised_and_best_first(tmp_path: Path) -> None:
    provider, space, ids = seeded(tmp_path)
    rows = search(provider, space, "Ada deploy pipeline", mode="keyword")
    assert rows[0].id == ids["pipeline"]
    scores = [r.score for r in rows]
    assert scores == sorted(scores, reverse=True)
    assert all(0 < s <= 1 for s in scores)


def test_basic_needs_every_word_and_filters_apply(tmp_path: Path) -> None:
    provider, space, ids = seeded(tmp_path)
    assert [r.id for r in search(provider, space, "deploy Fridays", mode="basic")] == [
        ids["deploy"]
    ]
    assert {r.id for r in search(provider, space, "Ada", category="preference")} == {ids["tea"]}
    assert {r.id for r in search(provider, space, "Ada", source="user")} == {ids["tea"]}
    assert search(provider, space, "Ada", source="external") == []
    assert len(search(provider, space, "Ada", limit=1)) == 1


def test_min_trust_zero_space_returns_low_trust_facts(tmp_path: Path) -> None:
    provider, space, ids = seeded(tmp_path)
    open_space = space.model_copy(update={"config": {**space.config, "min_trust": 0.0}})
    found = {r.id for r in search(provider, open_space, "green tea", mode="keyword")}
    assert found == {ids["tea"], ids["rumour"]}


def test_smart_search_is_hybrid_with_an_embedder(tmp_path: Path) -> None:
    provider, space, ids = seeded(tmp_path, embedder=HashingEmbedder())
    rows = search(provider, space, "green tea", mode="smart")
    assert rows[0].id == ids["tea"]
    assert rows[0].matched_via == "hybrid"
    # A misspelling shares character trigrams only: found through the dense side alone.
    rows = search(provider, space, "pipelnie maintanance", mode="smart")
    assert [(r.id, r.matched_via) for r in rows] == [(ids["pipeline"], "semantic")]
    assert search(provider, space, "pipelnie maintanance", mode="keyword") == []
    plain = make(tmp_path / "plain")
    assert search(plain, bind(plain), "green tea", mode="smart") == []


def test_a_query_without_words_gets_a_hint(tmp_path: Path) -> None:
    provider, space, _ = seeded(tmp_path)
    result = provider.search(space, ProviderSearchRequest(query="?!", mode="keyword"))
    assert result.results == []
    assert "no searchable words" in (result.hint or "")
    with pytest.raises(InvalidInputError, match="surrogate"):
        search(provider, space, "bad \ud83d")


def test_repeated_searches_parse_the_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, space, _ids = seeded(tmp_path)
    calls: list[int] = []
    real = facts_file.parse

    def counting(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(facts_file, "parse", counting)
    for _ in range(5):
        assert search(provider, space, "tea", mode="keyword")
    assert calls == []  # the commit cached the state it wrote
    other = make(tmp_path)  # another process-like writer: a new file object, no shared cache
    new_id = remember(other, space, "Green tea is served at nine")
    for _ in range(3):
        assert new_id in [r.id for r in search(provider, space, "tea", mode="keyword")]
    assert len(calls) == 2  # the other writer's re-read under its lock, then ours once


# --- browse, status, graph, related, link, forget, discover ------------------------------------


def test_browse_is_newest_first_with_offset_and_category(tmp_path: Path) -> None:
    provider, space, ids = seeded(tmp_path)
    rows = provider.browse(space, BrowseRequest())
    assert [r.id for r in rows] == [ids["rumour"], ids["pipeline"], ids["deploy"], ids["tea"]]
    assert [r.id for r in provider.browse(space, BrowseRequest(offset=1, limit=2))] == [
        ids["pipeline"],
        ids["deploy"],
    ]
    chosen = provider.browse(space, BrowseRequest(category="decision"))
    assert [r.id for r in chosen] == [ids["deploy"]]


def test_status_reports_counts_entities_edges_and_size(tmp_path: Path) -> None:
    provider, space, ids = seeded(tmp_path)
    provider.link(space, LinkRequest(source_id=ids["tea"], target_id=ids["deploy"]))
    status = provider.status(space)
    assert status.healthy
    assert status.total_insights == 4
    assert status.deleted_insights == 0
    assert status.by_category == {"preference": 1, "decision": 1, "general": 2}
    assert status.top_entities[0] == ("Ada", 2)
    assert status.edge_count == 1 + 1 + 1  # one link, one Ada pair, one CI pair
    assert status.db_size_bytes == Path(space.config["path"]).stat().st_size


def test_graph_has_entity_and_explicit_edges_and_is_bounded(tmp_path: Path) -> None:
    provider, space, ids = seeded(tmp_path)
    provider.link(
        space,
        LinkRequest(source_id=ids["deploy"], target_id=ids["tea"], type="causal", weight=0.9),
    )
    graph = provider.graph(space)
    assert {n.id for n in graph.nodes} == set(ids.values())
    kinds = {(e.source, e.target, e.type) for e in graph.edges}
    assert (ids["deploy"], ids["tea"], "causal") in kinds
    pairs = {frozenset((e.source, e.target)) for e in graph.edges if e.type == "entity"}
    assert frozenset((ids["tea"], ids["pipeline"])) in pairs
    assert frozenset((ids["deploy"], ids["pipeline"])) in pairs
    small = provider.graph(space, limit=2)
    assert [n.id for n in small.nodes] == [ids["rumour"], ids["pipeline"]]
    assert all({e.source, e.target} <= {ids["rumour"], ids["pipeline"]} for e in small.edges)


def test_graph_and_related_gain_semantic_edges_with_an_embedder(tmp_path: Path) -> None:
    provider = make(tmp_path, embedder=HashingEmbedder())
    space = bind(provider)
    a = remember(provider, space, "The nightly backup job copies the database to storage")
    b = remember(provider, space, "The nightly backup job copies the database to the bucket")
    remember(provider, space, "Lunch is at noon")
    edges = provider.graph(space).edges
    assert any(e.type == "semantic" and {e.source, e.target} == {a, b} for e in edges)
    rows = provider.related(space, RelatedRequest(id=a, edge="semantic"))
    assert [(r.id, r.depth, r.edge_type) for r in rows] == [(b, 1, "semantic")]


def test_related_walks_links_and_entities_up_to_depth(tmp_path: Path) -> None:
    provider, space, ids = seeded(tmp_path)
    lone = remember(provider, space, "Unrelated note about lunch")
    provider.link(space, LinkRequest(source_id=lone, target_id=ids["deploy"]))
    rows = provider.related(space, RelatedRequest(id=ids["tea"], depth=1))
    assert {(r.id, r.depth, r.edge_type) for r in rows} == {(ids["pipeline"], 1, "entity")}
    deep = {
        r.id: (r.depth, r.edge_type)
        for r in provider.related(space, RelatedRequest(id=ids["tea"], depth=3))
    }
    assert deep[ids["deploy"]] == (2, "entity")
    assert deep[lone] == (3, "semantic")  # links are walked both ways
    only_links = provider.related(space, RelatedRequest(id=lone, edge="semantic"))
    assert [r.id for r in only_links] == [ids["deploy"]]
    with pytest.raises(NotFoundError, match="no fact"):
        provider.related(space, RelatedRequest(id="missing"))


def test_link_upserts_and_refuses_unknown_or_self_links(tmp_path: Path) -> None:
    provider, space, ids = seeded(tmp_path)
    request = LinkRequest(source_id=ids["tea"], target_id=ids["deploy"], weight=0.4, reason="why")
    receipt = provider.link(space, request)
    assert is_committed(receipt)
    assert receipt["id"] == f"{ids['tea']}->{ids['deploy']}"
    provider.link(space, request.model_copy(update={"weight": 0.9}))
    assert load(space)["links"] == [
        {
            "source": ids["tea"],
            "target": ids["deploy"],
            "type": "semantic",
            "weight": 0.9,
            "reason": "why",
        }
    ]
    before = Path(space.config["path"]).read_bytes()
    with pytest.raises(NotFoundError, match="missing"):
        provider.link(space, LinkRequest(source_id=ids["tea"], target_id="missing"))
    with pytest.raises(InvalidInputError, match="itself"):
        provider.link(space, LinkRequest(source_id=ids["tea"], target_id=ids["tea"]))
    assert Path(space.config["path"]).read_bytes() == before


def test_forget_is_a_hard_delete_of_the_fact_and_its_links(tmp_path: Path) -> None:
    provider, space, ids = seeded(tmp_path)
    provider.link(space, LinkRequest(source_id=ids["tea"], target_id=ids["deploy"]))
    receipt = provider.forget(space, ids["tea"])
    assert receipt == {"status": "deleted", "id": ids["tea"], "deleted": 1, "revision": 6}
    data = load(space)
    assert ids["tea"] not in {f["id"] for f in data["facts"]}
    assert data["links"] == []
    assert ids["tea"] not in Path(space.config["path"]).read_text()
    before = Path(space.config["path"]).read_bytes()
    with pytest.raises(NotFoundError):
        provider.forget(space, ids["tea"])
    assert Path(space.config["path"]).read_bytes() == before


def test_discover_lists_fact_files_only(tmp_path: Path) -> None:
    provider = make(tmp_path)
    assert provider.discover({}, {}) == []
    for name in ("alpha", "beta"):
        remember(provider, bind(provider, name), f"a fact in {name}")
    folder = tmp_path / "facts"
    (folder / "notes.txt").write_text("x")
    (folder / ".alpha.json.0123456789ab.tmp").write_text("{")
    (folder / "sub.json").mkdir()
    (folder / "link.json").symlink_to(folder / "alpha.json")
    found = provider.discover({}, {})
    assert [(d.external_id, d.config["path"]) for d in found] == [
        ("alpha", str(folder / "alpha.json")),
        ("beta", str(folder / "beta.json")),
    ]
    # A discovered config is accepted as it is.
    assert provider.check_config(found[0].config, {}) == found[0].config


# --- crash safety and path safety --------------------------------------------------------------


def test_a_stale_temp_file_is_ignored_and_cleaned_by_the_next_write(tmp_path: Path) -> None:
    provider = make(tmp_path)
    space = bind(provider)
    remember(provider, space, "Before the crash")
    folder = tmp_path / "facts"
    stale = folder / ".notes.json.0123456789ab.tmp"
    stale.write_text('{"version": 1, "revision": 99, "fac')  # a torn write of a dead writer
    neighbour = folder / ".other.json.0123456789ab.tmp"
    neighbour.write_text("another file's writer, mid-commit")
    reader = make(tmp_path)
    assert [r.content for r in search(reader, space, "crash")] == ["Before the crash"]
    remember(provider, space, "After the crash")
    assert not stale.exists()
    assert neighbour.exists()
    assert load(space)["revision"] == 2


@pytest.mark.parametrize(
    "damage",
    [
        b"{not json",
        b'{"version": 2, "facts": [], "links": []}',
        b"\xff\xfe",
        b'{"version": 1, "revision": 1, "facts": [{"id": "x"}], "links": []}',
    ],
)
def test_a_damaged_file_raises_and_is_never_overwritten(tmp_path: Path, damage: bytes) -> None:
    provider = make(tmp_path)
    space = bind(provider)
    path = Path(space.config["path"])
    path.parent.mkdir(parents=True)
    path.write_bytes(damage)
    for attempt in (
        lambda: remember(provider, space, "new fact"),
        lambda: provider.forget(space, "x"),
        lambda: provider.link(space, LinkRequest(source_id="x", target_id="y")),
        lambda: search(provider, space, "fact"),
    ):
        with pytest.raises(StorageError, match="Restore it from a backup") as info:
            attempt()
        assert info.value.code == "storage-damaged"
        assert str(path) in str(info.value)
    assert path.read_bytes() == damage
    status = provider.status(space)
    assert not status.healthy
    assert str(path) in (status.error or "")


def test_symlinked_fact_folder_or_file_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "facts").symlink_to(real, target_is_directory=True)
    provider = make(root)
    space = bind(provider)
    with pytest.raises(StorageError) as info:
        remember(provider, space, "through a link")
    assert info.value.code == "symlink-refused"
    with pytest.raises(StorageError):
        search(provider, space, "link")
    assert list(real.iterdir()) == []

    other = make(tmp_path / "other")
    target = tmp_path / "victim.json"
    target.write_text("precious")
    folder = tmp_path / "other" / "facts"
    folder.mkdir(parents=True)
    (folder / "notes.json").symlink_to(target)
    with pytest.raises(StorageError) as info:
        remember(other, bind(other), "overwrite?")
    assert info.value.code == "symlink-refused"
    assert target.read_text() == "precious"


def test_a_configured_path_under_a_symlinked_folder_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    provider = make(tmp_path)
    space = bind(provider, path=str(tmp_path / "alias" / "deep" / "facts.json"))
    with pytest.raises(StorageError) as info:
        remember(provider, space, "through an aliased folder")
    assert info.value.code == "symlink-refused"
    assert list(real.iterdir()) == []


def test_a_held_lock_times_out_with_a_storage_error(tmp_path: Path) -> None:
    provider = make(tmp_path, lock_timeout=0.3)
    space = bind(provider)
    remember(provider, space, "first")
    lock = Path(space.config["path"] + ".lock")
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with locked(lock, timeout=5, what="test"):
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(5)
        with pytest.raises(StorageError, match="timed out"):
            remember(provider, space, "second")
        assert [r.content for r in search(provider, space, "first")] == ["first"]  # reads go on
    finally:
        release.set()
        holder.join()
    assert load(space)["revision"] == 1


# --- concurrency -------------------------------------------------------------------------------


def test_eight_threads_remembering_lose_nothing(tmp_path: Path) -> None:
    provider = FactFileProvider(tmp_path)
    space = bind(provider)

    def writer(n: int) -> list[str]:
        ids = []
        for i in range(15):
            receipt = provider.remember(space, RememberItem(content=f"thread {n} fact {i}"))
            assert is_committed(receipt)
            ids.append(receipt["id"])
        return ids

    with ThreadPoolExecutor(8) as pool:
        committed = [i for ids in pool.map(writer, range(8)) for i in ids]
    data = load(space)
    assert set(committed) <= {f["id"] for f in data["facts"]}
    assert len(data["facts"]) == 120
    assert data["revision"] == 120


_WRITER = """
import sys
from langgraph_mnemon.adapters.providers.facts import FactFileProvider
from langgraph_mnemon.memory_layers.spaces import RememberItem, SpaceBinding
provider = FactFileProvider(sys.argv[1])
space = SpaceBinding(id="shared", name="Shared", config=provider.place("shared", {}))
def main():
    for i in range(int(sys.argv[3])):
        items = [RememberItem(content=f"{sys.argv[2]} fact {i} part {j}") for j in range(1 + i % 3)]
        for receipt in provider.remember_many(space, items):
            print(receipt["id"], flush=True)
main()
"""


def test_two_processes_remembering_lose_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path), name, "30"],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name in ("left", "right")
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    committed = [line for out in outputs for line in out.split()]
    data = json.loads((tmp_path / "facts" / "shared.json").read_text())
    assert len(committed) == 2 * sum(1 + i % 3 for i in range(30))
    assert set(committed) == {f["id"] for f in data["facts"]}
    assert data["revision"] == 60


def test_refused_writes_on_a_fresh_space_create_nothing(tmp_path: Path) -> None:
    provider = make(tmp_path)
    space = bind(provider)
    with pytest.raises(NotFoundError):
        provider.forget(space, "missing")
    with pytest.raises(NotFoundError):
        provider.link(space, LinkRequest(source_id="a", target_id="b"))
    broken = FactFileProvider(tmp_path, clock=lambda: float("nan"))
    with pytest.raises(InvalidInputError, match="clock"):
        remember(broken, space, "when?")
    assert list(tmp_path.iterdir()) == []
