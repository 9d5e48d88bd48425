"""The mem0 provider on the real mem0 ``Memory`` and a local Qdrant folder under tmp_path.

Offline throughout: ``HashingEmbedder`` for vectors, no chat model for ``infer=False`` and a
``ScriptedChatModel`` that answers mem0's extraction prompt for ``infer=True``. Import-time
behaviour (telemetry, ``~/.mem0``) is checked in fresh interpreters with ``HOME`` in tmp_path.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from langgraph_mnemon.adapters.embeddings import HashingEmbedder
from langgraph_mnemon.adapters.providers._mem0_support import NoChatModel
from langgraph_mnemon.adapters.providers.mem0 import Mem0Provider
from langgraph_mnemon.errors import (
    InvalidInputError,
    NotFoundError,
    ProviderError,
    StorageError,
)
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    ProviderSearchRequest,
    RememberItem,
    SpaceBinding,
    is_committed,
)
from langgraph_mnemon.memory_layers.spaces._models import is_pending
from langgraph_mnemon.testing import ScriptedChatModel

if importlib.util.find_spec("mem0") is None and os.environ.get("CI") != "true":
    pytest.skip("mem0ai is an extra: pip install 'langgraph-mnemon[mem0]'", allow_module_level=True)


EXTRACTED = '{"memory": [{"text": "User prefers green tea over coffee", "attributed_to": "user"}]}'


def _provider(path: Path, **kwargs: Any) -> Mem0Provider:
    return Mem0Provider(path, embedder=HashingEmbedder(256), **kwargs)


def _space(provider: Mem0Provider, space_id: str = "notes", **config: Any) -> SpaceBinding:
    checked = provider.check_config(config, {})
    return SpaceBinding(
        id=space_id, name=space_id.title(), config=provider.place(space_id, checked)
    )


def _contents(provider: Mem0Provider, space: SpaceBinding) -> list[str]:
    return [r.content for r in provider.browse(space, BrowseRequest(limit=500))]


# ------------------------------------------------------------------ construction and config


def test_construction_is_lazy_and_validates(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "m0")
    assert not (tmp_path / "m0").exists()
    assert provider.descriptor.write_mode == "exact"
    assert provider.descriptor.deletion_mode == "hard"
    assert provider.descriptor.score_semantics == "normalized"
    assert provider.descriptor.capabilities.names() == [
        "search",
        "browse",
        "remember",
        "forget",
        "discover",
    ]
    assert [f.name for f in provider.descriptor.config_fields] == [
        "user_id",
        "agent_id",
        "collection",
    ]
    with pytest.raises(InvalidInputError, match="needs model="):
        _provider(tmp_path / "x", infer=True)
    with pytest.raises(InvalidInputError, match="Embedder"):
        Mem0Provider(tmp_path / "x", embedder=HashingEmbedder)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="BaseChatModel"):
        _provider(tmp_path / "x", model="gpt-4o")  # type: ignore[arg-type]
    for bad_collection in ("../escape", "team_entities", ""):
        with pytest.raises(InvalidInputError, match="collection"):
            _provider(tmp_path / "x", collection=bad_collection)
    with pytest.raises(InvalidInputError, match="provider_id"):
        _provider(tmp_path / "x", provider_id="Not A Slug")
    assert not (tmp_path / "x").exists()
    inferring = _provider(
        tmp_path / "x", model=ScriptedChatModel(responses=[EXTRACTED]), infer=True
    )
    assert inferring.descriptor.write_mode == "async"
    assert _provider(tmp_path / "y", provider_id="mem0-team").descriptor.id == "mem0-team"


def test_check_config_and_place(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "m0")
    assert provider.check_config({"user_id": " alice ", "agent_id": ""}, {}) == {"user_id": "alice"}
    assert provider.check_config({"collection": "team", "user_id": "bob"}, {}) == {
        "user_id": "bob",
        "collection": "team",
    }
    # A new space gets its own collection; the name is fixed in its config.
    assert provider.place("notes", {}) == {"user_id": "mnemon-notes", "collection": "mnemon-notes"}
    assert provider.place("notes", {"collection": "team"}) == {
        "user_id": "mnemon-notes",
        "collection": "team",
    }
    # Explicit ids without a collection (every space made before per-space collections)
    # stay on the shared collection, also when the config comes back on a reconfiguration.
    assert provider.place("notes", {"agent_id": "bot"}) == {"agent_id": "bot"}
    assert provider.place("old", {"user_id": "mnemon-old"}) == {"user_id": "mnemon-old"}
    placed = provider.place("notes", {})
    assert provider.place("notes", provider.check_config(placed, {})) == placed
    # An id that is not a short slug gets a hashed name that check_config accepts back.
    for odd in ("Ünïcode space", "x" * 64, "under_score"):
        name = provider.place(odd, {})["collection"]
        assert name.startswith("mnemon-")
        assert len(name) == len("mnemon-") + 12
        assert provider.check_config({"collection": name}, {}) == {"collection": name}
    assert provider.space_collection("a") != provider.space_collection("b")
    for bad in (
        {"collection": "../x"},
        {"collection": "notes_entities"},
        {"collection": 7},
        {"tenant": "x"},
        {"user_id": "two words"},
        {"user_id": 7},
        {"agent_id": "a\x00"},
    ):
        with pytest.raises(InvalidInputError):
            provider.check_config(bad, {})
    with pytest.raises(InvalidInputError, match="no secrets"):
        provider.check_config({}, {"api_key": "sk-live"})


def test_no_chat_model_refuses_every_call() -> None:
    with pytest.raises(ProviderError, match="pass model=") as caught:
        NoChatModel().invoke("extract facts")
    assert caught.value.code == "no-model"


# ------------------------------------------------------------------ verbatim writes


def test_infer_false_stores_verbatim_with_metadata(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "m0")
    space = _space(provider)
    texts = [
        "Deploys freeze on Fridays after 15:00.",
        "部署在周五冻结 🎉 — Café naïve résumé 𝔘𝔫𝔦",
        "  leading and trailing spaces stay  ",
    ]
    started = time.time()
    receipts = []
    for text in texts:
        item = RememberItem(
            content=text,
            category="decision",
            importance=5,
            tags=("ops", "release"),
            entities=("Friday",),
            source="user",
            metadata={"ticket": "OPS-7", "created_at": "1999-01-01", "user_id": "mallory"},
        )
        receipts.append(provider.remember(space, item))
    for raw in receipts:
        assert raw["status"] == "stored"
        assert raw["created"] == 1
        assert is_committed(raw)
    rows = provider.browse(space, BrowseRequest(limit=10))
    assert [r.content for r in rows] == texts[::-1]  # exact text, newest first
    assert [r.id for r in rows] == [raw["id"] for raw in receipts][::-1]
    row = rows[0]
    assert (row.category, row.importance, row.source) == ("decision", 5, "user")
    assert row.tags == ["ops", "release"]
    assert row.entities == ["Friday"]
    # Caller metadata is namespaced: it cannot move the row to another user or back-date it.
    assert row.metadata == {"ticket": "OPS-7", "created_at": "1999-01-01", "user_id": "mallory"}
    assert row.created_at is not None
    assert started - 5 < row.created_at < time.time() + 5
    assert row.space_id == "notes"
    assert _contents(provider, _space(provider, "other", user_id="mallory")) == []
    provider.close()


def test_bad_input_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "m0")
    space = _space(provider)
    bad_items = [
        RememberItem(content="nul \x00 byte"),
        RememberItem(content="half \ud83d surrogate"),
        RememberItem(content="   "),
        RememberItem(content="x" * 70_000),
        RememberItem(content="ok", metadata={"k\x00": "v"}),
        RememberItem(content="ok", tags=("bad\udc00",)),
    ]
    for item in bad_items:
        with pytest.raises(InvalidInputError):
            provider.remember(space, item)
    assert not (tmp_path / "m0").exists()  # validated before the folder was even created
    for query in ("   ", "q" * 2001):
        with pytest.raises(InvalidInputError):
            provider.search(space, ProviderSearchRequest(query=query))
    with pytest.raises(NotFoundError, match="UUID"):
        provider.forget(space, "not-a-uuid")
    assert not (tmp_path / "m0").exists()


def test_reads_of_a_missing_folder_are_empty_and_create_nothing(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "m0")
    space = _space(provider)
    status = provider.status(space)
    assert status.healthy
    assert status.total_insights == 0
    assert (provider.search(space, ProviderSearchRequest(query="anything"))).results == []
    assert provider.browse(space, BrowseRequest()) == []
    assert provider.discover({}, {}) == []
    with pytest.raises(NotFoundError):
        provider.forget(space, "0b6f1f7e-5f7e-4a7e-9f7e-0b6f1f7e5f7e")
    assert not (tmp_path / "m0").exists()


# ------------------------------------------------------------------ infer=True


def test_infer_true_receipts_follow_mem0_events(tmp_path: Path) -> None:
    model = ScriptedChatModel(responses=[EXTRACTED, '{"memory": []}'])
    provider = _provider(tmp_path / "m0", model=model, infer=True)
    space = _space(provider)
    added = provider.remember(
        space, RememberItem(content="I really like green tea, coffee makes me jittery.")
    )
    assert added["status"] == "stored"
    assert added["created"] == 1
    assert is_committed(added)
    assert added["events"] == [{"id": added["id"], "event": "ADD"}]
    shown = "\n".join(str(m.content) for m in model.calls[0])
    assert "I really like green tea" in shown  # mem0 handed our content to the model
    rows = provider.browse(space, BrowseRequest())
    assert [(r.id, r.content) for r in rows] == [
        (added["id"], "User prefers green tea over coffee")
    ]

    nothing = provider.remember(space, RememberItem(content="Hello there!"))
    assert nothing["status"] == "skipped"
    assert nothing["id"] is None
    assert not is_committed(nothing)
    assert not is_pending(nothing)
    assert len(model.calls) == 2
    assert len(provider.browse(space, BrowseRequest())) == 1
    provider.close()


def test_infer_true_repeated_fact_is_skipped(tmp_path: Path) -> None:
    model = ScriptedChatModel(responses=[EXTRACTED])  # the model extracts the same fact twice
    provider = _provider(tmp_path / "m0", model=model, infer=True)
    space = _space(provider)
    first = provider.remember(space, RememberItem(content="Green tea, please."))
    again = provider.remember(space, RememberItem(content="Green tea, as always."))
    assert is_committed(first)
    assert again["status"] == "skipped"
    assert not is_committed(again)
    assert len(provider.browse(space, BrowseRequest())) == 1
    provider.close()


# ------------------------------------------------------------------ search, browse, forget


def test_search_modes_scores_and_filters(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "m0")
    space = _space(provider)
    provider.remember(
        space, RememberItem(content="The telescope uses a cobalt lamp.", category="decision")
    )
    provider.remember(space, RememberItem(content="Lentil soup is served on Mondays."))
    provider.remember(space, RememberItem(content="Telescopes need dark skies.", source="user"))
    for mode in ("smart", "basic", "keyword"):
        rows = (provider.search(space, ProviderSearchRequest(query="telescope", mode=mode))).results
        scores = [r.score for r in rows]
        assert rows
        assert all(s is not None and 0.0 <= s <= 1.0 for s in scores)
        assert scores == sorted(scores, reverse=True)
        assert rows[0].matched_via == mode
    keyword = provider.search(
        space, ProviderSearchRequest(query="telescope", mode="keyword", limit=10)
    )
    assert "Lentil soup is served on Mondays." not in [r.content for r in keyword.results]
    absent = provider.search(space, ProviderSearchRequest(query="xylophone quasar", mode="keyword"))
    assert absent.results == []
    decided = provider.search(
        space, ProviderSearchRequest(query="telescope", category="decision", limit=10)
    )
    assert [r.content for r in decided.results] == ["The telescope uses a cobalt lamp."]
    by_user = provider.search(space, ProviderSearchRequest(query="telescope", source="user"))
    assert [r.content for r in by_user.results] == ["Telescopes need dark skies."]
    provider.close()


def test_spaces_are_isolated_and_forget_is_scoped(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "m0")
    mine, theirs = _space(provider, "mine"), _space(provider, "theirs")
    agent = _space(provider, "bot", agent_id="helper-bot")
    own = provider.remember(mine, RememberItem(content="Mine: the vault code is 1234."))
    provider.remember(theirs, RememberItem(content="Theirs: the vault code is 9876."))
    provider.remember(agent, RememberItem(content="Agent: the vault code rotates."))
    found = provider.search(theirs, ProviderSearchRequest(query="vault code", limit=10))
    assert [r.content for r in found.results] == ["Theirs: the vault code is 9876."]
    assert _contents(provider, agent) == ["Agent: the vault code rotates."]
    assert (provider.status(mine)).total_insights == 1
    with pytest.raises(NotFoundError):
        provider.forget(theirs, own["id"])  # an id from another space is not found
    assert _contents(provider, mine) == ["Mine: the vault code is 1234."]
    receipt = provider.forget(mine, own["id"])
    assert receipt == {"status": "deleted", "id": own["id"], "deleted": 1}
    assert is_committed(receipt)
    assert _contents(provider, mine) == []
    assert (provider.status(mine)).total_insights == 0
    with sqlite3.connect(provider.history_path) as history:  # the text left mem0's audit trail
        left = history.execute(
            "SELECT count(*) FROM history WHERE memory_id = ?", (own["id"],)
        ).fetchone()[0]
    assert left == 0
    with pytest.raises(NotFoundError):
        provider.forget(mine, own["id"])
    discovered = {s.external_id: s.config for s in provider.discover({}, {})}
    assert discovered == {
        "user:mnemon-theirs@mnemon-theirs": {
            "user_id": "mnemon-theirs",
            "collection": "mnemon-theirs",
        },
        "agent:helper-bot": {"agent_id": "helper-bot", "collection": "mnemon"},
    }
    provider.close()


def _collections(path: Path) -> dict[str, dict[str, int]]:
    """What the closed Qdrant folder holds: collection -> {user or agent id: rows}."""
    from qdrant_client import QdrantClient

    client = QdrantClient(path=str(path / "qdrant"))
    try:
        held: dict[str, dict[str, int]] = {}
        for collection in client.get_collections().collections:
            points, _ = client.scroll(collection.name, limit=10_000, with_vectors=False)
            owners = [
                str((p.payload or {}).get("user_id") or (p.payload or {}).get("agent_id"))
                for p in points
            ]
            held[collection.name] = {o: owners.count(o) for o in sorted(set(owners))}
        return held
    finally:
        client.close()


def test_each_new_space_has_its_own_collection(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "m0")
    first, second = _space(provider, "first"), _space(provider, "second")
    team_a = _space(provider, "team-a", collection="team")
    team_b = _space(provider, "team-b", collection="team")
    provider.remember(first, RememberItem(content="First: the lighthouse is red."))
    provider.remember(first, RememberItem(content="First: the harbour is calm."))
    provider.remember(second, RememberItem(content="Second: the lighthouse is blue."))
    provider.remember(team_a, RememberItem(content="Team A: the lighthouse is green."))
    provider.remember(team_b, RememberItem(content="Team B: the lighthouse is white."))
    found = provider.search(second, ProviderSearchRequest(query="lighthouse", limit=10))
    assert [r.content for r in found.results] == ["Second: the lighthouse is blue."]
    # Two spaces sharing a named collection are still kept apart by their user ids.
    found = provider.search(team_b, ProviderSearchRequest(query="lighthouse", limit=10))
    assert [r.content for r in found.results] == ["Team B: the lighthouse is white."]
    assert (provider.status(first)).total_insights == 2
    assert (provider.status(team_a)).total_insights == 1
    # Reads of a space whose collection does not exist yet answer empty and create nothing.
    unused = _space(provider, "unused")
    assert (provider.status(unused)).total_insights == 0
    assert provider.browse(unused, BrowseRequest()) == []
    assert (provider.search(unused, ProviderSearchRequest(query="lighthouse"))).results == []
    with pytest.raises(NotFoundError):
        provider.forget(unused, "0b6f1f7e-5f7e-4a7e-9f7e-0b6f1f7e5f7e")
    discovered = {s.external_id for s in provider.discover({}, {})}
    assert discovered == {
        "user:mnemon-first@mnemon-first",
        "user:mnemon-second@mnemon-second",
        "user:mnemon-team-a@team",
        "user:mnemon-team-b@team",
    }
    provider.close()
    assert _collections(tmp_path / "m0") == {
        "mnemon-first": {"mnemon-first": 2},
        "mnemon-first_entities": {},
        "mnemon-second": {"mnemon-second": 1},
        "mnemon-second_entities": {},
        "team": {"mnemon-team-a": 1, "mnemon-team-b": 1},
        "team_entities": {},
    }


def test_spaces_without_a_collection_keep_the_shared_one(tmp_path: Path) -> None:
    # Configs as place() wrote them before per-space collections: ids, no collection.
    writer = _provider(tmp_path / "m0")
    old = SpaceBinding(id="old", name="Old", config={"user_id": "mnemon-old"})
    bot = SpaceBinding(id="bot", name="Bot", config={"agent_id": "helper-bot"})
    kept = writer.remember(old, RememberItem(content="Old: the archive opens at nine."))
    writer.remember(old, RememberItem(content="Old: the archive closes at five."))
    writer.remember(bot, RememberItem(content="Bot: the archive has a cat."))
    writer.close()
    assert _collections(tmp_path / "m0") == {
        "mnemon": {"helper-bot": 1, "mnemon-old": 2},
        "mnemon_entities": {},
    }
    provider = _provider(tmp_path / "m0")
    fresh = _space(provider, "fresh")
    provider.remember(fresh, RememberItem(content="Fresh: the archive is new."))
    # A reconfigured old space keeps its config without a collection: still the shared one.
    old = SpaceBinding(
        id="old", name="Old", config=provider.place("old", provider.check_config(old.config, {}))
    )
    assert old.config == {"user_id": "mnemon-old"}
    found = provider.search(old, ProviderSearchRequest(query="archive opens", limit=10))
    assert found.results[0].content == "Old: the archive opens at nine."
    assert {r.content for r in found.results} == {
        "Old: the archive opens at nine.",
        "Old: the archive closes at five.",
    }
    assert (provider.status(old)).total_insights == 2
    assert _contents(provider, bot) == ["Bot: the archive has a cat."]
    assert provider.forget(old, kept["id"]) == {
        "status": "deleted",
        "id": kept["id"],
        "deleted": 1,
    }
    assert _contents(provider, old) == ["Old: the archive closes at five."]
    assert _contents(provider, fresh) == ["Fresh: the archive is new."]
    discovered = {s.external_id: s.config for s in provider.discover({}, {})}
    assert discovered == {  # the shared collection's rows keep their external ids
        "user:mnemon-old": {"user_id": "mnemon-old", "collection": "mnemon"},
        "agent:helper-bot": {"agent_id": "helper-bot", "collection": "mnemon"},
        "user:mnemon-fresh@mnemon-fresh": {"user_id": "mnemon-fresh", "collection": "mnemon-fresh"},
    }
    provider.close()
    held = _collections(tmp_path / "m0")
    assert held["mnemon"] == {"helper-bot": 1, "mnemon-old": 1}
    assert held["mnemon-fresh"] == {"mnemon-fresh": 1}


def test_a_bad_collection_in_a_stored_config_is_refused(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "m0")
    space = SpaceBinding(id="x", name="X", config={"user_id": "u", "collection": "../../etc"})
    with pytest.raises(InvalidInputError, match="collection"):
        provider.remember(space, RememberItem(content="Refused probe."))
    with pytest.raises(InvalidInputError, match="collection"):
        provider.browse(space, BrowseRequest())
    status = provider.status(space)
    assert status.healthy is False
    assert not (tmp_path / "m0").exists()


def test_browse_pages_newest_first(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "m0")
    space = _space(provider)
    for n in range(5):
        category = "fact" if n % 2 else "decision"
        provider.remember(space, RememberItem(content=f"row {n}", category=category))
    page = provider.browse(space, BrowseRequest(limit=2, offset=1))
    assert [r.content for r in page] == ["row 3", "row 2"]
    facts = provider.browse(space, BrowseRequest(category="fact"))
    assert [r.content for r in facts] == ["row 3", "row 1"]
    assert provider.browse(space, BrowseRequest(offset=5)) == []
    provider.close()


# ------------------------------------------------------------------ folder life cycle


def test_reopen_after_close_finds_the_data(tmp_path: Path) -> None:
    first = _provider(tmp_path / "m0")
    space = _space(first)
    raw = first.remember(space, RememberItem(content="Persistence probe: the owl sleeps."))
    first.close()
    first.close()  # idempotent
    second = _provider(tmp_path / "m0")
    assert [r.id for r in second.browse(space, BrowseRequest())] == [raw["id"]]
    found = second.search(space, ProviderSearchRequest(query="owl sleeps"))
    assert [r.id for r in found.results] == [raw["id"]]
    assert (tmp_path / "m0" / "qdrant").is_dir()
    assert (tmp_path / "m0" / "history.db").is_file()
    second.close()


def test_a_second_provider_on_an_open_folder_gets_a_clear_error(tmp_path: Path) -> None:
    first, second = _provider(tmp_path / "m0"), _provider(tmp_path / "m0")
    space = _space(first)
    first.remember(space, RememberItem(content="Lock probe: the first provider holds it."))
    with pytest.raises(ProviderError, match="another provider or process") as caught:
        second.remember(space, RememberItem(content="Lock probe: refused."))
    assert caught.value.code == "folder-locked"
    status = second.status(space)
    assert status.healthy is False
    assert "close()" in str(status.error)
    first.close()
    assert is_committed(second.remember(space, RememberItem(content="Lock probe: now mine.")))
    assert len(second.browse(space, BrowseRequest())) == 2
    second.close()


def _damaged(tmp_path: Path, name: str) -> Mem0Provider:
    writer = _provider(tmp_path / "m0")
    writer.remember(_space(writer), RememberItem(content="Damage probe row."))
    writer.close()
    (tmp_path / "m0" / name).write_bytes(b"\x00garbage, not what mem0 or Qdrant wrote")
    return _provider(tmp_path / "m0")


@pytest.mark.parametrize("name", ["qdrant/meta.json", "history.db"])
def test_a_damaged_file_is_a_typed_error(tmp_path: Path, name: str) -> None:
    provider = _damaged(tmp_path, name)
    space = _space(provider)
    with pytest.raises(StorageError) as caught:
        provider.browse(space, BrowseRequest())
    assert caught.value.code == "storage-damaged"
    status = provider.status(space)
    assert status.healthy is False
    assert "damaged" in str(status.error)
    provider.close()


def test_unusable_folders_are_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    cases = {"file": "storage-error", "file/below": "storage-error", "link": "symlink-refused"}
    for name, code in cases.items():
        provider = _provider(tmp_path / name)
        space = _space(provider)
        with pytest.raises(StorageError) as caught:
            provider.remember(space, RememberItem(content="Refused probe."))
        assert caught.value.code == code, name
        status = provider.status(space)
        assert status.healthy is False
        assert status.error
        with pytest.raises(StorageError):
            provider.search(space, ProviderSearchRequest(query="refused probe"))
    assert list(real.iterdir()) == []  # nothing was written through the link


def test_an_embedder_of_another_dimension_is_refused(tmp_path: Path) -> None:
    writer = _provider(tmp_path / "m0")
    writer.remember(_space(writer), RememberItem(content="Dimension probe row."))
    writer.close()
    other = Mem0Provider(tmp_path / "m0", embedder=HashingEmbedder(128))
    with pytest.raises(ProviderError, match="256-dimension") as caught:
        other.browse(_space(other), BrowseRequest())
    assert caught.value.code == "dimension-mismatch"
    other.close()


def test_spacy_without_its_model_is_refused_instead_of_downloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in spaCy package on sys.path (no model): mem0 would download en_core_web_sm.
    (tmp_path / "site" / "spacy").mkdir(parents=True)
    (tmp_path / "site" / "spacy" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    provider = _provider(tmp_path / "m0")
    with pytest.raises(ProviderError, match="en_core_web_sm") as caught:
        provider.remember(_space(provider), RememberItem(content="Guard probe."))
    assert caught.value.code == "offline-guard"
    assert not (tmp_path / "m0").exists()


def test_a_missing_mem0_install_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mem0.memory.main", None)  # import now raises ImportError
    provider = _provider(tmp_path / "m0")
    with pytest.raises(ProviderError, match=r"pip install 'langgraph-mnemon\[mem0\]'") as caught:
        provider.remember(_space(provider), RememberItem(content="Install probe."))
    assert caught.value.code == "not-installed"
    assert not (tmp_path / "m0").exists()


# ------------------------------------------------------------------ import-time behaviour

_PROBE = r"""
import asyncio, json, os, sys
from pathlib import Path
network = []
sys.addaudithook(
    lambda event, args: network.append(event)
    if event in ("socket.connect", "socket.getaddrinfo") else None
)
if sys.argv[2] == "preimported":
    import mem0  # the user imported mem0 first, with telemetry on
