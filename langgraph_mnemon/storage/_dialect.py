"""SQL that differs between SQLite and PostgreSQL, shared by the layers: inserts that ignore or
update on a key conflict, and transaction-scoped advisory locks (re-exported by :mod:`.db`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

__all__ = ["advisory_lock", "advisory_lock_id", "insert_ignore", "upsert"]


def _insert(dialect: str, table: sa.Table) -> Any:
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table)


def insert_ignore(dialect: str, table: sa.Table, keys: Sequence[str]) -> Any:
    """``INSERT ... ON CONFLICT (keys) DO NOTHING`` for ``dialect`` (``sqlite``/``postgresql``).

    A row whose key a concurrent transaction inserted first is skipped (the result's
    ``rowcount`` counts the rows inserted), never a unique-key error.
    """
    return _insert(dialect, table).on_conflict_do_nothing(index_elements=list(keys))


def upsert(
    dialect: str,
    table: sa.Table,
    keys: Sequence[str],
    update: Sequence[str],
    *,
    where: Callable[[Any], Any] | None = None,
) -> Any:
    """``INSERT ... ON CONFLICT (keys) DO UPDATE SET`` the ``update`` columns.

    ``where``: given the ``excluded`` row, the condition under which a conflict updates
    (otherwise the stored row stays as it is). Without one the statement is built once per
    shape and shared (statements are immutable; building ``excluded`` proxies every column).
    """
    if where is None:
        return _shared_upsert(dialect, table, tuple(keys), tuple(update))
    return _build_upsert(dialect, table, keys, update, where)


@functools.lru_cache(maxsize=256)
def _shared_upsert(
    dialect: str, table: sa.Table, keys: tuple[str, ...], update: tuple[str, ...]
) -> Any:
    return _build_upsert(dialect, table, keys, update, None)


def _build_upsert(
    dialect: str,
    table: sa.Table,
    keys: Sequence[str],
    update: Sequence[str],
    where: Callable[[Any], Any] | None,
) -> Any:
    stmt = _insert(dialect, table)
    return stmt.on_conflict_do_update(
        index_elements=list(keys),
        set_={name: stmt.excluded[name] for name in update},
        where=where(stmt.excluded) if where is not None else None,
    )


def advisory_lock_id(scope: str, key: str) -> int:
    """The 64-bit key :func:`advisory_lock` locks for ``(scope, key)`` (for SQL that takes
    the same lock in a statement of its own)."""
    digest = hashlib.blake2b(f"{scope}\x00{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def advisory_lock(conn: Connection, scope: str, key: str, *, shared: bool = False) -> None:
    """Take a transaction-scoped lock on ``(scope, key)``.

    PostgreSQL uses ``pg_advisory_xact_lock`` (``_shared`` for readers of the key); SQLite
    needs nothing because its write transactions (``BEGIN IMMEDIATE``) are already exclusive.
    """
    if conn.dialect.name != "postgresql":
        return
    fn = sa.func.pg_advisory_xact_lock_shared if shared else sa.func.pg_advisory_xact_lock
    conn.execute(sa.select(fn(advisory_lock_id(scope, key))))
