"""A served deployment per user and project: the control plane, the served graphs, the store,
idle reviews and two server replicas, each in the caller's scope.

In process (httpx's ASGI transport with a chosen peer): the control plane resolves the user
from a token in ``scopes.user_tokens`` or from the identity an authentication middleware put on
the request (as LangGraph server's does), the project from ``project`` / ``X-Mnemon-Project``,
and answers an id of another scope with the same 404 as an unknown one.

Served (``langgraph dev`` subprocesses driven with ``langgraph_sdk``): one server with the
example custom auth (``examples/auth.py``, two tokens), one without auth (users by
``user_id``), and two replicas on one PostgreSQL schema.
"""

from __future__ import annotations

import json
import logging
import os
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
from auth_support import authed_app
from langgraph_sdk import get_sync_client
from server_support import Served, http, serve

from langgraph_mnemon import Mnemon
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.reviews._server import review_config
from langgraph_mnemon.server.http import create_app
from langgraph_mnemon.server.launch import langgraph_config

API = "/mnemon/api"
LOOPBACK = "127.0.0.1"
REMOTE = "10.1.2.3"
ALICE, BOB = "alice-token-1", "bob-token-2"
REPO = Path(__file__).parents[1]
EXAMPLE_AUTH = REPO / "examples" / "auth.py"
DEMO_ALICE, DEMO_BOB = "alice-demo-token", "bob-demo-token"  # examples/auth.py

pytestmark = pytest.mark.timeout(300)


def _open(root: Path, **settings: Any) -> Mnemon:
    settings.setdefault("chroma", {"enabled": False})
    return Mnemon.open(root, **settings)


def _client(app: Any, ip: str = LOOPBACK, **headers: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=(ip, 5000)),
        base_url="http://127.0.0.1:8765",
        headers={"Content-Type": "application/json", **headers},
    )


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code, body
    return body


def _add(target: str, content: str) -> dict[str, str]:
    return {"action": "add", "target": target, "content": content}


def _contents(view: dict[str, Any], target: str) -> list[str]:
    return [e["content"] for e in view[target]["entries"]]


@pytest.fixture
def tokened(tmp_path: Path) -> Iterator[Mnemon]:
    grants = {"alice": ["alpha"], "bob": ["beta"]}  # under auth a named project needs a grant
    mem = _open(
        tmp_path / "m",
        scopes={"user_tokens": {"alice": ALICE, "bob": BOB}, "project_grants": grants},
    )
    yield mem
    mem.close()


@pytest_asyncio.fixture
async def clients(tokened: Mnemon) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    app = create_app(tokened)
    async with (
        _client(app, **_bearer(ALICE)) as alice,
        _client(app, **_bearer(BOB)) as bob,
        _client(app) as local,
    ):
        yield {"alice": alice, "bob": bob, "local": local}


# --- the control plane in process ------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_user_token_runs_every_request_in_that_users_scope(
    tokened: Mnemon, clients: dict[str, httpx.AsyncClient]
) -> None:
    alice, bob, local = clients["alice"], clients["bob"], clients["local"]
    assert (
        _ok(await alice.post(f"{API}/runtime", json=_add("user", "Alice is vegetarian.")))["status"]
        == "committed"
    )
    status = _ok(await alice.get(f"{API}/status"))
    assert status["scope"] == {
        "user": "alice",
        "project": "local",
        "via": "token",
        "admin": False,
        "projects": ["alpha"],
    }
    assert status["root"] is None  # a user is shown their scope, never where the host keeps data
    assert status["authentication"] == "tokens"
    assert status["scope_pick"] is False
    assert status["runtime"]["user_entries"] == 1
    assert _contents(_ok(await alice.get(f"{API}/runtime")), "user") == ["Alice is vegetarian."]
    # Bob and the local user never see Alice's USER entries, by any read.
    assert _contents(_ok(await bob.get(f"{API}/runtime")), "user") == []
    assert _ok(await bob.get(f"{API}/status"))["runtime"]["user_entries"] == 0
    assert _contents(_ok(await local.get(f"{API}/runtime")), "user") == []
    assert tokened.runtime.entries("user") == []
    assert [e.content for e in tokened.scoped(user="alice").runtime.entries("user")] == [
        "Alice is vegetarian."
    ]


