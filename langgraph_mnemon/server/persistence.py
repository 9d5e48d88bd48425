"""``checkpointer.path`` and ``store.path`` targets for ``langgraph.json``.

Both are async context managers: LangGraph server enters them inside its event loop (once per
loop thread), where opening the host's files and database must not block the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langgraph_mnemon.checkpointers import AsyncMnemosSaver
from langgraph_mnemon.server._host import shared_host
from langgraph_mnemon.store import MnemonStore

__all__ = ["checkpointer", "store"]


@asynccontextmanager
async def checkpointer() -> AsyncIterator[AsyncMnemosSaver]:
    """An ``AsyncMnemosSaver`` on the host's database (SQLite file or PostgreSQL)."""
    host = await asyncio.to_thread(shared_host)
    async with host.acheckpointer() as saver:
        yield saver


@asynccontextmanager
async def store() -> AsyncIterator[MnemonStore]:
    """The host's ``BaseStore`` facade over its Memory Spaces."""
    host = await asyncio.to_thread(shared_host)
    yield await asyncio.to_thread(host.store)
