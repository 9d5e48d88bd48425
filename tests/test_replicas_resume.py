"""A turn interrupted on one server replica and resumed on another (issue 30, item 1).

Two real ``mnemon serve`` processes (``langgraph dev``) on one fresh PostgreSQL schema serve
a ``create_agent`` graph of our own (``tests/support/hitl_served.py``, added with
``MNEMON_SERVE_GRAPHS``): mnemon's tools and middleware plus ``HumanInTheLoopMiddleware``
gating a ``deploy`` tool. A run stops at the interrupt on replica A and is resumed with
``Command(resume=...)`` on replica B, driven with ``langgraph_sdk``. On B, recall and the
turn's budgets go on where A left them, every model call has the memory system sections and
the Wake A sent, and health stays clean. A control run resumed on A itself gives the answers
B must give.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from server_support import Served, http, serve
from support import hitl
from support.hitl import APPROVE, MEMORY

from langgraph_mnemon import Mnemon
from langgraph_mnemon.memory_layers.turns import HINT_EXHAUSTED, HINT_REPLAY
from langgraph_mnemon.server.launch import GRAPHS_ENV

pytestmark = [pytest.mark.timeout(420), pytest.mark.xdist_group("replicas_resume")]

GRAPH = "hitl_agent"
SERVED = Path(__file__).parent / "support" / "hitl_served.py"


@pytest.fixture(scope="module")
def replicas(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: str
) -> Iterator[tuple[Served, Served, str]]:
    """Two servers on one fresh PostgreSQL schema serving the HITL agent; the schema's URL."""
    from langgraph_mnemon.testing.postgres import fresh_schema

    tmp = tmp_path_factory.mktemp("resume")
    with fresh_schema(postgres_server) as url:
        # The served graph's runs work in the project named after it (project_from_graph).
        with Mnemon.open(tmp / "seed", database_url=url, chroma={"enabled": False}) as seeder:
            hitl.seed(seeder.scoped(project=GRAPH))
        env = {
            "MNEMON_DATABASE_URL": url,
            "MNEMON_CHROMA__ENABLED": "false",
            GRAPHS_ENV: f"{GRAPH}={SERVED}:graph",
        }
        with serve(tmp / "a", env=env) as first, serve(tmp / "b", env=env) as second:
            yield first, second, url


def _say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _results(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        m["tool_call_id"]: json.loads(m["content"])
        for m in messages
        if m["type"] == "tool" and str(m["content"]).startswith("{")
    }


def _normal(result: dict[str, Any]) -> dict[str, Any]:
    """A tool result without what differs between two runs (evidence ids and times)."""
    out = {k: v for k, v in result.items() if k != "evidence"}
    if "results" in out:
        out["results"] = [{k: v for k, v in r.items() if k != "created_at"} for r in out["results"]]
    return out


def _interrupted(client: Any) -> str:
    """A new thread whose turn stopped at the deploy approval; its id."""
    thread = str(uuid.uuid4())
    client.threads.create(thread_id=thread)
    client.runs.wait(thread, GRAPH, input=_say("Ship it to prod."))
    state = client.threads.get_state(thread)
    assert state["next"], state  # waiting for the approval
    assert state["values"]["mnemon_turn"], state["values"]
    return thread


def _resumed(client: Any, thread: str) -> list[dict[str, Any]]:
    client.threads.create(thread_id=thread, if_exists="do_nothing")  # the thread on this replica
    out = client.runs.wait(thread, GRAPH, command={"resume": APPROVE})
    assert isinstance(out, dict), out
    assert "messages" in out, out
    return out["messages"]


def _health(served: Served) -> dict[str, Any]:
    status = http.get(f"{served.url}/mnemon/api/status")
    assert status.status_code == 200, status.text
    return status.json()["health"]