from langgraph_mnemon.adapters.embeddings import HashingEmbedder
from langgraph_mnemon.adapters.providers.mem0 import Mem0Provider
from langgraph_mnemon.memory_layers.spaces import ProviderSearchRequest, RememberItem, SpaceBinding

def main():
    lazy = "mem0" not in sys.modules
    root = Path(sys.argv[1])
    provider = Mem0Provider(root / "m0", embedder=HashingEmbedder(64))
    lazy = lazy and "mem0" not in sys.modules
    space = SpaceBinding(id="t", name="t", config=provider.place("t", {}))
    raw = provider.remember(space, RememberItem(content="telemetry probe row"))
    found = provider.search(space, ProviderSearchRequest(query="telemetry probe"))
    provider.close()
    import mem0.memory.main as main_module
    import mem0.memory.telemetry as telemetry
    posthog = telemetry.client_telemetry.posthog
    return {
        "lazy": lazy,
        "stored": raw["status"],
        "found": [r.content for r in found.results],
        "flags": [telemetry.MEM0_TELEMETRY, main_module.MEM0_TELEMETRY],
        "posthog": None if posthog is None else ("disabled" if posthog.disabled else "live"),
        "oss_client": telemetry._oss_telemetry_instance is not None,
        "mem0_dir_env": os.environ.get("MEM0_DIR"),
        "network": network,
    }

