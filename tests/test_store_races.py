"""Concurrent writers lose nothing (issue 30, items 5 and 6).

* Concurrent *first* puts into a new namespace (each creates the namespace's Memory Space) on
  SQLite and PostgreSQL, from threads of two hosts and from asyncio tasks: ten rounds, every
  acknowledged put readable afterwards. Before the fix, PostgreSQL answered the loser of the
  space's insert with ``duplicate key value violates unique constraint "mnemon_spaces_pkey"``.
* The workload shape of LangGraph's ``test_large_batches_async`` (concurrent ``aput`` /
  ``aget`` / ``alist_namespaces`` / ``asearch`` / ``adelete``) on the embedded SQLite file,
  at a tenth of its size with a short busy timeout and a wide thread pool, so that SQLite's
  unfair busy handler starved a writer of this very process before the write gate existed
  (``bench/store_large_batches.py`` runs the full 60,000 operations).
* The gate's own rules: first come first served, re-entrant, a stuck holder named in the
  error; a lock held by another process is still reported as another process's.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import sqlalchemy as sa

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import ConflictError, StorageError
from langgraph_mnemon.storage import _write_gate
from langgraph_mnemon.storage.db import (
    AsyncDatabase,
    Database,
    create_async_engine,
    create_engine,
    sqlite_write_gate,
)
from langgraph_mnemon.testing.store_load import large_batches

ROUNDS = 10
THREADS = 4


@pytest.fixture
def hosts(database_url: str, tmp_path: Path) -> Iterator[tuple[Mnemon, Mnemon]]:
    """Two hosts on one database (two roots), as two server replicas would be."""
    options = {"database_url": database_url, "embedding": {"enabled": False}}
    with (
        Mnemon.open(tmp_path / "a", **options) as one,
        Mnemon.open(tmp_path / "b", **options) as two,
    ):
        yield one, two


def _first_puts_from_threads(stores: list, namespace: tuple[str, ...]) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def put(index: int) -> None:
        barrier.wait()
        try:
            stores[index % len(stores)].put(namespace, f"k{index}", {"i": index})
        except BaseException as exc:  # collected: the assertion names them
            errors.append(exc)

    threads = [threading.Thread(target=put, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_concurrent_first_puts_from_threads_lose_nothing(hosts: tuple[Mnemon, Mnemon]) -> None:
    stores = [host.store() for host in hosts]
    for round_ in range(ROUNDS):
        namespace = ("race", f"round{round_}")
        errors = _first_puts_from_threads(stores, namespace)
        assert errors == [], f"round {round_}: {errors[0]!r}"
        for store in stores:
            got = {i: store.get(namespace, f"k{i}") for i in range(THREADS)}
            assert {i: item.value for i, item in got.items() if item} == {
                i: {"i": i} for i in range(THREADS)
            }, f"round {round_}: a put was lost"
    assert hosts[0].store().list_namespaces(prefix=("race",)) == sorted(
        ("race", f"round{r}") for r in range(ROUNDS)
    )


def test_concurrent_first_puts_from_asyncio_lose_nothing(database_url: str, tmp_path: Path) -> None:
    async def rounds(store) -> None:
        for round_ in range(ROUNDS):
            namespace = ("arace", f"round{round_}")
            done = await asyncio.gather(
                *(store.aput(namespace, f"k{i}", {"i": i}) for i in range(8)),
                return_exceptions=True,
            )
            failed = [d for d in done if isinstance(d, BaseException)]
            assert failed == [], f"round {round_}: {failed[0]!r}"
            items = await store.asearch(namespace, limit=50)
            assert sorted(item.key for item in items) == [f"k{i}" for i in range(8)]

    with Mnemon.open(
        tmp_path / "h", database_url=database_url, embedding={"enabled": False}
    ) as host:
        asyncio.run(rounds(host.store()))


def test_a_unique_key_taken_by_another_writer_is_a_conflict(database_url: str) -> None:
    db = Database(create_engine(database_url), owns_engine=True)
    try:
        with db.write() as conn:
            conn.exec_driver_sql("CREATE TABLE race_keys (id TEXT PRIMARY KEY)")
            conn.exec_driver_sql("INSERT INTO race_keys VALUES ('a')")
        with pytest.raises(ConflictError) as caught, db.write() as conn:
            conn.exec_driver_sql("INSERT INTO race_keys VALUES ('a')")
        assert caught.value.code == "duplicate-key"
        assert "another writer stored first" in str(caught.value)
    finally:
        db.dispose()


# --- heavy async load on the embedded SQLite file --------------------------------------------


def test_heavy_async_load_on_sqlite_is_serialized_not_locked(tmp_path: Path) -> None:
    # A short busy timeout and 32 worker threads: SQLite's busy handler starved some writer
    # past 300 ms in every run before the gate (dozens of "database is locked").
    async def run() -> list[object]:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(32))
        with Mnemon.open(tmp_path / "h", mnemos={"sqlite_busy_timeout_ms": 300}) as host:
            results = await large_batches(host.store(), 50, 10)
            # After the storm the store still works and keeps what it acknowledged.
            await host.store().aput(("after",), "k", {"v": 1})
            assert (await host.store().aget(("after",), "k")).value == {"v": 1}
            return results

    results = asyncio.run(run())
    failed = [r for r in results if isinstance(r, BaseException)]
    assert len(results) == 3000
    assert failed == [], f"{len(failed)} ops failed, first: {failed[0]!r}"


# --- the gate's rules -------------------------------------------------------------------------


def test_gate_is_first_come_first_served_and_reentrant(tmp_path: Path) -> None:
    gate = _write_gate.gate_for(str(tmp_path / "x.db"), timeout_ms=5000)
    order: list[int] = []
    gate.acquire()
    gate.acquire()  # re-entrant for its owner
    assert gate.depth() == 2

    def wait(index: int) -> None:
        with gate.held():
            order.append(index)

    threads = []
    for index in range(5):
        thread = threading.Thread(target=wait, args=(index,))
        thread.start()
        threads.append(thread)
        while len(gate._waiting) < index + 1:  # queued in this order
            time.sleep(0.001)
    gate.release()
    assert not order  # still held once
    gate.release()
    for thread in threads:
        thread.join()
    assert order == [0, 1, 2, 3, 4]
    assert gate.depth() == 0


def test_a_stuck_writer_of_this_process_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_write_gate, "STUCK_FLOOR_MS", 0)
    db = Database(create_engine(tmp_path / "s.db", busy_timeout_ms=200), owns_engine=True)
    holding, release = threading.Event(), threading.Event()

    def stuck() -> None:
        with db.write() as conn:
            conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS t (x)")
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=stuck, name="stuck-writer")
    holder.start()
    try:
        assert holding.wait(10)
        with pytest.raises(StorageError) as caught, db.write() as conn:
            conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    finally:
        release.set()
        holder.join()
        db.dispose()
    assert caught.value.code == "database-locked"
    assert "a write transaction of this process (thread 'stuck-writer')" in str(caught.value)
    assert "another process" not in str(caught.value)


def test_a_lock_of_another_process_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    db = Database(create_engine(path, busy_timeout_ms=200), owns_engine=True)
    with db.write() as conn:
        conn.exec_driver_sql("CREATE TABLE t (x)")
    script = (
        "import sqlite3, sys\n"
        f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE'); print('held', flush=True); sys.stdin.readline()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StorageError) as caught, db.write() as conn:
            conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    finally:
        holder.communicate("\n", timeout=10)
        db.dispose()
    assert caught.value.code == "database-locked"
    assert "another process" in str(caught.value)


def test_every_database_on_one_file_shares_one_gate(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    one = create_engine(path)
    two = create_engine(f"sqlite:///{tmp_path}/./g.db")
    try:
        assert sqlite_write_gate(one) is sqlite_write_gate(two) is not None
        assert sqlite_write_gate(create_engine(":memory:")) is None
        with Database(one).write() as conn:
            assert conn.execute(sa.text("SELECT 1")).scalar() == 1
    finally:
        one.dispose()
        two.dispose()


def test_async_engine_writes_queue_on_the_gate_and_a_cancelled_wait_gives_it_back(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.db"

    def create(conn: sa.Connection) -> None:
        conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS t (x)")

    async def run() -> None:
        db = AsyncDatabase(create_async_engine(path), owns_engine=True)
        gate = db.write_gate
        assert gate is not None
        try:
            gate.acquire()  # a writer of this process (this thread) holds the file
            waiting = asyncio.create_task(db.run_write(create))
            cancelled = asyncio.create_task(db.run_write(create))
            await asyncio.sleep(0.3)
            assert not waiting.done()  # queued, not failed
            cancelled.cancel()
            gate.release()
            await waiting
            with pytest.raises(asyncio.CancelledError):
                await cancelled
            await asyncio.sleep(0.1)  # the cancelled waiter's grant is handed back
            assert gate.depth() == 0
            assert not gate._waiting
            assert gate._owner is None
        finally:
            await db.dispose()

    asyncio.run(run())
