"""Scopes: which user and project an operation runs for, and where that scope's memory lives.

Every turn, tool call, worker run, review, store call and control-plane request runs in a
:class:`~langgraph_mnemon.contracts.Scope`. :func:`resolve_scope` reads it from a run's
``configurable``, its runtime context (``context=`` of a LangGraph v1 run) and its authenticated
user; :class:`ScopedLayers` builds (and keeps) the Runtime Memory and Documents services of each
scope, on files or on database tables.

The single local scope keeps today's files exactly (``<root>/runtime``, ``<root>/documents``).
Other scopes live beside them::

    <root>/scopes/users/<user>/runtime/            USER.md of a user
    <root>/scopes/projects/<project>/runtime/      MEMORY.md of a project
    <root>/scopes/projects/<project>/documents/    Documents of a project
    <root>/scopes/projects/<project>/users/<user>/ ... with project_memory = user_project,
                                                   and always a user's default (local) project

Folder names are a readable slug plus a hash of the id, so any id (an e-mail, ``auth0|42``,
``../x``) maps to one safe folder and two ids never share one.

Reads create nothing: a scope's folders are made by its first write (below the root, one folder
at a time, never through a link), and a read of a scope with no data answers empty, so disk use
grows only with writes. Only the local scope creates its base layout when the host opens.

Example:
    >>> resolve_scope({"user_id": "alice", "mnemon_project": "billing"}, ScopesConfig())
    Scope(user='alice', project='billing')
    >>> resolve_scope({}, ScopesConfig()).is_local
    True
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from langgraph_mnemon.config import MnemonConfig, ScopesConfig
from langgraph_mnemon.contracts import LOCAL, Scope
from langgraph_mnemon.errors import InvalidInputError, ProjectNotGrantedError, ScopeMismatchError
from langgraph_mnemon.memory_layers.documents import Documents
from langgraph_mnemon.memory_layers.grants import PROJECT_PERMISSION, grants_of
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.memory_layers.runtime import RuntimeMemory
from langgraph_mnemon.storage.db import Database
from langgraph_mnemon.storage.files import refuse_symlink

__all__ = [
    "LOCAL_SCOPE",
    "PRODUCT_GRAPH_PREFIX",
    "ScopedLayers",
    "authenticated_user",
    "build_documents",
    "build_runtime",
    "context_value",
    "memory_key",
    "project_root",
    "resolve_scope",
    "run_context",
    "scope_folder",
    "scope_of",
    "user_root",
]

LOCAL_SCOPE = Scope()
PRODUCT_GRAPH_PREFIX = "mnemon_"
"""The product's own served graphs (``mnemon_agent``, ``mnemon_write_worker``, ...) are one
product: a run of any of them without ``mnemon_project`` stays in the local project."""

_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
RUNTIME_KEY = "__pregel_runtime"
"""Where LangGraph keeps a run's ``Runtime`` (its ``context``) in ``configurable``: what
``langgraph.runtime.get_runtime()`` reads. Read as a key here, so this layer imports no
LangGraph."""


def scope_of(user: Any = None, project: Any = None) -> Scope:
    """A :class:`Scope` from two optional ids; a bad id is an :class:`InvalidInputError`.

    Example:
        >>> scope_of("alice").project
        'local'
    """
    try:
        return Scope(
            user=LOCAL if user is None else user, project=LOCAL if project is None else project
        )
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"].removeprefix("Value error, ")
        raise InvalidInputError(f"{reason} (user={user!r}, project={project!r})") from None


def authenticated_user(configurable: Mapping[str, Any]) -> str | None:
    """The LangGraph server's authenticated user id in a run's ``configurable``, if any."""
    user = configurable.get("langgraph_auth_user")
    user_id = configurable.get("langgraph_auth_user_id")
    if isinstance(user, Mapping):  # serialized across the server's queue
        user_id = user_id or user.get("identity")
    elif user is not None:
        user_id = user_id or getattr(user, "identity", None)
    # Not trimmed: a whitespace identity is refused where the scope is built, never made local.
    return user_id if isinstance(user_id, str) and user_id else None


def run_context(configurable: Mapping[str, Any] | None) -> Any:
    """The runtime context of the LangGraph run whose ``configurable`` this is (``None``: none).

    Example:
        >>> run_context(get_config()["configurable"])  # in a run invoked with context=Ctx(...)
        Ctx(user_id='alice')
    """
    runtime = (configurable or {}).get(RUNTIME_KEY)
    return getattr(runtime, "context", None)


def context_value(context: Any, key: str) -> Any:
    """``key`` of a runtime context: a key of a mapping (dict, TypedDict), else an attribute
    (dataclass, pydantic model, any object); ``None`` when absent, ``None`` or empty.

    Example:
        >>> context_value({"user_id": "alice"}, "user_id"), context_value(object(), "user_id")
        ('alice', None)
    """
    if context is None:
        return None
    value = context.get(key) if isinstance(context, Mapping) else getattr(context, key, None)
    return None if value in (None, "") else value


def _named(conf: Mapping[str, Any], context: Any, key: str) -> Any:
    """The id a run names for ``key`` in its context or ``configurable`` (both: the same one)."""
    in_config = conf.get(key)
    in_config = None if in_config in (None, "") else in_config
    in_context = context_value(context, key)
    if in_config is not None and in_context is not None and in_config != in_context:
        raise ScopeMismatchError(
            f"the run's context names {key} {in_context!r} but its configurable names "
            f"{in_config!r}; give {key} in one place (context= for a LangGraph v1 run)"
        )
    return in_context if in_context is not None else in_config


def resolve_scope(
    configurable: Mapping[str, Any] | None, settings: ScopesConfig, *, context: Any = None
) -> Scope:
    """The scope of a run, from its ``config["configurable"]`` and its runtime context.

    ``user_id`` and ``mnemon_project`` count alike as keys of ``configurable`` and as keys or
    attributes of the run's context (``context`` if given, else the one LangGraph keeps in
    ``configurable``: :func:`run_context`); naming one in both places is fine only when the
    ids are equal.

    user: the authenticated LangGraph user (``langgraph_auth_user``), else the named
    ``user_id``, else the local user. An authenticated run that also names a different
    ``user_id`` is refused: a client must not reach another user's memory by naming it.
    project: the named ``mnemon_project``, else (``project_from_graph``) the served graph id of
    a user's graph, else the local project (for a user other than the local one, that is their
    own memory: ``Scope.held_per_user``).

    Under auth a named project needs a grant (:mod:`.grants`); a graph's project without one
    falls back to the user's own. Ids are compared exactly as given, never trimmed.

    Raises:
        ScopeMismatchError: ``user_id`` names someone other than the authenticated user, the
            context and ``configurable`` name different ids, or the authenticated identity is
            ``local`` (the operator's own scope).
        ProjectNotGrantedError: an authenticated run names a project its user is not granted.
        InvalidInputError: an id is empty, too long, starts or ends with whitespace, or holds a
            control character or a lone surrogate.
    """
    conf = configurable or {}
    if context is None:
        context = run_context(conf)
    user = _run_user(conf, context)
    project = _named(conf, context, "mnemon_project")
    named = project is not None
    if not named and settings.project_from_graph:
        graph = conf.get("graph_id")
        if isinstance(graph, str) and graph and not graph.startswith(PRODUCT_GRAPH_PREFIX):
            project = graph
    scope = scope_of(user, project)
    if authenticated_user(conf) is None:
        return scope  # no auth: every project, as before
    grants = grants_of(
        conf.get("langgraph_auth_permissions"),
        conf.get("langgraph_auth_user"),
        settings.project_grants.get(scope.user),
    )
    if grants.allows(scope.project):
        return scope
    if not named:  # a graph's own project the user is not granted: their own memory instead
        return scope_of(scope.user)
    raise ProjectNotGrantedError(
        f"user {scope.user!r} is not granted the project {scope.project!r}; an admin grants it "
        f"with the auth permission '{PROJECT_PERMISSION}<id>' (or scopes.project_grants), or drop "
        "mnemon_project to use this user's own memory"
    )


def _run_user(conf: Mapping[str, Any], context: Any) -> str | None:
    named = _named(conf, context, "user_id")
    user = authenticated_user(conf)
    if user is not None and named is not None and str(named) != user:
        raise ScopeMismatchError(
            f"the run's user_id {named!r} is not the authenticated user {user!r}; drop user_id "
            "from the run's context and config (an authenticated run uses its own user)"
        )
    if user == LOCAL:
        # The operator's own scope (the files of a one-user install) is nobody's login.
        raise ScopeMismatchError(
            f"the authenticated identity {LOCAL!r} is the operator's local scope and cannot be "
            "claimed by a login; issue that user another identity"
        )
    return user if user is not None else named


def scope_folder(value: str) -> str:
    """The folder name of one user or project id: a readable slug plus 12 hex of its hash.

    Example:
        >>> scope_folder("Alice Smith")
        'Alice_Smith-5d8f0a...'  # doctest: +SKIP
    """
    slug = _SLUG.sub("_", value).strip("._")[:40] or "id"
    return f"{slug}-{hashlib.sha256(value.encode()).hexdigest()[:12]}"


def user_root(root: Path, scope: Scope, local_user_root: Path) -> Path:
    """The root whose ``runtime/`` holds the USER entries of ``scope``'s user."""
    if scope.user == LOCAL:
        return local_user_root
    return root / "scopes" / "users" / scope_folder(scope.user)


def project_root(root: Path, scope: Scope, per_user: bool) -> Path:
    """The root whose ``runtime/`` and ``documents/`` hold the project memory of ``scope``."""
    if scope.is_local:
        return root
    base = root / "scopes" / "projects" / scope_folder(scope.project)
    return base / "users" / scope_folder(scope.user) if scope.held_per_user(per_user) else base


_L = TypeVar("_L")


class ScopedLayers(Generic[_L]):
    """One service per scope, built on first use and kept (least recently used dropped first).

    Args:
        build: builds the service of a scope.
        keep: how many scopes to keep open at once (the local scope is always kept).

    Example:
        >>> runtimes = ScopedLayers(lambda scope: RuntimeMemory(...))
        >>> runtimes.get(Scope(user="alice")) is runtimes.get(Scope(user="alice"))
        True
    """

    def __init__(self, build: Callable[[Scope], _L], *, keep: int = 256) -> None:
        self._build = build
        self._keep = keep
        self._open: OrderedDict[Scope, _L] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, scope: Scope) -> _L:
        with self._lock:
            layer = self._open.get(scope)
            if layer is not None:
                self._open.move_to_end(scope)
                return layer
        layer = self._build(scope)  # outside the lock: opening may repair files
        with self._lock:
            layer = self._open.setdefault(scope, layer)
            self._open.move_to_end(scope)
            while len(self._open) > self._keep:
                oldest = next(iter(self._open))
                if oldest == LOCAL_SCOPE:
                    self._open.move_to_end(oldest)
                    oldest = next(iter(self._open))
                del self._open[oldest]
        return layer

    def scopes(self) -> list[Scope]:
        """The scopes open right now, least recently used first."""
        with self._lock:
            return list(self._open)


