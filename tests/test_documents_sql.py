"""Documents on database tables (SQLite and PostgreSQL): the same semantics as the files.

The acceptance tests of tests/test_documents.py and tests/test_documents_search.py run on every
backend through the ``backend`` fixture; this file covers what is particular to the database:
no file touched, read-only reads that create nothing, owners kept apart, the lock and its
timeout, cached reads, access times in a column, export / import byte for byte, and real
processes racing and being killed mid-commit on PostgreSQL.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from documents_support import Backend, Clock, file_tree
from documents_support import db_backend as db_backend  # the fixture: sqlite-db, postgres

from langgraph_mnemon.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    ReadOnlyError,
    StorageError,
)
from langgraph_mnemon.memory_layers.documents import (
    DOCUMENTS_MIGRATIONS,
    DocumentRecord,
    Documents,
    RepairReport,
    copy_documents,
    fold_access_times,
    render_document,
)
from langgraph_mnemon.memory_layers.documents._sql_schema import DOCUMENTS, HEADS
from langgraph_mnemon.memory_layers.documents._sql_store import _LOCK_SCOPE
from langgraph_mnemon.memory_layers.documents._state import State
from langgraph_mnemon.storage.db import Database, advisory_lock, create_engine

REPO = Path(__file__).resolve().parents[1]


def files_docs(root: Path, workspace: Path, **kwargs: Any) -> Documents:
    kwargs.setdefault("clock", Clock())
    return Documents(root, workspace=workspace, **kwargs)


def rich_source(docs: Documents) -> list[str]:
    """Documents of every kind: renamed, multibyte, archived with and without an index."""
    a = docs.create(
        'ADR 7: "Use SQLite"',
        "We chose SQLite.\n\nIt is embedded.",
        description="Storage decision\nfor the prototype \u2028 x",
        source_paths=["docs/adr/0007.md"],
        session_ids=["thread-1"],
    ).document
    b = docs.create(
        "数据库迁移", "经过评估，我们决定使用嵌入式数据库。回滚方案保留三十天。 🚀"
    ).document
    c = docs.create("Runbook", "1. Tag.\n2. Publish.").document
    d = docs.create("Old design", "The old design " * 40).document
    e = docs.create("Scratch", "to be archived without an index").document
    docs.update(c.id, title="Release runbook", content="1. Tag.\n2. Publish.\n3. Announce.")
    docs.update(a.id, session_ids=["thread-2"], expected_revision=1)
    docs.archive(d.id, 1, "The design before the rewrite.", ["space-a", "space-b"])
    docs.archive_without_index(e.id, 1)
    docs.search("runbook publish")  # an access, recorded in the journal / column
    return [a.id, b.id, c.id, d.id, e.id]


def documents_files(root: Path) -> dict[str, bytes]:
    """index.json and every file of active/ and archived/ (the round-trip comparison)."""
    tree = file_tree(root / "documents")
    return {
        k: v for k, v in tree.items() if k == "index.json" or k.startswith(("active/", "archived/"))
    }


def owner_rows(database: Database, owner: str) -> tuple[list[Any], Any]:
    with database.read() as conn:
        rows = conn.execute(
            sa.select(DOCUMENTS).where(DOCUMENTS.c.owner == owner).order_by(DOCUMENTS.c.position)
        ).all()
        head = conn.execute(sa.select(HEADS).where(HEADS.c.owner == owner)).first()
    return rows, head


def check_rows(database: Database, owner: str) -> list[DocumentRecord]:
    """Every row whole and consistent with its record, the head revision the state's."""
    rows, head = owner_rows(database, owner)
    records = [DocumentRecord.model_validate_json(row.record) for row in rows]
    assert [row.position for row in rows] == list(range(len(rows)))
    for row, record in zip(rows, records, strict=True):
        assert (row.id, row.status, row.revision) == (record.id, record.status, record.revision)
        assert (
            row.content_hash == record.content_hash == hashlib.sha256(row.body.encode()).hexdigest()
        )
        rendered = render_document(record, row.body).encode()
        assert row.size_bytes == record.size_bytes == len(rendered)
        assert row.last_accessed_at >= record.last_accessed_at
    if rows:
        assert head is not None
        assert head.revision == State(tuple(records), None, True, {}).revision
    return records


