"""Issue 29, item 1: where a Memory Space's data lives is the server's choice.

In process: the control plane (``create_app(mem)`` behind an authentication middleware that
puts an identity and its permissions on the request, as LangGraph server's custom auth does;
``admin`` has ``mnemon:admin``) driven with httpx's ASGI transport, on real storage roots.

* A user who is not an admin cannot name a location: a fact file ``path`` (another user's
  file, a folder outside the root, a future project's ``documents/index.json``), mem0 ids or
  collection, a Chroma collection; nor probe one with a connection test. 403 with the
  kernel-style decision; nothing is created, the other user's data is untouched.
* An admin may point a space into ``providers.allowed_paths`` (and the local operator a
  local space anywhere under the root); without the setting an admin is refused too.
* Spaces stored before the check: a user's space whose stored location is not its own is
  refused on use (browse, remember, search, connection test) before the provider reads
  anything, and reported unreachable by health; resetting the setting makes it usable again.
  Spaces with derived locations, and the local operator's own spaces, keep working.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from auth_support import authed_app

from langgraph_mnemon import Mnemon
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import AuthorityError
from langgraph_mnemon.memory_layers.scopes import scope_folder
from langgraph_mnemon.memory_layers.spaces.schema import SPACES

API = "/mnemon/api"
ALICE_FACT = "Alice's salary review is on 3 March."


def _open(root: Path, **settings: Any) -> Mnemon:
    return Mnemon.open(root, **settings)


def _client(mem: Mnemon, user: str) -> httpx.AsyncClient:
    app = authed_app(mem)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=("127.0.0.1", 5000)),
        base_url="http://127.0.0.1:8765",
        headers={"Content-Type": "application/json", "X-Test-User": user},
    )


def _ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def _refused(response: httpx.Response, mode: str) -> dict[str, Any]:
    assert response.status_code == 403, response.text
    body = response.json()
    assert body["error"] == "storage-location", body
    decision = body["decision"]
    assert decision["layer"] == "memory_spaces"
    assert decision["channel"] == "maintenance"
    assert decision["admitted"] is False
    assert decision["mode"] == mode
    return body


def _space(name: str, provider: str, **config: Any) -> dict[str, Any]:
    return {"name": name, "provider_id": provider, "config": config}


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


@pytest_asyncio.fixture
async def mem(tmp_path: Path) -> AsyncIterator[Mnemon]:
    host = _open(tmp_path / "m", chroma={"enabled": True, "path": tmp_path / "m" / "chroma"})
    try:
        yield host
    finally:
        host.close()


async def _alices_facts(mem: Mnemon) -> tuple[str, Path]:
    async with _client(mem, "alice") as alice:
        space = _ok(await alice.post(f"{API}/spaces", json=_space("Private", "facts")))["space"]
        stored = await alice.post(
            f"{API}/spaces/{space['id']}/memories", json={"content": ALICE_FACT}
        )
        assert _ok(stored)["status"] == "committed"
    path = Path(space["config"]["path"])
    assert path.is_file()
    return space["id"], path


# --- a user names no location ---------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_user_cannot_point_a_fact_space_at_another_users_file(mem: Mnemon) -> None:
    alice_space, alice_file = await _alices_facts(mem)
    before = alice_file.read_bytes()
    async with _client(mem, "bob") as bob:
        body = _refused(
            await bob.post(f"{API}/spaces", json=_space("Mine", "facts", path=str(alice_file))),
            "admin-only",
        )
        assert "mnemon:admin" in body["message"]
        assert "path" in body["message"]
        # A space of his own cannot be re-pointed either, and a probe reads nothing.
        own = _ok(await bob.post(f"{API}/spaces", json=_space("Own", "facts")))["space"]
        change = {"config": {"path": str(alice_file)}}
        _refused(await bob.patch(f"{API}/spaces/{own['id']}", json=change), "admin-only")
        probe = {"config": {"path": str(alice_file)}}
        _refused(await bob.post(f"{API}/providers/facts/test", json=probe), "admin-only")
        listed = _ok(await bob.get(f"{API}/spaces"))["spaces"]
        assert [s["id"] for s in listed] == [own["id"]]
        assert listed[0]["config"]["path"] != str(alice_file)
        assert (await bob.get(f"{API}/spaces/{alice_space}/content")).status_code == 404
    assert alice_file.read_bytes() == before
    assert ALICE_FACT in alice_file.read_text()


@pytest.mark.asyncio
async def test_a_user_cannot_copy_another_spaces_mem0_ids_or_chroma_collection(
    mem: Mnemon,
) -> None:
    if "mem0" not in mem.spaces.providers:
        pytest.skip("mem0ai is not installed")
    async with _client(mem, "alice") as alice:
        mine = _ok(await alice.post(f"{API}/spaces", json=_space("M", "mem0")))["space"]
        kept = _ok(await alice.post(f"{API}/spaces", json=_space("C", "chroma")))["space"]
    ids = mine["config"]
    assert ids["user_id"] == f"mnemon-{mine['id']}"
    async with _client(mem, "bob") as bob:
        for config in (
            {"user_id": ids["user_id"], "collection": ids["collection"]},
            {"user_id": ids["user_id"]},
            {"collection": ids["collection"]},
            {"agent_id": "alice-agent"},
        ):
            _refused(await bob.post(f"{API}/spaces", json=_space("Copy", "mem0", **config)),
                     "admin-only")  # fmt: skip
        collection = kept["config"]["collection"]
        _refused(
            await bob.post(f"{API}/spaces", json=_space("Copy", "chroma", collection=collection)),
            "admin-only",
        )
        assert _ok(await bob.get(f"{API}/spaces"))["spaces"] == []
        own = _ok(await bob.post(f"{API}/spaces", json=_space("Own", "mem0")))["space"]
    assert own["config"]["user_id"] == f"mnemon-{own['id']}"
    assert own["config"]["collection"] != ids["collection"]
    # Nothing reached a store: neither provider has opened anything yet.
    assert not (mem.root / "mem0" / "qdrant").exists()
    assert not (mem.root / "chroma").exists()


@pytest.mark.asyncio
async def test_a_path_outside_the_root_creates_nothing(mem: Mnemon, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "deep"
    config = {"path": str(outside / "facts.json")}
    async with _client(mem, "bob") as bob:
        _refused(await bob.post(f"{API}/spaces", json=_space("Out", "facts", **config)),
                 "admin-only")  # fmt: skip
    async with _client(mem, "admin") as admin:  # an admin needs providers.allowed_paths
        body = _refused(
            await admin.post(f"{API}/spaces", json=_space("Out", "facts", **config)),
            "not-derived",
        )
        assert body["decision"]["setting"] == "providers.allowed_paths"
        assert body["decision"]["env"] == "MNEMON_PROVIDERS__ALLOWED_PATHS"
    with pytest.raises(AuthorityError) as refused:  # the local operator too
        mem.spaces.create_space("Out", provider_id="facts", config=config)
    assert refused.value.decision is not None
    assert refused.value.decision["mode"] == "outside-allowed-paths"
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.asyncio
async def test_a_fact_file_cannot_be_planted_in_a_future_projects_documents(mem: Mnemon) -> None:
    future = mem.root / "scopes" / "projects" / scope_folder("launch-2027")
    config = {"path": str(future / "documents" / "index.json")}
    async with _client(mem, "bob") as bob:
        _refused(await bob.post(f"{API}/spaces", json=_space("Plant", "facts", **config)),
                 "admin-only")  # fmt: skip
    async with _client(mem, "admin") as admin:
        _refused(await admin.post(f"{API}/spaces", json=_space("Plant", "facts", **config)),
                 "not-derived")  # fmt: skip
    assert not future.exists()
    documents = mem.scoped(Scope(user="carol", project="launch-2027")).documents
    created = documents.create("Kickoff", "We launch in 2027.")
    assert created.status == "committed"
    assert [d.title for d in documents.list("active")] == ["Kickoff"]


# --- what an admin (and the operator) may do -------------------------------------------------


@pytest.mark.asyncio
async def test_an_admin_points_a_space_into_an_allowed_folder(tmp_path: Path) -> None:
    shared = tmp_path / "shared-facts"
    host = _open(tmp_path / "m", chroma={"enabled": False},
                 providers={"allowed_paths": [str(shared)]})  # fmt: skip
    try:
        target = shared / "team" / "facts.json"
        config = {"path": str(target)}
        async with _client(host, "admin") as admin:
            made = _ok(await admin.post(f"{API}/spaces", json=_space("Team", "facts", **config)))
            sid = made["space"]["id"]
            assert made["space"]["config"]["path"] == str(target)
            _ok(await admin.post(f"{API}/spaces/{sid}/memories", json={"content": "Shared."}))
            rows = _ok(await admin.get(f"{API}/spaces/{sid}/content"))["items"]
            assert [r["content"] for r in rows] == ["Shared."]
            # Under the root but outside the allowed folders: not for a user's space.
            inside = {"path": str(host.root / "facts" / "chosen.json")}
            _refused(await admin.post(f"{API}/spaces", json=_space("In", "facts", **inside)),
                     "not-derived")  # fmt: skip
        assert target.is_file()
        async with _client(host, "bob") as bob:  # the folder is the admin's to use
            other = {"path": str(shared / "bob.json")}
            _refused(await bob.post(f"{API}/spaces", json=_space("B", "facts", **other)),
                     "admin-only")  # fmt: skip
        assert not (shared / "bob.json").exists()
        # The local operator's own spaces may live anywhere under the root.
        local = host.spaces.create_space("Local", provider_id="facts", config=inside)
        assert local.space is not None
        assert local.space.config["path"] == inside["path"]
    finally:
        host.close()


# --- spaces stored before the check ----------------------------------------------------------


def _store_config(mem: Mnemon, space_id: str, config: dict[str, Any]) -> None:
    """What an older release let a user store (written straight into the catalog)."""
    with mem.database.write() as conn:
        conn.execute(SPACES.update().where(SPACES.c.id == space_id).values(config=config))


@pytest.mark.asyncio
async def test_a_stored_foreign_location_is_refused_on_use_and_reported(mem: Mnemon) -> None:
    alice_space, alice_file = await _alices_facts(mem)
    before = alice_file.read_bytes()
    async with _client(mem, "bob") as bob:
        legacy = _ok(await bob.post(f"{API}/spaces", json=_space("Old", "facts")))["space"]
        fine = _ok(await bob.post(f"{API}/spaces", json=_space("Fine", "facts")))["space"]
        _ok(await bob.post(f"{API}/spaces/{fine['id']}/memories", json={"content": "Bob's."}))
        _store_config(mem, legacy["id"], {"path": str(alice_file)})
        sid = legacy["id"]

        browse = await bob.get(f"{API}/spaces/{sid}/content")
        body = _refused(browse, "not-derived")
        assert ALICE_FACT not in browse.text
        assert "nothing was read" in body["message"]
        write = await bob.post(f"{API}/spaces/{sid}/memories", json={"content": "Overwrite."})
        _refused(write, "not-derived")
        _refused(await bob.post(f"{API}/spaces/{sid}/test", json={}), "not-derived")
        asked = {"query": "salary review", "space_ids": [sid, fine["id"]]}
        recall = _ok(await bob.post(f"{API}/recall", json=asked))
        assert ALICE_FACT not in str(recall)
        hints = {s["space_id"]: s for s in recall["sources"]}
        assert hints[sid]["status"] == "unavailable"
        # A space with its own location keeps working.
        rows = _ok(await bob.get(f"{API}/spaces/{fine['id']}/content"))["items"]
        assert [r["content"] for r in rows] == ["Bob's."]

    health = mem.scoped(Scope(user="bob")).spaces.health(max_age=0)
    assert sid in health.unreachable
    assert fine["id"] not in health.unreachable
    reason = next(s.reason for s in health.spaces if s.space_id == sid)
    assert reason is not None
    assert "not its own" in reason
    assert alice_file.read_bytes() == before

    async with _client(mem, "bob") as bob:  # resetting the location makes it usable again
        reset = _ok(await bob.patch(f"{API}/spaces/{sid}", json={"config": {"path": None}}))
        assert reset["space"]["config"]["path"] != str(alice_file)
        _ok(await bob.post(f"{API}/spaces/{sid}/memories", json={"content": "Fresh start."}))
        rows = _ok(await bob.get(f"{API}/spaces/{sid}/content"))["items"]
        assert [r["content"] for r in rows] == ["Fresh start."]
    assert alice_file.read_bytes() == before
    async with _client(mem, "alice") as alice:
        rows = _ok(await alice.get(f"{API}/spaces/{alice_space}/content"))["items"]
        assert [r["content"] for r in rows] == [ALICE_FACT]


@pytest.mark.asyncio
async def test_stored_mem0_ids_of_another_space_are_refused_on_use(mem: Mnemon) -> None:
    if "mem0" not in mem.spaces.providers:
        pytest.skip("mem0ai is not installed")
    bob = mem.spaces.for_scope(Scope(user="bob"))
    space = (await bob.acreate_space("Old", provider_id="mem0")).space
    assert space is not None
    _store_config(mem, space.id, {"user_id": "mnemon-alices-space", "collection": "mnemon"})
    with pytest.raises(AuthorityError) as refused:
        await bob.abrowse(space.id)
    assert refused.value.code == "storage-location"
    assert not (mem.root / "mem0" / "qdrant").exists()  # mem0 was never opened


@pytest.mark.asyncio
async def test_allowed_folders_and_the_operators_spaces_keep_working_on_use(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    host = _open(tmp_path / "m", chroma={"enabled": False},
                 providers={"allowed_paths": [str(shared)]})  # fmt: skip
    try:
        bob = host.spaces.for_scope(Scope(user="bob"))
        space = (await bob.acreate_space("Old", provider_id="facts")).space
        assert space is not None
        _store_config(host, space.id, {"path": str(shared / "bob.json")})
        assert (await bob.aremember("Kept.", space_id=space.id)).status == "committed"
        assert [r.content for r in await bob.abrowse(space.id)] == ["Kept."]
        # The operator's own space (no owner) set up outside the root before: still used.
        local = (await host.spaces.acreate_space("Local", provider_id="facts")).space
        assert local is not None
        _store_config(host, local.id, {"path": str(tmp_path / "legacy" / "local.json")})
        assert (await host.spaces.aremember("Operator's.", space_id=local.id)).committed
        assert (tmp_path / "legacy" / "local.json").is_file()
        assert host.spaces.health(max_age=0).unreachable == []
    finally:
        host.close()
