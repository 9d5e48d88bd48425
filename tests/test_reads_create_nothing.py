"""Reads create nothing (issue 29, item 6): disk use grows only with writes.

Finding: 800 control-plane GETs with distinct project ids created 800 folders (8,822 files and
folders). Now a read in a scope with no data answers empty and creates no folder, file or row,
through the Python API, the control plane and a turn's begin alike; the first write of a scope
creates its folders (below the root, never through a link) and the next read sees it.

Each test snapshots the whole root (every path and size) and the row count of every table, on
SQLite and on PostgreSQL, before and after the reads.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from langgraph_mnemon import Mnemon
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import NoMatchError, NotFoundError, StorageError
from langgraph_mnemon.memory_layers.scopes import scope_folder
from langgraph_mnemon.memory_layers.turns import TurnScope
from langgraph_mnemon.server.http import create_app

API = "/mnemon/api"
MISSING_DOCUMENT = "00000000-0000-4000-8000-000000000000"


# --- what the storage holds -------------------------------------------------------------------


def _tree(root: Path) -> dict[str, int]:
    """Every path under ``root`` with its size (-1 for a folder), links not followed."""
    found: dict[str, int] = {}
    for folder, names, files in os.walk(root):
        for name in (*names, *files):
            path = Path(folder) / name
            st = path.lstat()
            found[str(path.relative_to(root))] = -1 if path.is_dir() else st.st_size
    return found


def _sqlite_rows(path: Path) -> dict[str, int]:
    """The row count of every table of a SQLite file, read without writing to it."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: con.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}
    finally:
        con.close()


def _sql_rows(url: str) -> dict[str, int]:
    """The row count of every table in the schema ``url`` works in."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as con:
            names = sa.inspect(con).get_table_names()
            return {
                n: con.execute(sa.text(f'SELECT count(*) FROM "{n}"')).scalar_one() for n in names
            }
    finally:
        engine.dispose()


def _open(root: Path, **settings: Any) -> Mnemon:
    settings.setdefault("chroma", {"enabled": False})
    return Mnemon.open(root, **settings)


def _with_local_data(mem: Mnemon) -> Mnemon:
    """Writes of the local scope: the database and its tables exist before the reads."""
    mem.runtime.add("memory", "Deploys go through CI.")
    mem.documents.create("Runbook", "Restart the service with systemctl.")
    mem.spaces.remember("The staging database listens on port 5433.")
    return mem


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Mnemon]:
    host = _with_local_data(_open(tmp_path / "root"))
    yield host
    host.close()


# --- reads ------------------------------------------------------------------------------------


def _fresh_scopes(count: int) -> list[Scope]:
    """Scopes of users and projects nobody wrote to: user only, project only, and both."""
    tag = uuid.uuid4().hex[:6]
    scopes = []
    for i in range(count):
        user = f"reader-{tag}-{i}" if i % 3 != 1 else None
        project = f"project-{tag}-{i}" if i % 3 != 0 else None
        scopes.append(Scope(user=user or "local", project=project or "local"))
    return scopes


def _python_reads(mem: Mnemon, scope: Scope) -> None:
    """Every read the Python API offers a scope, and a turn's begin and end."""
    view = mem.scoped(scope)
    runtime = view.runtime
    assert runtime.entries() == []
    assert runtime.snapshot().revision == runtime.revision
    assert runtime.usage("memory").used == 0
    assert runtime.archived("user") == []
    assert runtime.search("deploys CI") == []
    documents = view.documents
    assert documents.list("all") == []
    assert not documents.search("restart service").results
    assert documents.usage().used == 0
    with pytest.raises(NotFoundError):
        documents.get(MISSING_DOCUMENT)
    spaces = view.spaces
    # The local user sees the spaces from before scopes (no owner); nobody owns one here yet.
    assert all(s.owner is None for s in spaces.list_spaces())
    spaces.search("which port does staging use?")
    with pytest.raises(NotFoundError):
        spaces.browse("nowhere")
    assert view.status().runtime.memory_entries == 0
    assert mem.mnemos.tasks(owner=scope.user_key) == []
    start = mem.turns.begin(TurnScope(thread_id=f"t-{uuid.uuid4().hex}", memory_scope=scope))
    assert "Deploys go through CI" not in start.wake.text
    mem.turns.end(start.turn_id)


def _client(mem: Mnemon) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(mem), client=("127.0.0.1", 5000)),
        base_url="http://127.0.0.1:8765",
        headers={"Content-Type": "application/json"},
    )