@pytest.mark.asyncio
async def test_documents_and_spaces_of_another_project_are_not_found(
    clients: dict[str, httpx.AsyncClient],
) -> None:
    alice, bob = clients["alice"], clients["bob"]
    doc = {"title": "Alpha runbook", "content": "Restart the alpha queue with make restart."}
    created = _ok(await alice.post(f"{API}/documents?project=alpha", json=doc))
    doc_id = created["document"]["id"]
    space = _ok(await alice.post(f"{API}/spaces?project=alpha", json={"name": "Alpha notes"}))
    space_id = space["space"]["id"]
    memory = {"content": "The alpha queue drains at midnight."}
    _ok(await alice.post(f"{API}/spaces/{space_id}/memories?project=alpha", json=memory))
    # In alpha, Alice finds them all.
    listed = _ok(await alice.get(f"{API}/documents", headers={"X-Mnemon-Project": "alpha"}))
    assert [d["id"] for d in listed["documents"]] == [doc_id]
    found = _ok(await alice.get(f"{API}/documents/search?q=alpha+queue&project=alpha"))
    assert [r["id"] for r in found["results"]][:1] == [doc_id]
    assert space_id in [s["id"] for s in _ok(await alice.get(f"{API}/spaces"))["spaces"]]
    # Bob (another user, another project) finds none of them; their ids are unknown ids.
    assert _ok(await bob.get(f"{API}/documents?project=beta"))["documents"] == []
    assert _ok(await bob.get(f"{API}/documents/search?q=alpha+queue&project=beta"))["results"] == []
    assert space_id not in [s["id"] for s in _ok(await bob.get(f"{API}/spaces"))["spaces"]]
    never = str(uuid.uuid4())
    unknown_doc = _error(await bob.get(f"{API}/documents/{never}"), 404, "not-found")
    foreign_doc = _error(await bob.get(f"{API}/documents/{doc_id}?project=beta"), 404, "not-found")
    assert foreign_doc["message"] == unknown_doc["message"].replace(never, doc_id)
    never_space = "space-" + "0" * 12
    for tail in ("content", "graph", "entities"):
        unknown = _error(await bob.get(f"{API}/spaces/{never_space}/{tail}"), 404, "not-found")
        foreign = _error(await bob.get(f"{API}/spaces/{space_id}/{tail}"), 404, "not-found")
        assert foreign["message"] == unknown["message"].replace(never_space, space_id)
    recall = _ok(await bob.post(f"{API}/recall", json={"query": "alpha queue midnight"}))
    assert not [r for r in recall["results"] if "alpha queue" in r["content"]]
    # The same user in another project: the project's Documents are the project's.
    assert _ok(await alice.get(f"{API}/documents"))["documents"] == []


@pytest.mark.asyncio
async def test_a_header_naming_another_user_is_refused_unless_picked_on_loopback(
    tokened: Mnemon, tmp_path: Path
) -> None:
    app = create_app(tokened)
    async with _client(app, **_bearer(ALICE), **{"X-Mnemon-User": "bob"}) as spoof:
        _error(await spoof.get(f"{API}/runtime"), 403, "scope-mismatch")
    async with _client(app, **{"X-Mnemon-User": "carol"}) as local:  # tokens are configured
        _error(await local.get(f"{API}/runtime"), 403, "scope-mismatch")
    async with _client(app, **_bearer(ALICE), **{"X-Mnemon-User": "alice"}) as same:
        _ok(await same.get(f"{API}/runtime"))
    plain = _open(tmp_path / "plain", trusted_hosts=["127.0.0.0/8", "::1", "10.0.0.0/8"])
    try:
        open_app = create_app(plain)
        async with _client(open_app, REMOTE, **{"X-Mnemon-User": "carol"}) as remote:
            _error(await remote.get(f"{API}/runtime"), 403, "scope-mismatch")
        # A person on loopback, no authentication configured: the page may pick a scope.
        picked = {"X-Mnemon-User": "car%C3%B6l", "X-Mnemon-Project": "site"}
        async with _client(open_app, **picked) as person:
            status = _ok(await person.get(f"{API}/status"))
            assert status["scope"] == {
                "user": "caröl",
                "project": "site",
                "via": "picked",
                "admin": True,
                "projects": ["*"],
            }
            assert status["scope_pick"] is True
            _ok(await person.post(f"{API}/runtime", json=_add("memory", "Site runs on Debian.")))
        entries = plain.scoped(user="caröl", project="site").runtime.entries("memory")
        assert [e.content for e in entries] == ["Site runs on Debian."]
        assert plain.runtime.entries("memory") == []
    finally:
        plain.close()


