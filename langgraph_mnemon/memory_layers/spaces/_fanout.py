"""Provider calls of Memory Spaces: inline in the caller's thread, or fanned out on one pool.

The service is synchronous inside. A call to one space runs in the caller's thread (no
hand-off); a call to several spaces (federated search, health probes, status) runs on the
service's one bounded :class:`~concurrent.futures.ThreadPoolExecutor`, and the caller waits at
most the provider timeout for the lot. A provider still written with ``async def`` hooks works
everywhere: its coroutine is run to completion by :func:`~._models.settle`, bounded by the
same timeout. Each pooled call runs in a copy of the caller's context variables, so the
kernel's trigger travels with it.

A provider that does not answer in time becomes a :class:`TimeoutError` for the caller (the
caller turns it into its usual degraded answer); a sync provider that hangs keeps its pool
thread until it returns, which is why remote providers bound their own clients too.

Example:
    >>> calls = ProviderCalls(max_workers=4)
    >>> calls.run([lambda: 1, lambda: 2], timeout=1.0)
    [1, 2]
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from langgraph_mnemon.memory_layers.spaces._models import settle

__all__ = ["ProviderCalls", "call_bounded"]

_T = TypeVar("_T")
_MAX_WORKERS = 8
_pooled = threading.local()  # set in the pool's threads: a nested fan-out runs inline there


def call_bounded(call: Callable[[], Any], timeout: float | None) -> Any:
    """Run ``call`` in this thread; an awaitable it returns is settled within ``timeout``.

    Raises:
        TimeoutError: an async hook gave no answer within ``timeout`` seconds.
        Exception: whatever the provider raised.
    """
    value = call()
    if timeout is None or not asyncio.iscoroutine(value):
        return settle(value)
    return settle(asyncio.wait_for(value, timeout=timeout))


def _in_pool(call: Callable[[], Any], timeout: float | None) -> Any:
    _pooled.active = True
    return call_bounded(call, timeout)


class ProviderCalls:
    """The service's bounded pool for provider calls to several spaces at once.

    The pool starts on first use and again after :meth:`close`; a scope's view shares it.

    Args:
        max_workers: Threads at most (default 8).
        name: Prefix of the pool threads' names.
    """

    def __init__(self, max_workers: int = _MAX_WORKERS, name: str = "mnemon-spaces") -> None:
        self.max_workers = max(1, int(max_workers))
        self._name = name
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.max_workers, thread_name_prefix=self._name)
            return self._pool

    def run(
        self, calls: Sequence[Callable[[], _T]], timeout: float, *, inline: bool | None = None
    ) -> list[_T | BaseException]:
        """Run every call, each bounded by ``timeout`` seconds; results in order.

        One call runs inline in the caller's thread (``inline=False`` sends it to the pool
        all the same: a management probe that must not hang its caller). Several go to the
        pool (each in a copy of the caller's context) and the caller waits at most ``timeout``
        for all of them; from a pool thread (a provider fanning out again) they run inline one
        after the other, so a nested fan-out never waits for a free thread of its own pool.

        Returns:
            Each call's value, or the exception it raised (a :class:`TimeoutError` for one
            that did not answer in time).
        """
        if inline is None:
            inline = len(calls) <= 1
        if inline or getattr(_pooled, "active", False):
            return [self._inline(call, timeout) for call in calls]
        pool = self._executor()
        futures: list[Future[_T]] = [
            pool.submit(contextvars.copy_context().run, _in_pool, call, timeout) for call in calls
        ]
        deadline = time.monotonic() + timeout
        out: list[_T | BaseException] = []
        for future in futures:
            try:
                out.append(future.result(timeout=max(0.0, deadline - time.monotonic())))
            except FutureTimeout:
                future.cancel()  # not started yet: it never runs
                out.append(TimeoutError())
            except Exception as exc:  # the provider's failure is the caller's answer
                out.append(exc)
        return out

    @staticmethod
    def _inline(call: Callable[[], _T], timeout: float) -> _T | BaseException:
        try:
            return call_bounded(call, timeout)
        except Exception as exc:
            return exc

    def close(self) -> None:
        """Stop the pool (running calls finish in the background; a later call restarts it)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
