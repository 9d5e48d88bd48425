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
CHROMA_ENV = "MNEMON_TEST_CHROMA_URL"


def service_url(env: str, what: str, script: str) -> str:
    """The URL in ``env``; skip when unset, but fail under ``CI=true`` (CI must start it)."""
    url = os.environ.get(env, "").strip()
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{env} is not set under CI=true; .ci/run must export it")
        pytest.skip(f"{what} not configured: set {env} (bash {script} prints one)")
    return url


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """The PostgreSQL server URL (``postgresql+psycopg://...``)."""
    return service_url(POSTGRES_ENV, "PostgreSQL", ".ci/start-postgres.sh")


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


@pytest.fixture(scope="session")
def chroma_server() -> tuple[str, int]:
    """``(host, port)`` of the Chroma server in ``MNEMON_TEST_CHROMA_URL``.

    ``bash .ci/start-chroma.sh`` starts one and prints its URL. Skips when unset, except under
    ``CI=true``, where a missing URL fails the run.
    """
    from urllib.parse import urlsplit

    url = service_url(CHROMA_ENV, "Chroma server", ".ci/start-chroma.sh")
    parts = urlsplit(url)
    if not parts.hostname or not parts.port:
        pytest.fail(f"{CHROMA_ENV} must look like http://127.0.0.1:58123 (got {url!r})")
    return (parts.hostname, parts.port)
