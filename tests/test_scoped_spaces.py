"""Memory Spaces owned by a user or a project, seen through ``mem.scoped(...)``.

Real components only: a real SQLite file and the real PostgreSQL server (``database_url``
runs every test on both), the native provider on that database. The recording provider below
is the native provider itself, subclassed only to write down which space each call touched.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import AuthorityError, NotFoundError
from langgraph_mnemon.memory_layers.spaces import DEFAULT_SPACE_ID, MemorySpaces
from langgraph_mnemon.memory_layers.spaces.schema import MIGRATIONS, SPACES
from langgraph_mnemon.storage.db import SCHEMA_VERSION, Database, create_engine


class RecordingMnemos(MnemosProvider):
    """The native provider, writing down the space of every data-plane call it gets."""

    def __init__(self, database: Database) -> None:
        super().__init__(database)
        self.calls: list[tuple[str, str]] = []

    def _saw(self, name: str, space: Any) -> None:
        self.calls.append((name, getattr(space, "id", "?")))

    def search(self, space: Any, *args: Any, **kwargs: Any) -> Any:
        self._saw("search", space)
        return super().search(space, *args, **kwargs)

    def browse(self, space: Any, *args: Any, **kwargs: Any) -> Any:
        self._saw("browse", space)
        return super().browse(space, *args, **kwargs)

    def graph(self, space: Any, *args: Any, **kwargs: Any) -> Any:
        self._saw("graph", space)
        return super().graph(space, *args, **kwargs)

    def remember(self, space: Any, *args: Any, **kwargs: Any) -> Any:
        self._saw("remember", space)
        return super().remember(space, *args, **kwargs)

    def remember_many(self, space: Any, *args: Any, **kwargs: Any) -> Any:
        self._saw("remember_many", space)
        return super().remember_many(space, *args, **kwargs)

    def related(self, space: Any, *args: Any, **kwargs: Any) -> Any:
        self._saw("related", space)
        return super().related(space, *args, **kwargs)

    def link(self, space: Any, *args: Any, **kwargs: Any) -> Any:
        self._saw("link", space)
        return super().link(space, *args, **kwargs)

    def forget(self, space: Any, *args: Any, **kwargs: Any) -> Any:
        self._saw("forget", space)
        return super().forget(space, *args, **kwargs)

    def merge(self, target: Any, sources: Any) -> Any:
        self._saw("merge", target)
        return super().merge(target, sources)

    def status(self, space: Any) -> Any:
        self._saw("status", space)
        return super().status(space)


@pytest.fixture
def mem(database_url: str, tmp_path: Path) -> Iterator[Mnemon]:
    """A host whose spaces live on ``database_url`` (Runtime Memory and Documents on files)."""
    host = Mnemon.open(
        tmp_path / "m",
        database_url=database_url,
        memory_storage="files",
        chroma={"enabled": False},
        embedding={"enabled": False},
    )
    try:
        yield host
    finally:
        host.close()


def _contents(result: Any) -> list[str]:
    """The rows the query matched. A search's depth adds their neighbours in the same space
    (``matched_via="neighbour"``); those must be the caller's too, checked here."""
    spaces = {r.space_id for r in result.results if r.matched_via != "neighbour"}
    for row in result.results:
        assert row.matched_via != "neighbour" or row.space_id in spaces, row
    return sorted(r.content for r in result.results if r.matched_via != "neighbour")


def _not_found(call: Callable[[], Any]) -> NotFoundError:
    with pytest.raises(NotFoundError) as caught:
        call()
    return caught.value


# ------------------------------------------------------------------ users


