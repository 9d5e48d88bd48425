"""Shared fixtures: a real PostgreSQL schema per test for the Mnemos store and checkpointer.

Tests that need PostgreSQL take ``postgres_url``. It reads ``MNEMON_TEST_POSTGRES_URL`` (printed by
``bash .ci/start-postgres.sh``) and skips when unset — except under ``CI=true``, where a missing
URL fails the run. Each test gets a fresh schema (dropped afterwards), so runs never collide.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

POSTGRES_ENV = "MNEMON_TEST_POSTGRES_URL"
POSTGRES_SKIP = (
    "PostgreSQL not configured: set MNEMON_TEST_POSTGRES_URL "
    "(bash .ci/start-postgres.sh prints one)"
)


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """The PostgreSQL server URL (``postgresql+psycopg://...``)."""
    url = os.environ.get(POSTGRES_ENV, "").strip()
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{POSTGRES_ENV} is not set under CI=true; .ci/run must export it")
        pytest.skip(POSTGRES_SKIP)
    return url


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A URL whose ``search_path`` is a fresh schema, dropped after the test."""
    import psycopg

    plain = postgres_server.replace("postgresql+psycopg://", "postgresql://", 1)
    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in postgres_server else "?"
    try:
        yield f"{postgres_server}{sep}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: os.PathLike[str]) -> str:
    """A database URL for each backend: a SQLite file, then a PostgreSQL schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/mnemon.db"
    return str(request.getfixturevalue("postgres_url"))


# --- Memory Spaces: a real `chroma run` server ------------------------------------

CHROMA_ENV = "MNEMON_TEST_CHROMA_URL"


@pytest.fixture(scope="session")
def chroma_server() -> tuple[str, int]:
    """``(host, port)`` of the Chroma server in ``MNEMON_TEST_CHROMA_URL``.

    ``bash .ci/start-chroma.sh`` starts one and prints its URL. Skips when unset, except under
    ``CI=true``, where a missing URL fails the run.
    """
    from urllib.parse import urlsplit

    url = os.environ.get(CHROMA_ENV, "").strip()
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CHROMA_ENV} is not set under CI=true; .ci/run must export it")
        pytest.skip(
            f"Chroma server not configured: set {CHROMA_ENV} (bash .ci/start-chroma.sh prints one)"
        )
    parts = urlsplit(url)
    if not parts.hostname or not parts.port:
        pytest.fail(f"{CHROMA_ENV} must look like http://127.0.0.1:58123 (got {url!r})")
    return (parts.hostname, parts.port)