def test_an_interrupt_on_one_replica_resumes_on_the_other(
    replicas: tuple[Served, Served, str],
) -> None:
    first, second, _ = replicas
    one, two = get_sync_client(url=first.url), get_sync_client(url=second.url)
    control = _resumed(one, _interrupted(one))  # resumed where it stopped
    thread = _interrupted(one)
    messages = _resumed(two, thread)  # resumed on the other replica
    got, want = _results(messages), _results(control)
    assert set(got) == {"r1", "d1", "r2", "r3", "l1", "d2", "r4"}, got
    assert {k: _normal(v) for k, v in got.items()} == {k: _normal(v) for k, v in want.items()}
    # Recall and the budgets went on where A left them: A's attempt replays on B with A's
    # evidence id, B's refinement is the second attempt, the third query is exhausted, Related
    # starts from a row A admitted, and A's Documents search is not run again.
    assert got["r1"]["results"], got["r1"]
    assert got["r2"]["evidence"]["id"] == got["r1"]["evidence"]["id"]
    assert got["r2"]["hint"] == HINT_REPLAY
    assert got["r3"]["evidence"]["id"] != got["r1"]["evidence"]["id"]
    assert got["r4"]["hint"] == HINT_EXHAUSTED
    assert "not_run" not in got["d1"]
    assert got["d2"]["not_run"] is True
    # Every model call on B saw the system sections and the Wake A sent (one in the thread).
    answers = [m for m in messages if m["type"] == "ai"]
    resumed = answers[2:]  # A made the first two calls (recall + search, then deploy)
    assert len(resumed) == 3, answers
    assert all(m["additional_kwargs"]["saw"] == {"sections": True, "wake": True} for m in answers)
    wakes = [m for m in messages if m["type"] == "human" and MEMORY in str(m["content"])]
    assert len(wakes) == 1
    assert resumed[-1]["content"].startswith("Approved")
    assert two.threads.get_state(thread)["values"]["mnemon_turn"] is None  # B ended the turn
    for served in (first, second):
        assert _health(served)["degraded"] is False, _health(served)


def test_the_next_turn_on_the_other_replica_sends_the_wake_only_when_it_changed(
    replicas: tuple[Served, Served, str],
) -> None:
    first, second, url = replicas
    one, two = get_sync_client(url=first.url), get_sync_client(url=second.url)
    thread = _interrupted(one)
    _resumed(two, thread)
    again = two.runs.wait(thread, GRAPH, input=_say("Thanks."))["messages"]
    assert len([m for m in again if m["type"] == "human" and MEMORY in str(m["content"])]) == 1
    with Mnemon.open(Path(first.root).parent / "writer", database_url=url) as writer:
        writer.scoped(project=GRAPH).runtime.add("memory", "Freeze deploys on Fridays.")
    later = one.runs.wait(thread, GRAPH, input=_say("And now?"))["messages"]
    fresh = [m for m in later[len(again) :] if "Freeze deploys" in str(m["content"])]
    assert len(fresh) == 1  # the changed memory: a new Wake, sent by A this time
    assert later[-1]["additional_kwargs"]["saw"]["sections"] is True
    for served in (first, second):
        assert _health(served)["degraded"] is False, _health(served)


# --- MNEMON_SERVE_GRAPHS (no server needed) -----------------------------------------------------


def test_serve_graphs_names_graphs_of_your_own(tmp_path: Path) -> None:
    from langgraph_mnemon.errors import InvalidInputError
    from langgraph_mnemon.server.launch import extra_graphs_from, write_config

    graphs = extra_graphs_from(f" {GRAPH}={SERVED}:graph ; other=pkg.module:agent ;")
    assert graphs == {GRAPH: f"{SERVED.resolve()}:graph", "other": "pkg.module:agent"}
    config = json.loads(write_config(tmp_path, extra_graphs=graphs).read_text())
    assert config["graphs"][GRAPH] == graphs[GRAPH]
    assert config["graphs"]["mnemon_agent"] == "langgraph_mnemon.server.graphs:agent"
    assert extra_graphs_from(None) == {} == extra_graphs_from("  ")
    for bad in (
        "no-equals-sign",
        f"mnemon_agent={SERVED}:graph",  # ours
        f"a={SERVED}:graph;a={SERVED}:graph",  # twice
        "bad id=pkg.module:graph",
        f"x={SERVED}",  # no attribute
        f"x={tmp_path / 'missing.py'}:graph",
    ):
        with pytest.raises(InvalidInputError, match=GRAPHS_ENV):
            extra_graphs_from(bad)