def test_two_users_never_see_each_others_spaces_or_memories(mem: Mnemon) -> None:
    alice = mem.scoped(user="alice", project="billing")
    bob = mem.scoped(user="bob", project="billing")
    a_space = alice.spaces.create_space("Alice's pets").space
    b_space = bob.spaces.create_space("Bob's pets").space
    assert a_space is not None
    assert b_space is not None
    assert (a_space.owner, b_space.owner) == ("user:alice", "user:bob")
    a1 = alice.spaces.remember(
        "Alice's cat is called Miso.", space_id=a_space.id, entities=["Miso"]
    )
    a2 = alice.spaces.remember("Miso eats tuna every morning.", space_id=a_space.id)
    b1 = bob.spaces.remember("Bob's cat is called Tiger.", space_id=b_space.id, entities=["Tiger"])
    assert a1.committed
    assert a2.committed
    assert b1.committed
    assert alice.spaces.link(a1.id, a2.id, space_id=a_space.id, type="causal").committed

    assert [s.id for s in alice.spaces.list_spaces()] == [a_space.id]
    assert [s.id for s in bob.spaces.list_spaces()] == [b_space.id]
    assert mem.spaces.list_spaces() == []  # the local scope sees neither
    assert (alice.spaces.status(probe=False).total, bob.spaces.status(probe=False).total) == (1, 1)
    # federated search: each user's active spaces only, sync and async alike
    assert _contents(alice.spaces.search("cat called")) == ["Alice's cat is called Miso."]
    assert _contents(bob.spaces.search("cat called")) == ["Bob's cat is called Tiger."]
    assert _contents(asyncio.run(bob.spaces.asearch("cat called"))) == [
        "Bob's cat is called Tiger."
    ]
    assert mem.spaces.search("cat called").results == []
    # one-space reads without a space id pick the user's only active space
    assert sorted(m.content for m in alice.spaces.browse()) == [
        "Alice's cat is called Miso.",
        "Miso eats tuna every morning.",
    ]
    assert [m.content for m in bob.spaces.browse()] == ["Bob's cat is called Tiger."]
    assert [e.name for e in alice.spaces.entities()] == ["Miso"]
    assert [r.content for r in alice.spaces.related(a1.id, depth=1).results] == [
        "Miso eats tuna every morning."
    ]
    assert len(alice.spaces.graph().nodes) == 2
    # bob's memory ids mean nothing in alice's space
    with pytest.raises(NotFoundError):
        alice.spaces.forget(b1.id, space_id=a_space.id)
    assert alice.spaces.forget(a2.id).committed
    assert _contents(alice.spaces.search("tuna morning")) == []
    assert [m.content for m in bob.spaces.browse()] == ["Bob's cat is called Tiger."]
    # the operator's view is the only one that sees both
    every = {s.id: s.owner for s in mem.spaces.every_owner().list_spaces()}
    assert every == {a_space.id: "user:alice", b_space.id: "user:bob"}


def test_a_foreign_space_id_is_not_found_exactly_like_an_unknown_id(mem: Mnemon) -> None:
    recorder = RecordingMnemos(mem.database)
    mem.spaces.register_provider(recorder)  # replaces the native provider for every view
    alice = mem.scoped(user="alice").spaces
    bob = mem.scoped(user="bob").spaces
    own = alice.create_space("Alice's").space
    theirs = bob.create_space("Bob's").space
    assert own is not None
    assert theirs is not None
    m1 = bob.remember("Bob keeps the deploy key in the vault.", space_id=theirs.id)
    m2 = bob.remember("The vault is unsealed by two people.", space_id=theirs.id)
    recorder.calls.clear()
    unknown = f"space-{uuid.uuid4().hex[:12]}"
    operations: dict[str, Callable[[str], Any]] = {
        "get_space": lambda sid: alice.get_space(sid),
        "update_space": lambda sid: alice.update_space(sid, name="Mine now"),
        "set_active": lambda sid: alice.set_active(sid, False),
        "remember": lambda sid: alice.remember("planted", space_id=sid),
        "remember_many": lambda sid: alice.remember_many([{"content": "x"}], space_id=sid),
        "search": lambda sid: alice.search("deploy key", space_ids=[sid]),
        "asearch": lambda sid: asyncio.run(alice.asearch("deploy key", space_ids=[sid])),
        "related": lambda sid: alice.related(m1.id or "", space_id=sid),
        "link": lambda sid: alice.link(m1.id or "", m2.id or "", space_id=sid),
        "forget": lambda sid: alice.forget(m1.id or "", space_id=sid),
        "browse": lambda sid: alice.browse(sid),
        "entities": lambda sid: alice.entities(sid),
        "graph": lambda sid: alice.graph(sid),
        "merge_from": lambda sid: alice.merge_spaces(own.id, [sid]),
        "merge_into": lambda sid: alice.merge_spaces(sid, [own.id]),
    }
    for name, call in operations.items():
        foreign = _not_found(lambda call=call: call(theirs.id))
        missing = _not_found(lambda call=call: call(unknown))
        assert type(foreign) is type(missing), name
        assert foreign.code == missing.code == "not-found", name
        assert str(foreign).replace(theirs.id, "<id>") == str(missing).replace(unknown, "<id>")
        assert "forbidden" not in str(foreign).lower()
    assert recorder.calls == []  # refused before any provider call
    # bob's space is untouched
    record = bob.get_space(theirs.id)
    assert (record.name, record.active, record.revision) == ("Bob's", True, theirs.revision + 1)
    assert sorted(m.content for m in bob.browse(theirs.id)) == [
        "Bob keeps the deploy key in the vault.",
        "The vault is unsealed by two people.",
    ]


