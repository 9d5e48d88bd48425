"""The store's keyed put path: items of equal value under two keys, term statistics that
stay equal to a recount through puts, overwrites and deletes, concurrent puts of one key, and
puts through a cached space that was dropped or edited behind the store (SQLite and
PostgreSQL)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from langgraph_mnemon import Mnemon


@pytest.fixture
def mem(database_url: str, tmp_path: Path) -> Iterator[Mnemon]:
    with Mnemon.open(
        tmp_path / "h", database_url=database_url, embedding={"enabled": False}
    ) as host:
        yield host


def test_two_keys_with_the_same_value_are_both_stored(mem) -> None:
    store = mem.store()
    store.put(("ns",), "a", {"text": "same"})
    store.put(("ns",), "b", {"text": "same"})
    assert store.get(("ns",), "a").value == {"text": "same"}
    assert store.get(("ns",), "b").value == {"text": "same"}
    assert {i.key for i in store.search(("ns",))} == {"a", "b"}


def test_term_statistics_equal_a_recount_after_puts_overwrites_and_deletes(mem) -> None:
    store = mem.store()
    for i in range(30):
        store.put(("ns",), f"k{i}", {"text": f"alpha beta {'gamma' if i % 2 else 'delta'} n{i}"})
    for i in range(0, 30, 3):
        store.put(("ns",), f"k{i}", {"text": f"epsilon beta zeta {i}"})
    for i in range(1, 30, 5):
        store.delete(("ns",), f"k{i}")
    engine = mem.spaces._catalog.db.engine
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT space_id, terms FROM mnemon_insights WHERE deleted_at IS NULL")
        ).all()
        assert rows
        assert len({r[0] for r in rows}) == 1
        space = rows[0][0]
        want = Counter(t for _, terms in rows for t in set((terms or "").split()))
        got = dict(
            conn.execute(
                sa.text("SELECT term, df FROM mnemon_space_terms WHERE space_id = :s AND df > 0"),
                {"s": space},
            ).all()
        )
        docs, total = conn.execute(
            sa.text("SELECT docs, terms FROM mnemon_space_stats WHERE space_id = :s"), {"s": space}
        ).one()
    assert got == dict(want)
    assert docs == len(rows) == 30 - 6
    assert total == sum(len((t or "").split()) for _, t in rows)
    assert store.get(("ns",), "k3").value == {"text": "epsilon beta zeta 3"}


def test_eight_threads_putting_one_key_leave_one_live_row_the_newest(mem) -> None:
    store = mem.store()
    store.put(("race",), "k", {"text": "seed"})
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            start.wait()
            for round_ in range(3):
                store.put(("race",), "k", {"text": f"writer {n} round {round_}"})
        except BaseException as exc:  # reported below: a thread's error must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with mem.spaces._catalog.db.engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT seq, content, deleted_at FROM mnemon_insights "
                "WHERE store_key = 'k' ORDER BY seq"
            )
        ).all()
    live = [r for r in rows if r[2] is None]
    assert len(rows) == 1 + 8 * 3  # every put replaced the row before it: none was lost
    assert len(live) == 1
    assert live[0][0] == rows[-1][0]  # the newest write is the live one
    value = store.get(("race",), "k").value
    assert value["text"].startswith("writer ")
    assert value["text"] in live[0][1]


def test_a_put_after_the_space_was_deleted_behind_the_store_recreates_it(mem) -> None:
    store = mem.store()
    store.put(("gone",), "a", {"text": "first"})
    sid = store.space_id_for(("gone",))
    engine = mem.spaces._catalog.db.engine
    with engine.begin() as conn:  # another process drops the catalog row the store cached
        conn.execute(sa.text("DELETE FROM mnemon_spaces WHERE id = :s"), {"s": sid})
    store.put(("gone",), "b", {"text": "second"})
    assert store.get(("gone",), "b").value == {"text": "second"}
    # a catalog row maps a space onto the provider's rows: the recreated space finds them
    assert store.get(("gone",), "a").value == {"text": "first"}
    assert mem.spaces.get_space(sid).description.endswith('["gone"]')


def test_a_put_after_a_hand_edit_of_the_cached_space_repairs_it(mem) -> None:
    store = mem.store()
    store.put(("edited",), "a", {"text": "first"})
    sid = store.space_id_for(("edited",))
    mem.spaces.update_space(sid, description="edited by hand")
    store.put(("edited",), "a", {"text": "second"})
    assert mem.spaces.get_space(sid).description.endswith('["edited"]')
    assert store.get(("edited",), "a").value == {"text": "second"}
    assert [i.key for i in store.search(("edited",))] == ["a"]
