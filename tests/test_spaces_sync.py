"""The one sync/async rule of Memory Spaces and the store facade.

The services are synchronous inside; every ``aX`` method is ``X`` run in a worker thread with
``asyncio.to_thread``. So a sync call works anywhere (plain code, a thread whose own loop runs,
worker threads, a provider calling back into the service) and an async call never blocks its
caller's loop.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from spaces_support import make_spaces

from langgraph_mnemon.adapters.providers.base import BaseProvider
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    Capabilities,
    MemoryRecord,
    MemorySpaces,
    ProviderDescriptor,
    SpaceBinding,
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
        names = [s.name for s in self.spaces.list_spaces()]  # a sync call back into the service
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


def test_a_provider_calling_back_into_the_sync_api_does_not_deadlock(
    spaces: MemorySpaces,
) -> None:
    spaces.create_space("Calls", provider_id="callback", space_id="calls", active=True)
    done: list[list[str]] = []
    # In a thread of its own, so a deadlock fails the test instead of hanging it.
    worker = threading.Thread(
        target=lambda: done.append([r.content for r in spaces.browse("calls")]), daemon=True
    )
    worker.start()
    worker.join(timeout=20)
    assert done == [["Calls"]]
    assert [r.content for r in asyncio.run(spaces.abrowse("calls"))] == ["Calls"]
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


def test_async_methods_run_the_sync_method_in_a_worker_thread(
    spaces: MemorySpaces, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    search = MemorySpaces.search

    def recording(self: MemorySpaces, *args: Any, **kwargs: Any) -> Any:
        seen.append(threading.get_ident())
        return search(self, *args, **kwargs)

    monkeypatch.setattr(MemorySpaces, "search", recording)

    async def caller() -> tuple[int, Any, Any]:
        receipt = await spaces.aremember("Deploys need two approvals.")
        found = await spaces.asearch("deploy approvals")
        return threading.get_ident(), receipt, found

    loop_thread, receipt, found = asyncio.run(caller())
    assert receipt.status == "committed"
    assert [r.content for r in found.results] == ["Deploys need two approvals."]
    assert len(seen) == 1
    assert seen[0] != loop_thread  # asearch = search in a worker thread


def test_every_async_method_is_its_sync_method_in_a_thread() -> None:
    pairs = [
        name
        for name, _ in inspect.getmembers(MemorySpaces, inspect.iscoroutinefunction)
        if name.startswith("a") and hasattr(MemorySpaces, name[1:])
    ]
    assert len(pairs) >= 24
    for async_name in pairs:
        sync = getattr(MemorySpaces, async_name[1:])
        assert not inspect.iscoroutinefunction(sync)
        assert inspect.signature(sync) == inspect.signature(getattr(MemorySpaces, async_name))
        doc = getattr(MemorySpaces, async_name).__doc__ or ""
        assert f":meth:`{async_name[1:]}`" in doc


def test_the_store_facade_follows_the_same_rule(tmp_path: Path) -> None:
    from langgraph_mnemon import Mnemon

    mem = Mnemon.open(tmp_path / "m")
    try:
        store = mem.store()
        store.put(("notes",), "k1", {"text": "hello"})

        async def in_a_running_loop() -> Any:
            return store.get(("notes",), "k1"), [
                i.key for i in store.search(("notes",), query="hello")
            ]

        got, keys = asyncio.run(in_a_running_loop())
        assert got.value == {"text": "hello"}
        assert keys == ["k1"]

        async def awaited() -> Any:
            await store.aput(("notes",), "k2", {"text": "world"})
            return await store.aget(("notes",), "k2"), await store.asearch(
                ("notes",), query="world"
            )

        item, found = asyncio.run(awaited())
        assert item.value == {"text": "world"}
        assert [i.key for i in found][:1] == ["k2"]
    finally:
        mem.close()


def test_closing_the_host_leaves_no_thread_behind(tmp_path: Path) -> None:
    from langgraph_mnemon import Mnemon

    before = set(threading.enumerate())
    mem = Mnemon.open(tmp_path / "m")
    store = mem.store()
    store.put(("notes",), "k1", {"text": "hello"})  # creates the space and opens the database
    opened = set(threading.enumerate())
    store.put(("notes",), "k2", {"text": "world"})
    assert store.get(("notes",), "k1").value == {"text": "hello"}
    assert "k1" in [i.key for i in store.search(("notes",), query="hello")]
    assert set(threading.enumerate()) == opened  # sync put/get/search: no new thread
    mem.close()
    started = set(threading.enumerate()) - before
    for thread in started:
        thread.join(timeout=5)
    assert not any(t.is_alive() for t in started)  # Mnemon.close() leaves no thread behind
    assert store.get(("notes",), "k1").value == {"text": "hello"}  # reopens on use
    mem.close()