# --------------------------------------------------------------------------------------------
# the database backend in one process


def test_database_documents_touch_no_file(tmp_path: Path, db_backend: Backend) -> None:
    docs = db_backend.open_docs(tmp_path)
    doc = docs.create("Runbook", "1. Tag.", source_paths=["docs/run.md"]).document
    docs.update(doc.id, title="Release runbook", content="1. Tag.\n2. Publish.")
    assert [h.id for h in docs.search("publish").results] == [doc.id]
    docs.archive(doc.id, 2, "How releases ship.", ["space-1"])
    assert docs.read(doc.id) == "1. Tag.\n2. Publish."
    assert docs.backend == "database"
    assert not docs.root.exists()  # no folder, no index, no lock file
    record = docs.get(doc.id)
    assert record.relative_path == f"documents/archived/{record.filename}"
    assert docs.path_of(record) == docs.root / "documents" / "archived" / record.filename
    assert docs.display_path(record.relative_path) == f".mnemon/{record.relative_path}"
    assert docs.repair() == RepairReport()
    check_rows(db_backend.database, docs.owner_key)  # type: ignore[arg-type]


def test_read_only_reads_an_absent_schema_as_empty_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "none.db"
    database = Database(create_engine(f"sqlite:///{path}"))
    docs = Documents(tmp_path / "root", database=database, write_enabled=False)
    assert docs.list("all") == []
    assert docs.search("anything").results == ()
    assert docs.usage().used == 0
    assert docs.capacity_plan({"action": "create", "title": "T", "content": "x"}).fits
    with pytest.raises(ReadOnlyError):
        docs.create("T", "x")
    with pytest.raises(NotFoundError):
        docs.get("00000000-0000-4000-8000-000000000000")
    assert not path.exists()
    assert not (tmp_path / "root").exists()


def test_read_only_on_postgres_creates_no_table(postgres_url: str) -> None:
    database = Database(create_engine(postgres_url))
    try:
        docs = Documents("/nonexistent/root", database=database, write_enabled=False)
        assert docs.list("all") == []
        assert docs.revision == Documents("/nonexistent/other", database=database).revision
        with database.read() as conn:
            assert not sa.inspect(conn).has_table("mnemon_documents")
            assert not sa.inspect(conn).has_table("mnemon_schema_version")
        # A writer creates the tables; the read-only reader then sees its Documents.
        writer = Documents("/nonexistent/root", database=database)
        doc = writer.create("Doc", "x").document
        assert [r.id for r in docs.list()] == [doc.id]
    finally:
        database.dispose()


def test_owners_never_see_each_others_documents(tmp_path: Path, db_backend: Backend) -> None:
    database = db_backend.database
    billing = Documents(tmp_path / "r", database=database, owner_key="project:billing")
    alice = Documents(tmp_path / "r", database=database, owner_key="project:billing/user:alice")
    empty_revision = alice.revision
    doc = billing.create("Billing design", "invoices are batched").document
    assert alice.list("all") == []
    assert alice.revision == empty_revision
    assert alice.search("invoices").results == ()
    with pytest.raises(NotFoundError):
        alice.get(doc.id)
    with pytest.raises(NotFoundError):
        alice.find_id(doc.id[:8])
    with pytest.raises(NotFoundError):
        alice.update(doc.id, content="stolen")
    mine = alice.create("Alice notes", "my invoices").document
    assert [h.id for h in billing.search("invoices").results] == [doc.id]
    assert [h.id for h in alice.search("invoices").results] == [mine.id]
    assert billing.usage().used == doc.size_bytes
    assert check_rows(database, "project:billing")[0].id == doc.id  # type: ignore[arg-type]


def test_same_documents_same_revision_as_files(tmp_path: Path, db_backend: Backend) -> None:
    source = files_docs(tmp_path / "files", tmp_path)
    rich_source(source)
    shared = db_backend.documents(tmp_path / "db-root", workspace=tmp_path, clock=Clock())
    assert copy_documents(source, shared) == 5
    assert shared.revision == source.revision
    assert shared.list("all") == source.list("all")
    assert shared.usage() == source.usage()
    # The same mutation at the same time gives the same revision on both backends.
    stamp = Clock()
    stamp.now = source._store.clock.now  # type: ignore[attr-defined]
    shared._store.clock = stamp  # type: ignore[misc]
    one = source.list()[0]
    assert (
        source.update(one.id, content="same change").revision
        == shared.update(one.id, content="same change").revision
    )


