"""Memory Space history: supersede, restore, get, history and ``browse(history=True)``.

Every test runs on a real SQLite file and on a real PostgreSQL schema (``database_url``). A
superseded memory is soft-deleted, so default recall (search, related, browse) shows only the
current version; reads by id and history show both, linked; restore brings a row back with
the same ranking inputs (keyword postings, term statistics, vectors).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from langgraph.store.memory import InMemoryStore

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.embeddings import HashingEmbedder
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.adapters.providers.store import StoreProvider
from langgraph_mnemon.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    ParticipationError,
    ProviderError,
    ReadOnlyError,
)
from langgraph_mnemon.memory_layers.spaces import (
    KeyedPut,
    MemorySpaces,
    RememberItem,
    SpaceBinding,
)
from langgraph_mnemon.memory_layers.spaces.schema import (
    INSIGHTS,
    SPACE_STATS,
    SPACE_TERMS,
    VECTORS,
)
from langgraph_mnemon.storage.db import Database, create_engine


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = Database(create_engine(database_url), owns_engine=True)
    yield database
    database.dispose()


def _spaces(db: Database, root: Path, **kwargs: Any) -> MemorySpaces:
    native = MnemosProvider(db, embedder=HashingEmbedder(256))
    return MemorySpaces(db, root=root, providers=[native], **kwargs)


@pytest.fixture
def spaces(db: Database, tmp_path: Path) -> Iterator[MemorySpaces]:
    service = _spaces(db, tmp_path / "root")
    yield service
    service.close()


def _ids(rows: Any) -> list[str]:
    return [r.id for r in rows]


def _rows(db: Database) -> dict[str, list[str]]:
    """Every row of the insight, statistics, term and vector tables."""
    out: dict[str, list[str]] = {}
    with db.engine.connect() as conn:
        for table in (INSIGHTS, SPACE_STATS, SPACE_TERMS, VECTORS):
            out[table.name] = sorted(repr(tuple(r)) for r in conn.execute(sa.select(table)))
    return out


def _ranking_inputs(db: Database, space_id: str) -> tuple[Any, ...]:
    """What a search of the space scores with: totals, document frequencies, vector rows."""
    with db.engine.connect() as conn:
        stats = conn.execute(
            sa.select(SPACE_STATS.c.docs, SPACE_STATS.c.terms).where(
                SPACE_STATS.c.space_id == space_id
            )
        ).all()
        terms = conn.execute(
            sa.select(SPACE_TERMS.c.term, SPACE_TERMS.c.df)
            .where(SPACE_TERMS.c.space_id == space_id, SPACE_TERMS.c.df > 0)
            .order_by(SPACE_TERMS.c.term)
        ).all()
        vectors = conn.execute(
            sa.select(VECTORS.c.insight_seq, VECTORS.c.vector)
            .where(VECTORS.c.space_id == space_id)
            .order_by(VECTORS.c.insight_seq)
        ).all()
    return [tuple(r) for r in stats], [tuple(r) for r in terms], [tuple(r) for r in vectors]


def test_supersede_hides_the_old_row_from_default_recall(spaces: MemorySpaces) -> None:
    old = spaces.remember(
        "The team decided to deploy on Fridays.", category="decision", entities=["deploys"]
    )
    other = spaces.remember("Release notes go to the wiki.", entities=["deploys"])
    spaces.link(old.id or "", other.id or "", type="causal", weight=0.9)
    assert old.id in _ids(spaces.related(other.id or "", depth=1).results)

    new = spaces.supersede(
        old.id or "", "The team decided to deploy on Tuesdays.", category="decision"
    )

    assert new.status == "committed"
    assert new.changed
    assert new.id
    assert new.id != old.id
    assert new.provider_receipt == {"status": "superseded", "id": new.id, "replaced": old.id}
    for mode in ("keyword", "smart", "basic"):
        found = _ids(spaces.search("team decided deploy Fridays", mode=mode).results)
        assert old.id not in found, mode
    assert new.id in _ids(spaces.search("team decided deploy", mode="keyword").results)
    assert old.id not in _ids(spaces.related(other.id or "", depth=2).results)
    browsed = spaces.browse()
    assert set(_ids(browsed)) == {new.id, other.id}
    assert {r.status for r in browsed} == {"current"}


def test_get_history_and_browse_show_both_versions(spaces: MemorySpaces) -> None:
    first = spaces.remember("Standups are at 9:30.", category="decision")
    second = spaces.supersede(first.id or "", "Standups are at 10:00.", category="decision")
    third = spaces.supersede(second.id or "", "Standups are at 10:15.", category="decision")
    forgotten = spaces.remember("A scratch note.")
    spaces.forget(forgotten.id or "")

    old = spaces.get(first.id or "")
    assert old.status == "superseded"
    assert old.superseded_by == second.id
    assert isinstance(old.metadata["superseded_at"], float)
    middle = spaces.get(second.id or "")
    assert (middle.status, middle.supersedes, middle.superseded_by) == (
        "superseded",
        first.id,
        third.id,
    )
    current = spaces.get(third.id or "")
    assert (current.status, current.supersedes, current.superseded_by) == (
        "current",
        second.id,
        None,
    )
    assert current.metadata["supersedes"] == second.id
    assert spaces.get(forgotten.id or "").status == "forgotten"
    assert current.space_id == spaces.list_spaces()[0].id

    chain = [first.id, second.id, third.id]
    for start in chain:
        history = spaces.history(start or "")
        assert _ids(history) == chain
        assert [r.status for r in history] == ["superseded", "superseded", "current"]

    assert _ids(spaces.browse()) == [third.id]
    with_history = spaces.browse(history=True)
    assert _ids(with_history) == [third.id, second.id, first.id]  # forgotten stays hidden
    assert [r.status for r in with_history] == ["current", "superseded", "superseded"]
    assert _ids(spaces.browse(history=True, limit=1, offset=1)) == [second.id]

    with pytest.raises(NotFoundError):
        spaces.get("no-such-memory")
    with pytest.raises(NotFoundError):
        spaces.history("no-such-memory")


def test_history_is_bounded_and_a_cycle_cannot_loop(spaces: MemorySpaces, db: Database) -> None:
    a = spaces.remember("Version A.")
    b = spaces.supersede(a.id or "", "Version B.")
    with db.engine.begin() as conn:  # a damaged link: A claims to supersede B
        meta = dict(
            conn.execute(sa.select(INSIGHTS.c.metadata).where(INSIGHTS.c.id == a.id)).scalar_one()
        )
        meta["supersedes"] = b.id
        conn.execute(INSIGHTS.update().where(INSIGHTS.c.id == a.id).values(metadata=meta))
    assert _ids(spaces.history(b.id or "")) == [a.id, b.id]
    assert _ids(spaces.history(a.id or "")) == [b.id, a.id]


def test_restore_brings_a_row_back_with_the_same_ranking_inputs(
    spaces: MemorySpaces, db: Database
) -> None:
    target = spaces.remember("Quarterly budget review happens in the Zephyr room.")
    spaces.remember("The budget spreadsheet lives on the shared drive.")
    spaces.remember("Room bookings go through the front desk.")
    space_id = target.space_id
    before = _ranking_inputs(db, space_id)
    found = spaces.search("zephyr budget review", mode="keyword").results
    assert found[0].id == target.id
    score = found[0].score

    spaces.forget(target.id or "")
    assert target.id not in _ids(spaces.search("zephyr budget review", mode="keyword").results)
    assert _ranking_inputs(db, space_id) != before

    restored = spaces.restore(target.id or "")
    assert (restored.status, restored.changed, restored.id) == ("committed", True, target.id)
    assert restored.provider_receipt["status"] == "restored"
    assert _ranking_inputs(db, space_id) == before
    again = spaces.search("zephyr budget review", mode="keyword").results
    assert again[0].id == target.id
    assert again[0].score == pytest.approx(score)
    assert target.id in _ids(spaces.search("Zephyr room", mode="smart").results)
    assert spaces.get(target.id or "").status == "current"

    noop = spaces.restore(target.id or "")
    assert (noop.status, noop.changed) == ("committed", False)
    assert _ranking_inputs(db, space_id) == before
    with pytest.raises(NotFoundError):
        spaces.restore("no-such-memory")


def test_restore_undoes_a_supersede(spaces: MemorySpaces) -> None:
    old = spaces.remember("Lunch is ordered from Luigi's.")
    new = spaces.supersede(old.id or "", "Lunch is ordered from Marco's.")
    spaces.restore(old.id or "")

    back = spaces.get(old.id or "")
    assert back.status == "current"
    assert back.superseded_by is None
    assert "superseded_by" not in back.metadata
    assert "superseded_at" not in back.metadata
    assert old.id in _ids(spaces.search("Luigi lunch", mode="keyword").results)
    assert spaces.get(new.id or "").status == "current"  # the successor stays
    assert set(_ids(spaces.browse())) == {old.id, new.id}


def test_a_failing_supersede_leaves_every_row_as_it_was(spaces: MemorySpaces, db: Database) -> None:
    kept = spaces.remember("The VPN lives at vpn.example.org.")
    gone = spaces.remember("An outdated note.")
    spaces.forget(gone.id or "")
    before = _rows(db)
    for bad in ("no-such-memory", gone.id or ""):
        with pytest.raises(NotFoundError):
            spaces.supersede(bad, "A replacement.")
        assert _rows(db) == before
    with pytest.raises(InvalidInputError):
        spaces.supersede(kept.id or "", "x", metadata={"superseded_by": "someone"})
    with pytest.raises(InvalidInputError):
        spaces.supersede(kept.id or "", "x", metadata={f"k{i}": i for i in range(32)})
    with pytest.raises(InvalidInputError):
        spaces.supersede(kept.id or "", "   ")
    assert _rows(db) == before
    assert spaces.get(kept.id or "").status == "current"


def test_restore_refuses_a_store_key_a_live_row_holds(spaces: MemorySpaces, db: Database) -> None:
    spaces.create_space("Key values", space_id="kv", active=True)
    native = spaces.provider("mnemos")
    binding = SpaceBinding(id="kv", name="Key values")
    [[first]] = native.keyed_write([(binding, [KeyedPut("theme", RememberItem(content="dark"))])])
    native.keyed_write([(binding, [KeyedPut("theme", RememberItem(content="light"))])])
    assert spaces.get(first["id"], space_id="kv").status == "forgotten"
    before = _rows(db)

    with pytest.raises(ConflictError):
        spaces.restore(first["id"], space_id="kv")
    assert _rows(db) == before

    native.keyed_write([(binding, [KeyedPut("theme", None)])])  # the key is free again
    assert spaces.restore(first["id"], space_id="kv").changed
    assert native.keyed_get(binding, "theme").content == "dark"


def test_kernel_refusals(tmp_path: Path, database_url: str) -> None:
    with Mnemon.open(tmp_path / "root", database_url=database_url) as mem:
        old = mem.spaces.remember("Backups run nightly.")
        new = mem.spaces.supersede(old.id or "", "Backups run hourly.")
        mem.config.layers.memory_spaces.participation.write = "off"
        with pytest.raises(ParticipationError):
            mem.spaces.supersede(new.id or "", "Backups run weekly.")
        with pytest.raises(ParticipationError):
            mem.spaces.restore(old.id or "")
        # Reads by id are management reads: the kernel is not asked.
        assert _ids(mem.spaces.history(old.id or "")) == [old.id, new.id]
        assert mem.spaces.get(old.id or "").status == "superseded"

    with Mnemon.open(tmp_path / "root", database_url=database_url, write_enabled=False) as mem:
        with pytest.raises(ReadOnlyError):
            mem.spaces.supersede(new.id or "", "Backups run weekly.")
        with pytest.raises(ReadOnlyError):
            mem.spaces.restore(old.id or "")
        assert mem.spaces.get(old.id or "").status == "superseded"


def test_a_provider_without_history_is_refused(spaces: MemorySpaces) -> None:
    spaces.register_provider(StoreProvider(InMemoryStore()))
    spaces.create_space("Plain", provider_id="store", space_id="plain", active=True)
    row = spaces.remember("A plain memory.", space_id="plain")
    calls = (
        lambda: spaces.supersede(row.id or "", "Another.", space_id="plain"),
        lambda: spaces.restore(row.id or "", space_id="plain"),
        lambda: spaces.get(row.id or "", space_id="plain"),
        lambda: spaces.history(row.id or "", space_id="plain"),
    )
    for call in calls:
        with pytest.raises(ProviderError) as info:
            call()
        assert info.value.code == "unsupported"
        assert "keeps history" in info.value.message
    rows = spaces.browse("plain", history=True)  # nothing superseded there: current rows
    assert [r.content for r in rows] == ["A plain memory."]
    assert rows[0].status is None


def test_async_forms(spaces: MemorySpaces) -> None:
    async def run() -> tuple[Any, ...]:
        old = await spaces.aremember("The office closes at 6pm.")
        new = await spaces.asupersede(old.id or "", "The office closes at 7pm.")
        chain = await spaces.ahistory(new.id or "")
        got = await spaces.aget(old.id or "")
        back = await spaces.arestore(old.id or "")
        return new, chain, got, back

    new, chain, got, back = asyncio.run(run())
    assert new.status == "committed"
    assert len(chain) == 2
    assert got.status == "superseded"
    assert back.changed
