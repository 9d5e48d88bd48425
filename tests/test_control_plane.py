"""The control-plane HTTP API: every route, authority, read-only mode, bad input, OpenAPI.

Real storage roots (files + SQLite) through ``Mnemon.open``; requests through httpx's ASGI
transport with a chosen peer address, and once through a real uvicorn server on a socket.
"""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from server_support import free_port, non_loopback_address, uvicorn_in_thread
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from langgraph_mnemon import Mnemon
from langgraph_mnemon.server import set_shared_host
from langgraph_mnemon.server._api import ENDPOINTS
from langgraph_mnemon.server._authority import AuthorityMiddleware
from langgraph_mnemon.server.http import create_app
from langgraph_mnemon.storage.db import redact_url

API = "/mnemon/api"
LOOPBACK = "127.0.0.1"
REMOTE = "10.1.2.3"
TOKEN = "s3cret-bearer-token"


def _open(root: Path, **settings: Any) -> Mnemon:
    settings.setdefault("chroma", {"enabled": False})
    return Mnemon.open(root, **settings)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Mnemon]:
    mem = _open(tmp_path / "m")
    yield mem
    mem.close()


def _client(app: Any, ip: str = LOOPBACK, **headers: str) -> httpx.AsyncClient:
    # The request guard answers only to Hosts the server is (loopback here) and takes changes
    # only as JSON: the client sends a JSON content type even on bodiless POSTs and DELETEs.
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=(ip, 5000)),
        base_url="http://127.0.0.1:8765",
        headers={"Content-Type": "application/json", **headers},
    )


@pytest_asyncio.fixture
async def api(host: Mnemon) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(create_app(host)) as client:
        yield client


