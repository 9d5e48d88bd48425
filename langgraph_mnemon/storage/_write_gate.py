"""One in-process write gate per SQLite database file: this process's writers queue here.

SQLite lets one writer in at a time. Writers of *one process* that meet on SQLite's own lock
wait in its busy handler, which polls with growing sleeps (up to 100 ms) and is not fair: a
thread that has just committed takes the lock again before the sleepers wake. Under heavy
load (tens of thousands of concurrent ``aput`` on worker threads) a sleeper can lose every
round until the busy timeout runs out and fail with "database is locked" although only its
own process was writing.

So every write transaction of every :class:`~langgraph_mnemon.storage.db.Database` on one
file (the host's, a checkpointer's, another host's on the same file) first passes this gate:
first come, first served, handed over at once on release, re-entrant for the owner that holds
it. A writer waits as long as the writers before it make progress; it gives up only when one
holder has kept the gate longer than the busy timeout, and never sooner than 5 s (a
transaction that is stuck: a busy timeout set low to fail fast on *other* processes must not
fail this process's writers because one of them lost the GIL for a moment under load); the
error names that holder. SQLite's busy handler then only ever waits for *other* processes.

Example:
    >>> gate = gate_for("/srv/app/.mnemon/mnemon.db", timeout_ms=5000)
    >>> with gate.held():
    ...     ...  # BEGIN IMMEDIATE ... COMMIT
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Hashable, Iterator
from contextlib import contextmanager

from langgraph_mnemon.errors import StorageError

__all__ = ["WriteGate", "gate_for"]

_GATES: weakref.WeakValueDictionary[str, WriteGate] = weakref.WeakValueDictionary()
_GATES_GUARD = threading.Lock()
_POLL = 0.25  # seconds between checks of the holder's time while waiting
STUCK_FLOOR_MS = 5000
"""The shortest hold of the gate that counts as stuck, whatever the busy timeout."""


class WriteGate:
    """A first-come-first-served, re-entrant lock with a holder that can be named.

    Args:
        path: the database file (for messages).
        timeout_ms: the busy timeout: how long one holder may keep the gate before a waiter
            gives up (at least :data:`STUCK_FLOOR_MS`).
    """

    def __init__(self, path: str, timeout_ms: int) -> None:
        self.path = path
        self.timeout_ms = timeout_ms
        self._cond = threading.Condition(threading.Lock())
        self._waiting: deque[Hashable] = deque()
        self._owner: Hashable | None = None
        self._owner_name = ""
        self._depth = 0
        self._since = 0.0

    @property
    def stuck_after_ms(self) -> int:
        """How long one holder may keep the gate before the waiters give up."""
        return max(self.timeout_ms, STUCK_FLOOR_MS)

    def depth(self, owner: Hashable | None = None) -> int:
        """How many times ``owner`` (the calling thread by default) holds the gate now."""
        owner = threading.get_ident() if owner is None else owner
        with self._cond:
            return self._depth if self._owner == owner else 0

    def acquire(self, owner: Hashable | None = None, *, deadline: float | None = None) -> None:
        """Wait for the gate (first come, first served) and hold it for ``owner``.

        Args:
            owner: who holds it (the calling thread by default; an async caller passes a token
                of its own, since its acquire and release may run on different threads).
            deadline: a ``time.monotonic()`` instant after which to give up in any case.

        Raises:
            StorageError: ``database-locked``: one holder kept the gate longer than the
                timeout, or ``deadline`` passed; the message names the holder.
        """
        owner = threading.get_ident() if owner is None else owner
        with self._cond:
            if self._owner == owner:
                self._depth += 1
                return
            self._waiting.append(owner)
            try:
                while self._owner is not None or self._waiting[0] != owner:
                    self._check_wait(deadline)
                    self._cond.wait(_POLL if deadline is None else min(_POLL, _left(deadline)))
            except BaseException:
                self._waiting.remove(owner)
                self._cond.notify_all()  # the next in line may be free to go now
                raise
            self._waiting.popleft()
            self._owner, self._depth, self._since = owner, 1, time.monotonic()
            self._owner_name = threading.current_thread().name

    def release(self, owner: Hashable | None = None) -> None:
        """Give the gate up once (the last release lets the next waiter in).

        Raises:
            RuntimeError: ``owner`` does not hold the gate (a bug in the caller).
        """
        owner = threading.get_ident() if owner is None else owner
        with self._cond:
            if self._owner != owner:
                raise RuntimeError("WriteGate.release() by an owner that does not hold it")
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._cond.notify_all()

    @contextmanager
    def held(
        self, owner: Hashable | None = None, *, deadline: float | None = None
    ) -> Iterator[None]:
        """Hold the gate for the ``with`` block (see :meth:`acquire`)."""
        self.acquire(owner, deadline=deadline)
        try:
            yield
        finally:
            self.release(owner)

    def __enter__(self) -> WriteGate:
        self.acquire()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()

    def _check_wait(self, deadline: float | None) -> None:
        """Raise when waiting on is pointless (called with the condition held)."""
        now = time.monotonic()
        held_for = now - self._since if self._owner is not None else 0.0
        if self._owner is not None and held_for * 1000 > self.stuck_after_ms:
            raise self._stuck(held_for)
        if deadline is not None and now >= deadline:
            raise StorageError(
                f"the SQLite database {self.path} is being written by this process's own "
                f"writers ({len(self._waiting)} waiting, thread {self._owner_name!r} writing); "
                "the wait ran out; retry; nothing was changed.",
                code="database-locked",
            )

    def _stuck(self, held_for: float) -> StorageError:
        return StorageError(
            f"the SQLite database {self.path} failed: a write transaction of this process "
            f"(thread {self._owner_name!r}) has held its write lock for {held_for:.1f} s, "
            f"longer than {self.stuck_after_ms} ms (the busy timeout "
            "mnemos.sqlite_busy_timeout_ms, at least 5 s); it is stuck or very slow (a nested "
            "write that waits for itself, a long step inside a transaction); retry, or raise "
            "the busy timeout; nothing was changed.",
            code="database-locked",
        )


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.0)


def gate_for(path: str, *, timeout_ms: int) -> WriteGate:
    """The process's gate of the SQLite file ``path`` (one per real path).

    Args:
        path: the database file (resolved through links, so two names of one file share it).
        timeout_ms: the busy timeout; the longest one asked for a file wins.

    Returns:
        The gate, kept alive by the databases that hold it.
    """
    key = os.path.realpath(path)
    with _GATES_GUARD:
        gate = _GATES.get(key)
        if gate is None:
            gate = _GATES[key] = WriteGate(key, timeout_ms)
        else:
            gate.timeout_ms = max(gate.timeout_ms, timeout_ms)
        return gate
