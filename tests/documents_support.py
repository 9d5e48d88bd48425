"""Documents on each backend, for the tests that run on all of them.

``backend`` is a fixture parametrized ``files`` / ``postgres`` (``sqlite-db`` tables when
``MNEMON_TEST_POSTGRES_URL`` is not set; CI sets it); ``db_backend`` is ``sqlite-db`` /
``postgres``. A test imports it and builds its
Documents with ``backend.open_docs(tmp_path)`` (the tests' usual layout: workspace
``tmp_path/ws``, root ``tmp_path/ws/.mnemon``) or ``backend.documents(root, ...)``. On a
database backend every distinct root is its own owner (the first one ``project:local``), so two
instances opened on one root share their Documents exactly as two on one folder do.

``backend.tree(docs)`` is what a test compares to prove nothing changed: the files under the
root, and on a database also every row of the owner. ``backend.doc_files(docs)`` names the
document files (on a database: the files the rows stand for).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from langgraph_mnemon.memory_layers.documents import (
    DOCUMENTS_MIGRATIONS,
    DocumentRecord,
    Documents,
    render_document,
)
from langgraph_mnemon.memory_layers.documents._sql_schema import DOCUMENTS, HEADS
from langgraph_mnemon.storage.db import Database, create_engine

POSTGRES_ENV = "MNEMON_TEST_POSTGRES_URL"
DATABASE_BACKENDS = (
    "sqlite-db",
    *(("postgres",) if os.environ.get(POSTGRES_ENV, "").strip() else ()),
)
# The acceptance tests: files and the shared database (PostgreSQL, else SQLite tables); the
# dedicated tests of the tables (tests/test_documents_sql.py) run on both databases.
BACKENDS = ("files", DATABASE_BACKENDS[-1])


class Clock:
    """A deterministic clock: every call is one second later."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def file_tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


class Backend:
    """Builds Documents on one backend (``database`` is None for files)."""

    def __init__(self, name: str, database: Database | None) -> None:
        self.name = name
        self.files = database is None
        self.database = database
        self._owners: dict[Path, str] = {}

    def owner_for(self, root: Path | str) -> str:
        """The owner key of ``root``: ``project:local`` for the first root, then one each."""
        path = Path(root).absolute()
        if path not in self._owners:
            self._owners[path] = (
                "project:local" if not self._owners else f"project:p{len(self._owners)}"
            )
        return self._owners[path]

    def documents(self, root: Path | str, **kwargs: Any) -> Documents:
        """``Documents(root, **kwargs)`` on this backend."""
        if self.database is None:
            return Documents(root, **kwargs)
        return Documents(root, database=self.database, owner_key=self.owner_for(root), **kwargs)

    def open_docs(self, tmp_path: Path, **kwargs: Any) -> Documents:
        """The tests' usual layout: workspace ``tmp_path/ws``, root ``ws/.mnemon``, a Clock."""
        workspace = tmp_path / "ws"
        workspace.mkdir(parents=True, exist_ok=True)
        kwargs.setdefault("clock", Clock())
        return self.documents(workspace / ".mnemon", workspace=workspace, **kwargs)

    def rows(self, docs: Documents) -> list[tuple[Any, ...]]:
        """Every row of ``docs``' owner (documents, then its head), in a stable order."""
        assert self.database is not None
        if not self.database.ready_for_read(DOCUMENTS_MIGRATIONS):
            return []
        with self.database.read() as conn:
            rows = conn.execute(
                sa.select(DOCUMENTS)
                .where(DOCUMENTS.c.owner == docs.owner_key)
                .order_by(DOCUMENTS.c.position)
            ).all()
            heads = conn.execute(sa.select(HEADS).where(HEADS.c.owner == docs.owner_key)).all()
        return [tuple(r) for r in rows] + [tuple(h) for h in heads]

    def tree(self, docs: Documents) -> Any:
        """What must stay equal when nothing changed: files under the root (+ owner rows)."""
        files = file_tree(docs.root) if docs.root.exists() else {}
        return files if self.database is None else (files, self.rows(docs))

    def doc_files(self, docs: Documents) -> dict[str, list[str]]:
        """The document file names per status (on a database: the names the rows carry)."""
        if self.files:
            return {
                status: sorted(p.name for p in docs.folder(status).glob("*.md"))  # type: ignore[arg-type]
                for status in ("active", "archived")
            }
        records = docs.list("all")
        return {
            s: sorted(r.filename for r in records if r.status == s) for s in ("active", "archived")
        }

    def unfolded_access(self, docs: Documents) -> bool:
        """Whether access times wait to be folded into the records: ``access.jsonl`` exists
        (files), or a row's access column is newer than its record (database)."""
        if self.files:
            return (docs.directory / "access.jsonl").exists()
        assert self.database is not None
        with self.database.read() as conn:
            rows = conn.execute(
                sa.select(DOCUMENTS.c.record, DOCUMENTS.c.last_accessed_at).where(
                    DOCUMENTS.c.owner == docs.owner_key
                )
            ).all()
        return any(
            seen > DocumentRecord.model_validate_json(text).last_accessed_at for text, seen in rows
        )

    def index_text(self, docs: Documents) -> str:
        """``index.json`` as text (on a database: the stored records, one per line)."""
        if self.files:
            return (docs.directory / "index.json").read_text()
        assert self.database is not None
        with self.database.read() as conn:
            lines = conn.execute(
                sa.select(DOCUMENTS.c.record)
                .where(DOCUMENTS.c.owner == docs.owner_key)
                .order_by(DOCUMENTS.c.position)
            ).scalars()
            return "\n".join(lines)

    def file_text(self, docs: Documents, record: DocumentRecord) -> str:
        """The rendered file of ``record`` (read from disk on files)."""
        if self.files:
            return (docs.folder(record.status) / record.filename).read_text()
        return render_document(docs.get(record.id), docs.read(record.id))


def open_database(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> Database | None:
    """The database of a backend: None for files, a SQLite file, or a fresh PostgreSQL schema."""
    if name == "files":
        return None
    if name == "sqlite-db":
        return Database(create_engine(f"sqlite:///{tmp_path}/documents-test.db"), owns_engine=True)
    url = request.getfixturevalue("postgres_url")
    return Database(create_engine(url), owns_engine=True)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Documents on files, on a SQLite database, and on PostgreSQL (when configured)."""
    database = open_database(request.param, tmp_path, request)
    try:
        yield Backend(request.param, database)
    finally:
        if database is not None:
            database.dispose()


@pytest.fixture(params=DATABASE_BACKENDS)
def db_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Documents on a SQLite database and on PostgreSQL (when configured)."""
    database = open_database(request.param, tmp_path, request)
    try:
        yield Backend(request.param, database)
    finally:
        assert database is not None
        database.dispose()
