"""Issue 30, item 7 (findings 3 and 8): idle review across replicas.

A scheduled review is a leased row of ``mnemon_review_queue`` on the shared database: exactly
one replica runs it, a review whose scheduler closed or died is run by another one, a new turn
on any replica cancels it, and the gate reads each thread's activity afresh, so turns recorded
on different replicas all count.

Real components: hosts on one SQLite file and on one PostgreSQL schema (the ``database_url``
fixture), real worker threads and clocks; two real ``mnemon serve`` (``langgraph dev``)
processes on one PostgreSQL schema, one of them killed with SIGKILL.
"""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, messages_to_dict
from langgraph_sdk import get_sync_client
from review_support import wait_for
from server_support import Served, http, serve, with_group

from langgraph_mnemon import Mnemon
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.memory_layers.activity import ReviewGate, ReviewSettings, TurnActivity
from langgraph_mnemon.memory_layers.activity_store import SqlActivityStore
from langgraph_mnemon.memory_layers.review_queue import SqlReviewQueue
from langgraph_mnemon.reviews import BackgroundReviews
from langgraph_mnemon.storage.db import Database, create_engine
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

pytestmark = pytest.mark.timeout(300)

# Learning passes are off: these tests time the review queue's claims against a 1 s lease, and
# each pass adds SQLite writes that, on a loaded 2-core machine, can outlast a heartbeat
# (a learning pass's own once-only claim is tested in tests/test_learning.py).
QUIET = {
    "embedding": {"enabled": False},
    "chroma": {"enabled": False},
    "learning": {"enabled": False},
}
LEASE, POLL = 1.0, 0.2
FACT = "Builds use uv."
SAID = f"Please remember that builds use uv. {'Some context. ' * 12}"
MESSAGES = [HumanMessage(SAID), AIMessage("Noted.")]
BUSY = TurnActivity(user_text=SAID, tool_calls=("shell", "read", "grep", "edit"))  # score 6


def _host(root: Path, url: str) -> Mnemon:
    idle = {"lease_ms": int(LEASE * 1000), "poll_ms": int(POLL * 1000)}
    return Mnemon.open(root, workspace=root.parent, database_url=url, idle_review=idle, **QUIET)


def _settings(delay: float) -> ReviewSettings:
    return ReviewSettings(delay_seconds=delay, min_interval_seconds=0)


def _reviews(mem: Mnemon, delay: float = 0.6, model: Any = None) -> BackgroundReviews:
    """The host's scheduler with a short delay; its gate saves to the shared database."""
    gate = ReviewGate(_settings(delay), store=SqlActivityStore(mem.database))
    reviews = BackgroundReviews(mem, gate, model)
    mem.set_reviews(reviews)
    return reviews


@pytest.fixture
def hosts(tmp_path: Path, database_url: str) -> Iterator[list[Mnemon]]:
    """Three hosts (replicas) on one database: a SQLite file or a PostgreSQL schema."""
    opened = [_host(tmp_path / name, database_url) for name in ("a", "b", "c")]
    yield opened
    for mem in opened:
        mem.close()


def _ran(*schedulers: BackgroundReviews) -> list[tuple[str, str]]:
    return sorted((t, o.action) for r in schedulers for t, o in r.outcomes)


def test_a_review_scheduled_by_a_closed_host_runs_once_on_another(hosts: list[Mnemon]) -> None:
    a, b = hosts[0], hosts[1]
    first, second = _reviews(a), _reviews(b)
    assert first.turn_finished("t", MESSAGES, BUSY) == pytest.approx(0.6)
    a.close()  # before the review is due: its row is handed over
    assert wait_for(lambda: second.outcomes, timeout=15)
    time.sleep(LEASE + 3 * POLL)  # nothing runs it a second time
    assert _ran(first, second) == [("t", "changed")]
    assert [e.content for e in b.runtime.entries("memory")] == [FACT]
    assert second.queue.get("t") is None
    assert second.gate.attempts("t") == 1
    assert second.gate.activity("t").turns == []  # the success cleared it for every replica