def test_lock_held_elsewhere_times_out_with_the_file_locks_error(postgres_url: str) -> None:
    database = Database(create_engine(postgres_url))
    holder = Database(create_engine(postgres_url))
    try:
        docs = Documents("/nonexistent/root", database=database, lock_timeout=0.5)
        doc = docs.create("Kafka", "consumer lag").document
        with holder.write() as conn:
            advisory_lock(conn, _LOCK_SCOPE, "project:local")  # another replica is writing
            started = time.monotonic()
            with pytest.raises(StorageError, match="waiting for the documents lock") as info:
                docs.create("Other", "y")
            assert 0.4 < time.monotonic() - started < 3.0
            assert info.value.code == "storage-error"  # what the file lock raises
            started = time.monotonic()
            result = docs.search("kafka")  # a search answers, without its access time
            assert time.monotonic() - started < 2.0
        assert [h.id for h in result.results] == [doc.id]
        assert "Access times could not be recorded." in result.hint
        assert [r.title for r in docs.list()] == ["Kafka"]
        assert docs.create("Other", "y").committed  # the lock is free again
    finally:
        database.dispose()
        holder.dispose()


def test_sqlite_writer_waits_at_most_the_busy_timeout(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/docs.db"
    database = Database(create_engine(url, busy_timeout_ms=300))
    holder = Database(create_engine(url))
    try:
        docs = Documents(tmp_path / "root", database=database)
        doc = docs.create("Kafka", "consumer lag").document
        with holder.write() as conn:  # BEGIN IMMEDIATE: the write lock is held
            conn.execute(sa.text("SELECT 1"))
            with pytest.raises(StorageError, match="waiting for the documents lock") as info:
                docs.update(doc.id, content="new")
            assert info.value.code == "storage-error"
            assert "Access times could not be recorded." in docs.search("kafka").hint
        assert docs.read(doc.id) == "consumer lag"
        assert docs.update(doc.id, content="new").document.revision == 2
    finally:
        database.dispose()
        holder.dispose()


def test_repeated_search_reads_no_body_and_no_record(tmp_path: Path, db_backend: Backend) -> None:
    docs = db_backend.open_docs(tmp_path)
    for i in range(30):
        docs.create(f"Doc {i}", f"shared term body {i} " * 50)
    statements: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    engine = db_backend.database.engine  # type: ignore[union-attr]
    sa.event.listen(engine, "before_cursor_execute", seen)
    try:
        first = docs.search("shared term")
        bodies_first = [s for s in statements if "mnemon_documents.body" in s]
        statements.clear()
        second = docs.search("shared term")
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)
    assert [h.id for h in second.results] == [h.id for h in first.results]
    assert len(bodies_first) <= 2  # one batched read of the bodies the index needed
    assert not [s for s in statements if "mnemon_documents.body" in s]
    assert not [s for s in statements if "mnemon_documents.record" in s]


def test_access_times_go_to_a_column_and_fold_at_the_next_commit(
    tmp_path: Path, db_backend: Backend
) -> None:
    docs = db_backend.open_docs(tmp_path)
    hit = docs.create("Kafka runbook", "consumer lag").document
    other = db_backend.open_docs(tmp_path)  # another replica
    docs.search("kafka")
    seen = other.get(hit.id).last_accessed_at
    assert seen > hit.last_accessed_at
    assert db_backend.unfolded_access(docs)
    assert f'"last_accessed_at":"{seen}"' not in db_backend.index_text(docs)
    assert docs.revision == other.revision  # access times are not part of the revision
    other.create("Filler", "x")  # any commit folds them into the records
    assert not db_backend.unfolded_access(docs)
    assert f'"last_accessed_at":"{seen}"' in db_backend.index_text(docs)
    assert docs.get(hit.id).last_accessed_at == seen
    docs.search("kafka")
    assert fold_access_times(docs) is True
    assert fold_access_times(docs) is False
    check_rows(db_backend.database, docs.owner_key)  # type: ignore[arg-type]


