"""Results a sync method returns that async code may also ``await``.

``MnemonStore`` is one store for sync and async code, while LangGraph's SQL stores come in a
sync and an async class whose ``setup``, ``sweep_ttl``, ``start_ttl_sweeper`` and
``stop_ttl_sweeper`` have the same names. The store's methods do their work at once and return
these values, so both ``store.sweep_ttl()`` and ``await store.sweep_ttl()`` work unchanged.
"""

from __future__ import annotations

from collections.abc import Generator
from concurrent.futures import Future
from typing import Any, Self

__all__ = ["Done", "DoneCount", "RunningFuture"]


class Done:
    """Nothing (the work is done); awaiting it gives ``None``."""

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # a generator that finishes at once


class DoneCount(int):
    """A count (or a flag, 0 / 1) of work already done; awaiting it gives the count."""

    def __await__(self) -> Generator[Any, None, Self]:
        return self
        yield  # a generator that finishes at once


class RunningFuture(Future[None]):
    """A future of background work that has started; awaiting it gives the future itself
    (as awaiting ``AsyncSqliteStore.start_ttl_sweeper()`` gives its task)."""

    def __await__(self) -> Generator[Any, None, Self]:
        return self
        yield  # a generator that finishes at once