@pytest.mark.asyncio
async def test_a_remote_change_with_a_user_token_runs_as_that_user(tmp_path: Path) -> None:
    mem = _open(
        tmp_path / "m",
        remote_access="trusted-host",
        remote_token="operator-token",
        trusted_hosts=["127.0.0.0/8", "::1", "10.1.0.0/16"],
        scopes={"user_tokens": {"alice": ALICE}},
    )
    try:
        app = create_app(mem)
        add = _add("user", "Alice works remotely.")
        async with _client(app, REMOTE, **_bearer(ALICE)) as alice:
            assert _ok(await alice.post(f"{API}/runtime", json=add))["status"] == "committed"
        async with _client(app, REMOTE, **_bearer("forged")) as forged:
            _error(await forged.post(f"{API}/runtime", json=add), 401, "unauthorized")
        async with _client(app, REMOTE, **_bearer("operator-token")) as operator:
            assert _ok(await operator.get(f"{API}/status"))["scope"]["via"] == "local"
        assert [e.content for e in mem.scoped(user="alice").runtime.entries("user")] == [
            "Alice works remotely."
        ]
        assert mem.runtime.entries("user") == []
    finally:
        mem.close()


@pytest.mark.asyncio
async def test_project_parameter_and_header_must_agree_and_be_valid_ids(
    clients: dict[str, httpx.AsyncClient],
) -> None:
    alice = clients["alice"]
    both = await alice.get(f"{API}/runtime?project=a", headers={"X-Mnemon-Project": "b"})
    _error(both, 422, "invalid-input")
    _error(await alice.get(f"{API}/runtime?project={'x' * 201}"), 422, "invalid-input")
    _error(
        await alice.get(f"{API}/status", headers={"X-Mnemon-Project": "%FF"}), 422, "invalid-input"
    )
    assert _ok(await alice.get(f"{API}/status?project=alpha"))["scope"]["project"] == "alpha"
    # A project Alice is not granted answers as one that does not exist.
    _error(await alice.get(f"{API}/status?project=beta"), 404, "not-found")


@pytest.mark.asyncio
async def test_tasks_are_listed_and_read_for_their_owner_only(
    tokened: Mnemon, clients: dict[str, httpx.AsyncClient]
) -> None:
    mnemos = tokened.mnemos
    for task, goal in (("t-alice", "Alice ships"), ("t-bob", "Bob ships"), ("t-local", "Ship")):
        mnemos.add_node(task, "goal", goal)
    mnemos.claim_task("t-alice", Scope(user="alice").user_key)
    mnemos.claim_task("t-bob", Scope(user="bob").user_key)

    def listed(body: dict[str, Any]) -> list[tuple[str, str | None]]:
        return [(t["task_id"], t["goal"]) for t in body["tasks"]]

    alice, bob, local = clients["alice"], clients["bob"], clients["local"]
    assert listed(_ok(await alice.get(f"{API}/mnemos/tasks"))) == [("t-alice", "Alice ships")]
    assert listed(_ok(await bob.get(f"{API}/mnemos/tasks"))) == [("t-bob", "Bob ships")]
    assert listed(_ok(await local.get(f"{API}/mnemos/tasks"))) == [("t-local", "Ship")]
    assert _ok(await alice.get(f"{API}/mnemos/tasks/t-alice/nodes"))["nodes"]
    unknown = _error(await alice.get(f"{API}/mnemos/tasks/t-none/nodes"), 404, "not-found")
    for path in ("nodes", "fatigue", "checkpoints"):
        foreign = _error(await alice.get(f"{API}/mnemos/tasks/t-bob/{path}"), 404, "not-found")
        assert foreign["message"] == unknown["message"].replace("t-none", "t-bob")
    _error(await alice.post(f"{API}/mnemos/tasks/t-bob/resume", json={}), 404, "not-found")


@pytest.mark.asyncio
async def test_settings_change_only_for_the_local_user_or_an_admin(
    tokened: Mnemon, clients: dict[str, httpx.AsyncClient]
) -> None:
    alice, local = clients["alice"], clients["local"]
    assert _ok(await alice.get(f"{API}/settings"))["recall_mode"] == "guided"
    refused = _error(
        await alice.patch(f"{API}/settings", json={"recall_mode": "off"}), 403, "forbidden"
    )
    assert "host-wide" in refused["message"]
    assert "mnemon:admin" in refused["message"]
    assert tokened.config.recall_mode == "guided"
    assert _ok(await local.patch(f"{API}/settings", json={"recall_mode": "off"}))
    assert tokened.config.recall_mode == "off"


