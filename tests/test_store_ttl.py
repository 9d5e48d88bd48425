"""Time to live of ``mem.store()`` items, LangGraph's TTL contract (``PutOp.ttl``,
``refresh_ttl``, ``TTLConfig``, ``sweep_ttl`` and the background sweeper) on a real SQLite file
and the real PostgreSQL (``database_url``).

Expiry is a database column, so most tests move an item's ``expires_at`` instead of sleeping:
what they check does not depend on how loaded the machine is. One test lets a short TTL run
out on the wall clock.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.store.base import GetOp, PutOp, SearchOp

from langgraph_mnemon import Mnemon
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import InvalidInputError, ReadOnlyError
from langgraph_mnemon.store import MnemonStore
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

NS = ("sessions", "alice")


@pytest.fixture
def mem(database_url: str, tmp_path: Path) -> Iterator[Mnemon]:
    with Mnemon.open(
        tmp_path / "h", database_url=database_url, embedding={"enabled": False}
    ) as host:
        yield host


def _row(mem: Mnemon, key: str) -> dict[str, Any]:
    """The newest row of ``key`` as stored (live or not)."""
    with mem.database.engine.connect() as conn:
        row = conn.execute(
            sa.text(
                "SELECT expires_at, ttl_minutes, deleted_at, created_at FROM mnemon_insights "
                "WHERE store_key = :k ORDER BY seq DESC LIMIT 1"
            ),
            {"k": key},
        ).one()
    return dict(row._mapping)


def _expire_at(mem: Mnemon, key: str, when: float) -> None:
    """Move the live row of ``key`` to expire at ``when`` (UNIX seconds), as time passing
    would; nothing else about the row changes."""
    with mem.database.engine.begin() as conn:
        done = conn.execute(
            sa.text(
                "UPDATE mnemon_insights SET expires_at = :t "
                "WHERE store_key = :k AND deleted_at IS NULL"
            ),
            {"t": when, "k": key},
        ).rowcount
    assert done == 1


def _live_rows(mem: Mnemon) -> int:
    with mem.database.engine.connect() as conn:
        return int(
            conn.execute(
                sa.text("SELECT count(*) FROM mnemon_insights WHERE deleted_at IS NULL")
            ).scalar_one()
        )


def _statistics_match_a_recount(mem: Mnemon) -> None:
    """The per-space keyword statistics equal a recount of the live rows."""
    with mem.database.engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT space_id, terms FROM mnemon_insights WHERE deleted_at IS NULL")
        ).all()
        stats = dict(conn.execute(sa.text("SELECT space_id, docs FROM mnemon_space_stats")).all())
        terms = conn.execute(
            sa.text("SELECT space_id, term, df FROM mnemon_space_terms WHERE df <> 0")
        ).all()
    docs = Counter(space for space, _ in rows)
    assert {s: n for s, n in stats.items() if n} == dict(docs)
    want = Counter((s, t) for s, text in rows for t in set((text or "").split()))
    assert {(s, t): df for s, t, df in terms} == dict(want)


# --------------------------------------------------------------------------------------------
# put: ttl, default_ttl, and what lives in the database


def test_a_put_with_ttl_stores_its_expiry_in_the_database(mem: Mnemon) -> None:
    store = mem.store()
    assert store.supports_ttl is True
    before = time.time()
    store.put(NS, "cart", {"items": ["tea"]}, ttl=10)
    store.put(NS, "profile", {"name": "Alice"})
    row = _row(mem, "cart")
    assert row["ttl_minutes"] == 10
    assert before + 600 <= row["expires_at"] <= time.time() + 600
    assert _row(mem, "profile")["expires_at"] is None  # no ttl: never expires
    assert _row(mem, "profile")["ttl_minutes"] is None


def test_default_ttl_applies_to_puts_that_do_not_say(mem: Mnemon) -> None:
    store = mem.store(ttl={"default_ttl": 30})
    assert store.ttl_config == {"default_ttl": 30.0}
    store.put(NS, "default", {"v": 1})
    store.put(NS, "own", {"v": 2}, ttl=5)
    store.put(NS, "never", {"v": 3}, ttl=None)  # an explicit None means no expiry
    store.batch([PutOp(NS, "raw", {"v": 4})])  # a raw op carries its own ttl (None)
    assert _row(mem, "default")["ttl_minutes"] == 30
    assert _row(mem, "own")["ttl_minutes"] == 5
    assert _row(mem, "never")["expires_at"] is None
    assert _row(mem, "raw")["expires_at"] is None
    # The configuration belongs to that store: the host's plain store has none.
    mem.store().put(NS, "plain", {"v": 5})
    assert _row(mem, "plain")["expires_at"] is None


def test_ttl_configurations_are_checked_and_kept_by_siblings(mem: Mnemon) -> None:
    config = {"default_ttl": 1, "refresh_on_read": False, "sweep_interval_minutes": 2}
    store = mem.store(ttl=config)
    assert mem.store(ttl=dict(config)) is store
    assert store is not mem.store()
    assert store.scoped(Scope(user="bob")).ttl_config == store.ttl_config
    assert store.acting_as("automatic").ttl_config == store.ttl_config
    assert mem.store(trigger="automatic", ttl=config) is store.acting_as("automatic")
    assert store.with_ttl(None) is mem.store()
    for bad, message in [
        ({"default_ttl": 0}, "default_ttl must be more than 0"),
        ({"default_ttl": "60"}, "default_ttl must be a number of minutes"),
        ({"refresh_on_read": "yes"}, "refresh_on_read must be true or false"),
        ({"sweep_interval_minutes": -5}, "sweep_interval_minutes must be more than 0"),
        ({"omit_expired": False}, "omit_expired cannot be false"),
        ({"ttl": 5}, "unknown TTL setting"),
        (["default_ttl"], "ttl must be a TTL configuration"),
    ]:
        with pytest.raises(InvalidInputError, match=message):
            mem.store(ttl=bad)  # type: ignore[arg-type]
    assert mem.store(ttl={"omit_expired": True}).ttl_config == {"omit_expired": True}


# --------------------------------------------------------------------------------------------
# expired items are gone at once, for every read, before any sweep


def test_expired_items_are_gone_for_every_read_before_any_sweep(mem: Mnemon) -> None:
    store = mem.store()
    store.put(NS, "old", {"text": "The walrus ticket expired yesterday."}, ttl=60)
    store.put(NS, "keep", {"text": "The penguin ticket is still open."}, ttl=60)
    store.put(("sessions", "bob"), "only", {"text": "The walrus lives in bob's session."}, ttl=60)
    _expire_at(mem, "old", time.time() - 1)
    _expire_at(mem, "only", time.time() - 1)

    assert store.get(NS, "old") is None
    assert store.get(NS, "keep") is not None
    assert [i.key for i in store.search(NS)] == ["keep"]
    assert [i.key for i in store.search(("sessions",), filter={"text": {"$ne": "x"}})] == ["keep"]
    assert [i.key for i in store.search(("sessions",), query="walrus ticket")] == ["keep"]
    assert store.list_namespaces(prefix=("sessions",)) == [NS]  # bob's namespace emptied
    # The agent's own recall and the operator's browse of the space: gone there too.
    found = mem.spaces.search("walrus ticket", policy="exhaustive-v1").results
    assert all("walrus" not in r.content for r in found)
    browsed = mem.spaces.browse(MnemonStore.space_id_for(NS))
    assert ["penguin" in r.content for r in browsed] == [True]
    # Nothing was swept: the rows are still in the database, only past their expiry.
    assert _row(mem, "old")["deleted_at"] is None
    assert _live_rows(mem) == 3


def test_a_put_over_an_expired_key_starts_a_new_item(mem: Mnemon) -> None:
    store = mem.store()
    store.put(NS, "k", {"v": 1}, ttl=60)
    first = store.get(NS, "k")
    assert first is not None
    _expire_at(mem, "k", time.time() - 1)
    store.put(NS, "k", {"v": 1}, ttl=60)  # the same value: not a no-op, the old one is gone
    again = store.get(NS, "k")
    assert again is not None
    assert again.value == {"v": 1}
    assert again.created_at > first.created_at
    assert _live_rows(mem) == 1
    _statistics_match_a_recount(mem)


def test_an_identical_re_put_restarts_or_clears_the_expiry(mem: Mnemon) -> None:
    store = mem.store()
    store.put(NS, "k", {"v": 1}, ttl=60)
    created = store.get(NS, "k").created_at  # type: ignore[union-attr]
    _expire_at(mem, "k", time.time() + 5)
    store.put(NS, "k", {"v": 1}, ttl=120)
    row = _row(mem, "k")
    assert row["ttl_minutes"] == 120
    assert row["expires_at"] > time.time() + 7000
    assert store.get(NS, "k").created_at == created  # type: ignore[union-attr]
    store.put(NS, "k", {"v": 1})  # no ttl now: the item stops expiring
    assert _row(mem, "k")["expires_at"] is None
    assert _live_rows(mem) == 1


def test_an_expired_item_ends_in_the_agents_recall(mem: Mnemon, tmp_path: Path) -> None:
    """A real ``create_agent`` run: the model calls ``mnemon_recall``; the expired store item
    reaches neither the tool result nor anything else the model is sent."""
    store = mem.store()
    store.put(("kb",), "old", {"text": "Deploy window: the zebra freeze on Fridays."}, ttl=60)
    store.put(("kb",), "new", {"text": "Deploy window: the zebra thaw on Tuesdays."}, ttl=60)
    _expire_at(mem, "old", time.time() - 1)
    model = ScriptedChatModel(
        responses=[tool_call("mnemon_recall", {"query": "zebra deploy window"}, "r1"), "done"]
    )
    agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
    out = agent.invoke(
        {"messages": [HumanMessage("When do we deploy?")]}, {"configurable": {"thread_id": "t"}}
    )
    results = [m.content for m in out["messages"] if m.type == "tool"]
    assert results
    assert "thaw on Tuesdays" in results[0]
    sent = " ".join(str(m.content) for call in model.calls for m in call)
    assert "freeze on Fridays" not in sent


# --------------------------------------------------------------------------------------------
# refresh on read


def test_get_and_search_refresh_what_they_return(mem: Mnemon) -> None:
    store = mem.store()
    for key in ("a", "b", "c"):
        store.put(NS, key, {"text": f"otter note {key}"}, ttl=10)
    soon = time.time() + 30
    for key in ("a", "b", "c"):
        _expire_at(mem, key, soon)

    assert store.get(NS, "a", refresh_ttl=False) is not None
    assert _row(mem, "a")["expires_at"] == pytest.approx(soon)
    assert store.get(NS, "a") is not None  # refresh_ttl defaults to True without a config
    assert _row(mem, "a")["expires_at"] > time.time() + 500

    assert [i.key for i in store.search(NS, filter={"text": "otter note b"})] == ["b"]
    assert _row(mem, "b")["expires_at"] > time.time() + 500
    assert _row(mem, "c")["expires_at"] == pytest.approx(soon)  # not returned: not refreshed

    assert [i.key for i in store.search(NS, query="otter note c", limit=1)] == ["c"]
    assert _row(mem, "c")["expires_at"] > time.time() + 500


def test_refresh_on_read_false_makes_reads_leave_the_expiry_alone(mem: Mnemon) -> None:
    store = mem.store(ttl={"refresh_on_read": False})
    store.put(NS, "k", {"text": "heron"}, ttl=10)
    soon = time.time() + 30
    _expire_at(mem, "k", soon)
    assert store.get(NS, "k") is not None
    assert [i.key for i in store.search(NS)] == ["k"]
    assert [i.key for i in store.search(NS, query="heron")] == ["k"]
    assert _row(mem, "k")["expires_at"] == pytest.approx(soon)
    assert store.get(NS, "k", refresh_ttl=True) is not None  # the caller overrides it
    assert _row(mem, "k")["expires_at"] > time.time() + 500


def test_a_refresh_never_revives_an_expired_item(mem: Mnemon) -> None:
    store = mem.store()
    store.put(NS, "k", {"text": "ibis"}, ttl=10)
    past = time.time() - 1
    _expire_at(mem, "k", past)
    assert store.get(NS, "k", refresh_ttl=True) is None
    assert store.search(NS, refresh_ttl=True) == []
    results = store.batch([GetOp(NS, "k", refresh_ttl=True), SearchOp(NS, query="ibis")])
    assert results == [None, []]
    assert _row(mem, "k")["expires_at"] == pytest.approx(past)


def test_a_read_only_host_reads_expiring_items_without_refreshing(
    mem: Mnemon, database_url: str, tmp_path: Path
) -> None:
    mem.store().put(NS, "k", {"text": "crane"}, ttl=10)
    soon = time.time() + 30
    _expire_at(mem, "k", soon)
    with Mnemon.open(
        tmp_path / "ro",
        database_url=database_url,
        write_enabled=False,
        embedding={"enabled": False},
    ) as reader:
        assert reader.store().get(NS, "k") is not None
        with pytest.raises(ReadOnlyError):
            reader.store().sweep_ttl()
    assert _row(mem, "k")["expires_at"] == pytest.approx(soon)


# --------------------------------------------------------------------------------------------
# sweeping


def test_sweep_deletes_expired_rows_with_their_index_and_statistics(mem: Mnemon) -> None:
    store = mem.store()
    for i in range(12):
        store.put(("a",), f"k{i}", {"text": f"kestrel {i}"}, ttl=60)
    store.put(("b",), "stay", {"text": "kestrel stays"})
    for i in range(0, 12, 2):
        _expire_at(mem, f"k{i}", time.time() - 1)
    assert store.sweep_ttl() == 6
    assert store.sweep_ttl() == 0
    assert _row(mem, "k0")["deleted_at"] is not None
    assert _live_rows(mem) == 7
    _statistics_match_a_recount(mem)
    left = sorted(i.key for i in store.search(("a",), limit=20))
    assert left == sorted(f"k{i}" for i in (1, 3, 5, 7, 9, 11))
    assert asyncio.run(store.asweep_ttl()) == 0


def test_replicas_sweeping_at_once_delete_each_row_once(
    mem: Mnemon, database_url: str, tmp_path: Path
) -> None:
    store = mem.store()
    for space in range(3):
        for i in range(40):
            store.put((f"s{space}",), f"k{space}-{i}", {"text": f"wren {space} {i}"}, ttl=60)
    with mem.database.engine.begin() as conn:
        conn.execute(sa.text("UPDATE mnemon_insights SET expires_at = :t"), {"t": time.time() - 1})
    replicas = [
        Mnemon.open(tmp_path / f"r{n}", database_url=database_url, embedding={"enabled": False})
        for n in range(3)
    ]
    counts: list[int] = []
    barrier = threading.Barrier(len(replicas))

    def sweep(host: Mnemon) -> None:
        barrier.wait()
        counts.append(host.store().sweep_ttl())

    threads = [threading.Thread(target=sweep, args=(host,)) for host in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for host in replicas:
        host.close()
    assert sum(counts) == 120
    assert _live_rows(mem) == 0
    _statistics_match_a_recount(mem)
    assert store.list_namespaces() == []


def test_the_background_sweeper_runs_until_stopped(mem: Mnemon) -> None:
    store = mem.store(ttl={"sweep_interval_minutes": 0.005})  # every 0.3 s
    store.put(NS, "gone", {"v": 1}, ttl=60)
    store.put(NS, "kept", {"v": 2}, ttl=60)
    _expire_at(mem, "gone", time.time() - 1)
    done = store.start_ttl_sweeper()
    assert store.start_ttl_sweeper() is done  # one sweeper per host
    assert mem.store().start_ttl_sweeper() is done
    deadline = time.monotonic() + 60
    while _row(mem, "gone")["deleted_at"] is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _row(mem, "gone")["deleted_at"] is not None
    assert _row(mem, "kept")["deleted_at"] is None
    assert store.stop_ttl_sweeper(timeout=30) == 1
    assert done.done()
    assert store.stop_ttl_sweeper() == 1  # stopping a stopped sweeper is harmless
    with pytest.raises(InvalidInputError, match="sweep_interval_minutes must be more than 0"):
        store.start_ttl_sweeper(0)


def test_a_short_ttl_runs_out_on_the_wall_clock(mem: Mnemon) -> None:
    store = mem.store(ttl={"default_ttl": 1 / 60})  # one second
    store.put(NS, "k", {"text": "swift"})
    store.put(NS, "forever", {"text": "swift forever"}, ttl=None)
    assert store.get(NS, "k", refresh_ttl=False) is not None
    deadline = time.monotonic() + 30
    while store.get(NS, "k", refresh_ttl=False) is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert store.get(NS, "k") is None
    assert [i.key for i in store.search(NS)] == ["forever"]
    assert store.sweep_ttl() == 1


# --------------------------------------------------------------------------------------------
# schema: an existing database is upgraded in place


def test_a_database_of_the_previous_schema_gains_expiry_in_place(
    database_url: str, tmp_path: Path
) -> None:
    from langgraph_mnemon.storage.db import create_engine

    options: dict[str, Any] = {"database_url": database_url, "embedding": {"enabled": False}}
    with Mnemon.open(tmp_path / "old", **options) as old:
        old.store().put(NS, "k", {"text": "puffin"})
    engine = create_engine(database_url)
    with engine.begin() as conn:  # back to what the release before schema step 3 made
        conn.exec_driver_sql("DROP INDEX ix_mnemon_insights_expires")
        conn.exec_driver_sql("ALTER TABLE mnemon_insights DROP COLUMN expires_at")
        conn.exec_driver_sql("ALTER TABLE mnemon_insights DROP COLUMN ttl_minutes")
        conn.exec_driver_sql(
            "DELETE FROM mnemon_schema_version WHERE component = 'spaces' AND version = 3"
        )
    engine.dispose()
    with Mnemon.open(tmp_path / "new", **options) as new:
        store = new.store()
        assert store.get(NS, "k").value == {"text": "puffin"}  # type: ignore[union-attr]
        assert _row(new, "k")["expires_at"] is None  # an existing item never expires
        store.put(NS, "t", {"text": "tern"}, ttl=5)
        assert _row(new, "t")["ttl_minutes"] == 5
        with new.database.engine.connect() as conn:
            versions = conn.execute(
                sa.text("SELECT version FROM mnemon_schema_version WHERE component = 'spaces'")
            ).scalars()
            assert sorted(versions) == [1, 2, 3, 4]
            indexes = {i["name"] for i in sa.inspect(conn).get_indexes("mnemon_insights")}
            assert "ix_mnemon_insights_expires" in indexes


def test_an_expired_item_leaves_the_status_totals_before_any_sweep(mem: Mnemon) -> None:
    store = mem.store()
    store.put(NS, "stays", {"text": "heron note"})
    store.put(NS, "goes", {"text": "egret note"}, ttl=60)

    def total() -> int:
        sid = store.space_id_for(NS)
        found = [s for s in mem.spaces.status().spaces if s.space.id == sid]
        assert len(found) == 1
        return found[0].status.total_insights

    assert total() == 2
    _expire_at(mem, "goes", time.time() - 1)
    assert total() == 1  # gone for every read, the status counts included
    assert _live_rows(mem) == 2  # not swept yet


def test_sweep_and_sweeper_calls_may_also_be_awaited(mem: Mnemon) -> None:
    """Code written for LangGraph's async stores awaits these; ours work at once either way."""
    store = mem.store(ttl={"default_ttl": 60})
    store.put(NS, "k", {"text": "kestrel note"})
    _expire_at(mem, "k", time.time() - 1)

    async def as_async_code_would() -> tuple[int, bool, int]:
        swept = await store.sweep_ttl()
        running = await store.start_ttl_sweeper(60)
        is_running = not running.done()
        return swept, is_running, await store.stop_ttl_sweeper(timeout=30)

    swept, was_running, stopped = asyncio.run(as_async_code_would())
    assert (swept, was_running, stopped) == (1, True, 1)
    assert store.sweep_ttl() == 0  # the sync form: a plain count
    assert _live_rows(mem) == 0
