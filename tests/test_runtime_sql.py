"""Runtime Memory on database tables (SQLite and PostgreSQL): the same state as the files.

Every test runs on each database backend (``db_backend``: a SQLite file, and PostgreSQL with a
fresh schema when ``MNEMON_TEST_POSTGRES_URL`` is set, as CI does). Real databases, real files,
real processes killed with SIGKILL; nothing is mocked.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from crash_support import Forker
from runtime_support import (  # noqa: F401  (the fixtures)
    RuntimeBackend,
    db_backend_fixture,
    shared_db_backend_fixture,
)

from langgraph_mnemon.errors import ConflictError, InvalidInputError, ReadOnlyError, StorageError
from langgraph_mnemon.memory_layers.runtime import (
    RUNTIME_MIGRATIONS,
    CompactedEntry,
    RuntimeMemory,
    RuntimeMutation,
    RuntimeTable,
    export_runtime,
)
from langgraph_mnemon.memory_layers.runtime._entries import entry_from_json
from langgraph_mnemon.memory_layers.runtime._file_store import (
    EMPTY,
    FileState,
    change_entry,
    revision_of,
)
from langgraph_mnemon.memory_layers.runtime._sql_store import ARCHIVE, ENTRIES, HEADS
from langgraph_mnemon.storage.db import Database, create_engine

BIG = {"user_limit_bytes": 1_048_576, "memory_limit_bytes": 1_048_576}
ONE_OWNER = {"user_key": "project:same", "memory_key": "project:same"}


class Clock:
    """Deterministic time, one millisecond further on every call (so every stamp differs)."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (the lock file included: it is empty on both sides)."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[1]), env.get("PYTHONPATH", "")])
    return env


def _owner_rows(database: Database, owner: str) -> tuple[Any, list[Any], list[bytes]]:
    """The head row, the entry rows (by position) and the archived lines of ``owner``."""
    with database.engine.connect() as conn:
        head = conn.execute(sa.select(HEADS).where(HEADS.c.owner == owner)).first()
        rows = conn.execute(
            sa.select(ENTRIES).where(ENTRIES.c.owner == owner).order_by(ENTRIES.c.position)
        ).all()
        lines = conn.execute(
            sa.select(ARCHIVE.c.line).where(ARCHIVE.c.owner == owner).order_by(ARCHIVE.c.seq)
        ).scalars()
        return head, list(rows), [bytes(x) for x in lines]


def _assert_consistent(database: Database) -> None:
    """Every owner's head names exactly the revision of its rows (nothing half-written)."""
    with database.engine.connect() as conn:
        owners = list(conn.execute(sa.select(HEADS.c.owner)).scalars())
        stray = conn.execute(
            sa.select(ENTRIES.c.owner).where(ENTRIES.c.owner.not_in(owners)).limit(1)
        ).first()
    assert stray is None, "entry rows without a head row"
    for owner in owners:
        head, rows, _ = _owner_rows(database, owner)
        entries = []
        for row in rows:
            item = {k: row._mapping[k] for k in ("content", "created_at", "updated_at", "target")}
            item["importance"] = row.importance
            if row.branches is not None:
                item["branches"] = json.loads(row.branches)
            entries.append(entry_from_json(item))
        assert head.revision == revision_of(FileState.derive(EMPTY, entries).rows), owner


# --- the same state as the files ---------------------------------------------------------------


def _script(rm: RuntimeMemory) -> None:
    """Interleaved USER / MEMORY adds, in-place replaces, removes and compactions of both."""
    rm.add("user", "Prefers tea.")
    rm.add("memory", "Deploys go through CI.", importance="critical")
    rm.add("user", "Works from Lisbon.")
    rm.add("memory", "Tests run with pytest -q.", branches=["main", "feature/x"])
    rm.add("user", "Has a cat called Miso.", importance="low")
    rm.add("memory", "Logs live in /var/log/app.")
    rm.replace("user", "Lisbon", "Works from Porto.")
    rm.replace("memory", "pytest", "Tests run with pytest -q -x.", branches=[])
    rm.remove("memory", "Logs live")
    rm.add("memory", "Staging is on port 5433.")
    rm.compact_target(rm.revision, "memory", [CompactedEntry(content="CI deploys; pytest -q -x.")])
    rm.add("user", "Speaks Portuguese.")
    rm.add("memory", "Release on Thursdays.")
    request = RuntimeMutation(action="add", target="user", content="Likes hiking.")
    plan = rm.plan_maintenance(request)
    rm.compact_and_mutate(plan.revision, request, [CompactedEntry(content="Tea; Porto; Miso.")])
    rm.add("memory", "Backups run nightly.")


