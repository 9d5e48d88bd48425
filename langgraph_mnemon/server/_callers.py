"""Who a control-plane request is, and the scope it runs in.

Every request runs in one :class:`~langgraph_mnemon.contracts.Scope`; the handlers work on
``host.scoped(caller.scope)``, so an id from another scope answers 404 like an unknown one.

The **user**, first match wins:

1. the identity LangGraph server authenticated (custom auth on the custom routes: ``auth.path``
   and ``http.enable_custom_route_auth`` in ``langgraph.json``; Starlette's ``request.user``);
2. the user of a bearer token in ``scopes.user_tokens`` (``remote_token`` stays the local user);
3. else the local user. Only then, and only from loopback with no authentication configured (no
   LangGraph custom auth, no ``user_tokens``), may a person pick another user with the
   ``X-Mnemon-User`` header (the web page's user field).

A header naming another user than the one resolved is refused with 403 ``scope-mismatch``.

The **project**: the ``project`` query parameter or the ``X-Mnemon-Project`` header (both
percent-encoded UTF-8, as the web page sends them), else the local project (for a user other
than the local one: their own memory). Under authentication a named project needs a grant
(:mod:`langgraph_mnemon.memory_layers.grants`); one that is not granted answers 404 exactly as a
project that does not exist.

Host-wide settings change only for an *admin*: the local user (loopback, ``remote_token``, a
loopback person who picked a scope), or a LangGraph user with the ``mnemon:admin`` permission.

Example:
    >>> caller = resolve_caller(request.scope, mem.config, project="billing")
    >>> caller.scope
    Scope(user='local', project='billing')
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import unquote

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.contracts import LOCAL, Scope
from langgraph_mnemon.errors import (
    AuthorityError,
    InvalidInputError,
    NotFoundError,
    ScopeMismatchError,
)
from langgraph_mnemon.memory_layers.grants import (
    ADMIN_PERMISSION,
    PROJECT_PERMISSION,
    UNCHECKED,
    Grants,
    grants_of,
)
from langgraph_mnemon.memory_layers.scopes import scope_of

from ._authority import (
    Unauthorized,
    authenticated_identity,
    bearer_token,
    client_address,
    langgraph_auth,
    token_user,
)

__all__ = [
    "ADMIN_PERMISSION",
    "PROJECT_HEADER",
    "PROJECT_PARAMETER",
    "USER_HEADER",
    "Caller",
    "authentication",
    "require_admin",
    "resolve_caller",
]

USER_HEADER = "X-Mnemon-User"
PROJECT_HEADER = "X-Mnemon-Project"
PROJECT_PARAMETER = "project"

Via = Literal["local", "picked", "token", "langgraph"]


@dataclass(frozen=True)
class Caller:
    """The resolved caller of one request: its scope, how it was known, whether it is admin,
    and the projects it is granted (every project without authentication)."""

    scope: Scope
    via: Via
    admin: bool
    grants: Grants = UNCHECKED


def authentication(config: MnemonConfig) -> Literal["none", "tokens", "langgraph"]:
    """Which authentication identifies users: LangGraph custom auth, user tokens, or none."""
    if langgraph_auth():
        return "langgraph"
    return "tokens" if config.scopes.user_tokens else "none"


def _header(scope: dict[str, Any], name: str) -> str | None:
    key = name.lower().encode()
    values = {v.decode("latin-1").strip() for k, v in scope.get("headers", ()) if k.lower() == key}
    if len(values) > 1:
        raise InvalidInputError(f"the request carries several different {name} headers")
    if not values:
        return None
    value = unquote(values.pop(), errors="strict")  # the page percent-encodes UTF-8
    return value or None


def _project(scope: dict[str, Any], parameter: str | None) -> str | None:
    header = _header(scope, PROJECT_HEADER)
    if parameter is not None and header is not None and parameter != header:
        raise InvalidInputError(
            f"the project query parameter ({parameter!r}) and the {PROJECT_HEADER} header "
            f"({header!r}) differ; send one of them"
        )
    return parameter if parameter is not None else header


def _check_identity(identity: str) -> None:
    """Refuse (403) a login that cannot be a scope's user exactly as given, or that is ``local``."""
    if identity == LOCAL:
        raise ScopeMismatchError(
            f"the authenticated identity {LOCAL!r} is the operator's local scope and cannot be "
            "claimed by a login; issue that user another identity"
        )
    try:
        scope_of(identity)
    except InvalidInputError as exc:
        raise ScopeMismatchError(
            f"the authenticated identity is not a usable user id: {exc}"
        ) from None


