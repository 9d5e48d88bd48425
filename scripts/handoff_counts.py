"""Thread hand-offs around one recall, counted: executor submissions and event-loop hand-offs.

A host with one native Memory Space and one store namespace (two spaces, so a federated search
uses the pool); each path is called once to warm up, then once counted. Prints a Markdown table.
``tests/test_thread_handoffs.py`` asserts the one-space counts at the provider boundary.

    python scripts/handoff_counts.py
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph_mnemon import Mnemon

_count = {"n": 0}
_submit = concurrent.futures.ThreadPoolExecutor.submit
_threadsafe = asyncio.run_coroutine_threadsafe


def _counted_submit(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
    _count["n"] += 1
    return _submit(self, fn, *args, **kwargs)


def _counted_threadsafe(coro: Any, loop: Any) -> Any:
    _count["n"] += 1
    return _threadsafe(coro, loop)


def _measure(label: str, call: Callable[[], Any]) -> None:
    call()
    _count["n"] = 0
    call()
    print(f"| {label} | {_count['n']} |")


def main() -> None:
    concurrent.futures.ThreadPoolExecutor.submit = _counted_submit  # type: ignore[method-assign]
    asyncio.run_coroutine_threadsafe = _counted_threadsafe  # type: ignore[assignment]
    question = "which port does staging use?"
    with tempfile.TemporaryDirectory() as root, Mnemon.open(root) as mem:
        mem.spaces.remember("The staging database is db-stage-2 on port 5433.")
        store = mem.store()
        store.put(("notes",), "k1", {"text": "the release train leaves on Fridays"})
        print("| recall path (two spaces) | thread hand-offs |\n|---|---:|")
        _measure("spaces.search (sync)", lambda: mem.spaces.search(question))
        _measure("spaces.asearch (async)", lambda: asyncio.run(mem.spaces.asearch(question)))
        _measure("store.search (sync)", lambda: store.search(("notes",), query="release"))
        _measure(
            "store.asearch (async)",
            lambda: asyncio.run(store.asearch(("notes",), query="release")),
        )


if __name__ == "__main__":
    main()