async def _http_reads(api: httpx.AsyncClient, project: str, user: str | None = None) -> None:
    """Every control-plane read of one project (as the local user, or as a picked ``user``)."""
    params = {"project": project}
    headers = {"X-Mnemon-User": user} if user else {}
    for path in (
        "/status",
        "/runtime",
        "/documents",
        "/documents/search?q=restart",
        "/spaces",
        "/mnemos/tasks",
        "/providers",
    ):
        answer = await api.get(f"{API}{path}", params=params, headers=headers)
        assert answer.status_code == 200, (path, answer.text)
    for path in (f"/documents/{MISSING_DOCUMENT}", "/spaces/nowhere/content"):
        answer = await api.get(f"{API}{path}", params=params, headers=headers)
        assert answer.status_code == 404, (path, answer.text)
    recall = await api.post(
        f"{API}/recall", params=params, headers=headers, json={"query": "staging port"}
    )
    assert recall.status_code == 200, recall.text


def _http_session(mem: Mnemon, projects: list[str]) -> None:
    async def run() -> None:
        async with _client(mem) as api:
            for i, project in enumerate(projects):
                await _http_reads(api, project, user=f"picked-{project}" if i % 2 else None)

    asyncio.run(run())


def _under(paths: set[str], *folders: str) -> set[str]:
    """The paths that lie in one of the scope ``folders`` (names from :func:`scope_folder`)."""
    return {p for p in paths if any(part in folders for part in Path(p).parts)}


# --- SQLite and files -------------------------------------------------------------------------


def test_reads_of_fresh_scopes_create_no_file_and_no_row(mem: Mnemon) -> None:
    root, db = mem.root, mem.root / "mnemon.db"
    before, rows = _tree(root), _sqlite_rows(db)
    for scope in _fresh_scopes(30):
        _python_reads(mem, scope)
    assert _tree(root) == before
    assert _sqlite_rows(db) == rows
    assert not (root / "scopes").exists()


def test_control_plane_reads_of_fifty_projects_create_nothing(mem: Mnemon) -> None:
    root, db = mem.root, mem.root / "mnemon.db"
    projects = [f"cp-{uuid.uuid4().hex[:8]}-{i}" for i in range(60)]
    before, rows = _tree(root), _sqlite_rows(db)
    _http_session(mem, projects)
    assert _tree(root) == before
    assert _sqlite_rows(db) == rows


def test_the_first_write_creates_the_scope_and_the_next_read_sees_it(mem: Mnemon) -> None:
    root = mem.root
    project, other = f"w-{uuid.uuid4().hex[:8]}", f"r-{uuid.uuid4().hex[:8]}"
    _http_session(mem, [project, other])
    before = _tree(root)

    async def run() -> dict[str, Any]:
        async with _client(mem) as api:
            entry = {"action": "add", "target": "memory", "content": "Billing ships on Fridays."}
            written = await api.post(f"{API}/runtime", params={"project": project}, json=entry)
            assert written.json()["status"] == "committed", written.text
            doc = {"title": "Billing ADR", "content": "Invoices are immutable."}
            created = await api.post(f"{API}/documents", params={"project": project}, json=doc)
            assert created.json()["status"] == "committed", created.text
            await _http_reads(api, other)  # a read elsewhere still creates nothing
            runtime = await api.get(f"{API}/runtime", params={"project": project})
            documents = await api.get(f"{API}/documents", params={"project": project})
            return {"runtime": runtime.json(), "documents": documents.json()}

    seen = asyncio.run(run())
    assert [e["content"] for e in seen["runtime"]["memory"]["entries"]] == [
        "Billing ships on Fridays."
    ]
    assert [d["title"] for d in seen["documents"]["documents"]] == ["Billing ADR"]
    created = set(_tree(root)) - set(before)
    folder = root / "scopes" / "projects" / scope_folder(project)
    assert (folder / "runtime" / "memories.json").is_file()
    assert (folder / "documents" / "index.json").is_file()
    assert created - _under(created, scope_folder(project)) <= {"scopes", "scopes/projects"}
    assert not _under(created, scope_folder(other))


def test_a_scope_written_in_python_reads_back_and_its_neighbours_stay_absent(
    mem: Mnemon,
) -> None:
    alice, bob = Scope(user="alice", project="billing"), Scope(user="bob", project="billing")
    _python_reads(mem, alice)
    mem.scoped(alice).runtime.add("user", "Alice prefers metric units.")
    users = mem.root / "scopes" / "users"
    assert (users / scope_folder("alice") / "runtime" / "USER.md").is_file()
    assert not (mem.root / "scopes" / "projects").exists()  # only USER was written
    before = _tree(mem.root)
    _python_reads(mem, bob)  # Bob's USER and the project's MEMORY: still nothing to read
    assert _tree(mem.root) == before
    assert [e.content for e in mem.scoped(alice).runtime.entries("user")] == [
        "Alice prefers metric units."
    ]


