"""Group commit of the SQLite hot writes and the PostgreSQL single-statement writes: calls that
queue during a commit share the next transaction, each caller still gets its own error, and
nothing is lost or mixed up."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from langgraph_mnemon import MnemosSaver
from langgraph_mnemon.checkpointers._group import GroupCommit
from langgraph_mnemon.checkpointers.base import SINGLE_STATEMENT_WRITES, sqlite_write_lock
from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.errors import MnemonError
from langgraph_mnemon.storage.db import Database, create_engine


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(create_engine(f"sqlite:///{tmp_path / 'g.db'}"), owns_engine=True)
    with database.write() as conn:
        conn.exec_driver_sql("CREATE TABLE t (k INTEGER PRIMARY KEY, who TEXT)")
    yield database
    database.dispose()


def _insert(key: int, who: str) -> Callable[[Any], None]:
    def job(conn: Any) -> None:
        conn.exec_driver_sql("INSERT INTO t (k, who) VALUES (?, ?)", (key, who))

    return job


def _run_blocked_batch(
    db: Database, jobs: list[Callable[[Any], None]]
) -> tuple[GroupCommit, list[BaseException | None], int]:
    """Job 0 blocks inside its transaction until ``jobs[1:]`` are all queued; returns each
    job's error (or None) and the number of commits."""
    group = GroupCommit(db.write, sqlite_write_lock(db.engine))
    commits = [0]
    event.listen(db.engine, "commit", lambda _conn: commits.__setitem__(0, commits[0] + 1))
    started, release = threading.Event(), threading.Event()

    def first(conn: Any) -> None:
        jobs[0](conn)
        started.set()
        assert release.wait(10)

    errors: list[BaseException | None] = [None] * len(jobs)

    def call(index: int, fn: Callable[[Any], None]) -> None:
        try:
            group.run(fn)
        except BaseException as exc:  # recorded for the assertions
            errors[index] = exc

    threads = [threading.Thread(target=call, args=(0, first))]
    threads[0].start()
    assert started.wait(10)
    for index, fn in enumerate(jobs[1:], start=1):
        threads.append(threading.Thread(target=call, args=(index, fn)))
        threads[-1].start()
    deadline = time.monotonic() + 10
    while len(group._queue) < len(jobs) - 1 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert len(group._queue) == len(jobs) - 1
    release.set()
    for thread in threads:
        thread.join(10)
    return group, errors, commits[0]


def _rows(db: Database) -> dict[int, str]:
    with db.read() as conn:
        return dict(conn.exec_driver_sql("SELECT k, who FROM t").all())


def test_calls_queued_during_a_commit_share_the_next_one(db: Database) -> None:
    jobs = [_insert(1, "a"), _insert(2, "b"), _insert(3, "c"), _insert(4, "d")]
    _, errors, commits = _run_blocked_batch(db, jobs)
    assert errors == [None, None, None, None]
    assert commits == 2  # the first call's own commit, then one for the three that queued
    assert _rows(db) == {1: "a", 2: "b", 3: "c", 4: "d"}


def test_a_failing_call_in_a_batch_gets_its_own_error_and_the_others_commit(
    db: Database,
) -> None:
    jobs = [_insert(1, "a"), _insert(1, "duplicate"), _insert(3, "c")]
    _, errors, _ = _run_blocked_batch(db, jobs)
    assert errors[0] is None
    assert errors[2] is None
    assert isinstance(errors[1], MnemonError)  # the translated integrity error, for it only
    assert _rows(db) == {1: "a", 3: "c"}


def test_concurrent_graph_style_calls_keep_every_write(tmp_path: Path) -> None:
    """Many threads put checkpoints and writes of their own threads at once (synchronous=FULL):
    every checkpoint and every write is there afterwards, in its own thread."""
    config = MnemosConfig(sqlite_synchronous="FULL")
    with MnemosSaver.from_conn_string(str(tmp_path / "c.db"), config=config) as saver:

        def worker(n: int) -> None:
            thread = f"t{n}"
            parent: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
            for step in range(5):
                checkpoint = {
                    "v": 4,
                    "id": f"{step:032d}-{n}",
                    "ts": "2026-01-01T00:00:00+00:00",
                    "channel_values": {"x": step},
                    "channel_versions": {"x": step + 1},
                    "versions_seen": {},
                    "updated_channels": ["x"],
                }
                parent = saver.put(parent, checkpoint, {"step": step}, {"x": step + 1})
                saver.put_writes(parent, [("x", f"{thread}-{step}")], f"task-{step}")

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        for n in range(6):
            got = saver.get_tuple({"configurable": {"thread_id": f"t{n}"}})
            assert got is not None
            assert got.checkpoint["channel_values"] == {"x": 4}
            assert [w[2] for w in got.pending_writes] == [f"t{n}-4"]
            assert len(list(saver.list({"configurable": {"thread_id": f"t{n}"}}))) == 5


def test_postgres_put_writes_one_statement_and_the_large_fallback(postgres_url: str) -> None:
    """On PostgreSQL a put_writes is one autocommit statement up to SINGLE_STATEMENT_WRITES
    rows and a pipelined transaction beyond: both store every write, in order, and a repeat
    of the same writes changes nothing."""
    with MnemosSaver.from_conn_string(postgres_url) as saver:
        base: dict[str, Any] = {"configurable": {"thread_id": "pg", "checkpoint_ns": ""}}
        checkpoint = {
            "v": 4,
            "id": "1",
            "ts": "2026-01-01T00:00:00+00:00",
            "channel_values": {},
            "channel_versions": {},
            "versions_seen": {},
            "updated_channels": [],
        }
        config = saver.put(base, checkpoint, {}, {})
        small = [("a", n) for n in range(3)]
        large = [("b", n) for n in range(SINGLE_STATEMENT_WRITES + 5)]
        saver.put_writes(config, small, "small")
        saver.put_writes(config, large, "large")
        saver.put_writes(config, [("a", 99)], "small")  # same (task, idx 0): kept as it was
        got = saver.get_tuple(config)
        assert got is not None
        by_task: dict[str, list[Any]] = {}
        for task, _channel, value in got.pending_writes:
            by_task.setdefault(task, []).append(value)
        assert by_task["small"] == [0, 1, 2]
        assert by_task["large"] == list(range(SINGLE_STATEMENT_WRITES + 5))