def test_a_review_whose_scheduler_died_runs_after_its_lease(hosts: list[Mnemon]) -> None:
    a, b = hosts[0], hosts[1]
    first, second = _reviews(a, delay=0.3), _reviews(b)
    first.clock.close()  # A "dies": no wake-up, no hand-over; its lease must run out
    started = time.monotonic()
    first.turn_finished("t", MESSAGES, BUSY)
    assert wait_for(lambda: second.outcomes, timeout=15)
    assert time.monotonic() - started >= 0.3 + LEASE - 0.05  # not before the lease expired
    assert _ran(first, second) == [("t", "changed")]
    assert b.review_gate.attempts("t") == 1


def test_concurrent_pollers_run_each_due_review_once(
    hosts: list[Mnemon], database_url: str
) -> None:
    schedulers = [_reviews(mem) for mem in hosts]
    # Ten reviews scheduled by a scheduler that is gone (its lease is over when they are due).
    gone = Database(create_engine(database_url), owns_engine=True)
    try:
        gate = ReviewGate(_settings(0), store=SqlActivityStore(gone))
        queue = SqlReviewQueue(gone)
        threads = [f"t{i}" for i in range(10)]
        for thread in threads:
            gate.record_turn(thread, BUSY)
            queue.schedule(
                thread, Scope(), messages_to_dict(MESSAGES), delay=0, owner="gone", lease_seconds=0
            )
        assert wait_for(lambda: len(_ran(*schedulers)) >= len(threads), timeout=60)
        time.sleep(LEASE + 3 * POLL)
        # Each once: the first pass on a host adds the fact, a later one finds it (skipped).
        assert [t for t, _action in _ran(*schedulers)] == sorted(threads)
        assert {action for _t, action in _ran(*schedulers)} <= {"changed", "skipped"}
        assert all(gate.attempts(t) == 1 for t in threads)
        assert all(queue.get(t) is None for t in threads)
    finally:
        gone.dispose()


def test_concurrent_claims_of_one_due_row_have_one_winner(
    hosts: list[Mnemon], database_url: str
) -> None:
    """Eight pollers on their own connections claim the same due rows at the same moment."""
    databases = [Database(create_engine(database_url), owns_engine=True) for _ in range(8)]
    try:
        queues = [SqlReviewQueue(db) for db in databases]
        for round_ in range(5):
            thread = f"race-{round_}"
            queues[0].schedule(thread, Scope(), [], delay=0, owner="gone", lease_seconds=0)
            time.sleep(0.01)
            barrier = threading.Barrier(len(queues))
            won: list[list[str]] = [[] for _ in queues]

            def claim(
                i: int, won: list[list[str]] = won, barrier: threading.Barrier = barrier
            ) -> None:
                barrier.wait()
                jobs = queues[i].claim_due(owner=f"p{i}", lease_seconds=30)
                won[i].extend(job.thread_id for job in jobs)

            workers = [threading.Thread(target=claim, args=(i,)) for i in range(len(queues))]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join(30)
            assert sorted(t for w in won for t in w) == [thread], won
            job = queues[0].get(thread)
            assert job is not None
            assert job.state == "running"
            assert queues[0].claim_due(owner="late", lease_seconds=30) == []  # leased now
    finally:
        for db in databases:
            db.dispose()


def test_a_new_turn_on_another_replica_cancels_the_pending_review(hosts: list[Mnemon]) -> None:
    a, b = hosts[0], hosts[1]
    first, second = _reviews(a, delay=0.5), _reviews(b)
    first.turn_finished("t", MESSAGES, BUSY)
    second.turn_started("t")  # the thread's next turn lands on B
    assert first.queue.get("t") is None
    time.sleep(0.5 + LEASE + 4 * POLL)
    assert _ran(first, second) == []
    assert a.review_gate.attempts("t") == 0
    assert len(a.review_gate.activity("t").turns) == 1  # the activity is kept


def test_a_new_turn_on_another_replica_aborts_a_running_review(hosts: list[Mnemon]) -> None:
    started = threading.Event()
    calls: list[int] = []

    def slow(messages: list[Any]) -> AIMessage:
        """A review model that writes MEMORY.md, then reports; its first reply takes long."""
        calls.append(len(calls))
        if len(calls) == 1:
            started.set()
            time.sleep(2.5)  # longer than the lease: the runner renews it meanwhile
            return tool_call(
                "mnemon_runtime_memory", {"action": "add", "target": "memory", "content": FACT}
            )
        return tool_call("mnemon_review_result", {"action": "changed"})

    a, b = hosts[0], hosts[1]
    first = _reviews(a, delay=0.05, model=ScriptedChatModel(script=slow))
    second = _reviews(b)
    first.turn_finished("t", MESSAGES, BUSY)
    assert started.wait(10)
    second.turn_started("t")  # deletes the row: A's next heartbeat aborts its review
    time.sleep(2.5 + LEASE + 4 * POLL)
    assert _ran(first, second) == []
    assert calls == [0]  # aborted after the first reply: the write it asked for never ran
    assert a.runtime.entries("memory") == []
    assert a.review_gate.attempts("t") == 1  # it counted as an attempt when it started
    assert len(a.review_gate.activity("t").turns) == 1  # aborted: the activity is kept