def test_remember_without_a_space_creates_the_users_own_default(mem: Mnemon) -> None:
    alice = mem.scoped(user="alice").spaces
    bob = mem.scoped(user="bob").spaces
    first = alice.remember("Alice prefers metric units.")
    assert first.committed
    assert first.space_id != DEFAULT_SPACE_ID  # "default" stays the local user's id
    assert alice.get_space(first.space_id).owner == "user:alice"
    assert alice.get_space(first.space_id).active
    local = mem.spaces.remember("The office closes at six.")
    assert local.space_id == DEFAULT_SPACE_ID
    assert mem.spaces.get_space(DEFAULT_SPACE_ID).owner is None
    theirs = bob.remember("Bob prefers imperial units.")
    assert theirs.space_id not in (first.space_id, DEFAULT_SPACE_ID)
    # the next remember of each goes to the same (now only active) space of that scope
    assert alice.remember("Alice drinks tea.").space_id == first.space_id
    assert _contents(alice.search("units")) == ["Alice prefers metric units."]
    assert _contents(bob.search("units")) == ["Bob prefers imperial units."]
    assert [s.id for s in mem.spaces.list_spaces()] == [DEFAULT_SPACE_ID]
    _not_found(lambda: alice.get_space(DEFAULT_SPACE_ID))


# ------------------------------------------------------------------ projects


def test_a_shared_space_is_seen_by_the_projects_users_and_no_one_else(mem: Mnemon) -> None:
    alice = mem.scoped(user="alice", project="billing").spaces
    bob = mem.scoped(user="bob", project="billing").spaces
    carol = mem.scoped(user="carol", project="search").spaces
    alice_elsewhere = mem.scoped(user="alice", project="search").spaces
    team = alice.create_space("Billing decisions", shared=True).space
    assert team is not None
    assert team.owner == "project:billing"
    assert alice.remember("Invoices are sent on the 1st.", space_id=team.id).committed
    assert bob.remember("Refunds need a ticket.", space_id=team.id).committed
    assert [s.id for s in bob.list_spaces()] == [team.id]
    assert _contents(bob.search("invoices sent")) == ["Invoices are sent on the 1st."]
    assert _contents(alice.search("refunds ticket")) == ["Refunds need a ticket."]
    for outsider in (carol, alice_elsewhere, mem.spaces):
        assert team.id not in [s.id for s in outsider.list_spaces()]
        assert outsider.search("invoices sent").results == []
        missing = _not_found(lambda outsider=outsider: outsider.browse(team.id))
        assert "no Memory Space" in str(missing)
    # project_memory = user_project: a "shared" space is the user's within the project
    own = mem.spaces.for_scope(Scope(user="alice", project="billing"), per_user=True)
    other = mem.spaces.for_scope(Scope(user="bob", project="billing"), per_user=True)
    private = own.create_space("Alice in billing", shared=True).space
    assert private is not None
    assert private.owner == "project:billing/user:alice"
    assert private.id not in [s.id for s in other.list_spaces()]
    assert private.id not in [s.id for s in bob.list_spaces()]


