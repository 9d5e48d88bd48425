"""Who owns a Memory Space, and which spaces a scope sees.

Each catalog row has an ``owner`` (the ``space_owners`` migration adds the column to
``mnemon_spaces``): ``NULL`` for a space of the local user (every space created before scopes,
and every space the local scope creates), a user key (``user:alice``) for a user's own space, a
project key (``project:billing``) for a space the project's users share. :class:`Owners` is the
filter one scope reads through: its user's and its project's spaces, plus the ``NULL`` ones when
the scope's user is the local user. :data:`EVERY_OWNER` sees every space (the host operator's
view, which the store facade's local scope reads through).

Example:
    >>> owners = owners_of(Scope(user="alice", project="billing"))
    >>> owners.sees("project:billing"), owners.sees("user:bob"), owners.sees(None)
    (True, False, False)
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from langgraph_mnemon.contracts import LOCAL, Scope
from langgraph_mnemon.memory_layers.mnemos.spaces_schema import MIGRATIONS, SPACES
from langgraph_mnemon.storage.db import Migration, column_names

__all__ = [
    "CATALOG",
    "CATALOG_MIGRATIONS",
    "EVERY_OWNER",
    "LOCAL_OWNERS",
    "OWNER_MIGRATIONS",
    "Owners",
    "owners_of",
]

_OWNER_INDEX = "ix_mnemon_spaces_owner"

# The catalog table as this package reads it: the shared definition plus the owner column.
CATALOG = SPACES.to_metadata(sa.MetaData())
CATALOG.append_column(sa.Column("owner", sa.Text, nullable=True))


def _add_owner(conn: sa.Connection) -> None:
    # The provider's own migration may have created the table (without owners) just before.
    columns = column_names(conn, SPACES.name)
    if "owner" not in columns:
        conn.exec_driver_sql(f"ALTER TABLE {SPACES.name} ADD COLUMN owner TEXT")
    conn.exec_driver_sql(f"CREATE INDEX IF NOT EXISTS {_OWNER_INDEX} ON {SPACES.name} (owner)")


OWNER_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "space_owners",
        1,
        "Memory Space owners: NULL (the local user), a user key or a project key",
        _add_owner,
    ),
)
"""Schema steps of the ``space_owners`` component (after ``spaces`` 1)."""

CATALOG_MIGRATIONS: tuple[Migration, ...] = (*MIGRATIONS, *OWNER_MIGRATIONS)
"""Everything the catalog needs, in order: the Memory Space tables, then the owner column."""


@dataclass(frozen=True, slots=True)
class Owners:
    """The spaces one scope sees and who owns the spaces it creates.

    Attributes:
        keys: The owner keys it sees (``None``: every owner).
        legacy: Whether it sees ``NULL``-owner spaces (the local user's).
        user: The owner of a space it creates (``None`` writes ``NULL``, the local user).
        project: The owner of a space it creates with ``shared=True``.
        local: Whether this is the single local scope (the service itself).
    """

    keys: frozenset[str] | None
    legacy: bool
    user: str | None
    project: str
    local: bool = False

    @property
    def every(self) -> bool:
        """Whether every owner's spaces are visible (the operator's view)."""
        return self.keys is None

    def sees(self, owner: str | None) -> bool:
        """Whether a space owned by ``owner`` is visible."""
        if self.keys is None:
            return True
        return self.legacy if owner is None else owner in self.keys

    def clause(self) -> sa.ColumnElement[bool]:
        """The SQL condition on ``mnemon_spaces`` that keeps the visible rows only."""
        if self.keys is None:
            return sa.true()
        owned = CATALOG.c.owner.in_(sorted(self.keys))
        return sa.or_(owned, CATALOG.c.owner.is_(None)) if self.legacy else owned

    def owner_of_new(self, shared: bool) -> str | None:
        """The owner a new space gets: the scope's project when ``shared``, else its user."""
        return self.project if shared else self.user


def owners_of(scope: Scope, per_user: bool = False) -> Owners:
    """What ``scope`` sees: its user's spaces, its project's, and (local user) the ``NULL`` ones.

    Args:
        scope: The scope.
        per_user: ``project_memory = user_project``: the project's spaces are held per user
            (owner ``project:<p>/user:<u>``), like its MEMORY.md and Documents.

    Returns:
        The :class:`Owners` filter of that scope.

    Example:
        >>> owners_of(Scope(user="alice")).owner_of_new(shared=False)
        'user:alice'
    """
    project = scope.project_key(scope.held_per_user(per_user))
    local_user = scope.user == LOCAL
    return Owners(
        keys=frozenset({scope.user_key, project}),
        legacy=local_user,
        user=None if local_user else scope.user_key,
        project=project,
        local=scope.is_local,
    )


LOCAL_OWNERS = owners_of(Scope())
"""The single local scope: the ``NULL``-owner spaces, plus ``user:local`` and ``project:local``."""

EVERY_OWNER = Owners(keys=None, legacy=True, user=None, project=Scope().project_key(), local=True)
"""Every space of every owner; new spaces are the local user's (``NULL``)."""
