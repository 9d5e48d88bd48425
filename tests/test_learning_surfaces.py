"""Issue 35, item 5: learning passes on every surface: ``mnemon learn``, the control plane's
learn routes, ``mem.status()`` / ``mnemon status`` and the status route.

Real storage roots (files + SQLite); the CLI through typer's runner and ``main`` (exit codes,
one error line); the control plane through the real app (httpx's ASGI transport), two users
with tokens: Bob can neither list, read nor undo Alice's pass (404, as an unknown id).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph
from typer.testing import CliRunner

from langgraph_mnemon import Mnemon
from langgraph_mnemon.cli import app, main
from langgraph_mnemon.server.http import create_app

API = "/mnemon/api"
ALICE, BOB = "alice-token-1", "bob-token-2"
ALLERGY = "I'm allergic to peanuts."
CHAT = [
    HumanMessage(ALLERGY, id="m1"),
    AIMessage("Noted, no peanuts.", id="m2"),
    HumanMessage("How is the weather today?", id="m3"),
]

runner = CliRunner()


def _open(root: Path, **settings: Any) -> Mnemon:
    settings.setdefault("chroma", {"enabled": False})
    return Mnemon.open(root, **settings)


def _checkpoint_thread(mem: Mnemon, thread: str, messages: list[Any]) -> None:
    """A real LangGraph run on the host's checkpointer, so the thread has checkpoints."""

    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("Noted, no peanuts.", id=f"{thread}-reply")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    graph = builder.compile(checkpointer=mem.checkpointer())
    graph.invoke({"messages": messages}, {"configurable": {"thread_id": thread}})


def invoke(root: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["--root", str(root), *args], env={"COLUMNS": "200"})
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


# --- the command line ------------------------------------------------------------------------


def test_cli_learns_from_a_checkpointed_thread_lists_and_undoes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    mem = _open(root)
    _checkpoint_thread(mem, "t1", [HumanMessage(ALLERGY, id="u1")])
    # Alice's thread (a turn of hers claims it): only her passes may read its checkpoints.
    mem.mnemos.claim_task("t1", "user:alice")
    mem.close()
    with pytest.raises(SystemExit) as bob_learns:
        main(["--root", str(root), "learn", "--thread", "t1", "--user", "bob"])
    assert bob_learns.value.code == 1

    code, out = invoke(root, "learn", "--thread", "t1", "--user", "alice")
    assert code == 0, out
    assert "[committed] add" in out
    assert ALLERGY in out
    assert "on thread t1 (heuristic): committed, 1 learned" in out
    # Nothing new since: the second pass skips and says why.
    code, out = invoke(root, "learn", "--thread", "t1", "--user", "alice")
    assert code == 0
    assert "skipped" in out
    assert "no new messages" in out

    code, out = invoke(root, "--user", "alice", "learn", "--list", "--json")
    passes = json.loads(out)
    assert [p["status"] for p in passes] == ["skipped", "committed"]
    committed = passes[1]
    code, out = invoke(root, "--user", "alice", "learn", "--list")
    assert code == 0
    assert committed["pass_id"] in out
    assert "heuristic" in out
    # Another user sees none of Alice's passes, and cannot undo one.
    code, out = invoke(root, "--user", "bob", "learn", "--list")
    assert "no learning passes yet" in out
    with pytest.raises(SystemExit) as bob_undo:
        main(["--root", str(root), "--user", "bob", "learn", "--undo", committed["pass_id"]])
    assert bob_undo.value.code == 1

    code, out = invoke(root, "--user", "alice", "status")
    assert "learning passes: 2; memories learned: 1" in out
    assert committed["pass_id"][:12] in out

    code, out = invoke(root, "--user", "alice", "learn", "--undo", committed["pass_id"], "--json")
    assert code == 0, out
    undone = json.loads(out)
    assert undone["status"] == "undone"
    assert [r["action"] for r in undone["receipts"]] == ["add", "undo"]
    # Undoing again changes nothing and shows the pass as it stands.
    code, out = invoke(root, "--user", "alice", "learn", "--undo", committed["pass_id"])
    assert code == 0
    assert "[committed] undo" in out
    assert "(heuristic): undone, 1 learned" in out
    mem = _open(root)
    try:
        hits = mem.scoped(user="alice").spaces.search("peanuts allergy").results
        assert not [h for h in hits if "peanuts" in h.content]
    finally:
        mem.close()
    code, out = invoke(root, "--user", "alice", "status")
    assert "learning passes: 2; memories learned: 0" in out