def test_the_local_scope_keeps_its_spaces_and_never_sees_a_users(mem: Mnemon) -> None:
    assert mem.scoped() is mem
    assert mem.spaces.for_scope(Scope()) is mem.spaces
    local = mem.spaces.create_space("Local notes").space
    assert local is not None
    assert (local.id, local.owner) == (DEFAULT_SPACE_ID, None)
    assert mem.spaces.remember("Standups are at nine.").committed
    alice = mem.scoped(user="alice").spaces
    assert alice.remember("Alice's standup is at ten.").committed
    assert [s.id for s in mem.spaces.list_spaces()] == [DEFAULT_SPACE_ID]
    assert _contents(mem.spaces.search("standup")) == ["Standups are at nine."]
    assert _contents(alice.search("standup")) == ["Alice's standup is at ten."]
    _not_found(lambda: alice.browse(DEFAULT_SPACE_ID))
    # the local user in a named project: the unowned spaces plus the project's
    in_project = mem.scoped(project="billing").spaces
    shared = in_project.create_space("Billing", shared=True).space
    assert shared is not None
    assert shared.owner == "project:billing"
    assert [s.id for s in in_project.list_spaces()] == [DEFAULT_SPACE_ID, shared.id]
    assert shared.id not in [s.id for s in mem.spaces.list_spaces()]
    # discovery maps into the local user's catalog: refused in a user's view
    with pytest.raises(AuthorityError, match="local scope"):
        alice.discover("mnemos")
    assert mem.spaces.discover("mnemos") == []  # alice's space is catalogued, not an orphan


# ------------------------------------------------------------------ migration


def test_a_catalog_from_before_scopes_gains_owners_and_keeps_its_spaces(
    database_url: str, tmp_path: Path
) -> None:
    database = Database(create_engine(database_url), owns_engine=True)
    try:
        database.setup(MIGRATIONS)  # the catalog as a release before scopes left it
        with database.write() as conn:
            conn.execute(
                SPACES.insert().values(
                    id="ops",
                    name="Ops",
                    provider_id="mnemos",
                    active=True,
                    created_at=1.0,
                    updated_at=1.0,
                )
            )
        reader = Database(create_engine(database_url), owns_engine=True, read_only=True)
        try:  # a read-only host reads the old rows as the local user's and alters nothing
            old = MemorySpaces(reader, root=tmp_path, providers=[MnemosProvider(reader)])
            assert [(s.id, s.owner) for s in old.list_spaces()] == [("ops", None)]
            assert old.for_scope(Scope(user="alice")).list_spaces() == []
            old.close()
        finally:
            reader.dispose()
        with database.read() as conn:
            assert "owner" not in {c["name"] for c in sa.inspect(conn).get_columns(SPACES.name)}
        spaces = MemorySpaces(database, root=tmp_path, providers=[MnemosProvider(database)])
        assert [(s.id, s.owner) for s in spaces.list_spaces()] == [("ops", None)]
        with database.read() as conn:
            assert "owner" in {c["name"] for c in sa.inspect(conn).get_columns(SPACES.name)}
            applied = conn.execute(
                sa.select(SCHEMA_VERSION.c.version).where(
                    SCHEMA_VERSION.c.component == "space_owners"
                )
            ).scalars()
            assert list(applied) == [1]
        alice = spaces.for_scope(Scope(user="alice"))
        assert alice.list_spaces() == []
        _not_found(lambda: alice.get_space("ops"))
        assert spaces.remember("Pager duty rotates weekly.", space_id="ops").committed
        spaces.close()
    finally:
        database.dispose()