print(json.dumps(main()))
"""


def _probe(tmp_path: Path, mode: str, **env: str) -> dict[str, Any]:
    script = tmp_path / "probe.py"
    script.write_text(_PROBE)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEM0_")}
    clean.update({"HOME": str(tmp_path / "home"), "MEM0_TELEMETRY": "True", **env})
    (tmp_path / "home").mkdir()
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path), mode],
        env=clean,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_telemetry_off_and_nothing_under_home(tmp_path: Path) -> None:
    seen = _probe(tmp_path, "fresh")
    assert seen["lazy"] is True  # importing and constructing the provider imports no mem0
    assert seen["stored"] == "stored"
    assert seen["found"] == ["telemetry probe row"]
    assert seen["flags"] == [False, False]  # MEM0_TELEMETRY=True in the env was overridden
    assert seen["posthog"] is None
    assert seen["oss_client"] is False
    assert seen["network"] == []
    assert not (tmp_path / "home" / ".mem0").exists()
    assert (tmp_path / "m0" / "mem0-home" / "config.json").is_file()
    assert seen["mem0_dir_env"] is None  # MEM0_DIR was set for mem0's import only


def test_telemetry_switched_off_when_mem0_was_imported_first(tmp_path: Path) -> None:
    seen = _probe(tmp_path, "preimported", MEM0_DIR=str(tmp_path / "theirs"))
    assert seen["flags"] == [False, False]
    assert seen["posthog"] == "disabled"  # the client mem0 built at import sends nothing
    assert seen["oss_client"] is False
    assert seen["network"] == []
    assert seen["mem0_dir_env"] == str(tmp_path / "theirs")  # the user's MEM0_DIR is kept
    assert not (tmp_path / "home" / ".mem0").exists()