def _same_state(files: RuntimeMemory, table: RuntimeMemory, root: Path) -> None:
    assert table.revision == files.revision
    assert [e.to_json() for e in table.entries()] == [e.to_json() for e in files.entries()]
    for target, name in (("user", "USER.md"), ("memory", "MEMORY.md")):
        assert table.projection(target) == (root / "runtime" / name).read_text()  # type: ignore[arg-type]
        assert table.archived(target) == files.archived(target)  # type: ignore[arg-type]
        assert table.usage(target) == files.usage(target)  # type: ignore[arg-type]
    assert table.snapshot(branch="main").text == files.snapshot(branch="main").text


@pytest.mark.parametrize("keys", [{}, ONE_OWNER], ids=["two-owners", "one-owner"])
def test_same_operations_give_the_same_revision_as_files(
    db_backend: RuntimeBackend, tmp_path: Path, keys: dict[str, str]
) -> None:
    files = RuntimeMemory(tmp_path / "files", clock=Clock())
    table = RuntimeMemory(tmp_path / "db", database=db_backend.database, clock=Clock(), **keys)
    _script(files)
    _script(table)
    _same_state(files, table, tmp_path / "files")
    assert table.storage == "database"
    assert files.storage == "files"
    assert not (tmp_path / "db").exists()  # no file is touched
    _assert_consistent(db_backend.database)  # type: ignore[arg-type]


def test_receipts_match_files_step_by_step(db_backend: RuntimeBackend, tmp_path: Path) -> None:
    files = RuntimeMemory(tmp_path / "files", clock=Clock(), memory_limit_bytes=60)
    table = RuntimeMemory(
        tmp_path / "db", database=db_backend.database, clock=Clock(), memory_limit_bytes=60
    )
    steps = [
        lambda rm: rm.add("memory", "alpha entry"),
        lambda rm: rm.add("user", "user fact"),
        lambda rm: rm.add("memory", "alpha entry"),  # a committed no-op
        lambda rm: rm.add("memory", "bravo entry is longer"),
        lambda rm: rm.replace("memory", "alpha", "alpha entry v2"),
        lambda rm: rm.add("memory", "charlie entry overflows the limit"),  # CapacityError
        lambda rm: rm.remove("memory", "bravo"),
    ]
    for step in steps:
        outcomes = []
        for rm in (files, table):
            try:
                outcomes.append(step(rm).model_dump())
            except Exception as exc:  # the same typed error on both
                outcomes.append((type(exc).__name__, str(exc), getattr(exc, "code", None)))
        assert outcomes[0] == outcomes[1]
    _same_state(files, table, tmp_path / "files")


# --- export / import: a byte-identical round trip --------------------------------------------


@pytest.mark.parametrize("keys", [{}, ONE_OWNER], ids=["two-owners", "one-owner"])
def test_round_trip_files_database_files_is_byte_identical(
    db_backend: RuntimeBackend, tmp_path: Path, keys: dict[str, str]
) -> None:
    source = RuntimeMemory(tmp_path / "a", clock=Clock())
    _script(source)
    assert (tmp_path / "a" / "runtime" / "archived" / "user.jsonl").exists()
    assert (tmp_path / "a" / "runtime" / "archived" / "memory.jsonl").exists()
    shared = RuntimeMemory(tmp_path / "unused", database=db_backend.database, **keys)
    assert export_runtime(source, shared) == len(source.entries())
    assert shared.revision == source.revision
    back = RuntimeMemory(tmp_path / "b")
    assert export_runtime(shared, back) == len(source.entries())
    assert _tree(tmp_path / "b" / "runtime") == _tree(tmp_path / "a" / "runtime")
    assert back.revision == source.revision
    _assert_consistent(db_backend.database)  # type: ignore[arg-type]


