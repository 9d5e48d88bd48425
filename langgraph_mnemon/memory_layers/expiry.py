"""Per-thread state that does not grow for ever: entries expire and the count is capped.

Every per-thread table a long-running host keeps in memory (the review gate's entries, the
Wake delivery state, the server's pending review runs) is an :class:`ExpiringMap`: an entry
unused for ``ttl_seconds`` is dropped, and beyond ``cap`` entries the least recently used go
first. What it drops is a cache or bookkeeping that the next turn rebuilds (from the database
or from the thread's own messages).

Example:
    >>> seen = ExpiringMap(ttl_seconds=3600, cap=2, clock=lambda: 0.0)
    >>> seen["a"], seen["b"], seen["c"] = 1, 2, 3
    >>> list(seen)
    ['b', 'c']
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from langgraph_mnemon.errors import InvalidInputError

__all__ = ["ExpiringMap"]

_K = TypeVar("_K")
_V = TypeVar("_V")


class ExpiringMap(Generic[_K, _V]):
    """A mapping whose entries expire after ``ttl_seconds`` unused, at most ``cap`` of them.

    Reading an entry (:meth:`get`, ``[]``) or writing it counts as a use. Not thread-safe: the
    owner holds its own lock. ``ttl_seconds`` and ``cap`` may be changed at any time (live
    settings); the next write applies them.

    Args:
        ttl_seconds: how long an unused entry is kept.
        cap: the most entries kept (the least recently used are dropped first).
        clock: seconds (default: ``time.monotonic``).

    Raises:
        InvalidInputError: ``ttl_seconds`` not positive or ``cap`` below 1.
    """

    def __init__(
        self, *, ttl_seconds: float, cap: int, clock: Callable[[], float] | None = None
    ) -> None:
        self.ttl_seconds = ttl_seconds
        self.cap = cap
        self._clock = clock or time.monotonic
        self._items: OrderedDict[_K, tuple[float, _V]] = OrderedDict()

    @property
    def ttl_seconds(self) -> float:
        """How long an unused entry is kept."""
        return self._ttl

    @ttl_seconds.setter
    def ttl_seconds(self, value: float) -> None:
        if not value > 0:
            raise InvalidInputError(f"ttl_seconds must be above 0 (got {value!r})")
        self._ttl = float(value)

    @property
    def cap(self) -> int:
        """The most entries kept."""
        return self._cap

    @cap.setter
    def cap(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInputError(f"cap must be an integer of at least 1 (got {value!r})")
        self._cap = value

    def get(self, key: _K, default: _V | None = None) -> _V | None:
        """The entry of ``key`` (now used again), or ``default`` when absent or expired."""
        item = self._items.get(key)
        if item is None:
            return default
        now = self._clock()
        if now - item[0] > self._ttl:
            del self._items[key]
            return default
        self._items[key] = (now, item[1])
        self._items.move_to_end(key)
        return item[1]

    def __getitem__(self, key: _K) -> _V:
        missing = object()
        value = self.get(key, missing)  # type: ignore[arg-type]
        if value is missing:
            raise KeyError(key)
        return value  # type: ignore[return-value]

    def __setitem__(self, key: _K, value: _V) -> None:
        self._items[key] = (self._clock(), value)
        self._items.move_to_end(key)
        self.expire()

    def pop(self, key: _K, default: _V | None = None) -> _V | None:
        """Remove ``key``; its value, or ``default``."""
        item = self._items.pop(key, None)
        return default if item is None else item[1]

    def expire(self) -> int:
        """Drop the expired entries and those beyond the cap; returns how many went."""
        dropped = 0
        limit = self._clock() - self._ttl
        while self._items:
            key, (used, _value) = next(iter(self._items.items()))
            if used >= limit and len(self._items) <= self._cap:
                break
            del self._items[key]
            dropped += 1
        return dropped

    def clear(self) -> None:
        """Drop every entry."""
        self._items.clear()

    def __contains__(self, key: object) -> bool:
        item = self._items.get(key)  # type: ignore[call-overload]
        return item is not None and self._clock() - item[0] <= self._ttl

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[_K]:
        return iter(list(self._items))

    def values(self) -> list[_V]:
        """The values, least recently used first."""
        return [value for _used, value in self._items.values()]
