"""Runtime Memory on each backend, for the acceptance tests that must hold on all of them.

``backend`` (a fixture: import ``backend_fixture`` into the test module) is parametrized ``files`` /
``postgres`` (``sqlite-db`` tables when ``MNEMON_TEST_POSTGRES_URL`` is not set; CI sets it);
``db_backend`` is ``sqlite-db`` / ``postgres``. A ``postgres`` backend gets a fresh schema per
test. :meth:`RuntimeBackend.open` builds a
:class:`RuntimeMemory` for a storage root the way that backend keeps it: files under the root,
or rows of the ``runtime`` tables (the first root a test opens is the local scope, ``user:local``
/ ``project:local``; another root gets owners of its own, as another folder would).
:meth:`RuntimeBackend.dump` is every row of those tables, so a test that proves "nothing
changed" by comparing files compares the rows too. The SQLite database sits outside the test's
``tmp_path``, so a test that compares every file under a root sees only what it saw before.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from langgraph_mnemon import Mnemon
from langgraph_mnemon.memory_layers.runtime import RuntimeMemory
from langgraph_mnemon.memory_layers.runtime._sql_store import ARCHIVE, ENTRIES, HEADS
from langgraph_mnemon.storage.db import Database, create_engine

POSTGRES_ENV = "MNEMON_TEST_POSTGRES_URL"
_POSTGRES = ("postgres",) if os.environ.get(POSTGRES_ENV, "").strip() else ()
DATABASE_BACKENDS = ("sqlite-db", *_POSTGRES)
# The acceptance tests: files and the shared database (PostgreSQL, else SQLite tables); the
# dedicated tests of the tables (tests/test_runtime_sql.py) run on both databases.
BACKENDS = ("files", DATABASE_BACKENDS[-1])


class RuntimeBackend:
    """One backend of Runtime Memory for one test."""

    def __init__(self, name: str, url: str | None) -> None:
        self.name = name
        self.url = url
        self.database = Database(create_engine(url), owns_engine=True) if url else None
        self._owners: dict[Path, str] = {}

    @property
    def in_database(self) -> bool:
        return self.database is not None

    def keys(self, root: Path | str) -> dict[str, str]:
        """The owner keys of ``root``: the local scope for the first root, then one per root."""
        path = Path(root).absolute()
        name = self._owners.get(path)
        if name is None:
            name = f"{path.name}-{len(self._owners)}" if self._owners else "local"
            self._owners[path] = name
        return {"user_key": f"user:{name}", "memory_key": f"project:{name}"}

    def open(self, root: Path | str, **kwargs: Any) -> RuntimeMemory:
        """A RuntimeMemory over ``root`` on this backend."""
        if self.database is None:
            return RuntimeMemory(root, **kwargs)
        return RuntimeMemory(root, database=self.database, **self.keys(root), **kwargs)

    def host(self, root: Path | str, **settings: Any) -> Mnemon:
        """``Mnemon.open(root, **settings)`` whose local Runtime Memory is on this backend."""
        mem = Mnemon.open(root, **settings)
        if self.database is not None:
            cfg = mem.config
            mem.runtime = self.open(
                mem.root,
                user_limit_bytes=cfg.runtime.user_limit_bytes,
                memory_limit_bytes=cfg.runtime.memory_limit_bytes,
                workspace=cfg.workspace_path,
                lock_timeout=cfg.runtime.lock_timeout_seconds,
                kernel=mem.kernel,
            )
        return mem

    def projection(self, rm: RuntimeMemory, root: Path, target: str) -> bytes:
        """The bytes of USER.md / MEMORY.md: the file on disk, or rendered from the rows."""
        if self.database is None:
            name = "USER.md" if target == "user" else "MEMORY.md"
            return (root / "runtime" / name).read_bytes()
        return rm.projection(target).encode()  # type: ignore[arg-type]

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of the runtime tables ({} on files, or before the tables exist)."""
        if self.database is None:
            return {}
        out: dict[str, list[tuple[Any, ...]]] = {}
        with self.database.engine.connect() as conn:
            for table in (HEADS, ENTRIES, ARCHIVE):
                if sa.inspect(conn).has_table(table.name):
                    rows = conn.execute(sa.select(table)).all()
                    out[table.name] = sorted(tuple(r) for r in rows)
        return out

    def close(self) -> None:
        if self.database is not None:
            self.database.dispose()


def backend_url(name: str, request: pytest.FixtureRequest, folder: Path) -> str | None:
    """The database URL of backend ``name`` (None for files)."""
    if name == "files":
        return None
    if name == "sqlite-db":
        return f"sqlite:///{folder / 'runtime.db'}"
    return str(request.getfixturevalue("postgres_url"))


def _backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RuntimeBackend]:
    folder = tmp_path_factory.mktemp("runtime-db")
    chosen = RuntimeBackend(request.param, backend_url(request.param, request, folder))
    try:
        yield chosen
    finally:
        chosen.close()


# Import these into a test module (the attribute name does not matter, the fixture name does).
backend_fixture = pytest.fixture(params=BACKENDS, name="backend")(_backend)
"""``backend``: Runtime Memory on files, on a SQLite database, on PostgreSQL (when configured)."""
db_backend_fixture = pytest.fixture(params=DATABASE_BACKENDS, name="db_backend")(_backend)
# The shared database alone (PostgreSQL under CI): for the slow crash tests of a served setup.
shared_db_backend_fixture = pytest.fixture(params=DATABASE_BACKENDS[-1:], name="shared_db_backend")(
    _backend
)
"""``db_backend``: the database backends only."""