def test_round_trip_of_separate_user_folders(db_backend: RuntimeBackend, tmp_path: Path) -> None:
    source = RuntimeMemory(tmp_path / "project", user_root=tmp_path / "home", clock=Clock())
    _script(source)
    shared = RuntimeMemory(
        tmp_path / "x", database=db_backend.database, user_key="user:ada", memory_key="project:p"
    )
    export_runtime(source, shared)
    back = RuntimeMemory(tmp_path / "project2", user_root=tmp_path / "home2")
    export_runtime(shared, back)
    for a, b in (("project", "project2"), ("home", "home2")):
        assert _tree(tmp_path / b / "runtime") == _tree(tmp_path / a / "runtime")
    assert back.revision == source.revision == shared.revision


def test_import_refuses_a_filled_destination_unless_replace(
    db_backend: RuntimeBackend, tmp_path: Path
) -> None:
    source = RuntimeMemory(tmp_path / "a", clock=Clock())
    _script(source)
    shared = RuntimeMemory(tmp_path / "x", database=db_backend.database)
    shared.add("memory", "Already here.")
    before = db_backend.dump()
    with pytest.raises(
        ConflictError, match=r"already holds 1 Runtime Memory entries.*replace=True"
    ):
        export_runtime(source, shared)
    assert db_backend.dump() == before
    export_runtime(source, shared, replace=True)
    assert shared.revision == source.revision
    # Back into a folder that holds entries and archived lines: replaced whole.
    back = RuntimeMemory(tmp_path / "b")
    back.add("user", "Old profile.")
    back.compact_target(back.revision, "user", [CompactedEntry(content="Older profile.")])
    with pytest.raises(ConflictError):
        export_runtime(shared, back)
    export_runtime(shared, back, replace=True)
    assert _tree(tmp_path / "b" / "runtime") == _tree(tmp_path / "a" / "runtime")
    with pytest.raises(ReadOnlyError):
        export_runtime(source, RuntimeMemory(tmp_path / "ro", write_enabled=False))


# --- owners -------------------------------------------------------------------------------------


def test_owners_never_see_each_other(db_backend: RuntimeBackend, tmp_path: Path) -> None:
    db = db_backend.database
    a = RuntimeMemory(tmp_path, database=db, user_key="user:a", memory_key="project:billing")
    b = RuntimeMemory(tmp_path, database=db, user_key="user:b", memory_key="project:billing")
    other = RuntimeMemory(tmp_path, database=db, user_key="user:a", memory_key="project:ops")
    a.add("user", "A prefers tea.")
    b.add("user", "B prefers coffee.")
    a.add("memory", "Billing deploys on Fridays.")
    other.add("memory", "Ops pages go to the on-call phone.")
    assert [e.content for e in a.entries("user")] == ["A prefers tea."]
    assert [e.content for e in b.entries("user")] == ["B prefers coffee."]
    assert [e.content for e in b.entries("memory")] == ["Billing deploys on Fridays."]  # shared
    assert [e.content for e in other.entries()] == [
        "A prefers tea.",
        "Ops pages go to the on-call phone.",
    ]
    assert [m.content for m in b.search("tea")] == []
    a.add("user", "A has a dog.")
    a.compact_target(a.revision, "user", [CompactedEntry(content="A: tea, a dog.")])
    assert {r["entry"]["content"] for r in a.archived("user")} == {"A prefers tea.", "A has a dog."}
    assert b.archived("user") == []
    assert [e.content for e in other.entries("user")] == ["A: tea, a dog."]  # same user
    assert len({a.revision, b.revision, other.revision}) == 3
    with pytest.raises(InvalidInputError, match="user_key must be"):
        RuntimeMemory(tmp_path, database=db, user_key="")


# --- transactions, locks, caches, damage ---------------------------------------------------


