"""Shared fixtures: a real PostgreSQL schema per test for the Mnemos store and checkpointer.

Tests that need PostgreSQL take ``postgres_url``. It reads ``MNEMON_TEST_POSTGRES_URL`` (printed by
``bash .ci/start-postgres.sh``) and skips when unset — except under ``CI=true``, where a missing
URL fails the run. Each test gets a fresh schema (dropped afterwards), so runs never collide.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from langgraph_mnemon import Mnemon
from langgraph_mnemon.testing.postgres import fresh_schema

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


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep the tests that share a module-scoped fixture on one xdist worker.

    A module-scoped fixture (a served ``mnemon serve``, a browser, a built matrix) is set up once
    per worker that runs a test using it; grouping those tests by module sets it up once. Tests of
    the same module that use no such fixture still spread over both workers.
    """
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        if "many_users" in info.name2fixturedefs:  # one served deployment for every module
            item.add_marker(pytest.mark.xdist_group("many_users"))
            continue
        for defs in info.name2fixturedefs.values():
            if any(d.scope in ("module", "class", "package") for d in defs):
                item.add_marker(pytest.mark.xdist_group(item.module.__name__))
                break


@pytest.fixture(scope="session")
def many_users(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The served three-user deployment of ``tests/many_users_support.py`` (Alice, Bob, admin)."""
    from many_users_support import serve_many_users

    with serve_many_users(tmp_path_factory.mktemp("many-users") / "m") as served:
        yield served


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """The PostgreSQL server URL (``postgresql+psycopg://...``)."""
    return service_url(POSTGRES_ENV, "PostgreSQL", ".ci/start-postgres.sh")


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A URL whose ``search_path`` is a fresh schema, dropped after the test."""
    with fresh_schema(postgres_server) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: os.PathLike[str]) -> str:
    """A database URL for each backend: a SQLite file, then a PostgreSQL schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/mnemon.db"
    return str(request.getfixturevalue("postgres_url"))


# --- a host on embedded defaults -----------------------------------------------------------


@pytest.fixture
def mem(tmp_path: os.PathLike[str]) -> Iterator[Mnemon]:
    """A host on embedded defaults in a fresh root (``tmp_path / "root"``), closed afterwards.

    A module that needs other settings defines its own ``mem``, which takes precedence.
    """
    from pathlib import Path

    host = Mnemon.open(Path(tmp_path) / "root")
    try:
        yield host
    finally:
        host.close()


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


# --- a small file system of the test's own: full disk, read-only -------------------------


def _mount_tmpfs(path: os.PathLike[str], size_kib: int) -> str | None:
    """Mount a tmpfs of ``size_kib`` KiB at ``path``; the reason when that is not permitted."""
    import subprocess

    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kib}k,mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return (done.stderr or done.stdout).strip() or f"mount exited {done.returncode}"
    return None


class SmallDisk:
    """A mounted tmpfs: ``fill()`` uses up its space, ``read_only()`` remounts it read-only."""

    def __init__(self, path: os.PathLike[str]) -> None:
        from pathlib import Path

        self.path = Path(path)
        self._ballast = 0

    def fill(self) -> None:
        """Write ballast files until the file system is full (ENOSPC), keeping them."""
        import errno

        chunk = b"\0" * 4096
        while True:
            name = self.path / f".ballast-{self._ballast}"
            self._ballast += 1
            try:
                with open(name, "wb", buffering=0) as out:
                    while True:
                        out.write(chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
            if name.stat().st_size == 0:
                return  # not even one block fits any more

    def free(self) -> None:
        """Remove the ballast again."""
        for item in self.path.glob(".ballast-*"):
            item.unlink()

    def read_only(self, flag: bool = True) -> None:
        """Remount read-only (``flag=False``: read-write again)."""
        import subprocess

        mode = "ro" if flag else "rw"
        subprocess.run(["mount", "-o", f"remount,{mode}", str(self.path)], check=True)


@pytest.fixture
def small_disk(tmp_path: os.PathLike[str]) -> Iterator[SmallDisk]:
    """A 4 MiB tmpfs mounted for this test (CI runs as root, so mounting is permitted there).

    Skips, saying why, only where this machine does not permit mounting.
    """
    import subprocess
    from pathlib import Path

    mount_point = Path(tmp_path) / "small-disk"
    mount_point.mkdir()
    reason = _mount_tmpfs(mount_point, 4096)
    if reason is not None:
        pytest.skip(f"mounting a tmpfs is not permitted here ({reason}); needs root")
    try:
        yield SmallDisk(mount_point)
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)
