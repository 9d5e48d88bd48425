"""Project grants: which projects an authenticated user may use.

Under authentication (LangGraph custom auth, or a user token of ``scopes.user_tokens``) a user's
default project is their own (``Scope.held_per_user``): MEMORY.md, Documents and project spaces
of nobody else. A *named* project is shared by everyone granted it, and only by them. A grant
comes from:

* a permission of the LangGraph auth user: ``mnemon:project:<id>`` (that project) or
  ``mnemon:project:*`` (every project);
* a ``projects`` field on the auth user (a list of ids, ``"*"`` for every one), for auth
  handlers that return richer user objects;
* ``scopes.project_grants`` in configuration: ``{"alice": ["billing"], "ops": ["*"]}`` (the
  only source for ``user_tokens`` users).

Without authentication (one person, a notebook, a trusted gateway) every project is granted, as
before. Plain Python: no I/O.

Example:
    >>> grants = grants_of(["mnemon:project:billing"])
    >>> grants.allows("billing"), grants.allows("payroll"), grants.allows("local")
    (True, False, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from langgraph_mnemon.contracts import LOCAL

__all__ = [
    "ADMIN_PERMISSION",
    "ALL_PROJECTS",
    "PROJECT_PERMISSION",
    "UNCHECKED",
    "Grants",
    "grants_of",
    "user_field",
]

ADMIN_PERMISSION = "mnemon:admin"
"""The auth permission that makes a remote user an admin: host-wide settings, and providers with
a storage location or an address of their choosing."""

PROJECT_PERMISSION = "mnemon:project:"
"""Prefix of the auth permission that grants one project (``mnemon:project:billing``)."""
ALL_PROJECTS = "*"
"""The grant of every project (``mnemon:project:*``, or ``"*"`` in a ``projects`` list)."""


@dataclass(frozen=True)
class Grants:
    """The named projects one user may use (``"*"``: all); the default project always.

    ``everything`` is true without authentication: then nothing is checked.
    """

    projects: frozenset[str] = frozenset()
    everything: bool = False

    def allows(self, project: str) -> bool:
        """Whether the user may use ``project`` (their own default project always)."""
        return (
            project == LOCAL
            or self.everything
            or ALL_PROJECTS in self.projects
            or project in self.projects
        )

    def shown(self) -> list[str]:
        """The granted project ids, sorted, for status pages (``["*"]``: every project)."""
        if self.everything or ALL_PROJECTS in self.projects:
            return [ALL_PROJECTS]
        return sorted(self.projects)


UNCHECKED = Grants(everything=True)


def user_field(user: Any, name: str) -> Any:
    """Field ``name`` of an auth user: a mapping key, an item of LangGraph's user proxy, or an
    attribute; None when the user has no such field."""
    if user is None:
        return None
    if isinstance(user, Mapping):
        return user.get(name)
    try:
        return user[name]
    except (KeyError, TypeError, IndexError, AttributeError, NotImplementedError):
        pass
    try:
        return getattr(user, name, None)
    except (KeyError, NotImplementedError):
        return None


def _ids(values: Any) -> set[str]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        return set()
    return {value for value in values if isinstance(value, str) and value}


def grants_of(
    permissions: Iterable[Any] | None,
    user: Any = None,
    configured: Iterable[str] | None = None,
) -> Grants:
    """The projects granted by auth permissions, the auth user's ``projects`` field and
    ``scopes.project_grants`` of that user.

    Args:
        permissions: the auth permissions (``langgraph_auth_permissions``, ``request.auth``).
        user: the auth user (a mapping or LangGraph's user object), for its ``projects``.
        configured: ``scopes.project_grants[user]`` from configuration.

    Returns:
        The user's :class:`Grants`. Ids are compared exactly as given.

    Example:
        >>> grants_of(["mnemon:project:*"]).allows("anything")
        True
        >>> grants_of([], {"identity": "a", "projects": ["ops"]}).shown()
        ['ops']
    """
    projects = {
        permission.removeprefix(PROJECT_PERMISSION)
        for permission in _ids(permissions or ())
        if permission.startswith(PROJECT_PERMISSION) and permission != PROJECT_PERMISSION
    }
    projects |= _ids(user_field(user, "projects"))
    projects |= _ids(configured or ())
    return Grants(frozenset(projects))
