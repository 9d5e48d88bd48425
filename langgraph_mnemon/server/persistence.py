"""``checkpointer.path`` and ``store.path`` targets for ``langgraph.json``.

Both are async context managers: LangGraph server enters them inside its event loop (once per
loop thread), where opening the host's files and database must not block the loop.

The served store is the host's ``BaseStore`` facade, in the caller's scope: inside a graph run
the facade takes the run's scope from its config (the authenticated user, ``user_id``,
LangMem's ``langgraph_user_id``); a call of the store API (``client.store.put_item`` ...) is
no run, so :class:`ServedStore` binds it to the user LangGraph server authenticated for that
request (custom auth), and to the local scope without authentication.

``store.ttl`` of ``langgraph.json`` configures the served store's time to live: LangGraph
server passes nothing to a custom store's factory and starts no sweeper for it, so
:func:`store` reads the ``store`` section itself (:func:`served_ttl`) and, when it sets
``sweep_interval_minutes``, runs the store's sweeper while the server runs.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from langgraph.store.base import BaseStore, Op, Result

from langgraph_mnemon.checkpointers import AsyncMnemosSaver
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.scopes import scope_of
from langgraph_mnemon.server._host import shared_host
from langgraph_mnemon.store import MnemonStore

__all__ = [
    "STORE_ENV",
    "ServedStore",
    "api_user",
    "checkpointer",
    "served_index",
    "served_ttl",
    "store",
]

STORE_ENV = "LANGGRAPH_STORE"
"""Where LangGraph's CLI (``langgraph dev``, the images ``langgraph build`` makes) hands the
server the ``store`` section of ``langgraph.json``, as JSON."""


@asynccontextmanager
async def checkpointer() -> AsyncIterator[AsyncMnemosSaver]:
    """An ``AsyncMnemosSaver`` on the host's database (SQLite file or PostgreSQL)."""
    host = await asyncio.to_thread(shared_host)
    async with host.acheckpointer() as saver:
        yield saver


@asynccontextmanager
async def store() -> AsyncIterator[ServedStore]:
    """The host's ``BaseStore`` facade over its Memory Spaces, in each caller's scope, with
    the index of ``store.index`` and the TTL configuration of ``store.ttl`` (its sweeper runs
    until the server stops)."""
    host = await asyncio.to_thread(shared_host)
    facade = await asyncio.to_thread(lambda: host.store(index=served_index(), ttl=served_ttl()))
    sweeping = bool((facade.ttl_config or {}).get("sweep_interval_minutes"))
    if sweeping:
        facade.start_ttl_sweeper()
    try:
        yield ServedStore(facade)
    finally:
        if sweeping:
            await asyncio.to_thread(facade.stop_ttl_sweeper, 30.0)


def served_ttl() -> Mapping[str, object] | None:
    """The ``store.ttl`` section of the served ``langgraph.json`` (from :data:`STORE_ENV`).

    Returns:
        The TTL configuration as written (``MnemonStore`` checks it), or None when the
        server was started without one.

    Raises:
        InvalidInputError: :data:`STORE_ENV` is not the JSON of a ``store`` section.

    Example:
        >>> os.environ[STORE_ENV] = '{"path": "...", "ttl": {"default_ttl": 60}}'
        >>> served_ttl()
        {'default_ttl': 60}
    """
    return _served_section().get("ttl")


def served_index() -> Mapping[str, object] | None:
    """The ``store.index`` section of the served ``langgraph.json`` (from :data:`STORE_ENV`):
    LangGraph's ``IndexConfig`` (``embed`` as ``"provider:model"``, ``dims``, ``fields``).

    Returns:
        The index configuration as written (``MnemonStore`` checks it), or None.

    Raises:
        InvalidInputError: :data:`STORE_ENV` is not the JSON of a ``store`` section.

    Example:
        >>> os.environ[STORE_ENV] = '{"index": {"fields": ["text"]}}'
        >>> served_index()
        {'fields': ['text']}
    """
    return _served_section().get("index")


def _served_section() -> dict[str, Any]:
    """The ``store`` section LangGraph's CLI put in :data:`STORE_ENV` (empty without one)."""
    raw = os.environ.get(STORE_ENV, "").strip()
    if not raw:
        return {}
    try:
        section = json.loads(raw)
    except ValueError:
        section = None
    if not isinstance(section, dict):
        raise InvalidInputError(
            f"{STORE_ENV} must be the JSON of langgraph.json's store section, e.g. "
            '{"path": "langgraph_mnemon.server.persistence.store", "ttl": {"default_ttl": 60}}'
        )
    return section


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

    supports_ttl: bool = True

    def __init__(self, facade: MnemonStore) -> None:
        self._facade = facade
        self.ttl_config = facade.ttl_config  # BaseStore's get / put / search read it

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