def test_turns_recorded_on_two_replicas_all_count(hosts: list[Mnemon]) -> None:
    """Three turns over two replicas: each gate reads the thread's saved activity afresh."""
    a, b = hosts[0], hosts[1]
    first, second = _reviews(a, delay=60), _reviews(b, delay=60)
    small = TurnActivity(user_text="ok", tool_calls=("shell",))
    assert first.turn_finished("t", MESSAGES, small) is None
    assert second.turn_finished("t", MESSAGES, small) is None
    assert first.turn_finished("t", MESSAGES, small) is None
    assert len(a.review_gate.activity("t").turns) == 3
    assert len(b.review_gate.activity("t").turns) == 3
    assert second.turn_finished("t", MESSAGES, BUSY) is not None  # the fourth makes it due
    assert first.queue.get("t") is not None


# --- two served replicas on one PostgreSQL; the one that scheduled the review is killed ---------

SERVED_FAST = {
    "MNEMON_IDLE_REVIEW__DELAY_MS": "5000",
    "MNEMON_IDLE_REVIEW__MIN_INTERVAL_MS": "5000",
    "MNEMON_IDLE_REVIEW__LEASE_MS": "2000",
    "MNEMON_IDLE_REVIEW__POLL_MS": "500",
}


@pytest.fixture
def served_replicas(tmp_path: Path, postgres_server: str) -> Iterator[tuple[Served, Served, str]]:
    from langgraph_mnemon.testing.postgres import fresh_schema

    with fresh_schema(postgres_server) as url:
        env = {"MNEMON_DATABASE_URL": url, **SERVED_FAST}
        with serve(tmp_path / "a", env=env) as first, serve(tmp_path / "b", env=env) as second:
            yield first, second, url


def _say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def test_a_killed_replica_s_review_runs_exactly_once_on_the_other(
    served_replicas: tuple[Served, Served, str],
) -> None:
    first, second, url = served_replicas
    client = get_sync_client(url=first.url, api_key=None)
    carol = {"configurable": {"user_id": "carol"}}
    thread = client.threads.create()["thread_id"]
    fact = f"I keep a blue notebook {uuid.uuid4().hex[:6]} for every single project"
    client.runs.wait(thread, "mnemon_agent", input=_say(f"remember that {fact}"), config=carol)
    client.runs.wait(
        thread,
        "mnemon_agent",
        input=_say(
            "I prefer short status updates written as bullet points; please keep them under "
            "ten lines and skip the greetings"
        ),
        config=carol,
    )
    db = Database(create_engine(url), owns_engine=True)
    try:
        queue, activity = SqlReviewQueue(db), SqlActivityStore(db)
        pending = queue.get(thread)
        assert pending is not None
        assert pending.state == "scheduled", pending
        assert pending.scope == Scope(user="carol")
        assert first.process is not None
        with_group(first.process, signal.SIGKILL)  # before the review is due (5 s)
        first.process.wait(timeout=30)
        assert time.time() < pending.due_at, "the replica was killed too late for this test"

        def reviewed() -> bool:
            saved = activity.load(thread)
            return saved is not None and saved.last_review_at is not None

        assert wait_for(reviewed, timeout=90), second.log.read_text()[-3000:]
        time.sleep(2 + 3 * 0.5)  # a lease and a few polls: nothing runs it again
        saved = activity.load(thread)
        assert saved is not None
        assert saved.attempts == 1, saved
        assert saved.turns == ()
        assert queue.get(thread) is None
    finally:
        db.dispose()
    view = http.get(f"{second.url}/mnemon/api/runtime", headers={"X-Mnemon-User": "carol"})
    assert view.status_code == 200, view.text
    users = [e["content"] for e in view.json()["user"]["entries"]]
    assert sum(fact in entry for entry in users) == 1, json.dumps(users)