def test_damaged_rows_raise_storage_errors_and_are_left_alone(
    tmp_path: Path, db_backend: Backend
) -> None:
    docs = db_backend.open_docs(tmp_path)
    doc = docs.create("Doc", "the body").document
    database = db_backend.database
    assert database is not None
    table = DOCUMENTS.update().where(DOCUMENTS.c.id == doc.id)
    with database.write() as conn:
        conn.execute(table.values(body="tampered"))
    fresh = db_backend.open_docs(tmp_path)
    with pytest.raises(StorageError, match="no body matching its record") as info:
        fresh.read(doc.id)
    assert info.value.code == "storage-damaged"
    with pytest.raises(StorageError):
        fresh.update(doc.id, title="x")
    assert "could not be read" in fresh.search("doc").hint
    with database.write() as conn:
        conn.execute(table.values(record='{"id": "x"}'))
    with pytest.raises(StorageError, match="invalid") as info:
        db_backend.open_docs(tmp_path).list()
    assert info.value.code == "storage-damaged"
    assert owner_rows(database, docs.owner_key)[0][0].record == '{"id": "x"}'  # untouched


def test_constructor_checks_the_database_and_owner(tmp_path: Path) -> None:
    database = Database(create_engine(f"sqlite:///{tmp_path}/x.db"))
    for owner in ("", "  ", 3, "a\nb", "x" * 1001):
        with pytest.raises(InvalidInputError, match="owner_key"):
            Documents(tmp_path, database=database, owner_key=owner)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="Database"):
        Documents(tmp_path, database="sqlite:///x.db")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# export / import


def test_round_trip_files_database_files_is_byte_identical(
    tmp_path: Path, db_backend: Backend
) -> None:
    source = files_docs(tmp_path / "src", tmp_path)
    ids = rich_source(source)
    assert (source.directory / "access.jsonl").exists()
    shared = db_backend.documents(tmp_path / "db-root", workspace=tmp_path)
    assert copy_documents(source, shared) == 5
    # Access times recorded in the journal travel folded into the records.
    assert shared.list("all") == source.list("all")
    for doc_id in ids:
        assert shared.read(doc_id) == source.read(doc_id)
    # The journal cannot travel byte for byte: fold it, then the round trip is exact.
    assert fold_access_times(source) is True
    before = documents_files(source.root)
    assert sorted(before) == sorted(
        ["index.json"] + [f"{r.status}/{r.filename}" for r in source.list("all")]
    )
    assert len(before) == 6
    restored = files_docs(tmp_path / "restored", tmp_path)
    assert copy_documents(shared, restored) == 5
    after = documents_files(restored.root)
    assert sorted(after) == sorted(before)
    assert after == before
    assert restored.revision == shared.revision == source.revision
    assert restored.repair() == RepairReport()


def test_import_refuses_a_non_empty_destination_unless_replace(
    tmp_path: Path, db_backend: Backend
) -> None:
    source = files_docs(tmp_path / "src", tmp_path)
    rich_source(source)
    dest = db_backend.documents(tmp_path / "db", workspace=tmp_path)
    kept = dest.create("Already here", "x").document
    before = db_backend.tree(dest)
    with pytest.raises(ConflictError, match="replace=True"):
        copy_documents(source, dest)
    assert db_backend.tree(dest) == before
    assert copy_documents(source, dest, replace=True) == 5
    assert kept.id not in {r.id for r in dest.list("all")}
    assert dest.list("all") == source.list("all")
    check_rows(db_backend.database, dest.owner_key)  # type: ignore[arg-type]
    # ... and back onto files that hold other Documents: replaced, leftovers removed.
    other = files_docs(tmp_path / "other", tmp_path)
    stray = other.create("Stray", "gone after the import").document
    assert copy_documents(dest, other, replace=True) == 5
    assert not other.path_of(stray).exists()
    fold_access_times(source)
    assert documents_files(other.root) == documents_files(source.root)
    with pytest.raises(InvalidInputError, match="same Documents"):
        copy_documents(dest, dest)
    read_only = files_docs(tmp_path / "ro", tmp_path, write_enabled=False)
    with pytest.raises(ReadOnlyError):
        copy_documents(source, read_only)


