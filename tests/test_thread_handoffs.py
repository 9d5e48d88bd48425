"""Thread hand-offs per recall, counted (issue 32's measure).

A hand-off is a provider call that runs in a thread other than the caller's. Every provider
here records ``threading.get_ident()`` where the host calls it (the ``MemoryProvider``
contract's boundary), so the count does not depend on what a provider does inside.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from spaces_support import make_spaces

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.providers.base import unsupported
from langgraph_mnemon.memory_layers.spaces import (
    Capabilities,
    MemoryProvider,
    MemoryRecord,
    MemorySpaces,
    ProviderDescriptor,
    ProviderSearchRequest,
    ProviderSearchResult,
    ProviderStatus,
    SpaceBinding,
)
from langgraph_mnemon.memory_layers.turns import TurnRetrieval


class Recording:
    """A synchronous provider (the ``MemoryProvider`` contract, nothing more) that answers
    every search with one row and records the thread of each call. ``runs_inline`` says its
    calls bound themselves (as the native provider's in-process SQL does)."""

    def __init__(self, provider_id: str = "recording", *, runs_inline: bool = True) -> None:
        self.runs_inline = runs_inline
        self.descriptor = ProviderDescriptor(
            id=provider_id,
            label="Recording",
            capabilities=Capabilities(search=True, remember=False),
            score_semantics="normalized",
        )
        self.threads: list[int] = []

    def check_config(self, config: Mapping[str, Any], secrets: Mapping[str, str]) -> dict:
        return dict(config)

    def place(self, space_id: str, config: dict[str, Any]) -> dict[str, Any]:
        return dict(config)

    def status(self, space: SpaceBinding) -> ProviderStatus:
        self.threads.append(threading.get_ident())
        return ProviderStatus(healthy=True)

    def search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        self.threads.append(threading.get_ident())
        row = MemoryRecord(id=f"{space.id}-1", content=f"deploy notes of {space.id}", score=0.9)
        return ProviderSearchResult(results=[row])

    def browse(self, space: SpaceBinding, request: Any) -> list[MemoryRecord]:
        return []

    def graph(self, space: SpaceBinding, limit: int = 200) -> Any:
        raise unsupported(self.descriptor.id, "this operation")  # declares search only

    def remember(self, space: SpaceBinding, item: Any) -> dict[str, Any]:
        raise unsupported(self.descriptor.id, "this operation")  # declares search only

    def remember_many(self, space: SpaceBinding, items: Sequence[Any]) -> list[dict[str, Any]]:
        raise unsupported(self.descriptor.id, "this operation")  # declares search only

    def related(self, space: SpaceBinding, request: Any) -> list[MemoryRecord]:
        return []

    def link(self, space: SpaceBinding, request: Any) -> dict[str, Any]:
        raise unsupported(self.descriptor.id, "this operation")  # declares search only

    def forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        raise unsupported(self.descriptor.id, "this operation")  # declares search only

    def discover(self, config: Mapping[str, Any], secrets: Mapping[str, str]) -> list[Any]:
        return []


def _handoffs(threads: list[int], caller: int) -> int:
    return sum(1 for ident in threads if ident != caller)


def _spaces_with(
    root: Path, count: int, *, runs_inline: bool = True
) -> tuple[MemorySpaces, Recording]:
    recording = Recording(runs_inline=runs_inline)
    spaces = make_spaces(root, [recording])
    for n in range(count):
        spaces.create_space(f"S{n}", provider_id="recording", space_id=f"s{n}", active=True)
    return spaces, recording


@pytest.fixture
def one_space(tmp_path: Path) -> Iterator[tuple[MemorySpaces, Recording]]:
    spaces, recording = _spaces_with(tmp_path, 1)
    yield spaces, recording
    spaces.close()


def test_the_recording_provider_meets_the_contract() -> None:
    assert isinstance(Recording(), MemoryProvider)


def test_a_sync_search_over_one_space_makes_no_handoff(
    one_space: tuple[MemorySpaces, Recording],
) -> None:
    spaces, recording = one_space
    found = spaces.search("deploy notes", mode="basic")
    assert [r.space_id for r in found.results] == ["s0"]
    assert len(recording.threads) == 1
    assert _handoffs(recording.threads, threading.get_ident()) == 0


def test_one_space_of_a_provider_that_does_not_bound_itself_goes_to_the_pool(
    tmp_path: Path,
) -> None:
    """Without ``runs_inline`` the provider timeout must hold, so the call runs on the pool."""
    spaces, recording = _spaces_with(tmp_path, 1, runs_inline=False)
    try:
        found = spaces.search("deploy notes", mode="basic")
        assert [r.space_id for r in found.results] == ["s0"]
        assert _handoffs(recording.threads, threading.get_ident()) == 1
    finally:
        spaces.close()


def test_an_async_search_over_one_space_makes_exactly_one_handoff(
    one_space: tuple[MemorySpaces, Recording],
) -> None:
    spaces, recording = one_space

    async def caller() -> int:
        await spaces.asearch("deploy notes", mode="basic")
        return threading.get_ident()

    loop_thread = asyncio.run(caller())
    assert len(recording.threads) == 1
    assert _handoffs(recording.threads, loop_thread) == 1


def test_a_sync_search_over_several_spaces_uses_the_bounded_pool(tmp_path: Path) -> None:
    spaces, recording = _spaces_with(tmp_path, 12)
    try:
        for _ in range(3):
            recording.threads.clear()
            found = spaces.search("deploy notes", mode="basic", limit=20)
            assert len(found.sources) == 12
            assert {s.status for s in found.sources} == {"ready"}
            assert len(recording.threads) == 12  # one call per space, no more
            assert _handoffs(recording.threads, threading.get_ident()) <= 12
            assert len(set(recording.threads)) <= spaces._calls.max_workers
            assert threading.get_ident() not in recording.threads
    finally:
        spaces.close()


def test_health_probes_several_providers_on_the_pool(tmp_path: Path) -> None:
    first, second = Recording("rec-a"), Recording("rec-b")
    spaces = make_spaces(tmp_path, [first, second])
    try:
        report = spaces.health(max_age=0)
        assert {p.id: p.state for p in report.providers}["rec-a"] == "healthy"
        probed = first.threads + second.threads
        assert len(probed) == 2
        assert (
            _handoffs(probed, threading.get_ident()) == 2
        )  # three providers (the native one too): on the pool
    finally:
        spaces.close()


def _native_search_threads(mem: Mnemon) -> list[int]:
    """Record the thread of every search call the host makes on its native provider."""
    provider = mem.spaces.provider("mnemos")
    threads: list[int] = []
    search = provider.search

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return search(*args, **kwargs)

    provider.search = recording  # type: ignore[method-assign]
    return threads


def test_a_sync_store_search_makes_no_handoff(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "m")
    try:
        store = mem.store()
        store.put(("notes",), "k1", {"text": "Deploys need two approvals."})
        threads = _native_search_threads(mem)
        found = store.search(("notes",), query="deploy approvals")
        assert [i.key for i in found] == ["k1"]
        assert len(threads) == 1  # one provider search for one query search
        assert _handoffs(threads, threading.get_ident()) == 0
    finally:
        mem.close()


def test_recall_through_the_turn_path_makes_a_counted_number_of_handoffs(
    tmp_path: Path,
) -> None:
    mem = Mnemon.open(tmp_path / "m")
    try:
        mem.spaces.remember("Deploys need two approvals.")
        grant = [s.id for s in mem.spaces.list_spaces(active=True)]
        threads = _native_search_threads(mem)
        # Sync (a sync tool, ``mnemon_recall``): the provider runs in the caller's thread.
        evidence = TurnRetrieval(grant).recall(mem.spaces, "deploy approvals")
        assert evidence.status == "searched"
        assert len(threads) == 1
        assert _handoffs(threads, threading.get_ident()) == 0
        threads.clear()

        # Async (the recall graph's node): exactly one hand-off, at the turn's edge.
        async def node() -> tuple[int, Any]:
            found = await TurnRetrieval(grant).arecall(mem.spaces, "deploy approvals")
            return threading.get_ident(), found

        loop_thread, evidence = asyncio.run(node())
        assert evidence.status == "searched"
        assert len(threads) == 1
        assert _handoffs(threads, loop_thread) == 1  # the recall ran in one worker thread
    finally:
        mem.close()