def test_a_failed_transaction_changes_nothing(db_backend: RuntimeBackend, tmp_path: Path) -> None:
    rm = RuntimeMemory(tmp_path, database=db_backend.database)
    rm.add("memory", "Kept.")
    before, revision = db_backend.dump(), rm.revision
    table = RuntimeTable(db_backend.database, "project:local", lock_timeout=5)  # type: ignore[arg-type]
    entry = rm.entries("memory")[0].model_copy(update={"content": "Never committed."})

    def commit_then_fail() -> None:
        with table.lock():
            state = table.read()
            table.commit(change_entry(state, None, entry), ["memory"], [("memory.jsonl", b"{}\n")])
            assert [e.content for e in table.read().entries] == ["Kept.", "Never committed."]
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        commit_then_fail()
    assert db_backend.dump() == before
    assert [e.content for e in table.read().entries] == ["Kept."]
    assert table.read_archived("memory") is None
    assert rm.revision == revision
    with pytest.raises(InvalidInputError, match=r"inside RuntimeTable\.lock"):
        table.commit(table.read(), ["memory"])


@pytest.mark.parametrize("keys", [{}, ONE_OWNER], ids=["two-owners", "one-owner"])
def test_reads_validate_the_cache_with_one_query(
    db_backend: RuntimeBackend, tmp_path: Path, keys: dict[str, str]
) -> None:
    db = db_backend.database
    assert db is not None
    rm = RuntimeMemory(tmp_path, database=db, **keys)
    writer = RuntimeMemory(tmp_path, database=db, **keys)
    rm.add("memory", "First.")
    rm.add("user", "A user fact.")
    statements: list[str] = []
    sa.event.listen(db.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    assert [e.content for e in rm.entries()] == ["First.", "A user fact."]
    statements.clear()
    for _ in range(5):
        rm.entries()  # both targets: one query, however many owners
        rm.entries("memory")
    assert len(statements) == 10  # one head query per read, no row reloads
    assert all("mnemon_runtime_heads" in s for s in statements)
    writer.add("memory", "Second.")
    assert [e.content for e in rm.entries("memory")] == ["First.", "Second."]
    assert rm.revision == writer.revision


def test_rows_changed_behind_the_head_are_reported(
    db_backend: RuntimeBackend, tmp_path: Path
) -> None:
    db = db_backend.database
    assert db is not None
    RuntimeMemory(tmp_path, database=db).add("memory", "Deploys go through CI.")
    with db.engine.begin() as conn:
        conn.execute(sa.update(ENTRIES).values(content="Deploys go through staging."))
    with pytest.raises(StorageError) as info:
        RuntimeMemory(tmp_path, database=db).entries()
    assert info.value.code == "storage-damaged"
    assert "project:local" in str(info.value)
    with db.engine.begin() as conn:  # an entry that is not valid at all
        conn.execute(sa.update(ENTRIES).values(content="a § b"))
    with pytest.raises(StorageError, match="row") as info:
        RuntimeMemory(tmp_path, database=db).entries()
    assert info.value.code == "storage-damaged"


def test_read_only_creates_no_table_and_reads_empty(
    db_backend: RuntimeBackend, tmp_path: Path
) -> None:
    db = db_backend.database
    assert db is not None
    rm = RuntimeMemory(tmp_path, database=db, write_enabled=False)
    assert rm.entries() == []
    assert rm.revision == RuntimeMemory(tmp_path / "files", write_enabled=False).revision
    assert rm.archived("memory") == []
    assert rm.search("anything") == []
    assert "(empty)" in rm.snapshot(branch="main").text
    with pytest.raises(ReadOnlyError):
        rm.add("memory", "x")
    if db_backend.name == "sqlite-db":
        assert not Path(db.engine.url.database or "").exists()  # not even the file
    assert db_backend.dump() == {}
    RuntimeMemory(tmp_path, database=db).add("memory", "Written elsewhere.")
    assert [e.content for e in rm.entries()] == ["Written elsewhere."]  # seen once it exists


_HOLDER = """
import sys, time
from langgraph_mnemon.storage.db import Database, create_engine
from langgraph_mnemon.memory_layers.runtime import RuntimeTable
table = RuntimeTable(Database(create_engine(sys.argv[1])), sys.argv[2], lock_timeout=5)
with table.lock():
    table.read()
    print("locked", flush=True)
    time.sleep(60)
"""


def test_lock_wait_is_bounded_and_a_killed_holder_frees_it(
    db_backend: RuntimeBackend, tmp_path: Path
) -> None:
    rm = RuntimeMemory(tmp_path, database=db_backend.database, lock_timeout=0.3)
    rm.add("memory", "before")
    before = db_backend.dump()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(db_backend.url), "project:local"],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        with pytest.raises(StorageError, match=r"timed out after 0\.3s waiting for the runtime"):
            rm.add("memory", "blocked")
        assert 0.25 < time.monotonic() - started < 5
        assert db_backend.dump() == before
        if db_backend.name == "postgres":  # the lock is per owner: another one is not held up
            assert rm.add("user", "another owner writes").changed
        slow = RuntimeMemory(tmp_path, database=db_backend.database, lock_timeout=30)
        started = time.monotonic()
        os.kill(holder.pid, signal.SIGKILL)
        assert slow.add("memory", "after the holder died").changed
        assert time.monotonic() - started < 10
    finally:
        holder.kill()
        holder.wait()
    assert [e.content for e in rm.entries("memory")] == ["before", "after the holder died"]