def test_copy_between_two_owners(tmp_path: Path, db_backend: Backend) -> None:
    a = db_backend.documents(tmp_path / "a")
    rich_source(a)
    b = Documents(tmp_path / "a", database=db_backend.database, owner_key="project:copy")
    assert copy_documents(a, b) == 5
    fold_access_times(a)
    database = db_backend.database
    assert database is not None
    copied = [row._asdict() for row in owner_rows(database, "project:copy")[0]]
    original = [row._asdict() for row in owner_rows(database, a.owner_key)[0]]
    assert copied == [{**row, "owner": "project:copy"} for row in original]
    assert b.revision == a.revision


# --------------------------------------------------------------------------------------------
# real processes on PostgreSQL

RACER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from langgraph_mnemon.errors import ConflictError
    from langgraph_mnemon.memory_layers.documents import Documents
    from langgraph_mnemon.storage.db import Database, create_engine
    url, name, count, shared, go = sys.argv[1:6]
    docs = Documents("/nonexistent/root", database=Database(create_engine(url)),
                     owner_key="project:race")
    while not Path(go).exists():
        time.sleep(0.001)
    for i in range(int(count)):
        doc = docs.create(f"{name} document {i}", f"body of {name} {i} 数据 {i}").document
        print("C", doc.id, flush=True)
        up = docs.update(doc.id, content=f"updated {name} {i}", expected_revision=1).document
        print("U", doc.id, up.revision, flush=True)
        while True:  # one compare-and-set increment of the shared document
            current = docs.get(shared)
            try:
                docs.update(shared, content=str(current.revision + 1),
                            expected_revision=current.revision)
                break
            except ConflictError:
                continue
        print("S", flush=True)
    print("done", flush=True)
    """
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def test_processes_racing_on_one_owner_lose_nothing(postgres_url: str, tmp_path: Path) -> None:
    database = Database(create_engine(postgres_url))
    try:
        docs = Documents("/nonexistent/root", database=database, owner_key="project:race")
        shared = docs.create("Counter", "1").document
        go = tmp_path / "go"
        names, count = ("alpha", "beta", "gamma", "delta"), 8
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", RACER, postgres_url, name, str(count), shared.id, str(go)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_env(),
            )
            for name in names
        ]
        time.sleep(0.5)
        go.touch()
        acknowledged: dict[str, int] = {}
        increments = 0
        for proc in procs:
            out, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, err.decode()
            for line in out.decode().splitlines():
                kind, *rest = line.split()
                if kind == "C":
                    acknowledged[rest[0]] = 1
                elif kind == "U":
                    acknowledged[rest[0]] = int(rest[1])
                increments += kind == "S"
        assert len(acknowledged) == len(names) * count
        assert increments == len(names) * count
        records = {r.id: r for r in check_rows(database, "project:race")}
        for doc_id, revision in acknowledged.items():
            assert records[doc_id].revision == revision == 2
        counter = docs.get(shared.id)
        assert counter.revision == 1 + increments  # no lost update
        assert docs.read(shared.id) == str(counter.revision)
        titles = {r.title for r in docs.list()}
        assert titles == {"Counter"} | {f"{n} document {i}" for n in names for i in range(count)}
    finally:
        database.dispose()


CHURN = textwrap.dedent(
    """
    import random, sys
    from langgraph_mnemon.memory_layers.documents import Documents
    from langgraph_mnemon.storage.db import Database, create_engine
    url, seed = sys.argv[1], int(sys.argv[2])
    docs = Documents("/nonexistent/root", database=Database(create_engine(url)),
                     owner_key="project:churn")
    rng = random.Random(seed)
    print("ready", flush=True)
    n = 0
    while True:
        n += 1
        doc = docs.create(f"Doc {seed}-{n}", f"body {n} " * rng.randint(1, 200)).document
        print("C", doc.id, 1, flush=True)
        up = docs.update(doc.id, content=f"new body {n} " * rng.randint(1, 200)).document
        print("U", doc.id, up.revision, flush=True)
        docs.search(f"body {n}")
        gone = docs.archive_without_index(doc.id, up.revision, "churn").document
        print("A", doc.id, gone.revision, flush=True)
    """
)


def test_sigkill_mid_commit_loses_nothing_acknowledged(postgres_url: str) -> None:
    database = Database(create_engine(postgres_url))
    database.setup(DOCUMENTS_MIGRATIONS)
    rng = random.Random(4321)
    committed: dict[str, tuple[str, int]] = {}
    try:
        for round_no in range(10):
            proc = subprocess.Popen(
                [sys.executable, "-c", CHURN, postgres_url, str(round_no)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_env(),
            )
            assert proc.stdout is not None
            assert proc.stdout.readline() == b"ready\n", proc.stderr.read()  # type: ignore[union-attr]
            lines: list[bytes] = []
            if round_no % 2:  # odd rounds let one full cycle commit first
                while not lines or not lines[-1].startswith(b"A "):
                    lines.append(proc.stdout.readline())
                    assert lines[-1], proc.stderr.read()  # type: ignore[union-attr]
            time.sleep(rng.uniform(0.0, 0.08))
            proc.send_signal(signal.SIGKILL)
            out, _ = proc.communicate(timeout=30)
            assert proc.returncode == -signal.SIGKILL
            for line in b"".join(lines).decode().splitlines() + out.decode().splitlines():
                kind, doc_id, revision = line.split()
                committed[doc_id] = ("archived" if kind == "A" else "active", int(revision))
            records = {r.id: r for r in check_rows(database, "project:churn")}
            docs = Documents("/nonexistent/root", database=database, owner_key="project:churn")
            for doc_id, (status, revision) in committed.items():
                record = records[doc_id]  # an acknowledged document is never missing
                assert record.revision >= revision
                assert status != "archived" or record.status == "archived"
                assert docs.get(doc_id).revision == record.revision
                docs.read(doc_id)  # verified against its SHA-256
        assert len(committed) >= 5
        assert any(status == "archived" for status, _ in committed.values())
    finally:
        database.dispose()


PAUSED = textwrap.dedent(
    """
    import sys, time
    import sqlalchemy as sa
    from langgraph_mnemon.memory_layers.documents import Documents
    from langgraph_mnemon.storage.db import Database, create_engine
    url, doc_id = sys.argv[1:3]
    database = Database(create_engine(url))
    docs = Documents("/nonexistent/root", database=database, owner_key="project:paused")

    @sa.event.listens_for(database.engine, "after_cursor_execute")
    def pause(conn, cursor, statement, *args):
        # Every row of the update and its new head are written; COMMIT has not been sent.
        if statement.startswith("INSERT INTO mnemon_documents_heads"):
            print("mid-commit", flush=True)
            time.sleep(600)

    docs.update(doc_id, title="Renamed", content="uncommitted body")
    """
)


def test_sigkill_between_the_rows_and_commit_leaves_the_last_commit(postgres_url: str) -> None:
    database = Database(create_engine(postgres_url))
    try:
        docs = Documents(
            "/nonexistent/root", database=database, owner_key="project:paused", lock_timeout=5
        )
        doc = docs.create("Design", "committed body").document
        before = owner_rows(database, "project:paused")
        proc = subprocess.Popen(
            [sys.executable, "-c", PAUSED, postgres_url, doc.id],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"mid-commit\n", proc.stderr.read()  # type: ignore[union-attr]
        # The writer holds the owner's lock with its rows written: readers see the last commit.
        reader = Documents("/nonexistent/root", database=database, owner_key="project:paused")
        assert (reader.get(doc.id).title, reader.read(doc.id)) == ("Design", "committed body")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        started = time.monotonic()
        assert docs.update(doc.id, content="after the crash").document.revision == 2
        assert time.monotonic() - started < 5  # the dead writer's lock went with it
        [record] = check_rows(database, "project:paused")
        assert (record.title, record.revision) == ("Design", 2)
        assert docs.read(doc.id) == "after the crash"
        assert before[0][0].record != owner_rows(database, "project:paused")[0][0].record
    finally:
        database.dispose()