def test_a_remove_in_a_fresh_scope_matches_nothing_and_creates_nothing(mem: Mnemon) -> None:
    before = _tree(mem.root)
    view = mem.scoped(user="nina", project="empty")
    for change in (
        lambda: view.runtime.remove("memory", "Deploys"),
        lambda: view.runtime.replace("user", "tea", "Prefers coffee."),
    ):
        with pytest.raises(NoMatchError):
            change()

    async def run() -> httpx.Response:
        async with _client(mem) as api:
            entry = {"action": "remove", "target": "memory", "old_text": "Deploys"}
            return await api.post(f"{API}/runtime", params={"project": "empty-too"}, json=entry)

    answer = asyncio.run(run())
    assert answer.status_code == 409, answer.text  # no entry matches (nothing to remove)
    assert answer.json()["error"] == "no-match"
    assert _tree(mem.root) == before


def test_an_unwritten_fact_file_space_is_read_without_creating_its_file(mem: Mnemon) -> None:
    owner = mem.scoped(user="carol", project="facts-team")
    space = owner.spaces.create_space("Team facts", provider_id="facts", shared=True).space
    before, rows = _tree(mem.root), _sqlite_rows(mem.root / "mnemon.db")
    for user in ("dave", "erin", "carol"):
        view = mem.scoped(user=user, project="facts-team")
        assert view.spaces.browse(space.id) == []
        assert not view.spaces.search("anything", space_ids=[space.id]).results
        assert view.spaces.graph(space.id).nodes == []
        view.status()
    assert _tree(mem.root) == before
    assert _sqlite_rows(mem.root / "mnemon.db") == rows
    owner.spaces.remember("The team meets on Mondays.", space_id=space.id)
    assert set(_tree(mem.root)) - set(before)  # the first write creates the fact file


def test_the_first_write_never_creates_a_folder_through_a_link(tmp_path: Path) -> None:
    mem = _open(tmp_path / "root")
    view = mem.scoped(user="mallory", project="linked")  # opened before the link appears
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (mem.root / "scopes").symlink_to(elsewhere)
    for write in (
        lambda: view.runtime.add("memory", "Never through a link."),
        lambda: view.documents.create("Linked", "Never through a link."),
    ):
        with pytest.raises(StorageError) as caught:
            write()
        assert caught.value.code == "symlink-refused"
    assert list(elsewhere.iterdir()) == []
    mem.close()


# --- PostgreSQL -------------------------------------------------------------------------------


def test_reads_on_postgres_create_no_row_and_no_file(tmp_path: Path, postgres_url: str) -> None:
    mem = _with_local_data(_open(tmp_path / "root", database_url=postgres_url))
    try:
        before, rows = _tree(mem.root), _sql_rows(postgres_url)
        for scope in _fresh_scopes(12):
            _python_reads(mem, scope)
        _http_session(mem, [f"pg-{uuid.uuid4().hex[:8]}-{i}" for i in range(50)])
        assert _sql_rows(postgres_url) == rows
        assert _tree(mem.root) == before
        view = mem.scoped(user="alice", project="pg-billing")
        view.runtime.add("memory", "Billing ships on Fridays.")
        after = _sql_rows(postgres_url)
        assert after["mnemon_runtime_entries"] == rows["mnemon_runtime_entries"] + 1
        assert [e.content for e in view.runtime.entries("memory")] == ["Billing ships on Fridays."]
        assert _tree(mem.root) == before  # the layers live in the database: no file at all
    finally:
        mem.close()


# --- the served deployment --------------------------------------------------------------------


def test_many_users_6_a_hundred_reads_of_new_projects_create_no_folder(many_users: Any) -> None:
    scopes = many_users.root / "scopes"

    def memory_files() -> set[str]:
        return set(_tree(scopes)) if scopes.exists() else set()

    tag = uuid.uuid4().hex[:8]
    projects = [f"served-{tag}-{i}" for i in range(100)]
    paths = ("/runtime", "/documents", "/spaces", "/status", "/mnemos/tasks")
    before = memory_files()
    for i, project in enumerate(projects):
        answer = many_users.api("admin", "GET", paths[i % len(paths)], params={"project": project})
        assert answer.status_code == 200, answer.text
    mine = {scope_folder(p) for p in projects}
    created = memory_files() - before
    # Other tests' idle reviews may still write their own scopes: none of these ids may appear.
    assert not _under(created, *mine)
    entry = {"action": "add", "target": "memory", "content": "Served projects grow on write."}
    written = many_users.api(
        "admin", "POST", "/runtime", params={"project": projects[0]}, json=entry
    )
    assert written.json()["status"] == "committed", written.text
    assert _under(memory_files() - before, scope_folder(projects[0]))