def test_threads_of_one_process_share_one_table(db_backend: RuntimeBackend, tmp_path: Path) -> None:
    shared = RuntimeMemory(tmp_path, database=db_backend.database, **BIG)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        own = RuntimeMemory(tmp_path, database=db_backend.database, **BIG) if n % 2 else shared
        try:
            for i in range(15):
                own.add("memory" if i % 3 else "user", f"thread {n} item {i}")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    contents = sorted(e.content for e in shared.entries())
    assert contents == sorted(f"thread {n} item {i}" for n in range(6) for i in range(15))
    _assert_consistent(db_backend.database)  # type: ignore[arg-type]


# --- processes -----------------------------------------------------------------------------------

_WRITER = """
import json, sys
from langgraph_mnemon.storage.db import Database, create_engine
from langgraph_mnemon.memory_layers.runtime import RuntimeMemory
url, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
rm = RuntimeMemory("/nonexistent", database=Database(create_engine(url)),
                   memory_key="project:load", user_key="user:load", memory_limit_bytes=1_048_576)
print("ready", flush=True)
sys.stdin.readline()  # start together
for i in range(count):
    r = rm.add("memory", f"worker {worker} entry {i} " + "中文😀" * (i % 3))
    assert r.changed, r
    print(json.dumps(r.revision), flush=True)
"""


def test_four_processes_add_concurrently(db_backend: RuntimeBackend, tmp_path: Path) -> None:
    workers, per_worker = 4, 25
    RuntimeMemory(tmp_path, database=db_backend.database)  # the tables, before the race
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(db_backend.url), str(w), str(per_worker)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for w in range(workers)
    ]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    revisions = []
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        revisions += [json.loads(line) for line in out.splitlines()]
    rm = RuntimeMemory(tmp_path, database=db_backend.database, memory_key="project:load", **BIG)
    contents = [e.content for e in rm.entries("memory")]
    expected = {
        " ".join(f"worker {w} entry {i} {'中文😀' * (i % 3)}".split())
        for w in range(workers)
        for i in range(per_worker)
    }
    assert len(contents) == workers * per_worker
    assert set(contents) == expected
    assert len(set(revisions)) == workers * per_worker  # every add was its own commit
    head, _, _ = _owner_rows(db_backend.database, "project:load")  # type: ignore[arg-type]
    assert head.generation == workers * per_worker
    assert head.revision == rm.revision
    assert head.revision in revisions  # the last commit's receipt named the final state
    _assert_consistent(db_backend.database)  # type: ignore[arg-type]


