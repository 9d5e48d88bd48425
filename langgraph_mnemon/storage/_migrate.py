"""Versioned migrations and their bookkeeping table, ``mnemon_schema_version`` (re-exported by
:mod:`.db`).

Layers hand :func:`migrate` a tuple of :class:`Migration` steps tagged with a *component*
name; applied steps are recorded one row each, so a setup is idempotent. Every table of
langgraph-mnemon carries its prefix (``mnemon_`` / ``mnemos_``), the bookkeeping table too, so
the project can live in an application's database (or, with ``database_schema``, in a
PostgreSQL schema of its own) next to tables it did not make.

Two things happen at the start of every migration transaction, under its lock:

* **The schema.** On PostgreSQL, when no schema of the connection's search path exists (a
  ``database_schema`` that was never created), the first one named is created.
* **The old name.** Releases before this one kept the bookkeeping in ``schema_version``. A
  table of that name in the current schema is *ours* when it has exactly our four columns
  (``component``, ``version``, ``description``, ``applied_at``) and every row names a component
  of ours; then it is renamed ``mnemon_schema_version`` (with its primary key) in the same
  transaction. Any other ``schema_version`` (Flyway's, an application's) is never touched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from langgraph_mnemon.errors import InvalidInputError, StorageError
from langgraph_mnemon.storage._ddl import column_names, create_tables, existing_tables
from langgraph_mnemon.storage._dialect import advisory_lock, advisory_lock_id

__all__ = [
    "LEGACY_SCHEMA_VERSION",
    "SCHEMA_VERSION",
    "Migration",
    "check_migrations",
    "migrate",
    "schema_state",
]

_VERSION_METADATA = sa.MetaData()
SCHEMA_VERSION = sa.Table(
    "mnemon_schema_version",
    _VERSION_METADATA,
    sa.Column("component", sa.String(64), primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("description", sa.Text, nullable=False, server_default=""),
    sa.Column("applied_at", sa.Float, nullable=False),
)
"""One row per applied migration step: ``(component, version)``."""

LEGACY_SCHEMA_VERSION = "schema_version"
"""The bookkeeping table's name in releases before the prefix (renamed on first setup)."""
_LEGACY = sa.table(LEGACY_SCHEMA_VERSION, *(sa.column(c.name) for c in SCHEMA_VERSION.columns))
_VERSION_COLUMNS = frozenset(c.name for c in SCHEMA_VERSION.columns)
# Every component a release with the old table name recorded: a table holding anything else
# is not ours.
_LEGACY_COMPONENTS = frozenset(
    {"documents", "mnemos", "mnemos_owners", "review", "runtime", "space_owners", "spaces"}
)


@dataclass(frozen=True)
class Migration:
    """One schema step of one component. ``upgrade`` runs inside the migration transaction."""

    component: str
    version: int
    description: str
    upgrade: Callable[[Connection], None]


def check_migrations(migrations: Sequence[Migration]) -> dict[str, list[Migration]]:
    """``migrations`` by component, each numbered ``1..n`` in order.

    Raises:
        InvalidInputError: a component's steps are not numbered ``1..n`` in order.
    """
    by_component: dict[str, list[Migration]] = {}
    for step in migrations:
        by_component.setdefault(step.component, []).append(step)
    for component, steps in by_component.items():
        versions = [s.version for s in steps]
        if versions != list(range(1, len(steps) + 1)):
            raise InvalidInputError(
                f"migrations of component {component!r} must be numbered 1..n in order "
                f"(got {versions})"
            )
    return by_component


def migrate(conn: Connection, migrations: Sequence[Migration]) -> list[Migration]:
    """Apply the steps of ``migrations`` not yet recorded in ``mnemon_schema_version``.

    Runs inside the caller's write transaction (all steps commit together or not at all),
    after creating a missing PostgreSQL schema and adopting the bookkeeping table of an older
    release (see the module docstring). The run costs few round trips: one query for the
    applied versions (none when the table was only now created), each step's tables as one
    DDL batch (:func:`create_tables`), and one insert recording every applied step.

    Args:
        conn: a connection inside a write transaction.
        migrations: the steps of one or more components.

    Returns:
        The steps applied now.

    Raises:
        StorageError: the database was migrated by a newer release (a component version above
            the newest step given), or its PostgreSQL schema is missing and cannot be created.
    """
    by_component = check_migrations(migrations)
    _lock_and_ensure_schema(conn)
    found = existing_tables(conn, [SCHEMA_VERSION.name, LEGACY_SCHEMA_VERSION])
    if SCHEMA_VERSION.name not in found and _adopt_legacy(conn, found):
        found.add(SCHEMA_VERSION.name)
    fresh = bool(create_tables(conn, [SCHEMA_VERSION], existing=found))
    applied = {} if fresh else _applied(conn, SCHEMA_VERSION)
    pending: list[Migration] = []
    for component, steps in by_component.items():
        have = applied.get(component, set())
        _refuse_newer(component, have, steps)
        pending.extend(step for step in steps if step.version not in have)
    for step in pending:
        step.upgrade(conn)
    if pending:
        now = time.time()
        rows = [
            {"component": s.component, "version": s.version, "description": s.description}
            for s in pending
        ]
        conn.execute(sa.insert(SCHEMA_VERSION), [{**row, "applied_at": now} for row in rows])
    return pending