def _ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def _error(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    # A kernel refusal (read-only, participation) also carries its decision.
    assert set(body) - {"decision"} == {"error", "message"}, body
    assert "Traceback" not in body["message"]
    if code is not None:
        assert body["error"] == code, body
    return body


# --- happy paths ---------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_status_reports_tiers_switches_and_version(api: httpx.AsyncClient) -> None:
    status = _ok(await api.get(f"{API}/status"))
    assert status["write_enabled"] is True
    assert status["remote_access"] == "read-only"
    assert status["version"]
    assert status["runtime"]["memory"]["used"] == 0
    assert status["documents"]["active"] == 0


@pytest.mark.asyncio
async def test_runtime_add_replace_remove(api: httpx.AsyncClient) -> None:
    receipt = _ok(
        await api.post(
            f"{API}/runtime",
            json={"action": "add", "target": "memory", "content": "Tests run with pytest -q."},
        )
    )
    assert receipt["status"] == "committed"
    _ok(
        await api.post(
            f"{API}/runtime",
            json={
                "action": "add",
                "target": "user",
                "content": "Prefers short answers.",
                "importance": "critical",
            },
        )
    )
    view = _ok(await api.get(f"{API}/runtime"))
    assert view["revision"] == receipt["revision"] or view["revision"]
    assert [e["content"] for e in view["memory"]["entries"]] == ["Tests run with pytest -q."]
    user = view["user"]["entries"][0]
    assert (user["index"], user["importance"]) == (1, "critical")
    assert view["memory"]["used"] == len(b"Tests run with pytest -q.")
    assert view["memory"]["limit"] == 10240

    _ok(
        await api.post(
            f"{API}/runtime",
            json={
                "action": "replace",
                "target": "memory",
                "old_text": "pytest -q",
                "content": "Tests run with pytest -x.",
            },
        )
    )
    _ok(
        await api.post(
            f"{API}/runtime",
            json={"action": "remove", "target": "user", "old_text": "short answers"},
        )
    )
    view = _ok(await api.get(f"{API}/runtime"))
    assert [e["content"] for e in view["memory"]["entries"]] == ["Tests run with pytest -x."]
    assert view["user"]["entries"] == []


@pytest.mark.asyncio
async def test_documents_create_read_search_archive(api: httpx.AsyncClient) -> None:
    created = _ok(
        await api.post(
            f"{API}/documents",
            json={
                "title": "Deploy runbook",
                "content": "Blue-green deploy via make release.",
                "description": "How releases go out",
            },
        )
    )
    assert created["status"] == "committed"
    doc_id = created["document"]["id"]

    listed = _ok(await api.get(f"{API}/documents"))
    assert [d["id"] for d in listed["documents"]] == [doc_id]
    shown = _ok(await api.get(f"{API}/documents/{doc_id}"))
    assert shown["record"]["title"] == "Deploy runbook"
    assert shown["content"] == "Blue-green deploy via make release."
    found = _ok(await api.get(f"{API}/documents/search", params={"q": "release deploy"}))
    assert [h["id"] for h in found["results"]] == [doc_id]

    archived = _ok(await api.post(f"{API}/documents/{doc_id}/archive"))
    assert archived["action"] == "archive"
    assert archived["document"]["status"] == "archived"
    assert _ok(await api.get(f"{API}/documents", params={"status": "active"}))["documents"] == []
    only = _ok(await api.get(f"{API}/documents", params={"status": "archived"}))["documents"]
    assert [d["id"] for d in only] == [doc_id]
    found = _ok(
        await api.get(
            f"{API}/documents/search",
            params={"q": "release", "include_archived": "true", "limit": "2"},
        )
    )
    assert [h["id"] for h in found["results"]] == [doc_id]


@pytest.mark.asyncio
async def test_spaces_remember_browse_entities_graph_recall_forget(
    api: httpx.AsyncClient, host: Mnemon
) -> None:
    created = _ok(await api.post(f"{API}/spaces", json={"name": "Work", "description": "Ops"}))
    space_id = created["space"]["id"]
    assert created["space"]["active"] is False
    activated = _ok(await api.post(f"{API}/spaces/{space_id}/active", json={"active": True}))
    assert activated["space"]["active"] is True
    spaces = _ok(await api.get(f"{API}/spaces"))
    assert (spaces["total"], spaces["active_count"]) == (1, 1)

    ids = []
    for content, entities in [
        ("The staging database is db-stage-2 on port 5433.", ["db-stage-2", "staging"]),
        ("Staging deploys need the VPN profile ops-vpn.", ["staging", "ops-vpn"]),
        ("The release train leaves every Tuesday.", []),
    ]:
        receipt = _ok(
            await api.post(
                f"{API}/spaces/{space_id}/memories",
                json={
                    "content": content,
                    "category": "fact",
                    "importance": 4,
                    "tags": ["ops"],
                    "entities": entities,
                },
            )
        )
        assert receipt["status"] == "committed"
        ids.append(receipt["id"])

    items = _ok(await api.get(f"{API}/spaces/{space_id}/content"))["items"]
    assert {i["id"] for i in items} == set(ids)
    page = _ok(
        await api.get(
            f"{API}/spaces/{space_id}/content", params={"limit": 1, "offset": 1, "category": "fact"}
        )
    )
    assert len(page["items"]) == 1
    entities = _ok(await api.get(f"{API}/spaces/{space_id}/entities"))["entities"]
    assert entities == [
        {"name": "staging", "count": 2},
        {"name": "db-stage-2", "count": 1},
        {"name": "ops-vpn", "count": 1},
    ]
    assert [e.name for e in host.spaces.entities(space_id, limit=2)] == ["staging", "db-stage-2"]
    top = _ok(await api.get(f"{API}/spaces/{space_id}/entities", params={"limit": 1}))
    assert top["entities"] == [{"name": "staging", "count": 2}]
    graph = _ok(await api.get(f"{API}/spaces/{space_id}/graph", params={"limit": 10}))
    assert {n["id"] for n in graph["nodes"]} == set(ids)
    assert "edges" in graph

    recalled = _ok(await api.post(f"{API}/recall", json={"query": "which port does staging use"}))
    assert recalled["results"][0]["id"] == ids[0]
    assert recalled["results"][0]["space_id"] == space_id
    limited = _ok(
        await api.post(
            f"{API}/recall",
            json={"query": "staging", "limit": 1, "space_ids": [space_id], "mode": "keyword"},
        )
    )
    assert len(limited["results"]) == 1

    answer = _ok(await api.post(f"{API}/query", json={"question": "Which port does staging use?"}))
    assert "5433" in answer["answer"]
    assert answer["citations"]
    real = {(space_id, i) for i in ids}
    assert all((c["memory_body_id"], c["id"]) in real for c in answer["citations"])

    forgotten = _ok(await api.delete(f"{API}/spaces/{space_id}/memories/{ids[2]}"))
    assert forgotten["status"] == "committed"
    items = _ok(await api.get(f"{API}/spaces/{space_id}/content"))["items"]
    assert ids[2] not in {i["id"] for i in items}
    _error(await api.delete(f"{API}/spaces/{space_id}/memories/{ids[2]}"), 404, "not-found")
    assert host.spaces.get_space(space_id).active


@pytest.mark.asyncio
async def test_mnemos_tasks_nodes_fatigue_checkpoints_resume(
    api: httpx.AsyncClient, host: Mnemon
) -> None:
    mnemos = host.mnemos
    goal = mnemos.add_node("task-ship", "goal", "Ship the control plane by Friday.")
    mnemos.add_node("task-ship", "constraint", "Never block the event loop.")
    mnemos.add_node("task-ship", "working", "Routes are wired; tests next.", links=[goal.id])
    mnemos.add_node("task-idle", "context", "Nothing checkpointed here.")
    mnemos.fatigue("task-ship")  # one logged reading
    mnemos.checkpoint("task-ship", force=True, git=False)

    tasks = _ok(await api.get(f"{API}/mnemos/tasks"))["tasks"]
    by_id = {t["task_id"]: t for t in tasks}
    assert set(by_id) == {"task-ship", "task-idle"}
    assert by_id["task-ship"]["nodes"]["total"] >= 3
    assert by_id["task-ship"]["checkpoints"] == 1

    nodes = _ok(await api.get(f"{API}/mnemos/tasks/task-ship/nodes"))["nodes"]
    assert {n["type"] for n in nodes} >= {"goal", "constraint", "working"}
    two = _ok(await api.get(f"{API}/mnemos/tasks/task-ship/nodes", params={"limit": 2}))
    assert len(two["nodes"]) == 2

    fatigue = _ok(await api.get(f"{API}/mnemos/tasks/task-ship/fatigue"))
    assert fatigue["current"]["task_id"] == "task-ship"
    assert fatigue["current"]["state"] == "FLOW"
    history_before = len(fatigue["history"])
    assert history_before >= 1
    again = _ok(await api.get(f"{API}/mnemos/tasks/task-ship/fatigue", params={"limit": 50}))
    assert len(again["history"]) == history_before  # reading the fatigue logs nothing

    checkpoints = _ok(await api.get(f"{API}/mnemos/tasks/task-ship/checkpoints"))["checkpoints"]
    assert len(checkpoints) == 1
    assert checkpoints[0]["summary"]["goal"] == "Ship the control plane by Friday."

    resume = _ok(await api.post(f"{API}/mnemos/tasks/task-ship/resume"))
    assert resume["task_id"] == "task-ship"
    assert "Ship the control plane by Friday." in resume["resume"]

    _error(await api.post(f"{API}/mnemos/tasks/task-idle/resume"), 404, "not-found")
    for suffix in ("nodes", "fatigue", "checkpoints"):
        _error(await api.get(f"{API}/mnemos/tasks/no-such-task/{suffix}"), 404, "not-found")
    _error(await api.post(f"{API}/mnemos/tasks/no-such-task/resume"), 404)


@pytest.mark.asyncio
async def test_settings_hide_secrets_and_patch_only_live_switches(tmp_path: Path) -> None:
    mem = _open(
        tmp_path / "m",
        remote_access="trusted-host",
        remote_token=TOKEN,
        embedding={"enabled": False, "api_key": "sk-embedding-secret"},
    )
    try:
        async with _client(create_app(mem)) as api:
            raw = (await api.get(f"{API}/settings")).text
            assert TOKEN not in raw
            assert "sk-embedding-secret" not in raw
            settings = _ok(await api.get(f"{API}/settings"))
            assert settings["remote_token"] == "configured"
            assert settings["embedding"]["api_key"] == "configured"
            assert settings["chroma"]["token"] is None
            live = dict(settings["live"])
            assert live.pop("layers") == settings["layers"]  # the participation switches
            assert live == {
                "recall_mode": "guided",
                "writeback_mode": "guided",
                "routing_guidance": True,
                "idle_review_enabled": True,
            }
            for path in ("status", "spaces", "runtime"):
                assert TOKEN not in (await api.get(f"{API}/{path}")).text

            patched = _ok(
                await api.patch(
                    f"{API}/settings",
                    json={
                        "recall_mode": "off",
                        "idle_review_enabled": False,
                        "routing_guidance": False,
                    },
                )
            )
            assert patched["recall_mode"] == "off"
            assert patched["idle_review"]["enabled"] is False
            assert patched["live"]["idle_review_enabled"] is False
            assert mem.config.recall_mode == "off"
            assert mem.config.idle_review.enabled is False
            assert mem.config.routing_guidance is False
            assert mem.config.writeback_mode == "guided"  # untouched

            body = _error(await api.patch(f"{API}/settings", json={"root": "/elsewhere"}), 422)
            assert "root" in body["message"]
            assert "startup-only" in body["message"]
            body = _error(
                await api.patch(
                    f"{API}/settings", json={"recall_mode": "guided", "write_enabled": False}
                ),
                422,
            )
            assert "write_enabled" in body["message"]
            assert mem.config.recall_mode == "off"  # a refused PATCH changes nothing
            assert mem.config.write_enabled is True
            _error(await api.patch(f"{API}/settings", json={"recall_mode": "loud"}), 422)
            _error(await api.patch(f"{API}/settings", json={"routing_guidance": "yes"}), 422)
    finally:
        mem.close()


def test_url_passwords_are_masked() -> None:
    masked = redact_url("postgresql+psycopg://app:hunter2@db:5432/mnemon")
    assert "hunter2" not in masked
    assert "app" in masked
    assert "db:5432" in masked
    assert redact_url("sqlite:////tmp/x/mnemon.db") == "sqlite:////tmp/x/mnemon.db"


# --- authority -----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_remote_reads_need_a_trusted_host(host: Mnemon) -> None:
    app = create_app(host)
    async with _client(app, REMOTE) as remote:
        _error(await remote.get(f"{API}/status"), 403, "forbidden")
        _error(await remote.get("/mnemon/"), 403, "forbidden")
        _error(await remote.get("/mnemon/openapi.json"), 403, "forbidden")
        _error(await remote.post(f"{API}/recall", json={"query": "x"}), 403, "forbidden")
        spoofed = await remote.get(
            f"{API}/status",
            headers={
                "X-Forwarded-For": LOOPBACK,
                "X-Real-IP": LOOPBACK,
                "Forwarded": f"for={LOOPBACK}",
            },
        )
        _error(spoofed, 403, "forbidden")
    host.config.trusted_hosts = ["127.0.0.0/8", "::1", "10.0.0.0/8"]
    async with _client(app, REMOTE) as remote:
        _ok(await remote.get(f"{API}/status"))
    async with _client(app, "::ffff:127.0.0.1") as mapped:
        _ok(await mapped.get(f"{API}/status"))


@pytest.mark.asyncio
async def test_remote_mutations_are_refused_in_read_only_remote_mode(host: Mnemon) -> None:
    host.config.trusted_hosts = ["127.0.0.0/8", "10.0.0.0/8"]
    async with _client(create_app(host), REMOTE, Authorization=f"Bearer {TOKEN}") as remote:
        _ok(await remote.get(f"{API}/runtime"))  # a trusted host may read
        add = {"action": "add", "target": "memory", "content": "remote write"}
        _error(await remote.post(f"{API}/runtime", json=add), 403, "forbidden")
        spoofed = await remote.post(
            f"{API}/runtime", json=add, headers={"X-Forwarded-For": LOOPBACK}
        )
        _error(spoofed, 403, "forbidden")
        _error(await remote.patch(f"{API}/settings", json={"recall_mode": "off"}), 403)
    assert host.runtime.entries() == []
    assert host.config.recall_mode == "guided"


@pytest.mark.asyncio
async def test_trusted_host_mutations_need_the_bearer_token(tmp_path: Path) -> None:
    mem = _open(
        tmp_path / "m",
        remote_access="trusted-host",
        remote_token=TOKEN,
        trusted_hosts=["127.0.0.0/8", "::1", "10.1.0.0/16"],
    )
    add = {"action": "add", "target": "memory", "content": "written remotely"}
    try:
        app = create_app(mem)
        async with _client(app, REMOTE) as remote:
            missing = await remote.post(f"{API}/runtime", json=add)
            _error(missing, 401, "unauthorized")
            assert missing.headers["www-authenticate"].startswith("Bearer")
            wrong = await remote.post(
                f"{API}/runtime", json=add, headers={"Authorization": "Bearer not-the-token"}
            )
            _error(wrong, 401, "unauthorized")
            basic = await remote.post(
                f"{API}/runtime", json=add, headers={"Authorization": f"Basic {TOKEN}"}
            )
            _error(basic, 401, "unauthorized")
            spoofed = await remote.post(
                f"{API}/runtime", json=add, headers={"X-Forwarded-For": LOOPBACK}
            )
            _error(spoofed, 401, "unauthorized")
            assert mem.runtime.entries() == []
            right = await remote.post(
                f"{API}/runtime", json=add, headers={"Authorization": f"Bearer {TOKEN}"}
            )
            assert _ok(right)["status"] == "committed"
        async with _client(app, "10.9.9.9", Authorization=f"Bearer {TOKEN}") as outsider:
            _error(await outsider.post(f"{API}/runtime", json=add), 403, "forbidden")
            _error(await outsider.get(f"{API}/runtime"), 403, "forbidden")
        async with _client(app) as local:  # loopback needs no token
            _ok(await local.post(f"{API}/runtime", json={**add, "content": "local write"}))
        assert [e.content for e in mem.runtime.entries()] == ["written remotely", "local write"]
    finally:
        mem.close()


@pytest.mark.asyncio
async def test_authority_leaves_other_routes_alone() -> None:
    """Inside LangGraph server the middleware wraps every route; only /mnemon is checked."""

    async def ok(request: Any) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def never(*args: Any) -> Any:
        raise AssertionError("no config needed outside /mnemon")

    inner = Starlette(
        routes=[Route("/threads", ok, methods=["GET", "POST"]), Route("/mnemonic", ok)]
    )
    app = AuthorityMiddleware(inner, config=never, is_mutation=lambda m, p: True, reject=never)
    async with _client(app, REMOTE) as remote:
        assert (await remote.post("/threads")).text == "ok"
        assert (await remote.get("/mnemonic")).text == "ok"


@pytest.mark.asyncio
async def test_write_disabled_refuses_every_mutation_and_changes_no_file(tmp_path: Path) -> None:
    root = tmp_path / "m"
    seed = _open(root)
    seed.runtime.add("memory", "Seeded entry.")
    doc = seed.documents.create("Seed doc", "Seed body.")
    space = seed.spaces.create_space("Seed", active=True).space
    assert space is not None
    memory = seed.spaces.remember("Seeded memory about staging.", space_id=space.id)
    seed.close()

    def files() -> dict[str, str]:
        return {
            str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith("mnemon.db")
        }

    before = files()
    mem = _open(root, write_enabled=False)
    try:
        async with _client(create_app(mem)) as api:
            content_before = _ok(await api.get(f"{API}/spaces/{space.id}/content"))
            mutations = [
                ("POST", f"{API}/runtime", {"action": "add", "target": "memory", "content": "x"}),
                ("POST", f"{API}/documents", {"title": "t", "content": "c"}),
                ("POST", f"{API}/documents/{doc.document.id}/archive", None),
                ("POST", f"{API}/spaces", {"name": "New"}),
                ("POST", f"{API}/spaces/{space.id}/active", {"active": False}),
                ("POST", f"{API}/spaces/{space.id}/memories", {"content": "x"}),
                ("DELETE", f"{API}/spaces/{space.id}/memories/{memory.id}", None),
                ("PATCH", f"{API}/settings", {"recall_mode": "off"}),
            ]
            for method, path, body in mutations:
                response = await api.request(method, path, json=body)
                _error(response, 403, "read-only")
            # reads (including the POST searches that change nothing) still work
            _ok(await api.get(f"{API}/status"))
            assert _ok(await api.post(f"{API}/recall", json={"query": "staging"}))["results"]
            _ok(await api.post(f"{API}/query", json={"question": "staging?"}))
            _ok(await api.get(f"{API}/documents/search", params={"q": "seed"}))
            assert _ok(await api.get(f"{API}/spaces/{space.id}/content")) == content_before
        assert mem.config.recall_mode == "guided"
        assert [e.content for e in mem.runtime.entries()] == ["Seeded entry."]
        assert mem.spaces.get_space(space.id).active is True
    finally:
        mem.close()
    assert files() == before


# --- bad input -----------------------------------------------------------------------------


BAD_REQUESTS: list[tuple[str, str, Any, int]] = [
    ("POST", f"{API}/runtime", b"{not json", 422),
    ("POST", f"{API}/runtime", b"[1, 2]", 422),
    ("POST", f"{API}/runtime", b"", 422),
    ("POST", f"{API}/runtime", {"action": "add", "target": "memory", "content": 5}, 422),
    ("POST", f"{API}/runtime", {"action": "shout", "target": "memory", "content": "x"}, 422),
    (
        "POST",
        f"{API}/runtime",
        {"action": "add", "target": "memory", "content": "x", "branches": ["main"]},
        422,
    ),
    ("POST", f"{API}/runtime", {"action": "add", "target": "memory", "content": "   "}, 422),
    (
        "POST",
        f"{API}/runtime",
        {"action": "remove", "target": "memory", "old_text": "nothing like this"},
        409,
    ),
    ("POST", f"{API}/documents", {"title": "t"}, 422),
    ("POST", f"{API}/documents", {"title": "t", "content": "c", "owner": "me"}, 422),
    (
        "POST",
        f"{API}/documents",
        {"title": "t", "content": "c", "source_paths": ["/etc/passwd"]},
        422,
    ),
    ("GET", f"{API}/documents/not-a-uuid", None, 422),
    ("GET", f"{API}/documents/{uuid.uuid4()}", None, 404),
    ("POST", f"{API}/documents/{uuid.uuid4()}/archive", None, 404),
    ("POST", f"{API}/documents/{uuid.uuid4()}/archive", {"force": True}, 422),
    ("GET", f"{API}/documents?status=deleted", None, 422),
    ("GET", f"{API}/documents/search?q=x&limit=0", None, 422),
    ("GET", f"{API}/documents/search?q=x&limit=many", None, 422),
    ("GET", f"{API}/documents/search?q=x&sort=new", None, 422),
    ("GET", f"{API}/status?verbose=1", None, 422),
    ("POST", f"{API}/spaces", {"name": ""}, 422),
    ("POST", f"{API}/spaces", {"name": "x", "provider_id": "nope"}, 404),
    ("POST", f"{API}/spaces", {"name": "x", "secrets": {"api_key": "k"}}, 422),
    ("POST", f"{API}/spaces/nope/active", {"active": True}, 404),
    ("POST", f"{API}/spaces/nope/active", {"active": "yes"}, 422),
    ("POST", f"{API}/spaces/bad id!/active", {"active": True}, 422),
    ("GET", f"{API}/spaces/nope/content", None, 404),
    ("GET", f"{API}/spaces/nope/entities", None, 404),
    ("GET", f"{API}/spaces/nope/graph", None, 404),
    ("GET", f"{API}/spaces/nope/content?limit=100000", None, 422),
    ("GET", f"{API}/spaces/nope/content?category=gossip", None, 422),
    ("POST", f"{API}/spaces/nope/memories", {"content": "x"}, 404),
    ("POST", f"{API}/spaces/nope/memories", {"content": "x", "importance": "high"}, 422),
    ("DELETE", f"{API}/spaces/nope/memories/abc", None, 404),
    ("POST", f"{API}/recall", {"query": ""}, 422),
    ("POST", f"{API}/recall", {"query": "x" * 2001}, 422),
    ("POST", f"{API}/recall", {"query": "x", "limit": 51}, 422),
    ("POST", f"{API}/recall", {"query": "x", "mode": "psychic"}, 422),
    ("POST", f"{API}/recall", {"query": "x", "space_ids": ["nope"]}, 404),
    ("POST", f"{API}/recall", {"query": "x", "space_ids": "default"}, 422),
    ("POST", f"{API}/query", {"question": ""}, 422),
    ("POST", f"{API}/query", {"question": "   "}, 422),
    ("POST", f"{API}/query", {"question": "x", "space_ids": ["nope"]}, 404),
    ("POST", f"{API}/query", {"query": "x"}, 422),
    ("GET", f"{API}/mnemos/tasks/nope/nodes?limit=-1", None, 422),
    ("GET", f"{API}/mnemos/tasks/nope/fatigue?limit=x", None, 422),
    ("PATCH", f"{API}/settings", b"{", 422),
    ("PATCH", f"{API}/settings", {"nonsense": 1}, 422),
    ("PUT", f"{API}/runtime", None, 405),
    ("GET", f"{API}/no-such-endpoint", None, 404),
    ("GET", "/mnemon/static/%2e%2e/_api.py", None, 404),
    ("GET", "/mnemon/static/", None, 404),
]


@pytest.mark.asyncio
async def test_bad_input_is_a_json_4xx_never_a_500(api: httpx.AsyncClient) -> None:
    for method, path, body, status in BAD_REQUESTS:
        if isinstance(body, bytes):
            response = await api.request(
                method, path, content=body, headers={"Content-Type": "application/json"}
            )
        else:
            response = await api.request(method, path, json=body)
        assert response.status_code == status, (method, path, body, response.text)
        payload = response.json()
        assert set(payload) == {"error", "message"}, (path, payload)
        assert payload["message"]


@pytest.mark.asyncio
async def test_oversize_runtime_entry_is_refused_and_nothing_changes(
    api: httpx.AsyncClient, host: Mnemon
) -> None:
    big = "x" * 9000  # over the 8 KiB per-entry cap
    response = await api.post(
        f"{API}/runtime", json={"action": "add", "target": "memory", "content": big}
    )
    assert response.status_code in (409, 422), response.text
    assert set(response.json()) == {"error", "message"}
    assert host.runtime.entries() == []


@pytest.mark.asyncio
async def test_unexpected_errors_are_a_500_without_traceback(
    host: Mnemon, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> Any:
        raise RuntimeError("disk on fire at /secret/path")

    monkeypatch.setattr(host, "status", broken)
    async with _client(create_app(host)) as api:
        response = await api.get(f"{API}/status")
    body = _error(response, 500, "internal")
    assert "/secret/path" not in body["message"]
    assert "disk on fire" in caplog.text  # logged for the operator


# --- OpenAPI, web page, lazy host --------------------------------------------------------


@pytest.mark.asyncio
async def test_openapi_lists_every_route_with_its_body_schema(api: httpx.AsyncClient) -> None:
    spec = _ok(await api.get("/mnemon/openapi.json"))
    assert spec["openapi"].startswith("3.")
    paths = spec["paths"]
    for endpoint in ENDPOINTS:
        assert endpoint.method.lower() in paths[endpoint.path], endpoint.path
    for path in ("/mnemon/", "/mnemon/static/{path}", "/mnemon/openapi.json"):
        assert "get" in paths[path]
    runtime = paths[f"{API}/runtime"]["post"]["requestBody"]["content"]["application/json"]
    schema = runtime["schema"]
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"action", "target"}
    assert "$ref" not in str(spec)
    recall = paths[f"{API}/recall"]["post"]
    assert recall["requestBody"]["content"]["application/json"]["schema"]["properties"]["limit"]
    params = {p["name"] for p in paths[f"{API}/spaces/{{space_id}}/content"]["get"]["parameters"]}
    assert params == {"space_id", "limit", "offset", "category"}
    settings = paths[f"{API}/settings"]["patch"]["requestBody"]["content"]["application/json"]
    assert set(settings["schema"]["properties"]) == {
        "recall_mode",
        "writeback_mode",
        "routing_guidance",
        "idle_review_enabled",
        "layers",
    }


@pytest.mark.asyncio
async def test_web_page_is_served_once_its_folder_exists(host: Mnemon, tmp_path: Path) -> None:
    web = tmp_path / "web"
    async with _client(create_app(host, web_dir=web)) as api:
        _error(await api.get("/mnemon/"), 404, "not-found")
        web.mkdir()
        (web / "index.html").write_text("<!doctype html><title>Mnemon</title>")
        (web / "app.js").write_text("console.log('mnemon');")
        page = await api.get("/mnemon/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert "<title>Mnemon</title>" in page.text
        assert (await api.get("/mnemon/static/app.js")).status_code == 200
        assert (await api.get("/mnemon/static/index.html")).status_code == 200
        _error(await api.get("/mnemon/static/missing.css"), 404)
        _error(await api.get("/mnemon/static/%2e%2e/%2e%2e/etc/passwd"), 404)
        redirect = await api.get("/mnemon")
        assert redirect.status_code in (307, 308)


@pytest.mark.asyncio
async def test_the_packaged_web_page_is_served(api: httpx.AsyncClient) -> None:
    page = await api.get("/mnemon/")
    assert page.status_code == 200
    assert "static/app.js" in page.text
    script = await api.get("/mnemon/static/app.js")
    assert script.status_code == 200
    assert "javascript" in script.headers["content-type"]


def test_importing_the_module_opens_no_host(tmp_path: Path) -> None:
    root = tmp_path / "never-created"
    code = "import langgraph_mnemon.server.http as h; print(type(h.app).__name__)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "MNEMON_ROOT": str(root),
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        },
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Starlette"
    assert not root.exists()


@pytest.mark.asyncio
async def test_module_app_serves_the_shared_host(host: Mnemon) -> None:
    from langgraph_mnemon.server import http

    set_shared_host(host)
    try:
        host.runtime.add("memory", "Shared host entry.")
        async with _client(http.create_app()) as api:
            view = _ok(await api.get(f"{API}/runtime"))
        assert view["memory"]["entries"][0]["content"] == "Shared host entry."
    finally:
        set_shared_host(None)


@pytest.mark.asyncio
async def test_endpoints_never_block_the_event_loop(host: Mnemon, tmp_path: Path) -> None:
    from blockbuster import BlockingError, blockbuster_ctx

    web = tmp_path / "web"
    web.mkdir()
    (web / "index.html").write_text("<!doctype html>")
    host.spaces.create_space("Loop", active=True)
    async with _client(create_app(host, web_dir=web)) as api:
        await api.get(f"{API}/status")  # warm-up outside detection is not needed, but harmless
        with blockbuster_ctx():
            with pytest.raises(BlockingError):  # detection is live in this thread's loop
                time.sleep(0.01)
            calls = [
                api.get(f"{API}/status"),
                api.post(
                    f"{API}/runtime", json={"action": "add", "target": "memory", "content": "loop"}
                ),
                api.get(f"{API}/runtime"),
                api.post(f"{API}/documents", json={"title": "Loop", "content": "Free."}),
                api.get(f"{API}/documents"),
                api.get(f"{API}/documents/search", params={"q": "loop"}),
                api.get(f"{API}/spaces"),
                api.post(f"{API}/spaces/default/memories", json={"content": "Loops stay free."}),
                api.post(f"{API}/recall", json={"query": "loops"}),
                api.post(f"{API}/query", json={"question": "loops?"}),
                api.get(f"{API}/spaces/default/entities"),
                api.get(f"{API}/mnemos/tasks"),
                api.get(f"{API}/settings"),
                api.get("/mnemon/openapi.json"),
                api.get("/mnemon/"),
            ]
            for call in calls:
                response = await call
                assert response.status_code == 200, response.text


# --- a real server on a socket ---------------------------------------------------------


def test_real_server_on_loopback_and_lan_address(tmp_path: Path) -> None:
    lan = non_loopback_address()
    if lan is None:
        pytest.skip("this machine has no non-loopback IPv4 address to connect from")
    mem = _open(
        tmp_path / "m",
        remote_access="trusted-host",
        remote_token=TOKEN,
        trusted_hosts=["127.0.0.0/8", "::1", f"{lan}/32"],
    )
    try:
        with uvicorn_in_thread(create_app(mem), host="0.0.0.0") as port:
            add = {"action": "add", "target": "memory", "content": "over loopback"}
            with httpx.Client(
                base_url=f"http://127.0.0.1:{port}", trust_env=False, timeout=60
            ) as local:
                assert local.get(f"{API}/status").status_code == 200
                assert local.post(f"{API}/runtime", json=add).json()["status"] == "committed"
            with httpx.Client(
                base_url=f"http://{lan}:{port}", trust_env=False, timeout=60
            ) as remote:
                assert remote.get(f"{API}/status").status_code == 200  # trusted host reads
                denied = remote.post(
                    f"{API}/runtime",
                    json={**add, "content": "no token"},
                    headers={"X-Forwarded-For": LOOPBACK},
                )
                assert denied.status_code == 401, denied.text
                allowed = remote.post(
                    f"{API}/runtime",
                    json={**add, "content": "with token"},
                    headers={"Authorization": f"Bearer {TOKEN}"},
                )
                assert allowed.status_code == 200, allowed.text
                mem.config.trusted_hosts = ["127.0.0.0/8", "::1"]  # trust is read per request
                refused = remote.get(f"{API}/status", headers={"X-Forwarded-For": LOOPBACK})
                assert refused.status_code == 403
                assert refused.json()["error"] == "forbidden"
        assert [e.content for e in mem.runtime.entries()] == ["over loopback", "with token"]
    finally:
        mem.close()


@pytest.mark.asyncio
async def test_a_host_that_cannot_open_is_a_503(monkeypatch: pytest.MonkeyPatch) -> None:
    set_shared_host(None)
    monkeypatch.setenv("MNEMON_TIMEOUT_MS", "5")  # out of range: opening the host fails
    async with _client(create_app()) as api:
        body = _error(await api.get(f"{API}/status"), 503, "host-unavailable")
    assert "MNEMON_" in body["message"]


def test_control_plane_inside_langgraph_dev(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mounted in LangGraph server (which runs blockbuster), every kind of route answers."""
    pytest.importorskip("langgraph_cli")
    from langgraph_mnemon.server import launch

    repo = str(Path(__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", repo)
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        proc = launch.start(tmp_path / "root", port=port, stdout=out, stderr=subprocess.STDOUT)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", trust_env=False, timeout=60) as c:
            deadline = time.monotonic() + 120
            while True:
                assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
                assert time.monotonic() < deadline, "langgraph dev did not start"
                with contextlib.suppress(httpx.HTTPError):
                    if c.get("/ok").status_code == 200:
                        break
                time.sleep(0.5)
            add = {"action": "add", "target": "memory", "content": "Served by LangGraph."}
            assert c.post(f"{API}/runtime", json=add).json()["status"] == "committed"
            assert c.post(f"{API}/spaces", json={"name": "Work"}).status_code == 200
            remembered = c.post(
                f"{API}/spaces/default/memories", json={"content": "LangGraph serves mnemon."}
            )
            assert remembered.json()["status"] == "committed"
            assert c.post(f"{API}/recall", json={"query": "who serves mnemon"}).json()["results"]
            for path in ("status", "runtime", "documents", "spaces", "mnemos/tasks", "settings"):
                assert c.get(f"{API}/{path}").status_code == 200, path
            assert c.get("/mnemon/openapi.json").status_code == 200
            assert c.get("/ok").status_code == 200  # LangGraph's own routes are untouched
            paths = c.get("/openapi.json").json()["paths"]
            assert f"{API}/recall" in paths  # merged into LangGraph server's document
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    text = log.read_text(errors="replace")
    assert "BlockingError" not in text
    assert "Traceback" not in text


@pytest.mark.asyncio
async def test_a_write_the_provider_failed_is_not_a_200(host: Mnemon) -> None:
    from spaces_support import FailingProvider

    host.spaces.register_provider(FailingProvider())
    space = host.spaces.create_space("Broken", provider_id="failing").space
    assert space is not None
    async with _client(create_app(host)) as client:
        response = await client.post(
            f"{API}/spaces/{space.id}/memories", json={"content": "never stored"}
        )
    assert response.status_code == 502, response.text
    assert response.json()["status"] == "failed"  # the receipt is still the whole answer
    assert "connection refused" in response.json()["message"]


@pytest.mark.asyncio
async def test_an_oversized_body_is_refused_before_it_is_read(tmp_path: Path) -> None:
    mem = _open(tmp_path / "small", documents={"body_limit_bytes": 1000})
    try:
        before = sorted(p.name for p in (tmp_path / "small").rglob("*"))
        async with _client(create_app(mem)) as client:
            response = await client.post(
                f"{API}/documents", json={"title": "big", "content": "x" * 100_000}
            )
            chunks = await client.post(
                f"{API}/documents",
                content=_chunks([b'{"title": "big", "content": "', b"x" * 100_000, b'"}']),
                headers={"content-type": "application/json"},
            )
        for refused in (response, chunks):  # declared length, then a chunked upload
            body = _error(refused, 413, "too-large")
            assert "documents.body_limit_bytes" in body["message"]
        assert sorted(p.name for p in (tmp_path / "small").rglob("*")) == before
    finally:
        mem.close()


async def _chunks(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part