@pytest.mark.asyncio
async def test_an_authenticated_identity_is_the_user_and_admin_needs_the_permission(
    tmp_path: Path,
) -> None:
    mem = _open(tmp_path / "m")
    try:
        app = authed_app(mem)
        async with _client(app, **{"X-Test-User": "dave"}) as dave:
            _ok(await dave.post(f"{API}/runtime", json=_add("user", "Dave uses vim.")))
            assert _ok(await dave.get(f"{API}/status"))["scope"]["via"] == "langgraph"
            _error(
                await dave.patch(f"{API}/settings", json={"recall_mode": "off"}), 403, "forbidden"
            )
        async with _client(app, **{"X-Test-User": "dave", "X-Mnemon-User": "erin"}) as spoof:
            _error(await spoof.get(f"{API}/runtime"), 403, "scope-mismatch")
        async with _client(app, **{"X-Test-User": "admin"}) as admin:
            assert _contents(_ok(await admin.get(f"{API}/runtime")), "user") == []
            _ok(await admin.patch(f"{API}/settings", json={"recall_mode": "off"}))
        assert [e.content for e in mem.scoped(user="dave").runtime.entries("user")] == [
            "Dave uses vim."
        ]
        assert mem.config.recall_mode == "off"
    finally:
        mem.close()


# --- Mnemos task owners --------------------------------------------------------------------


