"""Which scope a store op runs in, and which Memory Spaces it reads and writes through.

The scope of an op is the store's bound scope (``MnemonStore.scoped``); else, inside a
LangGraph run, the run's (``Mnemon.resolve_scope`` of ``get_config()``); else the local scope.
The run's ``user_id`` counts from ``configurable`` and from its runtime context
(``context=``) alike. LangMem's memory tools format their namespace from
``configurable["langgraph_user_id"]`` (``("memories", "{langgraph_user_id}")``), so a run that
names its user only that way runs in that user's scope too; an authenticated user or
``user_id`` wins over it.

A user's namespaces live in spaces owned by that user (their ids hash the user key in), so the
same namespace of two users is two spaces and neither user reads the other's. The local user's
namespaces are today's spaces, and the local user reads no one else's either: an op outside any
run, or in a run that names no user, never sees a user's items (bind a user with
``mem.store().scoped(Scope(user=...))`` to read theirs).

Example:
    >>> graph.invoke(state, {"configurable": {"langgraph_user_id": "alice"}})  # doctest: +SKIP
    >>> # ops of the run: scope alice; mem.store().scoped(Scope(user="bob")) never sees them
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from langgraph.config import get_config

from langgraph_mnemon.contracts import LOCAL, Scope
from langgraph_mnemon.memory_layers.scopes import (
    LOCAL_SCOPE,
    authenticated_user,
    context_value,
    run_context,
)

if TYPE_CHECKING:
    from pathlib import Path

    from langgraph_mnemon.memory_layers.kernel import Kernel
    from langgraph_mnemon.memory_layers.spaces import MemorySpaces

__all__ = ["LANGMEM_USER_KEY", "StoreHost", "op_scope", "spaces_of"]

LANGMEM_USER_KEY = "langgraph_user_id"
"""The ``configurable`` key LangMem's namespace templates name the user by."""


class StoreHost(Protocol):
    """What the facade needs from its host (``Mnemon`` satisfies it; the facade never imports
    the host): the kernel that decides every operation, the storage root it names in its repr,
    the Memory Spaces (opened lazily on first use), the host as seen from one scope, and the
    scope of a run's config."""

    @property
    def kernel(self) -> Kernel: ...

    @property
    def root(self) -> Path: ...

    @property
    def spaces(self) -> MemorySpaces: ...

    def scoped(self, scope: Scope) -> StoreHost: ...

    def resolve_scope(self, config: Mapping[str, Any] | None) -> Scope: ...


def _run_configurable() -> Mapping[str, Any] | None:
    try:
        config = get_config()
    except RuntimeError:  # not inside a LangGraph (or LangChain) run
        return None
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    return configurable if isinstance(configurable, Mapping) else {}


def _with_langmem_user(configurable: Mapping[str, Any]) -> Mapping[str, Any]:
    """``configurable`` with LangMem's user as ``user_id`` when nothing else names one (neither
    ``configurable`` nor the run's runtime context)."""
    user = configurable.get(LANGMEM_USER_KEY)
    if not isinstance(user, str) or not user.strip():
        return configurable
    named = configurable.get("user_id")
    if named not in (None, "") or context_value(run_context(configurable), "user_id") is not None:
        return configurable
    if authenticated_user(configurable) is not None:
        return configurable  # the authenticated user is the scope's; never another
    return {**configurable, "user_id": user}


def op_scope(host: StoreHost, bound: Scope | None) -> Scope:
    """The scope of a store op run now: ``bound``, else the current run's, else local.

    Raises:
        ScopeMismatchError: the run names a user other than its authenticated one.
        InvalidInputError: the run's user or project id is not a valid id.
    """
    if bound is not None:
        return bound
    configurable = _run_configurable()
    if configurable is None:
        return LOCAL_SCOPE
    return host.resolve_scope({"configurable": _with_langmem_user(configurable)})


def spaces_of(host: StoreHost, scope: Scope) -> tuple[MemorySpaces, str | None]:
    """The Memory Spaces an op of ``scope`` goes through, and the owner of its namespaces.

    A user's: that scope's view of the spaces and the user's key. The local user's (in any
    project): the local spaces, and ``None`` (today's namespace spaces).
    Blocking: the first call may open the database.
    """
    if scope.user == LOCAL:
        return host.spaces, None
    return host.scoped(scope).spaces, scope.user_key