def memory_key(scope: Scope, per_user: bool) -> str:
    """The owner key of ``scope``'s MEMORY.md and Documents (``project_memory`` applied)."""
    return scope.project_key(scope.held_per_user(per_user))


def _refuse_linked_parents(root: Path, path: Path) -> None:
    # A scope's folders are created on demand below <root>/scopes: never through a link.
    if path == root:
        return
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        refuse_symlink(current, "scope folder")


def _created_below(root: Path, scope: Scope) -> Path | None:
    """Below which root the first write of ``scope`` creates its folders (``None``: the local
    scope, whose base layout is made when the host opens)."""
    return None if scope.is_local else root


def build_runtime(
    config: MnemonConfig,
    kernel: Kernel,
    scope: Scope,
    database: Callable[[], Database],
) -> RuntimeMemory:
    """The Runtime Memory service of ``scope``: on files under the root, or on database tables.

    Example:
        >>> build_runtime(mem.config, mem.kernel, Scope(user="alice"), lambda: mem.database)
    """
    root = config.root_path
    per_user = config.scopes.project_memory == "user_project"
    common: dict[str, Any] = {
        "user_limit_bytes": config.runtime.user_limit_bytes,
        "memory_limit_bytes": config.runtime.memory_limit_bytes,
        "workspace": config.workspace_path,
        "lock_timeout": config.runtime.lock_timeout_seconds,
        "kernel": kernel,
    }
    if config.layers_in_database:
        return RuntimeMemory(
            root,
            database=database(),
            user_key=scope.user_key,
            memory_key=memory_key(scope, per_user),
            **common,
        )
    local_user = config.global_root_path if config.runtime_user_scope == "global" else root
    users, projects = user_root(root, scope, local_user), project_root(root, scope, per_user)
    for folder in (users, projects):
        if folder.is_relative_to(root):
            _refuse_linked_parents(root, folder)
    return RuntimeMemory(
        projects,
        user_root=users if users != projects else None,
        create_below=_created_below(root, scope),
        **common,
    )


def build_documents(
    config: MnemonConfig,
    kernel: Kernel,
    scope: Scope,
    database: Callable[[], Database],
) -> Documents:
    """The Documents service of ``scope``: on files under the root, or on database tables."""
    root = config.root_path
    per_user = config.scopes.project_memory == "user_project"
    common: dict[str, Any] = {
        "workspace": config.workspace_path,
        "body_limit_bytes": config.documents.body_limit_bytes,
        "active_limit_bytes": config.documents.active_limit_bytes,
        "lock_timeout": config.runtime.lock_timeout_seconds,
        "kernel": kernel,
    }
    if config.layers_in_database:
        return Documents(root, database=database(), owner_key=memory_key(scope, per_user), **common)
    folder = project_root(root, scope, per_user)
    _refuse_linked_parents(root, folder)
    return Documents(folder, create_below=_created_below(root, scope), **common)
