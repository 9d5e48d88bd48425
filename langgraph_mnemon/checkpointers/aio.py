"""``AsyncMnemosSaver``: the Mnemos checkpointer on an async engine (aiosqlite / psycopg)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Self, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from sqlalchemy.ext.asyncio import AsyncEngine

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
    AsyncDatabase,
    Database,
    ThreadedAsyncDatabase,
    create_async_engine,
    create_engine,
    ensure_sqlite_directory,
    parse_database_url,
)

__all__ = ["AsyncMnemosSaver"]

_T = TypeVar("_T")


class AsyncMnemosSaver(MnemosSaverBase):
    """The async twin of :class:`MnemosSaver`, for ``ainvoke`` / ``astream`` and LangGraph server.

    No ``a*`` method blocks the event loop. On PostgreSQL the I/O goes through psycopg's async
    driver; on SQLite each transaction runs whole on a worker thread (one hop per call instead
    of aiosqlite's hops per statement). An aiosqlite ``AsyncEngine`` passed in works too. The
    operations and their SQL are the sync saver's. The sync methods exist for code that runs in
    another thread than the saver's event loop (they hand the work to that loop); calling them
    on the loop itself raises :class:`InvalidInputError`.

    Create it inside the event loop that uses it, preferably with :meth:`from_conn_string`.

    Args:
        conn: an ``AsyncEngine``, an ``AsyncDatabase`` / ``ThreadedAsyncDatabase``, a sync
            :class:`Database` (run on worker threads), or a URL / SQLite path (the saver then
            owns the engine and ``aclose()`` disposes it).
        serde: the serializer (``JsonPlusSerializer`` by default).
        config: ``MnemosConfig`` (state key, task id key, SQLite tuning).

    Raises:
        InvalidInputError: ``conn`` is none of the accepted types, or ``config`` is not a
            ``MnemosConfig``.

    Example:
        >>> async with AsyncMnemosSaver.from_conn_string("sqlite:///checkpoints.db") as saver:
        ...     graph = builder.compile(checkpointer=saver)
        ...     await graph.ainvoke({"messages": [...]}, {"configurable": {"thread_id": "t1"}})
    """

    def __init__(
        self,
        conn: AsyncEngine | AsyncDatabase | str | Path,
        *,
        serde: SerializerProtocol | None = None,
        config: MnemosConfig | None = None,
    ) -> None:
        super().__init__(serde=serde, config=config)
        cfg = self.mnemos_config
        self.db: AsyncDatabase | ThreadedAsyncDatabase
        if isinstance(conn, (AsyncDatabase, ThreadedAsyncDatabase)):
            self.db = conn
        elif isinstance(conn, AsyncEngine):
            self.db = AsyncDatabase(conn)
        elif isinstance(conn, Database):
            self.db = ThreadedAsyncDatabase(conn)
        elif isinstance(conn, (str, Path)):
            options = {
                "busy_timeout_ms": cfg.sqlite_busy_timeout_ms,
                "sqlite_synchronous": cfg.sqlite_synchronous,
            }
            if parse_database_url(conn).get_backend_name() == "sqlite":
                engine = create_engine(conn, **options)  # type: ignore[arg-type]
                self.db = ThreadedAsyncDatabase(Database(engine, owns_engine=True))
            else:
                self.db = AsyncDatabase(
                    create_async_engine(conn, **options),  # type: ignore[arg-type]
                    owns_engine=True,
                )
        else:
            raise InvalidInputError(
                "AsyncMnemosSaver() takes a SQLAlchemy AsyncEngine, a Database or a database "
                f"URL (got {type(conn).__name__}); use AsyncMnemosSaver.from_conn_string(url)"
            )
        self._st = statements(self.db.dialect)
        # SQLite (worker threads): writes that queue during a commit share the next one.
        self._group: GroupCommit | None = None
        if isinstance(self.db, ThreadedAsyncDatabase) and self.db.dialect == "sqlite":
            self._group = GroupCommit(
                self.db.database.write, sqlite_write_lock(self.db.database.engine)
            )
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls,
        conn_string: str,
        *,
        serde: SerializerProtocol | None = None,
        config: MnemosConfig | None = None,
    ) -> AsyncIterator[Self]:
        """An async saver on ``conn_string`` with its schema set up; the engine is disposed
        on exit. Enter it inside the event loop that will use it.

        On PostgreSQL the engine is psycopg's async driver; on SQLite (``sqlite:///file.db``,
        a path, ``:memory:``) each transaction runs on a worker thread. The folder of a SQLite
        file is created when missing.

        Args:
            conn_string: The database URL or SQLite path.
            serde: The serializer (``JsonPlusSerializer`` by default; an
                ``EncryptedSerializer`` encrypts channel values and writes).
            config: ``MnemosConfig`` (state key, task id key, SQLite tuning).

        Returns:
            An async context manager; entering it yields the ready saver, leaving it disposes
            the engine.

        Raises:
            InvalidInputError: ``conn_string`` cannot be parsed or names a database other than
                SQLite or PostgreSQL, or ``config`` is not a ``MnemosConfig``.
            StorageError: the SQLite folder cannot be created, the database cannot be reached
                or migrated, or its schema is newer than this release.

        Example:
            >>> async with AsyncMnemosSaver.from_conn_string("sqlite:///checkpoints.db") as s:
            ...     await builder.compile(checkpointer=s).ainvoke(inputs, config)
        """
        await asyncio.to_thread(ensure_sqlite_directory, conn_string)
        saver = cls(conn_string, serde=serde, config=config)
        try:
            await saver.setup()
            yield saver
        finally:
            await saver.aclose()

    async def setup(self) -> None:
        """Create or migrate the schema (idempotent; run lazily by the first call too).

        Binds the saver to the running event loop when it was created outside one (its sync
        methods hand their work to that loop). Safe across processes; the Mnemos task-memory
        tables come with it (one schema).

        Returns:
            None; the schema is current afterwards.

        Raises:
            StorageError: the database cannot be reached or refused the write, or its schema
                is newer than this release (upgrade langgraph-mnemon).

        Example:
            >>> saver = AsyncMnemosSaver("postgresql+psycopg://mnemon@localhost/mnemon")
            >>> await saver.setup()
        """
        self._bind_loop()
        await self.db.setup(MIGRATIONS)

    async def _ready(self) -> None:
        self._bind_loop()
        if not self.db.is_setup(MIGRATIONS):
            await self.db.setup(MIGRATIONS)

    def _bind_loop(self) -> None:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()

    async def aclose(self) -> None:
        """Dispose the engine when the saver created it."""
        if self.db.owns_engine:
            await self.db.dispose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncMnemosSaver(database={self.db.url!r})"

    async def _hot_write(self, fn: Callable[..., Any], *args: Any) -> None:
        """A put / put_writes transaction; on SQLite worker threads, group-committed under the
        engine's in-process write lock (see :class:`GroupCommit`)."""
        if self._group is not None:
            await asyncio.to_thread(self._group.run, fn, *args)
        else:
            await self.db.run_write(fn, *args)

    # ------------------------------------------------------------------ async API

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` addresses, or the thread's latest; ``None`` if missing."""
        thread_id, ns, checkpoint_id = self._address(config)
        await self._ready()
        raw = await self.db.run_single(
            _ops.get_raw, self._st, thread_id, ns, checkpoint_id, self._items
        )
        return self._tuple(raw, keep=True) if raw is not None else None

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints matching ``config`` / metadata ``filter`` / ``before``, newest first."""
        query = self._list_query(config, filter, before, limit)
        await self._ready()
        remaining = limit
        after: tuple[str, str, str] | None = None
        while remaining is None or remaining > 0:
            page = await self.db.run_read(
                _ops.list_page, self._st, query, after, LIST_PAGE_SIZE, self._items
            )
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

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (its changed channels only) and its CheckpointNode."""
        request, next_config = self._put_request(config, checkpoint, metadata, new_versions)
        await self._ready()
        await self._hot_write(_ops.put, self._st, request)
        self._stored(request)
        return next_config

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes for the checkpoint in ``config``."""
        rows, replace = self._write_rows(config, writes, task_id, task_path)
        await self._ready()
        if self.db.dialect == "postgresql" and len(rows) <= SINGLE_STATEMENT_WRITES:
            # One multi-row statement is atomic on its own: autocommit, one round trip.
            await self.db.run_single(_ops.put_writes_single, self._st, rows, replace)
            return
        await self._hot_write(_ops.put_writes, self._st, rows, replace)

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete everything stored for a thread (all namespaces) and its task memory."""
        thread = self._thread(thread_id)
        await self._ready()
        await self.db.run_write(_ops.delete_thread, thread)
        self._codec.forget([thread])

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints and writes of the runs (metadata ``run_id``)."""
        runs = self._run_ids(run_ids)
        if not runs:
            return
        await self._ready()
        await self.db.run_write(_ops.delete_for_runs, runs)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's whole checkpoint chain, writes and CheckpointNodes to a new id."""
        source = self._thread(source_thread_id, "source_thread_id")
        target = self._thread(target_thread_id, "target_thread_id")
        if source == target:
            raise InvalidInputError("source and target thread ids must differ")
        await self._ready()
        await self.db.run_write(_ops.copy_thread, self.db.dialect, source, target)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep the newest checkpoint per namespace (``keep_latest``) or delete all
        (``delete``). Raises :class:`DeltaPruneError` for keep_latest on DeltaChannel threads."""
        threads, strategy = self._prune_args(thread_ids, strategy)
        await self._ready()
        await self.db.run_write(_ops.prune, threads, strategy)
        self._codec.forget(threads)

    # ------------------------------------------------------------------ sync API (other threads)

    def _run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        loop = self.loop
        if loop is None or loop.is_closed():
            coro.close()
            raise InvalidInputError(
                "AsyncMnemosSaver has no running event loop to use; call its async methods "
                "(await saver.aget_tuple(...)) or use MnemosSaver in sync code"
            )
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            name = coro.__name__  # the async method, e.g. "aget_tuple"
            coro.close()
            raise InvalidInputError(
                f"saver.{name[1:]}() of AsyncMnemosSaver was called on its own event loop, "
                f"where it would wait for itself forever; use the async method there "
                f"(await saver.{name}(...), graph.ainvoke) or MnemosSaver"
            )
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Sync :meth:`aget_tuple`, for threads other than the saver's event loop."""
        return self._run(self.aget_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Sync :meth:`alist`, for threads other than the saver's event loop."""
        aiter_ = self.alist(config, filter=filter, before=before, limit=limit).__aiter__()

        async def _next() -> tuple[bool, CheckpointTuple | None]:
            try:
                return True, await aiter_.__anext__()
            except StopAsyncIteration:
                return False, None

        while True:
            more, item = self._run(_next())
            if not more:
                return
            assert item is not None
            yield item

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Sync :meth:`aput`, for threads other than the saver's event loop."""
        return self._run(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Sync :meth:`aput_writes`, for threads other than the saver's event loop."""
        self._run(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Sync :meth:`adelete_thread`, for threads other than the saver's event loop."""
        self._run(self.adelete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Sync :meth:`adelete_for_runs`, for threads other than the saver's event loop."""
        self._run(self.adelete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Sync :meth:`acopy_thread`, for threads other than the saver's event loop."""
        self._run(self.acopy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Sync :meth:`aprune`, for threads other than the saver's event loop."""
        self._run(self.aprune(thread_ids, strategy=strategy))
