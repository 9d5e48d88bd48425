"""The one sync/async rule of Memory Spaces.

Sync methods run their async twin on the service's private event loop: they work from plain
code, from a thread whose own loop is running (a notebook cell), from worker threads (sync
tools) and give the same answer as the async twin. A sync call made on that private loop would
wait for itself forever, so it is refused with a typed error naming the async method.
"""

from __future__ import annotations

import asyncio
import inspect
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from spaces_support import make_spaces

from langgraph_mnemon.adapters.providers.base import BaseProvider
from langgraph_mnemon.errors import MnemonError
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    Capabilities,
    MemoryRecord,
    MemorySpaces,
    ProviderDescriptor,
    SpaceBinding,
    SyncCallOnLoopError,
)


class CallbackProvider(BaseProvider):
    """A provider whose browse calls back into the *sync* API of the service it serves."""

    descriptor = ProviderDescriptor(
        id="callback", label="Calls back", capabilities=Capabilities(search=False, browse=True)
    )

    def __init__(self) -> None:
        self.spaces: MemorySpaces | None = None

    def _browse(self, space: SpaceBinding, request: BrowseRequest) -> list[MemoryRecord]:
        assert self.spaces is not None
        names = [s.name for s in self.spaces.list_spaces()]  # sync, on the service's loop
        return [MemoryRecord(id="1", content=", ".join(names))]


@pytest.fixture
def spaces(tmp_path: Path) -> Any:
    callback = CallbackProvider()
    spaces = make_spaces(tmp_path, [callback])
    callback.spaces = spaces
    try:
        yield spaces
    finally:
        spaces.close()


def test_a_sync_call_on_the_service_loop_is_refused_naming_the_async_method(
    spaces: MemorySpaces,
) -> None:
    spaces.create_space("Calls", provider_id="callback", space_id="calls", active=True)
    with pytest.raises(SyncCallOnLoopError) as info:
        spaces.browse("calls")
    assert isinstance(info.value, MnemonError)
    assert isinstance(info.value, RuntimeError)  # what this refusal always was
    assert info.value.code == "sync-call-on-loop"
    assert "spaces.list_spaces()" in info.value.message
    assert "await spaces.alist_spaces(" in info.value.message
    # Awaited on the caller's own loop, the same callback is a plain sync call from a thread
    # running a loop (like a notebook cell): it works.
    assert [r.content for r in asyncio.run(spaces.abrowse("calls"))] == ["Calls"]
    # The service keeps working after a refusal.
    assert [s.id for s in spaces.list_spaces()] == ["calls"]


def test_sync_calls_work_inside_a_running_loop_and_in_worker_threads(
    spaces: MemorySpaces,
) -> None:
    spaces.remember("The staging database listens on port 5433.", space_id=None)

    async def notebook_cell() -> list[str]:  # a Jupyter cell: this thread runs a loop
        return [r.content for r in spaces.search("staging port").results]

    in_loop = asyncio.run(notebook_cell())
    with ThreadPoolExecutor(max_workers=2) as pool:  # sync tools run in worker threads
        futures = [pool.submit(spaces.search, "staging port") for _ in range(2)]
        in_threads = [f.result() for f in futures]
    from_async = asyncio.run(spaces.asearch("staging port"))
    expected = ["The staging database listens on port 5433."]
    assert in_loop == expected
    assert [[r.content for r in found.results] for found in in_threads] == [expected, expected]
    assert [r.content for r in from_async.results] == expected


def test_every_sync_method_is_the_twin_of_its_async_method() -> None:
    pairs = [
        name
        for name, _ in inspect.getmembers(MemorySpaces, inspect.iscoroutinefunction)
        if name.startswith("a") and hasattr(MemorySpaces, name[1:])
    ]
    assert len(pairs) >= 18
    for async_name in pairs:
        sync = getattr(MemorySpaces, async_name[1:])
        assert not inspect.iscoroutinefunction(sync)
        assert inspect.signature(sync) == inspect.signature(getattr(MemorySpaces, async_name))
        assert async_name in (sync.__doc__ or "")


def test_the_store_facade_follows_the_same_rule(tmp_path: Path) -> None:
    # MnemonStore.batch is the sync twin of abatch on the store's own loop: from a thread or a
    # running loop it works, on that loop it refuses and names the method to await.
    from langgraph_mnemon import Mnemon
    from langgraph_mnemon.errors import SyncCallOnLoopError

    mem = Mnemon.open(tmp_path / "m")
    store = mem.store()
    store.put(("notes",), "k1", {"text": "hello"})

    async def in_a_running_loop() -> Any:
        return store.get(("notes",), "k1")  # the caller's loop is not the store's

    assert asyncio.run(in_a_running_loop()).value == {"text": "hello"}

    async def on_the_store_loop() -> Any:
        return store.get(("notes",), "k1")

    with pytest.raises(SyncCallOnLoopError, match=r"await store\.abatch") as caught:
        store._runner.run(on_the_store_loop(), "aget")
    assert caught.value.code == "sync-call-on-loop"
    assert store.get(("notes",), "k1").value == {"text": "hello"}  # nothing was lost
    mem.close()


def test_closing_the_host_stops_the_store_loop(tmp_path: Path) -> None:
    import threading

    from langgraph_mnemon import Mnemon

    before = set(threading.enumerate())
    mem = Mnemon.open(tmp_path / "m")
    store = mem.store()
    store.put(("notes",), "k1", {"text": "hello"})  # creates the space and opens the database
    opened = set(threading.enumerate())
    store.put(("notes",), "k2", {"text": "world"})
    assert store.get(("notes",), "k1").value == {"text": "hello"}
    assert set(threading.enumerate()) == opened  # sync put/get are plain calls: no new thread
    assert "k1" in [i.key for i in store.search(("notes",), query="hello")]
    started = set(threading.enumerate()) - before
    assert any(t.is_alive() for t in started)  # the host's loop (the sync recall runs on it)
    mem.close()
    for thread in started:
        thread.join(timeout=5)
    assert not any(t.is_alive() for t in started)  # Mnemon.close() leaves no thread behind
    assert store.get(("notes",), "k1").value == {"text": "hello"}  # reopens on use
    mem.close()
