"""``checkpointer.path`` and ``store.path`` targets for ``langgraph.json``.

Both are async context managers: LangGraph server enters them inside its event loop (once per
loop thread), where opening the host's files and database must not block the loop.

The served store is the host's ``BaseStore`` facade, in the caller's scope: inside a graph run
the facade takes the run's scope from its config (the authenticated user, ``user_id``,
LangMem's ``langgraph_user_id``); a call of the store API (``client.store.put_item`` ...) is
no run, so :class:`ServedStore` binds it to the user LangGraph server authenticated for that
request (custom auth), and to the local scope without authentication.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from langgraph.store.base import BaseStore, Op, Result

from langgraph_mnemon.checkpointers import AsyncMnemosSaver
from langgraph_mnemon.memory_layers.scopes import scope_of
from langgraph_mnemon.server._host import shared_host
from langgraph_mnemon.store import MnemonStore

__all__ = ["ServedStore", "api_user", "checkpointer", "store"]


@asynccontextmanager
async def checkpointer() -> AsyncIterator[AsyncMnemosSaver]:
    """An ``AsyncMnemosSaver`` on the host's database (SQLite file or PostgreSQL)."""
    host = await asyncio.to_thread(shared_host)
    async with host.acheckpointer() as saver:
        yield saver


@asynccontextmanager
async def store() -> AsyncIterator[ServedStore]:
    """The host's ``BaseStore`` facade over its Memory Spaces, in each caller's scope."""
    host = await asyncio.to_thread(shared_host)
    yield ServedStore(await asyncio.to_thread(host.store))


# Keys of a graph run's config. LangGraph server also sets a bare runnable config (only its
# runtime) around API requests, so that get_store() works there: that is no run.
_RUN_KEYS = frozenset(
    {
        "run_id",
        "thread_id",
        "graph_id",
        "assistant_id",
        "user_id",
        "langgraph_auth_user",
        "langgraph_auth_user_id",
        "langgraph_user_id",
        "mnemon_project",
    }
)


def _in_run() -> bool:
    from langgraph.config import get_config

    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:
        return False
    return any(key in configurable for key in _RUN_KEYS)


def api_user() -> str | None:
    """The user LangGraph server authenticated for the API request being served, if any.

    Returns:
        The identity of LangGraph's auth context (custom auth), or None: no server, no custom
        auth (its anonymous user has an empty identity), or not inside a request.

    Example:
        >>> api_user()  # in a store API request authenticated as alice
        'alice'
    """
    try:
        from langgraph_api.utils import get_auth_ctx
    except ImportError:  # not under LangGraph server
        return None
    ctx = get_auth_ctx()
    user = getattr(ctx, "user", None) if ctx is not None else None
    try:
        identity = getattr(user, "identity", None)
    except NotImplementedError:
        return None
    return identity if isinstance(identity, str) and identity.strip() else None


class ServedStore(BaseStore):
    """The served store: each op on the facade, bound to the scope of whoever calls.

    In a graph run the facade resolves the run's scope itself; outside one (the store API) the
    op runs in the scope of the authenticated user (:func:`api_user`), else the local one.

    Args:
        facade: the host's :class:`~langgraph_mnemon.store.MnemonStore`.

    Example:
        >>> served = ServedStore(mem.store())
        >>> await served.aput(("memories",), "k", {"text": "..."})  # in the caller's scope
    """

    supports_ttl: bool = False

    def __init__(self, facade: MnemonStore) -> None:
        self._facade = facade

    def current(self) -> MnemonStore:
        """The facade the next op goes through (the caller's scope)."""
        if _in_run():
            return self._facade  # the facade takes the run's scope from its config
        user = api_user()
        return self._facade if user is None else self._facade.scoped(scope_of(user))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._facade, name)

    def __repr__(self) -> str:
        return f"ServedStore({self._facade!r})"

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self.current().batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self.current().abatch(ops)

    # The facade's own argument checks and error messages, not BaseStore's generic ones.
    def get(self, *args: Any, **kwargs: Any) -> Any:
        return self.current().get(*args, **kwargs)

    def put(self, *args: Any, **kwargs: Any) -> None:
        self.current().put(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> None:
        self.current().delete(*args, **kwargs)

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self.current().search(*args, **kwargs)

    def list_namespaces(self, *args: Any, **kwargs: Any) -> Any:
        return self.current().list_namespaces(*args, **kwargs)

    async def aget(self, *args: Any, **kwargs: Any) -> Any:
        return await self.current().aget(*args, **kwargs)

    async def aput(self, *args: Any, **kwargs: Any) -> None:
        await self.current().aput(*args, **kwargs)

    async def adelete(self, *args: Any, **kwargs: Any) -> None:
        await self.current().adelete(*args, **kwargs)

    async def asearch(self, *args: Any, **kwargs: Any) -> Any:
        return await self.current().asearch(*args, **kwargs)

    async def alist_namespaces(self, *args: Any, **kwargs: Any) -> Any:
        return await self.current().alist_namespaces(*args, **kwargs)