_CHURN_IMPORTS = """
from langgraph_mnemon.storage.db import Database, create_engine
from langgraph_mnemon.memory_layers.runtime import RuntimeMemory
"""
_CHURN = """
import itertools, json, os, sys
from langgraph_mnemon.storage.db import Database, create_engine
from langgraph_mnemon.memory_layers.runtime import RuntimeMemory
rm = RuntimeMemory("/nonexistent", database=Database(create_engine(sys.argv[1])),
                   memory_limit_bytes=1_048_576, user_limit_bytes=1_048_576)
me = os.getpid()

def run(op, target, *args):
    print(json.dumps(["try", op, target, *args]), flush=True)
    getattr(rm, op)(target, *args)
    print(json.dumps(["ok"]), flush=True)

print("ready", flush=True)
for i in itertools.count():
    run("add", "memory", f"churn {me}-{i} " + "payload " * 100)
    run("add", "user", f"user {me}-{i} 中文")
    if i % 3 == 0:
        run("replace", "memory", f"churn {me}-{i} ", f"churned {me}-{i} " + "x" * 300)
    if i % 4 == 0:
        run("remove", "user", f"user {me}-{i} 中文")
    if i == 0:
        print("cycle", flush=True)
"""


def _apply(model: dict[str, list[str]], op: list[str]) -> None:
    """What one acknowledged operation did to the entries (texts are unique, no noise)."""
    kind, target, *args = op
    entries = model[target]
    if kind == "add":
        entries.append(" ".join(args[0].split()))
        return
    index = next(i for i, e in enumerate(entries) if args[0].strip() in e)
    if kind == "replace":
        entries[index] = " ".join(args[1].split())
    else:
        del entries[index]


def _round(
    forker: Forker,
    folder: Path,
    url: str,
    model: dict[str, list[str]],
    rng: random.Random,
    wait: bool,
) -> bool:
    """One writer killed at a random moment; returns whether an operation was in flight."""
    proc = forker.spawn(folder, _CHURN, url)
    assert proc.stdout.readline().strip() == "ready"
    lines = []
    while wait:  # let one cycle commit first, so progress does not depend on machine load
        line = proc.stdout.readline().strip()
        assert line, "the writer ended early"
        wait = line != "cycle"
        lines.append(line)
    time.sleep(rng.uniform(0.0, 0.15))
    proc.kill()
    assert proc.wait(timeout=30) == -signal.SIGKILL
    pending = None
    with proc.stdout:
        lines += proc.stdout.read().splitlines()
    for line in lines:
        if line == "cycle":
            continue
        message = json.loads(line)
        if message[0] == "try":
            pending = message[1:]
        else:
            _apply(model, pending)  # type: ignore[arg-type]
            pending = None
    if pending is None:
        return False
    _settle(url, model, pending)  # killed before the commit, or before its acknowledgement
    return True


def _settle(url: str, model: dict[str, list[str]], pending: list[str]) -> None:
    """Apply the in-flight operation to the model if the database says it committed."""
    database = Database(create_engine(url))
    rm = RuntimeMemory("/nonexistent", database=database, **BIG)
    stored = {t: [e.content for e in rm.entries(t)] for t in ("user", "memory")}  # type: ignore[arg-type]
    database.dispose()
    if stored != model:
        _apply(model, pending)


def test_writer_killed_at_random_moments(shared_db_backend: RuntimeBackend, tmp_path: Path) -> None:
    db_backend = shared_db_backend  # PostgreSQL under CI: where replicas commit
    rng = random.Random(20261129)
    url = str(db_backend.url)
    db_backend.database.setup(RUNTIME_MIGRATIONS)  # the tables exist before the first kill
    model: dict[str, list[str]] = {"user": [], "memory": []}
    in_flight = 0
    seen: set[int] = set()
    # Each round's writer is a fresh forked process (crash_support): the package is imported once.
    with Forker(_CHURN_IMPORTS, env=_env()) as forker:
        for round_no in range(16):
            in_flight += _round(forker, tmp_path, url, model, rng, wait=bool(round_no % 2))
            # Every acknowledged operation is there, nothing else (the in-flight one settled).
            database = Database(create_engine(url))
            rm = RuntimeMemory(tmp_path, database=database, **BIG)
            entries = {t: [e.content for e in rm.entries(t)] for t in model}  # type: ignore[arg-type]
            assert entries == model
            _assert_consistent(database)
            database.dispose()
            seen.add(len(model["memory"]) + len(model["user"]))
    assert in_flight >= 8, "kills did not land during operations"
    assert len(seen) > 5, "the writer was not killed at varied moments"
