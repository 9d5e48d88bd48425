"""One provider contract suite, run against every provider on its real backend.

Backends: the native ``mnemos`` provider on SQLite and on a real PostgreSQL, ``chroma`` with a
local persistent folder and against a real ``chroma run`` server, and ``store`` over a LangGraph
``InMemoryStore``. All calls go through ``MemorySpaces`` (the host path).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore
from spaces_support import hashing, sqlite_database, unique_id

from langgraph_mnemon.adapters.providers.chroma import ChromaProvider
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.adapters.providers.store import StoreProvider
from langgraph_mnemon.errors import InvalidInputError, NotFoundError, ProviderError
from langgraph_mnemon.memory_layers.spaces import MemorySpaces
from langgraph_mnemon.storage.db import Database, create_engine

BACKENDS = ["mnemos-sqlite", "mnemos-postgres", "chroma-local", "chroma-server", "store-memory"]

FACTS = [
    "The staging database runs on port 5433 behind pgbouncer.",
    "Alice prefers short answers with code examples first.",
    "Deploys are frozen on Fridays after 16:00 UTC.",
]


@dataclass
class Env:
    spaces: MemorySpaces
    provider_id: str
    space_id: str
    normalized: bool


@pytest.fixture(params=BACKENDS)
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Env]:
    kind: str = request.param
    if kind == "mnemos-postgres":
        database = Database(create_engine(request.getfixturevalue("postgres_url")))
    else:
        database = sqlite_database(tmp_path)
    native = MnemosProvider(database, embedder=hashing())
    extra = []
    if kind == "chroma-local":
        extra.append(ChromaProvider(hashing(), path=tmp_path / "chroma"))
    elif kind == "chroma-server":
        host, port = request.getfixturevalue("chroma_server")
        extra.append(ChromaProvider(hashing(), host=host, port=port))
    elif kind == "store-memory":
        extra.append(StoreProvider(InMemoryStore()))
    spaces = MemorySpaces(database, root=tmp_path, providers=[native, *extra])
    provider_id = kind.split("-")[0]
    space_id = unique_id(provider_id)
    spaces.create_space("Contract space", provider_id=provider_id, space_id=space_id)
    yield Env(spaces, provider_id, space_id, normalized=provider_id != "store")
    spaces.close()
    database.dispose()


def _contents(env: Env) -> list[str]:
    return sorted(r.content for r in env.spaces.browse(env.space_id, limit=500))


def test_remember_commits_activates_and_reports_the_id(env: Env) -> None:
    assert env.spaces.get_space(env.space_id).active is False
    receipt = env.spaces.remember(FACTS[0], space_id=env.space_id, metadata={"turn": "D1:3"})
    assert receipt.committed
    assert receipt.completion == "committed"
    assert receipt.id
    assert receipt.revision == receipt.id
    assert receipt.activated is True
    assert env.spaces.get_space(env.space_id).active is True
    second = env.spaces.remember(FACTS[1], space_id=env.space_id)
    assert second.committed
    assert second.activated is False


def test_search_finds_the_written_memory_with_scores_kept(env: Env) -> None:
    receipts = env.spaces.remember_many([{"content": f} for f in FACTS], space_id=env.space_id)
    assert [r.status for r in receipts] == ["committed"] * 3
    assert len({r.id for r in receipts}) == 3
    result = env.spaces.search("which port does the staging database use", limit=5)
    assert result.results, result
    top = result.results[0]
    assert top.content == FACTS[0]
    assert top.id == receipts[0].id
    assert top.space_id == env.space_id
    assert top.provider_id == env.provider_id
    assert "search" in (top.capabilities or [])
    if env.normalized:
        assert top.score is not None
        assert 0 < top.score <= 1
        assert top.normalized_score == top.score
        assert top.relevance_tier in ("high", "medium")
    else:
        assert top.relevance_tier == "unknown"
        assert top.normalized_score is None
    source = next(s for s in result.sources if s.space_id == env.space_id)
    assert source.status == "ready"
    assert source.quality is not None
    assert source.quality.fetched >= 1
    assert source.quality.selected == len(result.results)


def test_keyword_mode_and_metadata_round_trip(env: Env) -> None:
    env.spaces.remember(FACTS[2], space_id=env.space_id, metadata={"dia_id": "D2:7", "n": 3})
    env.spaces.remember(FACTS[1], space_id=env.space_id)
    result = env.spaces.search("Fridays deploys", mode="keyword", space_ids=[env.space_id])
    assert result.results[0].content == FACTS[2]
    assert result.results[0].metadata == {"dia_id": "D2:7", "n": 3}


def test_browse_lists_every_memory(env: Env) -> None:
    env.spaces.remember_many([{"content": f} for f in FACTS], space_id=env.space_id)
    assert _contents(env) == sorted(FACTS)
    assert len(env.spaces.browse(env.space_id, limit=2)) == 2


def test_forget_removes_from_search_and_unknown_ids_are_not_found(env: Env) -> None:
    receipts = env.spaces.remember_many([{"content": f} for f in FACTS], space_id=env.space_id)
    gone = env.spaces.forget(receipts[0].id, space_id=env.space_id)
    assert gone.committed
    assert gone.id == receipts[0].id
    result = env.spaces.search("staging database port", space_ids=[env.space_id])
    assert all(r.id != receipts[0].id for r in result.results)
    assert FACTS[0] not in _contents(env)
    with pytest.raises(NotFoundError):
        env.spaces.forget(receipts[0].id, space_id=env.space_id)
    with pytest.raises(NotFoundError):
        env.spaces.forget("no-such-memory", space_id=env.space_id)


def test_unsupported_operations_are_rejected_before_any_io(env: Env) -> None:
    first = env.spaces.remember(FACTS[0], space_id=env.space_id)
    second = env.spaces.remember(FACTS[1], space_id=env.space_id)
    caps = env.spaces.get_space(env.space_id).capabilities
    operations = {
        "related": lambda: env.spaces.related(first.id, space_id=env.space_id),
        "link": lambda: env.spaces.link(first.id, second.id, space_id=env.space_id),
        "graph": lambda: env.spaces.graph(env.space_id),
    }
    for name, call in operations.items():
        if name in caps:
            call()
            continue
        with pytest.raises(ProviderError) as info:
            call()
        assert info.value.code == "unsupported"
        assert "does not support" in str(info.value)
    assert _contents(env) == sorted(FACTS[:2])


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"content": "   "}, "content must not be empty"),
        ({"content": "x", "category": "gossip"}, "category must be one of"),
        ({"content": "x", "importance": 9}, "importance must be an integer between 1 and 5"),
        ({"content": "x", "tags": ["t"] * 0 + [f"t{i}" for i in range(21)]}, "at most 20"),
        ({"content": "x", "metadata": {"nested": {"a": 1}}}, "must be a string, number"),
        ({"content": "x", "source": "robot"}, "source must be one of"),
    ],
)
def test_bad_input_raises_typed_errors_and_writes_nothing(
    env: Env, kwargs: dict, fragment: str
) -> None:
    env.spaces.remember(FACTS[0], space_id=env.space_id)
    with pytest.raises(InvalidInputError, match=fragment):
        env.spaces.remember(space_id=env.space_id, **kwargs)
    with pytest.raises(InvalidInputError, match=r"items\[1\]"):
        env.spaces.remember_many(
            [{"content": FACTS[1]}, kwargs, {"content": FACTS[2]}], space_id=env.space_id
        )
    assert _contents(env) == [FACTS[0]]


def test_status_counts_live_memories(env: Env) -> None:
    receipts = env.spaces.remember_many([{"content": f} for f in FACTS], space_id=env.space_id)
    env.spaces.forget(receipts[1].id, space_id=env.space_id)
    status = env.spaces.status()
    health = next(h for h in status.spaces if h.space.id == env.space_id)
    assert health.status.healthy is True
    assert health.status.total_insights == 2


def test_async_twins_share_the_code_path(env: Env) -> None:
    async def scenario() -> tuple[str, list[str]]:
        receipt = await env.spaces.aremember(FACTS[1], space_id=env.space_id)
        await env.spaces.aremember_many([{"content": FACTS[0]}], space_id=env.space_id)
        found = await env.spaces.asearch("Alice short answers code examples")
        rows = await env.spaces.abrowse(env.space_id)
        assert receipt.committed
        return found.results[0].content, sorted(r.content for r in rows)

    top, rows = asyncio.run(scenario())
    assert top == FACTS[1]
    assert rows == sorted(FACTS[:2])
