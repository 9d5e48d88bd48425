"""A throwaway PostgreSQL schema for tests and benchmarks, so runs on one server never collide.

Example:
    >>> from langgraph_mnemon import Mnemon
    >>> from langgraph_mnemon.testing.postgres import fresh_schema
    >>> with fresh_schema("postgresql+psycopg://mnemon:mnemon@127.0.0.1:55432/mnemon") as url:
    ...     Mnemon.open("./.mnemon-test", database_url=url).status()  # doctest: +SKIP
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["fresh_schema"]


@contextmanager
def fresh_schema(server: str, *, prefix: str = "t") -> Iterator[str]:
    """Create a schema named ``{prefix}_<random>`` on ``server`` and drop it (cascade) afterwards.

    Args:
        server: A SQLAlchemy PostgreSQL URL (``postgresql+psycopg://...`` or ``postgresql://``).
        prefix: The start of the schema's name, to tell whose schema a leftover is.

    Returns:
        A context manager yielding ``server`` with ``options=-csearch_path=<schema>`` added, so
        every table made through that URL lands in the new schema.

    Raises:
        psycopg.OperationalError: the server cannot be reached.
    """
    import psycopg  # only PostgreSQL users need it

    plain = server.replace("postgresql+psycopg://", "postgresql://", 1)
    schema = f"{prefix}_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in server else "?"
    try:
        yield f"{server}{sep}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
