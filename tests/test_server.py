"""LangGraph server end to end: ``mnemon serve`` (``langgraph dev``) driven with ``langgraph_sdk``.

One server per module (a few seconds to start); every test uses its own threads. The control
plane is reached with httpx on the same port, once from loopback and once from this machine's
non-loopback address (the server listens on 0.0.0.0 for that).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client
from server_support import Served, http, non_loopback_address, serve

from langgraph_mnemon import Mnemon
from langgraph_mnemon.reviews import review_thread_id
from langgraph_mnemon.server.demo import DEMO_LABEL

pytestmark = pytest.mark.timeout(240)

GRAPH_IDS = {
    "mnemon_agent",
    "mnemon_turn",
    "mnemon_recall",
    "mnemon_write_worker",
    "mnemon_idle_review",
    "mnemon_agent_query",
}
# The shortest idle-review timings the settings allow, so a review fires within the test.
FAST_REVIEW = {
    "MNEMON_IDLE_REVIEW__DELAY_MS": "5000",
    "MNEMON_IDLE_REVIEW__MIN_INTERVAL_MS": "5000",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    # One real `mnemon serve` for the module (up to 25 s to start on a loaded 2-core machine).
    root = tmp_path_factory.mktemp("served") / "m"
    with serve(root, host="0.0.0.0", env=FAST_REVIEW) as served:
        yield served


@pytest.fixture
def client(server: Served):  # type: ignore[no-untyped-def]
    return get_sync_client(url=server.url, api_key=None)


def _user(text: str) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": text}]}


def _contents(messages: list[dict[str, object]], kind: str) -> list[str]:
    return [str(m["content"]) for m in messages if m["type"] == kind]


def test_mnemon_serve_answers_ok_once_ready(server: Served) -> None:
    # How long start-up takes is measured by bench/startup.py, not asserted here: on a loaded
    # 2-core machine it varies; `serve` waits for /ok and fails saying what it waited for.
    assert http.get(f"{server.url}/ok").json()["ok"] is True
    config = json.loads((server.root / "server" / "langgraph.json").read_text())
    repo = json.loads((Path(__file__).parents[1] / "langgraph.json").read_text())
    assert config == repo  # `mnemon serve` and `langgraph dev` in a checkout serve the same


def test_langgraph_validate_accepts_the_config() -> None:
    import subprocess
    import sys

    from langgraph_mnemon.server.launch import OFFLINE_ENV

    repo = Path(__file__).parents[1]
    out = subprocess.run(
        [sys.executable, "-m", "langgraph_cli", "validate", "--config", "langgraph.json"],
        cwd=repo,
        env={**os.environ, **OFFLINE_ENV},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "is valid" in out.stdout
    assert "6 graphs" in out.stdout


def test_every_graph_is_an_assistant(client) -> None:  # type: ignore[no-untyped-def]
    found = {a["graph_id"] for a in client.assistants.search(limit=50)}
    assert found >= GRAPH_IDS


def test_demo_agent_saves_a_fact_and_the_next_turn_wakes_with_it(client, server: Served) -> None:  # type: ignore[no-untyped-def]
    thread = client.threads.create()["thread_id"]
    out = client.runs.wait(
        thread, "mnemon_agent", input=_user("remember that deploys need two approvals")
    )
    tool = json.loads(_contents(out["messages"], "tool")[-1])
    assert tool["status"] == "committed"
    assert _contents(out["messages"], "ai")[-1].startswith(DEMO_LABEL)
    # The write is on disk, in the storage root the server was given.
    with Mnemon.open(server.root) as mem:
        assert "deploys need two approvals" in [e.content for e in mem.runtime.entries("memory")]

    out = client.runs.wait(thread, "mnemon_agent", input=_user("hello again"))
    wakes = [
        c for c in _contents(out["messages"], "human") if "MNEMON RUNTIME MEMORY SNAPSHOT" in c
    ]
    assert "deploys need two approvals" in wakes[-1]

    state = client.threads.get_state(thread)
    assert state["values"]["messages"][-1]["content"].endswith("You said: hello again")
    assert state["values"].get("mnemon_turn") is None  # the turn was released
    history = client.threads.get_history(thread, limit=100)
    assert len(history) > 4  # checkpoints came from our saver


def test_runs_stream_yields_the_agent_steps(client) -> None:  # type: ignore[no-untyped-def]
    thread = client.threads.create()["thread_id"]
    nodes: list[str] = []
    for part in client.runs.stream(
        thread, "mnemon_agent", input=_user("remember that the VPN is wg0"), stream_mode="updates"
    ):
        if part.event == "updates":
            nodes += list(part.data)
    assert "model" in nodes, nodes
    assert "tools" in nodes, nodes


def test_write_worker_recall_and_agent_query_graphs(client) -> None:  # type: ignore[no-untyped-def]
    fact = f"The staging database host is db-stg-{uuid.uuid4().hex[:6]}."
    out = client.runs.wait(None, "mnemon_write_worker", input={"candidate": {"content": fact}})
    assert out["receipt"]["status"] == "committed", out

    bad = client.runs.wait(None, "mnemon_write_worker", input={"candidate": {"content": ""}})
    assert bad["error"].startswith("invalid candidate"), bad

    out = client.runs.wait(None, "mnemon_recall", input={"query": "staging database host"})
    assert fact in [r["content"] for r in out["output"]["results"]], out

    out = client.runs.wait(None, "mnemon_agent_query", input={"query": "staging database host"})
    cited = {c["id"] for c in out["answer"]["citations"]}
    assert cited
    assert cited <= {e["id"] for e in out["evidence"]}


def test_store_endpoints_go_through_the_facade(client, server: Served) -> None:  # type: ignore[no-untyped-def]
    ns = ["served", uuid.uuid4().hex[:8]]
    client.store.put_item(ns, "tea", {"text": "The user drinks green tea every morning."})
    client.store.put_item(ns, "bike", {"text": "The user commutes by bicycle."})
    assert client.store.get_item(ns, "tea")["value"] == {
        "text": "The user drinks green tea every morning."
    }
    found = client.store.search_items(ns[:1], query="what does the user drink?", limit=5)
    keys = [i["key"] for i in found["items"]]
    assert keys[:1] == ["tea"], found
    client.store.delete_item(ns, "bike")
    assert client.store.get_item(ns, "bike") is None
    # The facade's items are Memory Space content: the host sees them too.
    with Mnemon.open(server.root) as mem:
        assert any(
            "green tea" in r.content for r in mem.spaces.search("green tea", limit=5).results
        )


def test_thread_delete_removes_checkpoints(client) -> None:  # type: ignore[no-untyped-def]
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, "mnemon_agent", input=_user("just saying hi"))
    assert client.threads.get_history(thread, limit=5)
    client.threads.delete(thread)
    with pytest.raises(httpx.HTTPStatusError):
        client.threads.get_state(thread)


def test_idle_review_runs_as_a_delayed_server_run(client) -> None:  # type: ignore[no-untyped-def]
    thread = client.threads.create()["thread_id"]
    # Two turns with an explicit save and 150+ user characters: score 3 + 2 = 5, admitted.
    client.runs.wait(
        thread,
        "mnemon_agent",
        input=_user(
            "remember that the release train leaves every second Tuesday at noon UTC, "
            "from the main branch"
        ),
    )
    client.runs.wait(
        thread,
        "mnemon_agent",
        input=_user(
            "I prefer short status updates written as bullet points; please keep them under "
            "ten lines"
        ),
    )
    reviews = _review_runs(client, thread, wait_for=1)
    assert [r["status"] for r in reviews] == ["success"], reviews
    state = client.threads.get_state(review_thread_id(thread))
    assert state["values"]["outcome"]["action"] in {"changed", "skipped"}, state["values"]


def test_a_new_turn_rolls_the_pending_review_back(client) -> None:  # type: ignore[no-untyped-def]
    thread = client.threads.create()["thread_id"]
    for text in (
        "remember that the on-call rotation changes every Monday morning at nine, Berlin time",
        "our incident channel is #ops-fire and the pager escalates to the lead after ten minutes",
    ):
        client.runs.wait(thread, "mnemon_agent", input=_user(text))
    pending = client.runs.list(review_thread_id(thread))
    assert [r["status"] for r in pending] == ["pending"]
    # The next turn begins within the delay: the pending review is rolled back (deleted).
    client.runs.wait(thread, "mnemon_agent", input=_user("thanks, that is all for now"))
    runs = _review_runs(client, thread, wait_for=1)
    assert pending[0]["run_id"] not in {r["run_id"] for r in runs}
    assert [r["status"] for r in runs] == ["success"], runs


def _review_runs(client, thread: str, *, wait_for: int) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 30
    while True:
        runs = client.runs.list(review_thread_id(thread))
        done = [r for r in runs if r["status"] not in ("pending", "running")]
        if len(done) >= wait_for and len(done) == len(runs):
            return runs
        if time.monotonic() > deadline:
            raise AssertionError(f"review runs did not finish: {runs}")
        time.sleep(0.5)


# --- control plane on the served port --------------------------------------------------------


def test_control_plane_is_mounted_on_the_server(server: Served) -> None:
    status = http.get(f"{server.url}/mnemon/api/status")
    assert status.status_code == 200, status.text
    added = http.post(
        f"{server.url}/mnemon/api/runtime",
        json={"action": "add", "target": "user", "content": "Prefers metric units."},
    )
    assert added.status_code == 200, added.text
    assert added.json()["status"] == "committed"
    listed = http.get(f"{server.url}/mnemon/api/runtime").json()
    assert "Prefers metric units." in json.dumps(listed)
    page = http.get(f"{server.url}/mnemon/")
    assert page.status_code == 200
    assert "<html" in page.text.lower()
    assert http.get(f"{server.url}/mnemon/openapi.json").json()["paths"]


def test_control_plane_bad_input_is_a_4xx_json(server: Served) -> None:
    bad = http.post(
        f"{server.url}/mnemon/api/runtime",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert 400 <= bad.status_code < 500
    assert "message" in bad.json()
    wrong = http.post(
        f"{server.url}/mnemon/api/runtime", json={"action": "explode", "target": "user"}
    )
    assert wrong.status_code == 422
    assert wrong.json()["error"]
    malformed = http.get(f"{server.url}/mnemon/api/documents/no-such-document")
    assert malformed.status_code == 422
    assert "UUID" in malformed.json()["message"]
    missing = http.get(f"{server.url}/mnemon/api/documents/{uuid.uuid4()}")
    assert missing.status_code == 404


def test_a_write_from_a_non_loopback_peer_is_refused(server: Served) -> None:
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to connect from")
    remote = f"http://{address}:{server.port}"
    refused = http.post(
        f"{remote}/mnemon/api/runtime",
        json={"action": "add", "target": "memory", "content": "from afar"},
        headers={"X-Forwarded-For": "127.0.0.1"},  # spoofing does not help
    )
    assert refused.status_code in (401, 403), refused.text
    assert refused.json()["error"]
    with Mnemon.open(server.root) as mem:
        assert "from afar" not in [e.content for e in mem.runtime.entries("memory")]


def test_read_only_server_refuses_every_mutation(tmp_path: Path) -> None:
    root = tmp_path / "ro"
    with Mnemon.open(root) as mem:
        mem.runtime.add("memory", "Seeded before the server went read-only.")
        before = (root / "runtime" / "memories.json").read_bytes()
    with serve(root, env={"MNEMON_WRITE_ENABLED": "false"}) as served:
        assert http.get(f"{served.url}/mnemon/api/runtime").status_code == 200
        refused = http.post(
            f"{served.url}/mnemon/api/runtime",
            json={"action": "add", "target": "memory", "content": "should not land"},
        )
        assert refused.status_code == 403
        assert refused.json()["error"] == "read-only"
        client = get_sync_client(url=served.url, api_key=None)
        out = client.runs.wait(
            None, "mnemon_write_worker", input={"candidate": {"content": "x y z"}}
        )
        assert out.get("error"), out
    assert (root / "runtime" / "memories.json").read_bytes() == before


# --- scale-out: PostgreSQL + a `chroma run` server -------------------------------------------


def test_scale_out_on_postgres_and_a_chroma_server(
    tmp_path: Path, postgres_url: str, chroma_server: tuple[str, int]
) -> None:
    host, port = chroma_server
    root = tmp_path / "scaled"
    args = ("--postgres", postgres_url, "--chroma", f"{host}:{port}")
    with serve(root, args=args) as served:
        api = f"{served.url}/mnemon/api"
        name = f"vectors-{uuid.uuid4().hex[:6]}"
        created = http.post(f"{api}/spaces", json={"name": name, "provider_id": "chroma"})
        assert created.status_code == 200, created.text
        space = created.json()["space"]["id"]
        fact = "The payment service retries webhooks three times with backoff."
        stored = http.post(f"{api}/spaces/{space}/memories", json={"content": fact})
        assert stored.status_code == 200, stored.text
        found = http.post(
            f"{api}/recall",
            json={"query": "payment service retries webhooks", "space_ids": [space]},
        )
        assert fact in [r["content"] for r in found.json()["results"]], found.text

        client = get_sync_client(url=served.url, api_key=None)
        thread = client.threads.create()["thread_id"]
        client.runs.wait(thread, "mnemon_agent", input=_user("remember that prod is eu-west-1"))
        assert client.threads.get_history(thread, limit=5)

    # Checkpoints and the spaces catalog live in PostgreSQL, vectors on the Chroma server.
    import chromadb
    import sqlalchemy as sa

    engine = sa.create_engine(postgres_url)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT count(*) FROM mnemos_lg_checkpoints WHERE thread_id = :t"),
            {"t": thread},
        ).scalar()
    engine.dispose()
    assert rows
    assert rows > 0
    assert not (root / "mnemon.db").exists()
    remote = chromadb.HttpClient(host=host, port=port)
    assert any(c.count() for c in remote.list_collections())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--postgres", "mysql://u@h/db"), "--postgres must be a PostgreSQL URL"),
        (("--chroma", "no-port"), "--chroma must be HOST:PORT"),
        (("--chroma", "host:99999"), "--chroma must be HOST:PORT"),
    ],
)
def test_mnemon_serve_refuses_bad_targets_before_starting(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "langgraph_mnemon.cli",
            "--root",
            str(tmp_path / "m"),
            "serve",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert message in out.stderr
    assert not (tmp_path / "m" / "server").exists()  # nothing was started or written
