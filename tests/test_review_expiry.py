"""Issue 30, item 7 (finding 8): per-thread state does not grow for ever.

The review gate's entries, the saved activity rows, the review queue's rows and the Wake
delivery state expire after ``idle_review.thread_ttl_hours`` unused and are capped at
``idle_review.max_threads`` threads, the least recently used dropped first.

Real components: SQLite files and a PostgreSQL schema (the ``database_url`` fixture), a host
on a storage root driven by real ``create_agent`` runs with a deterministic fake model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from langgraph_mnemon import Mnemon, MnemonConfig
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.activity import (
    PRUNE_EVERY_SECONDS,
    ReviewGate,
    ReviewSettings,
    TurnActivity,
)
from langgraph_mnemon.memory_layers.activity_store import SqlActivityStore
from langgraph_mnemon.memory_layers.expiry import ExpiringMap
from langgraph_mnemon.memory_layers.review_queue import SqlReviewQueue
from langgraph_mnemon.memory_layers.turns import WakeTracker
from langgraph_mnemon.storage.db import Database, create_engine
from langgraph_mnemon.testing import ScriptedChatModel

HOUR = 3600.0
TURN = TurnActivity(user_text="hello there", tool_calls=("shell",))


class Clock:
    """A clock the test moves by hand (seconds)."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# --- the expiring map every per-thread table uses ---------------------------------------------


def test_entries_expire_after_the_ttl_unused_and_the_least_recently_used_go_first() -> None:
    clock = Clock()
    seen: ExpiringMap[str, int] = ExpiringMap(ttl_seconds=10, cap=3, clock=clock)
    for i, key in enumerate("abc"):
        seen[key] = i
    clock.now += 6
    assert seen.get("a") == 0  # a use: "a" is the most recent now
    seen["d"] = 3  # over the cap: "b", the least recently used, goes
    assert list(seen) == ["c", "a", "d"]
    clock.now += 6  # "c" unused for 12 s, "a" for 6 s
    assert "c" not in seen
    assert seen.get("c") is None
    assert seen.expire() == 0  # "c" was dropped by the read above
    clock.now += 20
    assert seen.expire() == 2
    assert len(seen) == 0
    seen.cap = 1  # a live change applies at the next write
    seen["x"], seen["y"] = 1, 2
    assert list(seen) == ["y"]


@pytest.mark.parametrize(("ttl", "cap"), [(0, 5), (-1, 5), (10, 0), (10, True)])
def test_an_expiring_map_refuses_limits_that_keep_nothing(ttl: float, cap: Any) -> None:
    with pytest.raises(InvalidInputError, match=r"ttl_seconds|cap"):
        ExpiringMap(ttl_seconds=ttl, cap=cap)


# --- the review gate's entries ----------------------------------------------------------------


def test_gate_entries_expire_after_the_ttl_and_are_capped() -> None:
    clock = Clock()
    settings = ReviewSettings(thread_ttl_seconds=HOUR, max_threads=3)
    gate = ReviewGate(settings, clock=clock)
    gate.record_turn("a", TURN)
    gate.record_turn("b", TURN)
    clock.now += HOUR + 1
    gate.record_turn("c", TURN)
    assert gate.threads() == ["c"]  # a and b were unused for longer than the TTL
    for thread in ("d", "e", "f"):
        gate.record_turn(thread, TURN)
    assert gate.threads() == ["d", "e", "f"]  # the cap: "c", the oldest, went first
    assert gate.activity("c").turns == []  # forgotten: a new, empty entry (no store)
    gate.settings = ReviewSettings(thread_ttl_seconds=HOUR, max_threads=2)  # a live change
    gate.record_turn("g", TURN)
    assert len(gate.threads()) == 2


# --- saved activity rows ----------------------------------------------------------------------


def _rows(db: Database) -> list[str]:
    with db.read() as conn:
        rows = conn.execute(sa.text("SELECT thread_id FROM mnemon_review_activity")).all()
    return sorted(r[0] for r in rows)


@pytest.fixture
def database(database_url: str) -> Any:
    db = Database(create_engine(database_url), owns_engine=True)
    yield db
    db.dispose()