def test_claim_task_first_claim_wins_and_later_ones_are_logged(
    database_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mem = _open(tmp_path / "m", database_url=database_url)
    try:
        mnemos = mem.mnemos
        mnemos.add_node("thread-1", "goal", "Plan the offsite")
        mnemos.add_node("thread-2", "goal", "Nobody claimed this")
        assert mnemos.tasks(owner="user:local") == ["thread-1", "thread-2"]  # no claims yet
        assert mnemos.tasks(owner="user:alice") == []
        mnemos.claim_task("thread-1", "user:alice")
        mnemos.claim_task("thread-1", "user:alice")  # idempotent
        with caplog.at_level(logging.WARNING):
            mnemos.claim_task("thread-1", "user:bob")  # ignored, never raised
        assert "claim by user:bob was ignored" in caplog.text
        assert mnemos.tasks(owner="user:alice") == ["thread-1"]
        assert mnemos.tasks(owner="user:bob") == []
        assert mnemos.tasks(owner="user:local") == ["thread-2"]
        assert mnemos.tasks() == ["thread-1", "thread-2"]
        assert [t.task_id for t in mnemos.status(owner="user:alice")] == ["thread-1"]
        assert mnemos.status("thread-1", owner="user:bob") == []
        mnemos.claim_task("thread-9", "user:carol")  # a task with no rows yet: claimed ahead
        mnemos.add_node("thread-9", "goal", "Carol's task")
        assert mnemos.tasks(owner="user:carol") == ["thread-9"]
    finally:
        mem.close()


def test_claim_task_on_a_read_only_host_does_nothing(tmp_path: Path) -> None:
    root = tmp_path / "m"
    with _open(root) as mem:
        mem.mnemos.add_node("thread-1", "goal", "Seeded")
    with _open(root, write_enabled=False) as mem:
        mem.mnemos.claim_task("thread-1", "user:alice")
        assert mem.mnemos.tasks(owner="user:alice") == []
        assert mem.mnemos.tasks(owner="user:local") == ["thread-1"]


def test_claim_task_refuses_a_bad_owner(tmp_path: Path) -> None:
    from langgraph_mnemon.errors import InvalidInputError

    with _open(tmp_path / "m") as mem:
        for bad in ("", "  ", "user:\x00x", 7):
            with pytest.raises(InvalidInputError):
                mem.mnemos.claim_task("thread-1", bad)  # type: ignore[arg-type]


def test_a_review_run_carries_the_scope_of_its_turn() -> None:
    assert review_config(Scope()) == {}
    assert review_config(Scope(user="alice")) == {"configurable": {"user_id": "alice"}}
    assert review_config(Scope(user="alice", project="p")) == {
        "configurable": {"user_id": "alice", "mnemon_project": "p"}
    }


def test_the_served_config_switches_auth_on_for_the_custom_routes() -> None:
    config = langgraph_config(auth=f"{EXAMPLE_AUTH}:auth")
    assert config["auth"] == {"path": f"{EXAMPLE_AUTH}:auth"}
    assert config["http"]["enable_custom_route_auth"] is True
    assert "auth" not in langgraph_config()
    assert langgraph_config() == json.loads((REPO / "langgraph.json").read_text())


# --- served: one `langgraph dev` with the example custom auth (two tokens) ---------------------

# The shortest idle-review timings the settings allow, so a review fires within the test.
FAST_REVIEW = {
    "MNEMON_IDLE_REVIEW__DELAY_MS": "5000",
    "MNEMON_IDLE_REVIEW__MIN_INTERVAL_MS": "5000",
}
SNAPSHOT = "MNEMON RUNTIME MEMORY SNAPSHOT"


def _sdk(url: str, token: str | None = None) -> Any:
    return get_sync_client(url=url, api_key=None, headers=_bearer(token) if token else None)


def _say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _turn(client: Any, text: str, config: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    thread = client.threads.create()["thread_id"]
    return client.runs.wait(thread, "mnemon_agent", input=_say(text), config=config)["messages"]


def _wake(messages: list[dict[str, Any]]) -> str:
    wakes = [str(m["content"]) for m in messages if m["type"] == "human" and SNAPSHOT in str(m)]
    assert wakes, messages
    return wakes[-1]


def _tool_result(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return json.loads([m for m in messages if m["type"] == "tool"][-1]["content"])


def _poll(check: Any, what: str, timeout: float = 40.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def authed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("authed") / "m"
    env = {
        "MNEMON_SERVE_AUTH": f"{EXAMPLE_AUTH}:auth",
        # MEMORY.md and Documents per user too: the two users share no tier at all.
        "MNEMON_SCOPES__PROJECT_MEMORY": "user_project",
        **FAST_REVIEW,
    }
    with serve(root, env=env) as served:
        yield served


def test_served_auth_needs_a_known_token_except_for_the_page(authed: Served) -> None:
    config = json.loads((authed.root / "server" / "langgraph.json").read_text())
    assert config["auth"] == {"path": f"{EXAMPLE_AUTH}:auth"}
    with pytest.raises(httpx.HTTPStatusError) as refused:
        _sdk(authed.url).assistants.search(limit=1)
    assert refused.value.response.status_code == 401
    assert http.get(f"{authed.url}{API}/status").status_code == 401
    wrong = http.get(f"{authed.url}{API}/status", headers=_bearer("not-a-token"))
    assert wrong.status_code == 401
    assert http.get(f"{authed.url}/mnemon/").status_code == 200  # the page carries no data
    status = http.get(f"{authed.url}{API}/status", headers=_bearer(DEMO_ALICE)).json()
    assert status["scope"] == {
        "user": "alice",
        "project": "local",
        "via": "langgraph",
        "admin": False,
        "projects": [],
    }
    assert status["authentication"] == "langgraph"


def test_two_authenticated_users_share_nothing_through_the_agent(authed: Served) -> None:
    alice, bob = _sdk(authed.url, DEMO_ALICE), _sdk(authed.url, DEMO_BOB)
    fact = f"I am allergic to peanuts ({uuid.uuid4().hex[:6]})"
    saved = _turn(alice, f"remember about me: {fact}")
    assert _tool_result(saved)["status"] == "committed"
    note = f"The alice build uses tag {uuid.uuid4().hex[:6]}"
    assert _tool_result(_turn(alice, f"remember that {note}"))["status"] == "committed"
    # Alice's next turn, in a new thread, wakes with both; Bob's never does.
    wake = _wake(_turn(alice, "hello again"))
    assert fact in wake
    assert note in wake
    bob_wake = _wake(_turn(bob, "hello"))
    assert fact not in bob_wake
    assert note not in bob_wake
    answer = _turn(bob, "what am I allergic to?")[-1]["content"]
    assert "peanuts" not in answer
    # Alice's threads are hers (the example auth filters threads by owner).
    thread = alice.threads.create()["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as hidden:
        bob.threads.get(thread)
    assert hidden.value.response.status_code == 404
    # The control plane, authenticated per request, shows each user their own entries.
    views = {
        token: http.get(f"{authed.url}{API}/runtime", headers=_bearer(token)).json()
        for token in (DEMO_ALICE, DEMO_BOB)
    }
    assert fact in _contents(views[DEMO_ALICE], "user")
    assert note in _contents(views[DEMO_ALICE], "memory")
    assert fact not in _contents(views[DEMO_BOB], "user")
    assert note not in _contents(views[DEMO_BOB], "memory")


def test_worker_recall_query_and_store_graphs_run_in_the_callers_scope(authed: Served) -> None:
    alice, bob = _sdk(authed.url, DEMO_ALICE), _sdk(authed.url, DEMO_BOB)
    fact = f"The alice staging database host is db-{uuid.uuid4().hex[:6]}."
    out = alice.runs.wait(None, "mnemon_write_worker", input={"candidate": {"content": fact}})
    assert out["receipt"]["status"] == "committed", out
    query = {"query": "alice staging database host"}

    def recalled(client: Any) -> list[str]:
        out = client.runs.wait(None, "mnemon_recall", input=query)
        return [r["content"] for r in (out.get("output") or {}).get("results", [])]

    assert fact in recalled(alice)
    assert fact not in recalled(bob)
    answer = bob.runs.wait(None, "mnemon_agent_query", input=query)
    assert fact not in json.dumps(answer)
    assert fact in json.dumps(alice.runs.wait(None, "mnemon_agent_query", input=query))
    # A run may not name another user than the authenticated one.
    spoofed = bob.runs.wait(
        None, "mnemon_recall", input=query, config={"configurable": {"user_id": "alice"}}
    )
    assert spoofed["error"].startswith("scope-mismatch"), spoofed
    # The store API: the same namespace of two users holds two users' items.
    namespace = ["memories", uuid.uuid4().hex[:6]]
    alice.store.put_item(namespace, "diet", {"text": "Alice eats no peanuts."})
    bob.store.put_item(namespace, "diet", {"text": "Bob eats everything."})
    assert alice.store.get_item(namespace, "diet")["value"] == {"text": "Alice eats no peanuts."}
    assert bob.store.get_item(namespace, "diet")["value"] == {"text": "Bob eats everything."}
    found = bob.store.search_items(namespace[:1], query="peanuts", limit=10)["items"]
    assert "Alice eats no peanuts." not in json.dumps(found)
    bob.store.delete_item(namespace, "diet")
    assert alice.store.get_item(namespace, "diet") is not None


def test_the_control_plane_serves_each_authenticated_user_their_own_data(
    authed: Served,
) -> None:
    def call(token: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {**_bearer(token), **kwargs.pop("headers", {})}
        return http.request(method, f"{authed.url}{API}/{path}", headers=headers, **kwargs)

    doc = {"title": "Alice's runbook", "content": "Restart the alice worker with make bounce."}
    created = call(DEMO_ALICE, "POST", "documents", json=doc)
    assert created.status_code == 200, created.text
    doc_id = created.json()["document"]["id"]
    space = call(DEMO_ALICE, "POST", "spaces", json={"name": f"alice-{uuid.uuid4().hex[:4]}"})
    space_id = space.json()["space"]["id"]
    kept = call(DEMO_ALICE, "POST", f"spaces/{space_id}/memories", json={"content": "Alice's."})
    assert kept.status_code == 200, kept.text
    assert [d["id"] for d in call(DEMO_ALICE, "GET", "documents").json()["documents"]] == [doc_id]
    searched = call(DEMO_BOB, "GET", "documents/search", params={"q": "alice worker bounce"})
    assert searched.json()["results"] == []
    assert call(DEMO_BOB, "GET", "documents").json()["documents"] == []
    assert call(DEMO_BOB, "GET", f"documents/{doc_id}").status_code == 404
    assert space_id not in [s["id"] for s in call(DEMO_BOB, "GET", "spaces").json()["spaces"]]
    assert call(DEMO_BOB, "GET", f"spaces/{space_id}/content").status_code == 404
    status = {t: call(t, "GET", "status").json() for t in (DEMO_ALICE, DEMO_BOB)}
    assert status[DEMO_ALICE]["documents"]["active"] == 1
    assert status[DEMO_BOB]["documents"]["active"] == 0
    # Tasks: a thread's Mnemos task is its user's.
    thread = _sdk(authed.url, DEMO_ALICE).threads.create()["thread_id"]
    _sdk(authed.url, DEMO_ALICE).runs.wait(thread, "mnemon_agent", input=_say("hi there"))
    tasks = {t: [r["task_id"] for r in call(t, "GET", "mnemos/tasks").json()["tasks"]] for t in
             (DEMO_ALICE, DEMO_BOB)}  # fmt: skip
    assert thread in tasks[DEMO_ALICE]
    assert thread not in tasks[DEMO_BOB]
    assert call(DEMO_BOB, "GET", f"mnemos/tasks/{thread}/nodes").status_code == 404
    # Host-wide settings: an authenticated user without mnemon:admin may only read them.
    assert call(DEMO_ALICE, "GET", "settings").status_code == 200
    refused = call(DEMO_ALICE, "PATCH", "settings", json={"recall_mode": "off"})
    assert refused.status_code == 403, refused.text
    assert "host-wide" in refused.json()["message"]
    spoof = call(DEMO_ALICE, "GET", "runtime", headers={"X-Mnemon-User": "bob"})
    assert spoof.status_code == 403
    assert spoof.json()["error"] == "scope-mismatch"


def test_idle_review_under_custom_auth_runs_in_process_in_the_turns_scope(
    authed: Served,
) -> None:
    alice = _sdk(authed.url, DEMO_ALICE)
    thread = alice.threads.create()["thread_id"]
    fact = f"I ride a red bicycle {uuid.uuid4().hex[:6]} to work every single day"
    # Two turns with an explicit save and 150+ user characters: score 3 + 2 = 5, admitted.
    alice.runs.wait(thread, "mnemon_agent", input=_say(f"remember that {fact}"))
    alice.runs.wait(
        thread,
        "mnemon_agent",
        input=_say(
            "I prefer short status updates written as bullet points; please keep them under "
            "ten lines and skip the greetings"
        ),
    )

    def user_entries(token: str) -> list[str]:
        view = http.get(f"{authed.url}{API}/runtime", headers=_bearer(token)).json()
        return _contents(view, "user")

    # The heuristic review writes the first-person fact to USER.md, in Alice's scope.
    _poll(lambda: fact in user_entries(DEMO_ALICE), "the idle review")
    assert fact not in user_entries(DEMO_BOB)


# --- served without auth: users named by `user_id` in the run's config -----------------------


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("open") / "m"
    with serve(root, env=FAST_REVIEW) as served:
        yield served


def _as(user: str, project: str | None = None) -> dict[str, Any]:
    configurable = {"user_id": user} | ({"mnemon_project": project} if project else {})
    return {"configurable": configurable}


def test_two_users_by_user_id_share_nothing_without_auth(open_server: Served) -> None:
    client = _sdk(open_server.url)
    fact = f"I am a night owl ({uuid.uuid4().hex[:6]})"
    saved = _turn(client, f"remember about me: {fact}", _as("alice", "alpha"))
    assert _tool_result(saved)["status"] == "committed"
    note = f"Alpha deploys from tag {uuid.uuid4().hex[:6]}"
    assert (
        _tool_result(_turn(client, f"remember that {note}", _as("alice", "alpha")))["status"]
        == "committed"
    )
    # USER belongs to the user in every project; MEMORY to the project.
    wake = _wake(_turn(client, "hello", _as("alice", "beta")))
    assert fact in wake
    assert note not in wake
    assert note in _wake(_turn(client, "hello", _as("alice", "alpha")))
    for config in (_as("bob", "alpha"), _as("bob"), None):
        other = _wake(_turn(client, "hello", config))
        assert fact not in other
    assert note in _wake(_turn(client, "hello", _as("bob", "alpha")))  # alpha is shared
    assert note not in _wake(_turn(client, "hello"))
    # Worker and recall graphs in the scope of the run's config.
    stored = f"Alice's laptop is a {uuid.uuid4().hex[:6]} model."
    out = client.runs.wait(
        None, "mnemon_write_worker", input={"candidate": {"content": stored}}, config=_as("alice")
    )
    assert out["receipt"]["status"] == "committed", out

    def recalled(config: dict[str, Any] | None) -> str:
        return json.dumps(
            client.runs.wait(None, "mnemon_recall", input={"query": "laptop model"}, config=config)
        )

    assert stored in recalled(_as("alice"))
    assert stored not in recalled(_as("bob"))
    # The control plane: from loopback, with no auth configured, the page may pick a user.
    picked = http.get(f"{open_server.url}{API}/runtime", headers={"X-Mnemon-User": "alice"})
    assert fact in _contents(picked.json(), "user")
    local = http.get(f"{open_server.url}{API}/runtime").json()
    assert fact not in _contents(local, "user")


def test_a_served_idle_review_runs_in_the_scope_of_its_turn(open_server: Served) -> None:
    from langgraph_mnemon.reviews import review_thread_id

    client = _sdk(open_server.url)
    thread = client.threads.create()["thread_id"]
    fact = f"I keep a blue notebook {uuid.uuid4().hex[:6]} for every single project"
    client.runs.wait(
        thread, "mnemon_agent", input=_say(f"remember that {fact}"), config=_as("carol")
    )
    client.runs.wait(
        thread,
        "mnemon_agent",
        input=_say(
            "I prefer short status updates written as bullet points; please keep them under "
            "ten lines and skip the greetings"
        ),
        config=_as("carol"),
    )

    def reviewed() -> list[dict[str, Any]]:
        runs = client.runs.list(review_thread_id(thread))
        return [r for r in runs if r["status"] == "success"]

    runs = _poll(reviewed, "the delayed review run")
    assert runs[0]["kwargs"]["config"]["configurable"]["user_id"] == "carol"
    carol = http.get(f"{open_server.url}{API}/runtime", headers={"X-Mnemon-User": "carol"})
    assert fact in _contents(carol.json(), "user")
    assert fact not in _contents(http.get(f"{open_server.url}{API}/runtime").json(), "user")


# --- two replicas on one PostgreSQL ---------------------------------------------------------


@pytest.fixture(scope="module")
def replicas(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: str
) -> Iterator[tuple[Served, Served]]:
    """Two servers on one fresh PostgreSQL schema, shared by this module's replica tests.

    The slowest set-up of the suite (two real ``mnemon serve`` starts, 20-30 s on a loaded 2-core
    machine): it runs once per module, and the replica tests are what it is for.
    """
    from langgraph_mnemon.testing.postgres import fresh_schema

    tmp = tmp_path_factory.mktemp("replicas")
    with fresh_schema(postgres_server) as url:
        env = {"MNEMON_DATABASE_URL": url}
        with serve(tmp / "a", env=env) as first, serve(tmp / "b", env=env) as second:
            yield first, second


_ADDER = r"""
import json, sys
from concurrent.futures import ThreadPoolExecutor
import httpx

url, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])

def add(i):
    content = f"{prefix} entry {i:02d}"
    try:
        r = httpx.post(f"{url}/mnemon/api/runtime", timeout=120, trust_env=False,
                       json={"action": "add", "target": "memory", "content": content})
        body = r.json()
    except Exception as exc:
        return {"content": content, "status": f"error {type(exc).__name__}"}
    return {"content": content, "http": r.status_code, "status": body.get("status"),
            "revision": body.get("revision")}

with ThreadPoolExecutor(count) as pool:
    print(json.dumps(list(pool.map(add, range(count)))))
"""


def test_two_replicas_on_one_postgres_share_runtime_and_documents(
    replicas: tuple[Served, Served],
) -> None:
    first, second = replicas
    one, two = _sdk(first.url), _sdk(second.url)
    fact = f"I use a standing desk ({uuid.uuid4().hex[:6]})"
    saved = _turn(one, f"remember about me: {fact}", _as("dana"))
    assert _tool_result(saved)["status"] == "committed"
    assert fact in _wake(_turn(two, "hello", _as("dana")))  # the next turn, on the other one
    assert fact not in _wake(_turn(two, "hello", _as("erik")))
    # Runtime Memory and Documents live in the database: no file of them on either disk.
    for served in replicas:
        assert not (served.root / "runtime" / "memories.json").exists()
    doc = {"title": "Failover runbook", "content": "Promote the replica with pg_promote()."}
    created = http.post(f"{first.url}{API}/documents", json=doc)
    assert created.status_code == 200, created.text
    found = http.get(f"{second.url}{API}/documents/search", params={"q": "promote replica"})
    assert [r["id"] for r in found.json()["results"]][:1] == [created.json()["document"]["id"]]


def test_concurrent_runtime_adds_through_both_replicas_are_all_kept(
    replicas: tuple[Served, Served],
) -> None:
    urls = [served.url for served in replicas]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _ADDER, urls[i % 2], f"p{i}", "25"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    results: list[dict[str, Any]] = []
    for process in processes:
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, err
        results += json.loads(out)
    acknowledged = [r for r in results if r.get("http") == 200 and r["status"] == "committed"]
    assert len(acknowledged) == 100, [r for r in results if r not in acknowledged][:5]
    # Every commit made its own state: 100 distinct revisions.
    assert len({r["revision"] for r in acknowledged}) == 100
    views = [http.get(f"{url}{API}/runtime", timeout=30).json() for url in urls]
    assert views[0]["revision"] == views[1]["revision"]
    assert _contents(views[0], "memory") == _contents(views[1], "memory")
    kept = set(_contents(views[0], "memory"))
    assert {r["content"] for r in acknowledged} <= kept


# --- the web page: a person on loopback picks a scope ----------------------------------------


def test_the_web_page_picks_a_user_and_a_project_on_loopback(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright
    from server_support import uvicorn_in_thread

    mem = _open(tmp_path / "m")
    try:
        mem.runtime.add("user", "The local user's own entry.")
        mem.scoped(user="alice").runtime.add("user", "Alice likes green tea.")
        with (
            uvicorn_in_thread(create_app(mem)) as port,
            sync_playwright() as p,
        ):
            browser = p.chromium.launch(
                executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"]
            )
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/mnemon/#/runtime")
            page.wait_for_selector("body[data-loaded='runtime']")
            assert "The local user's own entry." in page.inner_text("[data-testid=runtime-user]")
            page.fill("[data-testid=scope-user]", "alice")
            page.fill("[data-testid=scope-project]", "garden")
            page.press("[data-testid=scope-project]", "Tab")  # change events: the page reloads
            page.wait_for_selector("text=Alice likes green tea.")
            assert "local user's" not in page.inner_text("[data-testid=runtime-user]")
            page.fill("[data-testid=runtime-add-content]", "Garden beds face south.")
            page.select_option("[data-testid=runtime-add-target]", "memory")
            page.click("[data-testid=runtime-add-submit]")
            page.wait_for_selector("text=Garden beds face south.")
            shots = Path(os.environ.get("MNEMON_TEST_ARTIFACTS", "test-artifacts")) / "web"
            shots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shots / "scope-picked-runtime.png"), full_page=True)
            browser.close()
        garden = mem.scoped(user="alice", project="garden").runtime.entries("memory")
        assert [e.content for e in garden] == ["Garden beds face south."]
        assert mem.runtime.entries("memory") == []
    finally:
        mem.close()
