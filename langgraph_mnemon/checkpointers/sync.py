"""``MnemosSaver``: the LangGraph checkpointer on the Mnemos SQL store (sync engine)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from sqlalchemy.engine import Engine

import langgraph_mnemon.checkpointers._ops as _ops
from langgraph_mnemon.checkpointers._group import GroupCommit
from langgraph_mnemon.checkpointers._sql import statements
from langgraph_mnemon.checkpointers.base import (
    LIST_PAGE_SIZE,
    SINGLE_STATEMENT_WRITES,
    MnemosSaverBase,
    sqlite_write_lock,
)
from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.mnemos import MIGRATIONS
from langgraph_mnemon.storage.db import (
    Database,
    create_engine,
    ensure_sqlite_directory,
)

__all__ = ["MnemosSaver"]


class MnemosSaver(MnemosSaverBase):
    """A LangGraph checkpointer that stores checkpoints in the Mnemos database.

    SQLite (WAL) by default, PostgreSQL through psycopg 3, one schema. Only the channels that
    changed are stored (by version); a growing message list is stored element by element.
    Every checkpoint is also a CheckpointNode of its thread's task, so
    ``Mnemon.mnemos.resume(thread_id)`` works from the same record LangGraph resumes from.

    Sync methods use a sync engine; the ``a*`` methods run the same code in a worker thread
    (never blocking the event loop). For native async I/O use :class:`AsyncMnemosSaver`.

    The task of a thread is its ``thread_id``, or ``config["configurable"]["mnemos_task_id"]``
    (``MnemosConfig.task_id_key``) when given. When the graph state has a ``"mnemos"`` key
    (``MnemosConfig.state_key``) holding a :class:`~langgraph_mnemon.memory_layers.mnemos.
    TaskSummary` (or the same dict), it is stored in the CheckpointNode's typed columns.
    Channel values and writes go through ``serde`` (so an ``EncryptedSerializer`` encrypts them);
    metadata and those typed summary columns are plain JSON / text, as in the shipped savers.
    ``delete_thread`` also removes the Mnemos memory of the task named like the thread;
    ``prune`` leaves task memory alone.

    Durability: on SQLite, WAL with ``MnemosConfig.sqlite_synchronous`` (``NORMAL`` by default:
    a returned put survives a crash of the process, but the last commits can be lost on a
    power loss or OS crash; the file stays consistent). ``FULL`` (SqliteSaver's setting) fsyncs
    the WAL at every commit, so a returned put survives a power loss too. Puts and writes that
    arrive while another commits share the next commit (group commit: one fsync for the batch;
    each call returns only once its own rows are committed). On PostgreSQL every call commits
    under the server's ``synchronous_commit``; a put_writes is one autocommit statement.

    Args:
        conn: a SQLAlchemy ``Engine``, a :class:`Database`, or a URL / SQLite path (the saver
            then owns the engine and ``close()`` disposes it).
        serde: the serializer (``JsonPlusSerializer`` by default; an ``EncryptedSerializer``
            works too).
        config: ``MnemosConfig`` (state key, task id key, SQLite tuning).

    Raises:
        InvalidInputError: ``conn`` is none of the accepted types, or ``config`` is not a
            ``MnemosConfig``.

    Example:
        >>> with MnemosSaver.from_conn_string("sqlite:///checkpoints.db") as saver:
        ...     graph = builder.compile(checkpointer=saver)
        ...     graph.invoke({"messages": [...]}, {"configurable": {"thread_id": "t1"}})
    """

    def __init__(
        self,
        conn: Engine | Database | str | Path,
        *,
        serde: SerializerProtocol | None = None,
        config: MnemosConfig | None = None,
    ) -> None:
        super().__init__(serde=serde, config=config)
        cfg = self.mnemos_config
        if isinstance(conn, Database):
            self.db = conn
        elif isinstance(conn, Engine):
            self.db = Database(conn)
        elif isinstance(conn, (str, Path)):
            ensure_sqlite_directory(conn)
            engine = create_engine(
                conn,
                busy_timeout_ms=cfg.sqlite_busy_timeout_ms,
                sqlite_synchronous=cfg.sqlite_synchronous,
            )
            self.db = Database(engine, owns_engine=True)
        else:
            raise InvalidInputError(
                "MnemosSaver() takes a SQLAlchemy Engine, a Database or a database URL "
                f"(got {type(conn).__name__}); use MnemosSaver.from_conn_string(url)"
            )
        self._st = statements(self.db.dialect)
        self._write_lock: AbstractContextManager[Any] = (
            sqlite_write_lock(self.db.engine) if self.db.dialect == "sqlite" else nullcontext()
        )
        # SQLite: puts and writes that queue during a commit share the next one (one fsync).
        self._group = GroupCommit(self.db.write, self._write_lock)

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        serde: SerializerProtocol | None = None,
        config: MnemosConfig | None = None,
    ) -> Iterator[Self]:
        """A saver on ``conn_string`` (``sqlite:///file.db``, a path, ``:memory:`` or
        ``postgresql+psycopg://...``) with its schema set up; the engine is disposed on exit.

        The folder of a SQLite file is created when missing. ``postgres://`` and
        ``postgresql://`` URLs get the psycopg 3 driver.

        Args:
            conn_string: The database URL or SQLite path.
            serde: The serializer (``JsonPlusSerializer`` by default; an
                ``EncryptedSerializer`` encrypts channel values and writes).
            config: ``MnemosConfig`` (state key, task id key, SQLite tuning).

        Returns:
            A context manager; entering it yields the ready saver, leaving it disposes the
            engine.

        Raises:
            InvalidInputError: ``conn_string`` cannot be parsed or names a database other than
                SQLite or PostgreSQL, or ``config`` is not a ``MnemosConfig``.
            StorageError: the SQLite folder cannot be created, the database cannot be reached
                or migrated, or its schema is newer than this release.

        Example:
            >>> with MnemosSaver.from_conn_string("sqlite:///checkpoints.db") as saver:
            ...     graph = builder.compile(checkpointer=saver)
        """
        saver = cls(conn_string, serde=serde, config=config)
        try:
            saver.setup()
            yield saver
        finally:
            saver.close()

    def setup(self) -> None:
        """Create or migrate the schema (idempotent; run lazily by the first call too).

        Safe across processes; the Mnemos task-memory tables come with it (one schema),
        since checkpoints are also CheckpointNodes of their thread's task.

        Returns:
            None; the schema is current afterwards.

        Raises:
            StorageError: the database cannot be reached or refused the write, or its schema
                is newer than this release (upgrade langgraph-mnemon).

        Example:
            >>> saver = MnemosSaver(engine)
            >>> saver.setup()
        """
        self.db.setup(MIGRATIONS)

    def _ready(self) -> None:
        if not self.db.is_setup(MIGRATIONS):
            self.db.setup(MIGRATIONS)

    def close(self) -> None:
        """Dispose the engine when the saver created it."""
        if self.db.owns_engine:
            self.db.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MnemosSaver(database={self.db.url!r})"

    # ------------------------------------------------------------------ sync API

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` addresses, or the thread's latest; ``None`` if missing."""
        thread_id, ns, checkpoint_id = self._address(config)
        if not self.db.ready_for_read(MIGRATIONS):
            return None  # nothing was ever stored: a read creates no tables
        raw = self.db.run_single(_ops.get_raw, self._st, thread_id, ns, checkpoint_id, self._items)
        return self._tuple(raw, keep=True) if raw is not None else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints matching ``config`` / metadata ``filter`` / ``before``, newest first."""
        query = self._list_query(config, filter, before, limit)
        if not self.db.ready_for_read(MIGRATIONS):
            return
        remaining = limit
        after: tuple[str, str, str] | None = None
        while remaining is None or remaining > 0:
            with self.db.read() as conn:
                page = _ops.list_page(conn, self._st, query, after, LIST_PAGE_SIZE, self._items)
            for raw in page:
                if not self._matches(raw, query):
                    continue
                yield self._tuple(raw)
                if remaining is not None:
                    remaining -= 1
                    if remaining == 0:
                        return
            if len(page) < LIST_PAGE_SIZE:
                return
            last = page[-1]
            after = (last.checkpoint_id, last.thread_id, last.checkpoint_ns)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (its changed channels only) and its CheckpointNode."""
        request, next_config = self._put_request(config, checkpoint, metadata, new_versions)
        self._ready()
        if self.db.dialect == "sqlite":
            self._group.run(_ops.put, self._st, request)
        else:
            with self.db.write() as conn:
                _ops.put(conn, self._st, request)
        self._stored(request)
        return next_config

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes for the checkpoint in ``config``."""
        rows, replace = self._write_rows(config, writes, task_id, task_path)
        self._ready()
        if self.db.dialect == "postgresql" and len(rows) <= SINGLE_STATEMENT_WRITES:
            # One multi-row statement is atomic on its own: autocommit, one round trip.
            self.db.run_single(_ops.put_writes_single, self._st, rows, replace)
            return
        if self.db.dialect == "sqlite":
            self._group.run(_ops.put_writes, self._st, rows, replace)
            return
        with self.db.write() as conn:
            _ops.put_writes(conn, self._st, rows, replace)

    def delete_thread(self, thread_id: str) -> None:
        """Delete everything stored for a thread (all namespaces) and its task memory."""
        thread = self._thread(thread_id)
        self._ready()
        with self.db.write() as conn:
            _ops.delete_thread(conn, thread)
        self._codec.forget([thread])

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints and writes of the runs (metadata ``run_id``)."""
        runs = self._run_ids(run_ids)
        if not runs:
            return
        self._ready()
        with self.db.write() as conn:
            _ops.delete_for_runs(conn, runs)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's whole checkpoint chain, writes and CheckpointNodes to a new id."""
        source = self._thread(source_thread_id, "source_thread_id")
        target = self._thread(target_thread_id, "target_thread_id")
        if source == target:
            raise InvalidInputError("source and target thread ids must differ")
        self._ready()
        with self.db.write() as conn:
            _ops.copy_thread(conn, self.db.dialect, source, target)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep the newest checkpoint per namespace (``keep_latest``) or delete all
        (``delete``). Raises :class:`DeltaPruneError` for keep_latest on DeltaChannel threads."""
        threads, strategy = self._prune_args(thread_ids, strategy)
        self._ready()
        with self.db.write() as conn:
            _ops.prune(conn, threads, strategy)
        self._codec.forget(threads)

    # ------------------------------------------------------------------ async API (threads)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """:meth:`get_tuple` in a worker thread."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """:meth:`list`, a page at a time in a worker thread."""
        iterator = self.list(config, filter=filter, before=before, limit=limit)
        done = object()
        while True:
            batch = await asyncio.to_thread(_take, iterator, LIST_PAGE_SIZE, done)
            for item in batch:
                if item is done:
                    return
                yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """:meth:`put` in a worker thread."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """:meth:`put_writes` in a worker thread."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """:meth:`delete_thread` in a worker thread."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """:meth:`delete_for_runs` in a worker thread."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """:meth:`copy_thread` in a worker thread."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """:meth:`prune` in a worker thread."""
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)


def _take(iterator: Iterator[Any], count: int, done: object) -> list[Any]:
    batch: list[Any] = []
    for _ in range(count):
        try:
            batch.append(next(iterator))
        except StopIteration:
            batch.append(done)
            break
    return batch
