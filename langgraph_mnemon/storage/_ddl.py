"""Schema creation in one batch: what a migration step sends to create its tables.

``Table.create(conn, checkfirst=True)`` asks the database whether each table exists (two
``PRAGMA`` statements per table on SQLite, a catalog query per table on PostgreSQL) and then
sends each ``CREATE TABLE`` and ``CREATE INDEX`` on its own. :func:`create_tables` asks once
for all of them, renders the DDL of the missing ones with SQLAlchemy's own schema generator
(against a mock connection, so nothing is sent while rendering) and sends it as one batch: one
round trip on PostgreSQL (psycopg runs a parameterless multi-statement string in one go), one
statement after another on SQLite (in-process, no round trip to save; ``executescript`` would
commit the migration transaction half-way). Everything stays inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.engine.mock import MockConnection

__all__ = ["column_names", "create_tables", "existing_tables"]

_TABLE_KINDS = ("r", "p", "f", "v", "m")  # what SQLAlchemy's has_table counts on PostgreSQL
# In the current schema (the first existing one of the search path), where an unqualified
# CREATE TABLE puts a table: a table of the same name further down the search path (another
# application's, or another installation's in ``public``) is not ours and must not count.
_PG_EXISTING = sa.text(
    "SELECT c.relname, c.relkind FROM pg_catalog.pg_class c "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relname = ANY(:names) AND n.nspname = current_schema()"
)
_PG_COLUMNS = sa.text(
    "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = "
    "to_regclass(quote_ident(current_schema()) || '.' || quote_ident(:table)) "
    "AND attnum > 0 AND NOT attisdropped"
)
_SQLITE_EXISTING = sa.text(
    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name IN :names"
).bindparams(sa.bindparam("names", expanding=True))


def create_tables(
    conn: Connection,
    items: Iterable[sa.Table | sa.Sequence],
    *,
    then: Sequence[str] = (),
    existing: set[str] | None = None,
) -> list[str]:
    """Create those of ``items`` that do not exist yet (tables with their indexes, and
    sequences on PostgreSQL), then run the ``then`` statements, as one batch.

    Args:
        conn: a connection inside the migration's write transaction.
        items: tables (and sequences) in creation order (a referenced table first).
        then: further DDL of the step (e.g. ``CREATE INDEX IF NOT EXISTS``), sent in the same
            batch after the tables whether or not they were created.
        existing: the names of ``items`` known to exist (the caller asked already): no query.

    Returns:
        The statements sent.
    """
    wanted = [item for item in items if _applies(item, conn.dialect)]
    if existing is None:
        found = _existing(conn, [item.name for item in wanted])
    else:
        found = {(item.name, _kind(item)) for item in wanted if item.name in existing}
    missing = [item for item in wanted if (item.name, _kind(item)) not in found]
    statements = [*_render(conn.dialect, missing), *then]
    if not statements:
        return []
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(";\n".join(statements))  # one round trip
    else:
        for statement in statements:
            conn.exec_driver_sql(statement)
    return statements


def column_names(conn: Connection, table: str) -> set[str]:
    """The column names of ``table`` (empty when it does not exist), in one cheap query.

    For a migration step that adds a column: SQLAlchemy's column reflection on PostgreSQL
    reads types, defaults and comments too, tens of milliseconds where this takes one.
    """
    if conn.dialect.name == "postgresql":
        rows = conn.execute(_PG_COLUMNS, {"table": table}).all()
        return {name for (name,) in rows}
    if conn.dialect.name == "sqlite":
        quoted = table.replace('"', '""')
        return {row[1] for row in conn.exec_driver_sql(f'PRAGMA table_info("{quoted}")').all()}
    return {column["name"] for column in sa.inspect(conn).get_columns(table)}


def existing_tables(conn: Connection, names: Sequence[str]) -> set[str]:
    """Those of ``names`` that are tables (or views) of the current schema, in one query.

    Args:
        conn: any connection.
        names: table names.

    Returns:
        The names that exist (on PostgreSQL: in ``current_schema()``).
    """
    return {name for name, kind in _existing(conn, list(names)) if kind == "table"}


def _applies(item: sa.Table | sa.Sequence, dialect: sa.Dialect) -> bool:
    return isinstance(item, sa.Table) or bool(dialect.supports_sequences)


def _kind(item: sa.Table | sa.Sequence) -> str:
    return "table" if isinstance(item, sa.Table) else "sequence"


def _existing(conn: Connection, names: list[str]) -> set[tuple[str, str]]:
    """``(name, "table" | "sequence")`` of those of ``names`` that exist, in one query."""
    if not names:
        return set()
    if conn.dialect.name == "postgresql":
        rows = conn.execute(_PG_EXISTING, {"names": names}).all()
        found = set()
        for name, kind in rows:
            if kind in _TABLE_KINDS:
                found.add((name, "table"))
            elif kind == "S":
                found.add((name, "sequence"))
        return found
    if conn.dialect.name == "sqlite":
        rows = conn.execute(_SQLITE_EXISTING, {"names": names}).all()
        return {(name, "table") for (name,) in rows}
    inspector = sa.inspect(conn)  # any other dialect: SQLAlchemy's own checks
    return {(n, "table") for n in names if inspector.has_table(n)} | {
        (n, "sequence") for n in names if inspector.has_sequence(n)
    }


def _render(dialect: sa.Dialect, items: list[sa.Table | sa.Sequence]) -> list[str]:
    """The DDL SQLAlchemy's schema generator emits for ``items``, rendered for ``dialect``."""
    statements: list[str] = []

    def collect(element: Any, *_args: Any, **_kwargs: Any) -> None:
        statements.append(str(element.compile(dialect=dialect)).strip())

    mock = MockConnection(dialect, collect)
    for item in items:
        item.create(mock, checkfirst=False)  # type: ignore[arg-type]
    return statements