def _identified(scope: dict[str, Any], config: MnemonConfig) -> Caller:
    """The caller's user, how it was known, admin and grants (its scope's project: local)."""
    identity = authenticated_identity(scope)
    configured = config.scopes.project_grants
    if identity is not None:
        _check_identity(identity)
        permissions = getattr(scope.get("auth"), "scopes", None) or ()
        grants = grants_of(permissions, scope.get("user"), configured.get(identity))
        return Caller(scope_of(identity), "langgraph", ADMIN_PERMISSION in permissions, grants)
    if scope.get("state", {}).get("mnemon_write_needs_user"):
        raise Unauthorized(
            "remote changes need a user LangGraph server authenticates (custom auth on the "
            "custom routes) or the header 'Authorization: Bearer <remote_token>'"
        )
    user = token_user(bearer_token(scope), config)
    if user is not None and user != LOCAL:
        return Caller(scope_of(user), "token", False, grants_of((), None, configured.get(user)))
    return Caller(scope_of(), "local", True)


def _granted(caller: Caller, project: str | None) -> Caller:
    if project is None:
        return caller
    scope = scope_of(caller.scope.user, project)  # a malformed id is 422 before any grant
    if not caller.grants.allows(project):
        # Exactly as for a project that does not exist: whether it does is not said.
        raise NotFoundError(
            f"no project {project!r} for user {caller.scope.user!r}; a project is reachable "
            f"once the auth layer grants it ('{PROJECT_PERMISSION}<id>')"
        )
    return replace(caller, scope=scope)


def resolve_caller(
    scope: dict[str, Any], config: MnemonConfig, *, project: str | None = None
) -> Caller:
    """The caller of the request with ASGI ``scope`` (rules in the module docstring).

    Args:
        scope: the request's ASGI scope (``request.scope``): headers, client, LangGraph's user.
        config: the host's live configuration (``user_tokens``, ``remote_token``).
        project: the ``project`` query parameter, if given.

    Returns:
        The :class:`Caller`: scope, how the user was known, and whether it is an admin.

    Raises:
        ScopeMismatchError: ``X-Mnemon-User`` names another user than the one resolved, or a
            scope is picked where that is not allowed (authentication configured, or not from
            loopback).
        Unauthorized: a remote change LangGraph should have authenticated was not.
        NotFoundError: under authentication, the named project is not granted to the user.
        InvalidInputError: a user or project id is empty, too long or holds control characters.

    Example:
        >>> resolve_caller(request.scope, mem.config).scope.is_local
        True
    """
    try:
        picked = _header(scope, USER_HEADER)
        project_id = _project(scope, project)
    except UnicodeDecodeError:
        raise InvalidInputError(
            f"the {USER_HEADER} / {PROJECT_HEADER} header is not percent-encoded UTF-8"
        ) from None
    caller = _identified(scope, config)
    if picked is not None and picked != caller.scope.user:
        address = client_address(scope)
        loopback = address is not None and address.is_loopback
        if caller.via != "local" or not loopback or authentication(config) != "none":
            raise ScopeMismatchError(
                f"this request runs as user {caller.scope.user!r} and may not act for "
                f"{picked!r}; drop the {USER_HEADER} header (a scope is picked only from "
                "loopback when no authentication is configured)"
            )
        caller = replace(caller, scope=scope_of(picked), via="picked")
    return _granted(caller, project_id)


def require_admin(caller: Caller, what: str) -> None:
    """Refuse a host-wide change by a caller that is not an admin (HTTP 403).

    Raises:
        AuthorityError: the caller is an authenticated user without ``mnemon:admin``.

    Example:
        >>> require_admin(caller, "the settings")
    """
    if caller.admin:
        return
    raise AuthorityError(
        f"{what} are host-wide: user {caller.scope.user!r} may read them but not change them; "
        "only the local user (loopback or remote_token) or a LangGraph user with the "
        f"{ADMIN_PERMISSION!r} permission may"
    )