def test_cli_errors_are_one_line_and_usage_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = str(tmp_path / "root")
    with pytest.raises(SystemExit) as missing:
        main(["--root", root, "learn", "--thread", "never-run"])
    assert missing.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("mnemon: error: thread 'never-run' has no checkpointed messages")
    assert len(err.strip().splitlines()) == 1
    for args in (
        ["learn"],
        ["learn", "--list", "--undo", "x"],
        ["learn", "--list", "--model", "a:b"],
        ["learn", "--list", "--limit", "0"],
    ):
        with pytest.raises(SystemExit) as usage:
            main(["--root", root, *args])
        assert usage.value.code == 2, args
        assert capsys.readouterr().err.startswith("mnemon: error:")
    with pytest.raises(SystemExit) as unknown:
        main(["--root", root, "learn", "--undo", "0" * 32])
    assert unknown.value.code == 1
    assert "no learning pass" in capsys.readouterr().err


def test_cli_pass_refused_by_the_kernel_exits_1_and_says_why(tmp_path: Path) -> None:
    root = tmp_path / "root"
    mem = _open(root, layers={"memory_spaces": {"participation": {"write": "manual"}}})
    _checkpoint_thread(mem, "t1", [HumanMessage(ALLERGY, id="u1")])
    mem.close()
    result = runner.invoke(
        app,
        ["--root", str(root), "learn", "--thread", "t1"],
        env={"COLUMNS": "200", "MNEMON_LAYERS__MEMORY_SPACES__PARTICIPATION__WRITE": "manual"},
    )
    assert result.exit_code == 1, result.output
    assert "refused" in result.output
    assert "manual" in result.output


# --- status ---------------------------------------------------------------------------------


def test_status_shows_the_scopes_passes_only(tmp_path: Path) -> None:
    mem = _open(tmp_path / "m")
    try:
        assert mem.status().learning is not None
        assert mem.status().learning.passes == 0
        alice = mem.scoped(user="alice")
        done = alice.learn("t1", messages=CHAT)
        assert done.status == "committed"
        for n in range(6):  # more passes than status lists
            alice.learn(f"t-{n}", messages=[HumanMessage("Fine, thanks.", id=f"s{n}")])
        seen = alice.status().learning
        assert seen.passes == 7
        assert seen.learned == 1
        assert len(seen.recent) == 5
        assert done.pass_id not in [r.pass_id for r in seen.recent]  # the oldest drops out
        assert {r.extractor for r in seen.recent} == {"heuristic"}
        assert mem.scoped(user="bob").status().learning.passes == 0
        assert mem.status().learning.passes == 0
    finally:
        mem.close()


# --- the control plane ----------------------------------------------------------------------


@pytest.fixture
def tokened(tmp_path: Path) -> Iterator[Mnemon]:
    mem = _open(tmp_path / "m", scopes={"user_tokens": {"alice": ALICE, "bob": BOB}})
    yield mem
    mem.close()


def _client(app: Any, token: str | None = None) -> httpx.AsyncClient:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=("127.0.0.1", 5000)),
        base_url="http://127.0.0.1:8765",
        headers=headers,
    )


@pytest_asyncio.fixture
async def clients(tokened: Mnemon) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    served = create_app(tokened)
    async with _client(served, ALICE) as alice, _client(served, BOB) as bob:
        yield {"alice": alice, "bob": bob}


def _ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code, body
    return body


def _wire(messages: list[Any]) -> list[dict[str, Any]]:
    return [{"type": m.type, "content": m.content, "id": m.id} for m in messages]


@pytest.mark.asyncio
async def test_routes_learn_list_read_and_undo_in_the_callers_scope(
    tokened: Mnemon, clients: dict[str, httpx.AsyncClient]
) -> None:
    alice, bob = clients["alice"], clients["bob"]
    done = _ok(await alice.post(f"{API}/learn", json={"thread_id": "t1", "messages": _wire(CHAT)}))
    assert done["status"] == "committed"
    assert done["user"] == "alice"
    assert [(r["action"], r["status"], r["content"]) for r in done["receipts"]] == [
        ("add", "committed", ALLERGY)
    ]
    pass_id = done["pass_id"]
    listed = _ok(await alice.get(f"{API}/learn/passes"))["passes"]
    assert [p["pass_id"] for p in listed] == [pass_id]
    assert _ok(await alice.get(f"{API}/learn/passes?thread_id=other"))["passes"] == []
    assert _ok(await alice.get(f"{API}/learn/passes/{pass_id}"))["receipts"][0]["content"] == (
        ALLERGY
    )
    status = _ok(await alice.get(f"{API}/status"))["learning"]
    assert status["passes"] == 1
    assert status["learned"] == 1
    assert status["recent"][0]["pass_id"] == pass_id

    # Bob: not listed, not found, not undone; his status counts nothing.
    assert _ok(await bob.get(f"{API}/learn/passes"))["passes"] == []
    unknown = _error(await bob.get(f"{API}/learn/passes/{'0' * 32}"), 404, "not-found")
    foreign = _error(await bob.get(f"{API}/learn/passes/{pass_id}"), 404, "not-found")
    assert foreign["message"] == unknown["message"].replace("0" * 32, pass_id)
    _error(await bob.post(f"{API}/learn/passes/{pass_id}/undo"), 404, "not-found")
    assert _ok(await bob.get(f"{API}/status"))["learning"]["passes"] == 0
    recalled = _ok(await bob.post(f"{API}/recall", json={"query": "peanuts allergy"}))
    assert not [r for r in recalled["results"] if "peanuts" in r["content"]]

    undone = _ok(await alice.post(f"{API}/learn/passes/{pass_id}/undo"))
    assert undone["status"] == "undone"
    assert [r["action"] for r in undone["receipts"]] == ["add", "undo"]
    assert _ok(await alice.get(f"{API}/status"))["learning"]["learned"] == 0
    hits = tokened.scoped(user="alice").spaces.search("peanuts allergy").results
    assert not [h for h in hits if "peanuts" in h.content]


