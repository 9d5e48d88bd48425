"""LangGraph's ``test_large_batches_async`` workload, for the race test and the benchmark.

Example:
    >>> results = asyncio.run(large_batches(mem.store(), n=100, m=10))  # doctest: +SKIP
    >>> [r for r in results if isinstance(r, Exception)]
    []
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["large_batches"]


async def large_batches(store: Any, n: int, m: int) -> list[object]:
    """Run ``6 * n * m`` concurrent ops (put, get, list namespaces, search, put, delete) on a
    ``BaseStore``; exceptions are returned in the list, not raised.

    Args:
        store: any LangGraph ``BaseStore`` with the async methods.
        n: keys per round.
        m: rounds (namespaces alternate between two; ``max_depth`` grows per round).

    Returns:
        One result (or exception) per op, in submission order.
    """
    coros = []
    for round_ in range(m):
        for i in range(n):
            namespace = ("test", "foo", "bar", "baz", str(round_ % 2))
            coros += [
                store.aput(namespace, f"key{i}", value={"foo": f"bar{i}"}),
                store.aget(namespace, f"key{i}"),
                store.alist_namespaces(prefix=None, max_depth=round_ + 1),
                store.asearch(("test",)),
                store.aput(namespace, f"key{i}", value={"foo": f"bar{i}"}),
                store.adelete(namespace, f"key{i}"),
            ]
    return await asyncio.gather(*coros, return_exceptions=True)
