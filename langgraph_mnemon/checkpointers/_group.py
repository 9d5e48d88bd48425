"""Group commit of the hot SQLite writes (put / put_writes) of one engine.

LangGraph saves a step's writes and its checkpoints from background threads, so calls arrive
while another is committing. With ``synchronous=FULL`` every commit waits for an fsync of the
WAL (the same count SqliteSaver pays, and the cost is the flush latency, not the bytes). The
calls that queue up during a commit therefore go into the next transaction together: one
commit, one fsync, and every caller returns only after the commit holding its rows is durable,
so each call is as durable as its own transaction would be. A call that arrives alone runs at
once (nobody waits to form a batch). If a batched transaction fails, it is rolled back and each
call runs again in a transaction of its own, so a caller sees exactly its own error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy.engine import Connection

__all__ = ["GroupCommit"]


class _Job:
    __slots__ = ("args", "done", "error", "fn")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn = fn
        self.args = args
        self.done = False
        self.error: BaseException | None = None


class GroupCommit:
    """Runs write jobs ``fn(conn, *args)`` so that jobs queued during a commit share the next.

    Args:
        write: opens a write transaction (``Database.write``), committing on success.
        lock: the engine's in-process write lock, held around each transaction.

    Example:
        >>> group = GroupCommit(db.write, sqlite_write_lock(db.engine))
        >>> group.run(_ops.put_writes, statements, rows, False)
    """

    def __init__(
        self,
        write: Callable[[], AbstractContextManager[Connection]],
        lock: AbstractContextManager[Any],
    ) -> None:
        self._write = write
        self._lock = lock
        self._cond = threading.Condition()
        self._queue: list[_Job] = []
        self._leading = False

    def run(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(conn, *args)`` in a committed write transaction, maybe shared.

        Args:
            fn: the job; it must only write through ``conn`` (it may run on another thread).
            *args: its arguments after the connection.

        Returns:
            None, once the transaction holding the job's writes has committed.

        Raises:
            Exception: whatever ``fn`` or the commit raised for this job.
        """
        job = _Job(fn, args)
        with self._cond:
            self._queue.append(job)
            while self._leading and not job.done:
                self._cond.wait()
            if not job.done:  # nobody is committing: lead with everything queued
                self._leading = True
                batch, self._queue = self._queue, []
                if not any(queued is job for queued in batch):
                    batch.insert(0, job)  # its batch failed while another thread led it
        if not job.done:
            try:
                self._commit(batch)
            finally:
                with self._cond:
                    self._leading = False
                    self._cond.notify_all()
        if job.error is not None:
            raise job.error

    def _commit(self, batch: list[_Job]) -> None:
        if len(batch) > 1:
            try:
                with self._lock, self._write() as conn:
                    for job in batch:
                        job.fn(conn, *job.args)
            except Exception:  # rolled back: each job runs again alone, for its own error
                pass
            else:
                for job in batch:
                    job.done = True
                return
        for job in batch:
            try:
                with self._lock, self._write() as conn:
                    job.fn(conn, *job.args)
            except BaseException as exc:  # handed to the job's caller
                job.error = exc
            finally:
                job.done = True