@pytest.mark.asyncio
async def test_learn_route_reads_only_the_callers_checkpointed_thread(
    tokened: Mnemon, clients: dict[str, httpx.AsyncClient]
) -> None:
    alice, bob = clients["alice"], clients["bob"]
    _checkpoint_thread(tokened, "alice-thread", [HumanMessage(ALLERGY, id="u1")])
    tokened.mnemos.claim_task("alice-thread", tokened.scoped(user="alice").scope.user_key)
    # Bob names Alice's thread: not found, as an unknown thread; nothing is learned.
    _error(await bob.post(f"{API}/learn", json={"thread_id": "alice-thread"}), 404, "not-found")
    assert tokened.scoped(user="bob").learning.list_passes() == []
    done = _ok(await alice.post(f"{API}/learn", json={"thread_id": "alice-thread"}))
    assert done["status"] == "committed"
    assert ALLERGY in [r["content"] for r in done["receipts"]]


@pytest.mark.asyncio
async def test_a_request_never_chooses_the_model(clients: dict[str, httpx.AsyncClient]) -> None:
    alice = clients["alice"]
    body = {"thread_id": "t1", "messages": _wire(CHAT), "model": "openai:gpt-4o"}
    refused = _error(await alice.post(f"{API}/learn", json=body), 422, "model-not-allowed")
    assert "worker_model" in refused["message"]
    assert _ok(await alice.get(f"{API}/learn/passes"))["passes"] == []
    _error(await alice.post(f"{API}/learn", json={"messages": []}), 422, "invalid-input")
    _error(await alice.get(f"{API}/learn/passes?limit=0"), 422, "invalid-input")


@pytest.mark.asyncio
async def test_learn_routes_follow_the_mutation_authority(tokened: Mnemon) -> None:
    served = create_app(tokened)
    remote = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=served, client=("10.1.2.3", 5000)),
        base_url="http://127.0.0.1:8765",
        headers={"Content-Type": "application/json"},
    )
    async with remote:
        refused = await remote.post(f"{API}/learn", json={"thread_id": "t1", "messages": []})
        assert refused.status_code in (401, 403), refused.text
        undo = await remote.post(f"{API}/learn/passes/{'0' * 32}/undo")
        assert undo.status_code in (401, 403), undo.text
    spec = _ok(await _client(served).get("/mnemon/openapi.json"))
    assert spec["paths"][f"{API}/learn"]["post"]["x-mnemon-mutates"] is True
    assert spec["paths"][f"{API}/learn/passes"]["get"]["x-mnemon-mutates"] is False
    undo_op = spec["paths"][f"{API}/learn/passes/{{pass_id}}/undo"]["post"]
    assert undo_op["x-mnemon-mutates"] is True
    assert [p["name"] for p in undo_op["parameters"]] == ["pass_id"]


@pytest.mark.asyncio
async def test_a_pass_the_kernel_refuses_writes_nothing_and_says_why(tmp_path: Path) -> None:
    manual = {"memory_spaces": {"participation": {"write": "manual"}}}
    mem = _open(tmp_path / "m", layers=manual)
    try:
        async with _client(create_app(mem)) as local:
            body = {"thread_id": "t1", "messages": _wire(CHAT)}
            refused = _ok(await local.post(f"{API}/learn", json=body))
            assert refused["status"] == "refused"
            assert "manual" in refused["reason"]
            assert refused["receipts"] == []
            assert _ok(await local.get(f"{API}/status"))["learning"]["learned"] == 0
        assert mem.spaces.search("peanuts allergy").results == []
    finally:
        mem.close()
