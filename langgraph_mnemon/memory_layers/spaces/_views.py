"""The Memory Spaces of one scope: the service itself, seen through an owner filter.

A view is the same :class:`~langgraph_mnemon.memory_layers.spaces.MemorySpaces` object shape
with one thing replaced: its catalog reads and writes through the scope's :class:`Owners`
(:mod:`._owners`). Every method of the service goes through the catalog before it asks a
provider anything, so the one code path serves the local scope and every other scope alike.

Example:
    >>> alice = mem.spaces.for_scope(Scope(user="alice"))
    >>> alice.get_space(bobs_space_id)
    Traceback (most recent call last):
    NotFoundError: no Memory Space '...'; list them with spaces.list_spaces() ...
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Self

from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.spaces._owners import EVERY_OWNER, Owners, owners_of

if TYPE_CHECKING:
    from langgraph_mnemon.memory_layers.spaces._catalog import SpaceCatalog

__all__ = ["ScopeViews"]


class ScopeViews:
    """How a :class:`MemorySpaces` service hands out the views of scopes (a mixin)."""

    _catalog: SpaceCatalog
    _root: Self
    _every: Self | None

    @property
    def owners(self) -> Owners:
        """Which spaces this service (or view) sees, and who owns the spaces it creates."""
        return self._catalog.owners

    def for_scope(self, scope: Scope, *, per_user: bool = False) -> Self:
        """The Memory Spaces of one scope: the same API, over the spaces that scope may see.

        Visible are the spaces owned by the scope's user (``user:alice``) and by its project
        (``project:billing``, shared by the project's users), plus, when the scope's user is
        the local user, the spaces without an owner (every space from before scopes). Every
        method reads through that filter: an id of another owner's space raises the same
        :class:`NotFoundError` as an unknown id, before any provider is asked; federated
        search without ``space_ids`` asks the view's active spaces only; ``create_space``
        makes the space the user's (``shared=True``: the project's). Providers, the fan-out
        pool and the health cache are the service's own.

        Args:
            scope: The :class:`~langgraph_mnemon.contracts.Scope`.
            per_user: ``project_memory = user_project``: the project's spaces are held per
                user (owner ``project:<p>/user:<u>``) like its MEMORY.md and Documents.

        Returns:
            The service itself for the local scope, else a view of the scope (closing a view
            closes nothing).

        Raises:
            InvalidInputError: ``scope`` is not a :class:`Scope`.

        Example:
            >>> alice = mem.spaces.for_scope(Scope(user="alice", project="billing"))
            >>> alice.create_space("Alice's notes").space.owner
            'user:alice'
            >>> "Alice's notes" in [s.name for s in mem.spaces.list_spaces()]
            False
        """
        if not isinstance(scope, Scope):
            raise InvalidInputError(
                f"for_scope() takes a Scope (got {type(scope).__name__}); e.g. "
                "Scope(user='alice', project='billing')"
            )
        if scope.is_local:
            return self._root
        return self._root._view(owners_of(scope, bool(per_user)))

    def every_owner(self) -> Self:
        """A view over every owner's spaces: the host operator's, for host code only.

        The store facade's local scope reads through it (its namespaces stay global, as
        before scopes). Spaces it creates are the local user's. Never hand it to a model, a
        request or a user's run.

        Returns:
            The view (the same object on every call).

        Example:
            >>> [s.owner for s in mem.spaces.every_owner().list_spaces()]
            [None, 'user:alice']
        """
        root = self._root
        if root._every is None:
            root._every = root._view(EVERY_OWNER)
        return root._every

    @property
    def admin(self) -> bool:
        """Whether this service (or view) may name storage locations and add, configure or
        test spaces that connect out (:mod:`._locations`): the service itself and the local
        scope's and operator's views may, a scope's view may not."""
        return self._catalog.admin

    def as_admin(self) -> Self:
        """This view for an admin: the control plane's, for a caller with ``mnemon:admin``.

        Its spaces and owners stay the scope's; only what its caller may set changes (a
        location inside ``providers.allowed_paths``, a space that connects out). Never hand it
        to a model, a run or a user who is not an admin.

        Returns:
            The same view when it is an admin's already, else an admin's copy.

        Example:
            >>> mem.spaces.for_scope(Scope(user="root-op")).as_admin().admin
            True
        """
        if self._catalog.admin:
            return self
        view = copy.copy(self)
        view._catalog = self._catalog.owned_by(self._catalog.owners, admin=True)
        return view

    def _view(self, owners: Owners) -> Self:
        view = copy.copy(self)  # shares the providers, the fan-out pool and the health cache
        view._catalog = self._catalog.owned_by(owners)
        return view
