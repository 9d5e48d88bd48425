"""The plugin behind ``scripts/langgraph_store_suites.py`` stands our store in for the peers.

LangGraph's suites themselves are read from a LangGraph checkout by the script (they are not in
this repository); these tests check that what the suites construct is really ``mem.store()``
on a fresh host, that their options reach it, and that the host is closed with the context.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from langgraph_mnemon.store import MnemonStore
from langgraph_mnemon.testing import langgraph_suites


def test_open_store_gives_a_fresh_host_each_time(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MNEMON_SUITE_ROOTS", str(tmp_path))
    first = langgraph_suites.open_store(":memory:")
    second = langgraph_suites.open_store(str(tmp_path / "peer.db"))
    try:
        assert isinstance(first, MnemonStore)
        assert isinstance(second, MnemonStore)
        first.put(("docs",), "k", {"text": "only in the first"})
        assert second.get(("docs",), "k") is None
        assert first.get(("docs",), "k").value == {"text": "only in the first"}
        assert len(list(tmp_path.iterdir())) == 2
    finally:
        langgraph_suites.close_all()
    assert list(tmp_path.iterdir()) == []


def test_the_peers_constructors_open_our_store(tmp_path: Path) -> None:
    # In a child process: the plugin patches LangGraph's classes for the whole interpreter.
    script = textwrap.dedent(
        """
        import asyncio, os
        from langgraph_mnemon.testing.langgraph_suites import store_in_place
        store_in_place()
        from langgraph.store.sqlite import SqliteStore
        from langgraph.store.sqlite.aio import AsyncSqliteStore
        from langgraph.store.memory import InMemoryStore

        with SqliteStore.from_conn_string(":memory:") as store:
            store.setup()
            store.put(("a",), "k", {"v": 1})
            print(type(store).__name__, store.get(("a",), "k").value)
        roots = os.listdir(os.environ["MNEMON_SUITE_ROOTS"])
        print("after close", len(roots))

        async def main():
            async with AsyncSqliteStore.from_conn_string(":memory:") as store:
                await store.setup()
                await store.aput(("a",), "k", {"v": 2})
                print(type(store).__name__, (await store.aget(("a",), "k")).value)

        asyncio.run(main())
        print(type(InMemoryStore()).__name__)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "MNEMON_SUITE_ROOTS": str(tmp_path)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:4] == [
        "MnemonStore {'v': 1}",
        "after close 0",
        "MnemonStore {'v': 2}",
        "MnemonStore",
    ]


def test_setup_is_callable_and_awaitable(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MNEMON_SUITE_ROOTS", str(tmp_path))
    store = langgraph_suites.open_store(":memory:")
    try:
        assert asyncio.run(_await(store.setup())) is None
    finally:
        langgraph_suites.close_all()


async def _await(awaitable: object) -> object:
    return await awaitable  # type: ignore[misc]