def test_activity_rows_are_dropped_after_the_ttl_and_beyond_the_cap(database: Database) -> None:
    clock = Clock()
    store = SqlActivityStore(database)
    gate = ReviewGate(
        ReviewSettings(thread_ttl_seconds=HOUR, max_threads=2), clock=clock, store=store
    )
    gate.record_turn("a", TURN)
    gate.record_turn("b", TURN)
    assert _rows(database) == ["a", "b"]
    clock.now += HOUR + PRUNE_EVERY_SECONDS
    gate.record_turn("c", TURN)  # the gate prunes at most once a minute: now
    assert _rows(database) == ["c"]
    clock.now += PRUNE_EVERY_SECONDS
    gate.record_turn("d", TURN)
    clock.now += PRUNE_EVERY_SECONDS
    gate.record_turn("e", TURN)
    assert _rows(database) == ["d", "e"]  # at the cap: "c", the least recently updated, went
    assert store.load("c") is None
    # Within the minute no prune runs: the table may pass the cap until the next one.
    gate.record_turn("f", TURN)
    assert _rows(database) == ["d", "e", "f"]
    assert store.prune(clock.now - HOUR, 2) == 1
    assert _rows(database) == ["e", "f"]


def test_a_forgotten_gate_entry_is_read_back_from_its_row(database: Database) -> None:
    """The cap on entries in memory loses nothing a row still holds."""
    clock = Clock()
    gate = ReviewGate(
        ReviewSettings(thread_ttl_seconds=HOUR, max_threads=1),
        clock=clock,
        store=SqlActivityStore(database),
    )
    gate.record_turn("a", TURN)
    gate.record_turn("b", TURN)  # "a" leaves memory, its row stays (the rows' cap is also 1,
    assert gate.threads() == ["b"]  # but no prune ran within the minute)
    assert len(gate.activity("a").turns) == 1


def test_queue_rows_nobody_touched_within_the_ttl_are_dropped(database: Database) -> None:
    clock = Clock()
    queue = SqlReviewQueue(database, clock=clock)
    queue.schedule("old", Scope(), [], delay=0, owner="gone", lease_seconds=60)
    clock.now += HOUR
    queue.schedule("new", Scope(), [], delay=0, owner="gone", lease_seconds=60)
    assert queue.prune(clock.now - HOUR / 2) == 1
    assert queue.get("old") is None
    assert queue.get("new") is not None


# --- Wake delivery state --------------------------------------------------------------------------


def test_wake_delivery_state_expires_and_is_capped() -> None:
    clock = Clock()
    tracker = WakeTracker(ttl_seconds=HOUR, cap=2, clock=clock)
    tracker.restore("a", digest="d1", cued=True)
    tracker.restore("b", digest="d2", cued=False)
    tracker.restore("c", digest="d3", cued=True)
    assert len(tracker) == 2
    assert tracker.last_digest("a") is None  # the oldest went at the cap
    clock.now += HOUR + 1
    assert tracker.last_digest("c") is None
    assert len(tracker) == 0
    tracker.restore("d", digest=None, cued=False)  # nothing to keep: no entry at all
    assert len(tracker) == 0


# --- the settings, and a host that serves many threads -------------------------------------------


def test_the_settings_have_defaults_ranges_and_an_environment_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    idle = MnemonConfig().idle_review
    assert (idle.thread_ttl_hours, idle.max_threads) == (168.0, 10_000)
    assert (idle.lease_ms, idle.poll_ms) == (60_000, 10_000)
    for key, value in (("max_threads", 0), ("thread_ttl_hours", 0), ("lease_ms", 10)):
        with pytest.raises(InvalidInputError, match=f"idle_review.{key}"):
            MnemonConfig(idle_review={key: value})
    monkeypatch.setenv("MNEMON_IDLE_REVIEW__THREAD_TTL_HOURS", "2.5")
    settings = ReviewSettings.from_config(MnemonConfig())
    assert settings.thread_ttl_seconds == 2.5 * HOUR


def test_a_host_keeps_at_most_max_threads_of_per_thread_state(tmp_path: Path) -> None:
    mem = Mnemon.open(
        tmp_path / "root",
        workspace=tmp_path,
        embedding={"enabled": False},
        idle_review={"max_threads": 2, "delay_ms": 600_000},
    )
    try:
        agent = create_agent(
            ScriptedChatModel(responses=["Sure."]), tools=[], middleware=[mem.middleware()]
        )
        for thread in ("t1", "t2", "t3", "t4"):
            agent.invoke(
                {"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": thread}}
            )
        assert mem.review_gate.threads() == ["t3", "t4"]
        assert len(mem.turns.tracker) == 2
    finally:
        mem.close()