def schema_state(
    conn: Connection, migrations: Sequence[Migration], *, legacy_is_current: bool = False
) -> str:
    """``absent``, ``outdated`` or ``current``, read without creating anything.

    Args:
        conn: any connection.
        migrations: the steps of one or more components.
        legacy_is_current: whether a schema whose bookkeeping still has the old name counts
            as current when its versions are (a read-only host reads it as it is); otherwise
            it is ``outdated``, so that a setup renames the table.

    Raises:
        StorageError: the database was migrated by a newer release.
    """
    by_component = check_migrations(migrations)
    found = existing_tables(conn, [SCHEMA_VERSION.name, LEGACY_SCHEMA_VERSION])
    renamed = SCHEMA_VERSION.name in found
    if not renamed and not (LEGACY_SCHEMA_VERSION in found and _legacy_is_ours(conn)):
        return "absent"
    applied = _applied(conn, SCHEMA_VERSION if renamed else _LEGACY, list(by_component))
    state = "current"
    for component, steps in by_component.items():
        have = applied.get(component, set())
        if not have:
            return "absent"
        _refuse_newer(component, have, steps)
        if len(have) < len(steps):
            state = "outdated"
    if not renamed and not legacy_is_current:
        state = "outdated"
    return state


def _applied(
    conn: Connection, table: sa.TableClause, components: list[str] | None = None
) -> dict[str, set[int]]:
    query = sa.select(table.c.component, table.c.version)
    if components is not None:
        query = query.where(table.c.component.in_(components))
    applied: dict[str, set[int]] = {}
    for component, version in conn.execute(query).all():
        applied.setdefault(component, set()).add(int(version))
    return applied


def _refuse_newer(component: str, have: set[int], steps: Sequence[Migration]) -> None:
    if have and max(have) > len(steps):
        raise StorageError(
            f"the database schema of {component!r} is at version {max(have)} but this "
            f"langgraph-mnemon knows versions up to {len(steps)}; upgrade langgraph-mnemon"
        )


def _legacy_is_ours(conn: Connection) -> bool:
    """Whether the current schema's ``schema_version`` was made by an older release of ours:
    exactly our columns, and rows that name only components of ours."""
    if column_names(conn, LEGACY_SCHEMA_VERSION) != _VERSION_COLUMNS:
        return False
    components = set(conn.execute(sa.select(_LEGACY.c.component).distinct()).scalars())
    return bool(components) and components <= _LEGACY_COMPONENTS


def _adopt_legacy(conn: Connection, found: set[str]) -> bool:
    """Rename an older release's ``schema_version`` (when it is ours) to the prefixed name,
    primary key included; returns whether it did. ``found``: the tables that exist."""
    if LEGACY_SCHEMA_VERSION not in found:
        return False
    if not _legacy_is_ours(conn):
        return False  # an application's table of that name: never touched
    conn.exec_driver_sql(f"ALTER TABLE {LEGACY_SCHEMA_VERSION} RENAME TO {SCHEMA_VERSION.name}")
    if conn.dialect.name == "postgresql":
        # The key keeps its name (schema_version_pkey) through the rename; a table the
        # application later calls schema_version would collide with it.
        key = conn.execute(_PG_PRIMARY_KEY, {"table": SCHEMA_VERSION.name}).scalar()
        wanted = f"{SCHEMA_VERSION.name}_pkey"
        if key and key != wanted:
            conn.exec_driver_sql(
                f'ALTER TABLE {SCHEMA_VERSION.name} RENAME CONSTRAINT "{key}" TO {wanted}'
            )
    return True


_PG_PRIMARY_KEY = sa.text(
    "SELECT conname FROM pg_catalog.pg_constraint WHERE contype = 'p' AND conrelid = "
    "to_regclass(quote_ident(current_schema()) || '.' || quote_ident(:table))"
)


def _lock_and_ensure_schema(conn: Connection) -> None:
    """Take the migration lock and, on PostgreSQL, create the first schema of the search path
    when none of them exists (one round trip when it does).

    Raises:
        StorageError: no schema is named, or the role may not create it.
    """
    if conn.dialect.name != "postgresql":
        advisory_lock(conn, "mnemon-schema", "migrate")  # SQLite: BEGIN IMMEDIATE is the lock
        return
    locked = sa.select(
        sa.func.pg_advisory_xact_lock(advisory_lock_id("mnemon-schema", "migrate")),
        sa.func.current_schema(),
    )
    if conn.execute(locked).one()[1] is not None:
        return
    path = conn.execute(sa.text("SELECT current_setting('search_path')")).scalar() or ""
    names = [n.strip().strip('"') for n in path.split(",")]
    wanted = next((n for n in names if n and n != "$user"), None)
    if wanted is None:
        raise StorageError(
            f"no schema of the search path ({path!r}) exists, so there is nowhere to create "
            "the tables; set database_schema (MNEMON_DATABASE_SCHEMA)",
            code="storage-permission",
        )
    exists = sa.text("SELECT has_database_privilege(current_database(), 'CREATE')")
    if not conn.execute(exists).scalar():
        raise StorageError(
            f"the PostgreSQL schema {wanted!r} does not exist and this role may not create "
            f"it; create it once as the database owner (CREATE SCHEMA {wanted} "
            "AUTHORIZATION <this role>), or grant CREATE on the database",
            code="storage-permission",
        )
    quoted = wanted.replace('"', '""')
    conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{quoted}"')
