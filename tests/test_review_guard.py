"""Issue 13, item 6: host-enforced idle-review guards and review activity that survives a
restart.

Every write of a review pass (model and heuristic path) goes through one gate: the kernel (a
review is an automatic trigger), then the one-layer guard (the first admitted Document or
MEMORY.md call claims the pass even when it fails), then the write. Real storage roots, real
LangGraph runs (create_agent with the middleware, the review graph, the served review graph),
SQLite and PostgreSQL for the persisted activity.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, messages_to_dict
from review_support import grep, read, shell, wait_for

from langgraph_mnemon import Mnemon
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import StorageError
from langgraph_mnemon.graphs import build_review_graph
from langgraph_mnemon.memory_layers.activity import (
    ReviewGate,
    ReviewSettings,
    SavedActivity,
    TurnActivity,
)
from langgraph_mnemon.memory_layers.activity_store import SqlActivityStore
from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.reviews import BackgroundReviews
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

QUIET = {"chroma": {"enabled": False}, "embedding": {"enabled": False}}
REMEMBER = "Please remember that releases are cut on Tuesdays."


def _open(root: Path, **settings: Any) -> Mnemon:
    return Mnemon.open(root, workspace=root.parent, **{**QUIET, **settings})


@pytest.fixture
def mem(tmp_path: Path) -> Any:
    m = _open(tmp_path / "root")
    yield m
    m.close()


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith("mnemon.db")
    }


def _tool_results(model: ScriptedChatModel) -> list[dict[str, Any]]:
    return [json.loads(m.content) for m in model.calls[-1] if m.type == "tool"]


def _review(mem: Mnemon, responses: list[Any]) -> tuple[dict[str, Any], ScriptedChatModel]:
    """One model pass of the review graph, run as the schedulers run it (automatic)."""
    model = ScriptedChatModel(responses=responses)
    with acting("automatic"):
        out = build_review_graph(mem, model).invoke({"messages": [HumanMessage(REMEMBER)]})
    return out, model


# --- the one-layer guard, counted by the host -----------------------------------------------


def test_item6_a_document_call_claims_the_pass_even_when_it_fails(mem: Mnemon) -> None:
    before = _files(mem.root)
    out, model = _review(
        mem,
        [
            tool_call("mnemon_document_create", {"title": "", "content": "No title."}, "c1"),
            tool_call(
                "mnemon_runtime_memory",
                {"action": "add", "target": "memory", "content": "Releases on Tuesdays."},
                "c2",
            ),
            tool_call(
                "mnemon_runtime_memory",
                {"action": "add", "target": "user", "content": "Works in UTC+2."},
                "c3",
            ),
            tool_call("mnemon_review_result", {"action": "changed"}, "c4"),
        ],
    )
    failed_create, refused_memory, user = _tool_results(model)
    assert failed_create["error"] == "invalid-input"  # the create failed ...
    assert refused_memory["error"] == "refused"  # ... and still claimed the pass
    assert "one layer per pass" in refused_memory["message"]
    assert user["status"] == "committed"  # USER.md stays independent
    assert mem.documents.list("all") == []
    assert mem.runtime.entries("memory") == []
    assert [e.content for e in mem.runtime.entries("user")] == ["Works in UTC+2."]
    assert out["outcome"].refused == [refused_memory]
    assert set(_files(mem.root)) - set(before) <= {"runtime/USER.md", "runtime/memories.json"}


def test_item6_a_memory_call_claims_the_pass_even_when_it_fails(mem: Mnemon) -> None:
    out, model = _review(
        mem,
        [
            tool_call(
                "mnemon_runtime_memory",
                {"action": "remove", "target": "memory", "old_text": "nothing like this"},
                "c1",
            ),
            tool_call(
                "mnemon_document_create",
                {"title": "Release process", "content": "Cut on Tuesdays."},
                "c2",
            ),
            tool_call("mnemon_review_result", {"action": "changed"}, "c3"),
        ],
    )
    no_match, refused_doc = _tool_results(model)
    assert no_match["error"] == "no-match"
    assert refused_doc["error"] == "refused"
    assert "already changed MEMORY.md" in refused_doc["message"]
    assert mem.documents.list("all") == []
    assert out["outcome"].action == "skipped"  # nothing committed


def test_item6_a_kernel_refusal_claims_nothing(mem: Mnemon) -> None:
    # MEMORY.md is manual: the review (automatic) may not change it; the pass stays unclaimed.
    mem.config.layers.runtime.participation.write = "manual"
    out, model = _review(
        mem,
        [
            tool_call(
                "mnemon_runtime_memory",
                {"action": "add", "target": "memory", "content": "Releases on Tuesdays."},
                "c1",
            ),
            tool_call(
                "mnemon_document_create",
                {"title": "Release process", "content": "Cut on Tuesdays."},
                "c2",
            ),
            tool_call("mnemon_review_result", {"action": "changed"}, "c3"),
        ],
    )
    refused, created = _tool_results(model)
    assert refused["error"] == "channel-manual"
    assert refused["decision"]["trigger"] == "automatic"
    assert refused["decision"]["setting"] == "layers.runtime.participation.write"
    assert created["status"] == "committed"
    assert mem.runtime.entries() == []
    assert [d.title for d in mem.documents.list("active")] == ["Release process"]
    assert out["outcome"].action == "changed"
    assert out["outcome"].refused == [refused]


def test_item6_the_heuristic_path_goes_through_the_same_gate(mem: Mnemon) -> None:
    graph = build_review_graph(mem)  # no model: explicit requests only
    messages = {
        "messages": [HumanMessage(REMEMBER + " Also remember I work from Lisbon.")],
    }
    mem.config.layers.runtime.participation.write = "off"
    before = _files(mem.root)
    with acting("automatic"):
        out = graph.invoke(messages)
    outcome = out["outcome"]
    assert outcome.action == "skipped"  # refused writes are answers: the pass completed
    assert [r["error"] for r in outcome.refused] == ["channel-off", "channel-off"]
    assert _files(mem.root) == before
    mem.config.layers.runtime.participation.write = "automatic"
    with acting("automatic"):
        out = graph.invoke(messages)
    assert out["outcome"].action == "changed"
    assert [e.content for e in mem.runtime.entries("memory")] == ["Releases are cut on Tuesdays."]
    assert [e.content for e in mem.runtime.entries("user")] == ["I work from Lisbon."]


# --- the review runs as an automatic trigger --------------------------------------------------


def _busy_turn() -> list[Any]:
    return [
        tool_call("shell", {"cmd": "make"}, "a"),
        tool_call("read", {"path": "x"}, "b"),
        tool_call("grep", {"pattern": "y"}, "c"),
        "Done.",
    ]


def _agent(mem: Mnemon) -> Any:
    model = ScriptedChatModel(responses=_busy_turn())
    return create_agent(model, tools=[shell, read, grep], middleware=[mem.middleware()])


def test_item6_the_background_review_is_refused_by_manual_channels(tmp_path: Path) -> None:
    mem = _open(tmp_path / "root", layers={"runtime": {"participation": {"write": "manual"}}})
    try:
        gate = ReviewGate(ReviewSettings(delay_seconds=0.05, min_interval_seconds=0))
        reviews = mem._reviews = BackgroundReviews(mem, gate)  # a short debounce for the test
        text = REMEMBER + " " + "Context. " * 20
        _agent(mem).invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": "t"}})
        assert wait_for(lambda: reviews.outcomes)
        _thread, outcome = reviews.outcomes[0]
        assert outcome.action == "skipped"
        assert [r["error"] for r in outcome.refused] == ["channel-manual"]
        assert mem.runtime.entries() == []  # the same add from the Python API is admitted:
        assert mem.runtime.add("memory", "Releases are cut on Tuesdays.").committed
    finally:
        mem.close()


def test_item6_a_review_is_automatic_whoever_schedules_it(tmp_path: Path) -> None:
    # Scheduled from plain application code (an explicit context): the pass itself still runs
    # as an automatic trigger, so the manual channel refuses it.
    mem = _open(tmp_path / "root", layers={"runtime": {"participation": {"write": "manual"}}})
    try:
        gate = ReviewGate(ReviewSettings(delay_seconds=0.05, min_interval_seconds=0))
        reviews = mem._reviews = BackgroundReviews(mem, gate)
        messages = [HumanMessage(REMEMBER + " " + "Context. " * 20), AIMessage("Noted.")]
        busy = TurnActivity(user_text=messages[0].content, tool_calls=("shell", "read", "grep"))
        assert reviews.turn_finished("t", messages, busy) is not None
        assert wait_for(lambda: reviews.outcomes)
        outcome = reviews.outcomes[0][1]
        assert [r["error"] for r in outcome.refused] == ["channel-manual"]
        assert mem.runtime.entries() == []
    finally:
        mem.close()


@pytest.mark.asyncio
async def test_item6_the_served_review_graph_runs_automatic(tmp_path: Path) -> None:
    from langgraph_mnemon.reviews import ServerReviews
    from langgraph_mnemon.server import set_shared_host

    mem = _open(tmp_path / "root", layers={"runtime": {"participation": {"write": "manual"}}})
    try:
        set_shared_host(mem)  # the served module builds its graphs over the shared host
        from langgraph_mnemon.server import graphs as served

        gate = ReviewGate(ReviewSettings(delay_seconds=0, min_interval_seconds=0))
        reviews = ServerReviews(gate, "http://127.0.0.1:9", host=mem)  # nothing is scheduled
        mem.set_reviews(reviews)
        for turn in (REMEMBER, "more work", "and more"):
            gate.record_turn("t", TurnActivity(user_text=turn, tool_calls=("shell", "read")))
        assert gate.on_turn_end("t") is not None
        transcript = messages_to_dict([HumanMessage(REMEMBER), AIMessage("Noted.")])
        # The row a finished turn writes; the delayed server run carries its token.
        job = reviews.queue.schedule(
            "t", Scope(), transcript, delay=0, owner="test", lease_seconds=60
        )
        out = await served._idle_review(mem).ainvoke({"thread_id": "t", "token": job.token})
        assert out["outcome"]["action"] == "skipped", out
        assert [r["error"] for r in out["outcome"]["refused"]] == ["channel-manual"]
        assert mem.runtime.entries() == []
        assert gate.attempts("t") == 1
    finally:
        set_shared_host(None)
        mem.close()


# --- review activity survives a restart ------------------------------------------------------


def test_item6_review_activity_survives_a_restart(tmp_path: Path, database_url: str) -> None:
    root = tmp_path / "root"
    mem = _open(root, database_url=database_url)
    try:
        _agent(mem).invoke(
            {"messages": [HumanMessage(REMEMBER)]}, {"configurable": {"thread_id": "t"}}
        )
        first = mem.review_gate.activity("t")
        score, admitted = first.score(), first.admitted()
        assert admitted
        assert [t.tool_calls for t in first.turns] == [("shell", "read", "grep")]
    finally:
        mem.close()  # the armed timer (30 s) dies with the host; the activity must not

    mem = _open(root, database_url=database_url)
    try:
        gate = mem.review_gate
        restored = gate.activity("t")
        assert restored.score() == score
        assert restored.admitted() == admitted
        assert [(t.user_chars, t.explicit_save) for t in restored.turns] == [(len(REMEMBER), True)]
        with mem.database.read() as conn:  # signals only: the user's words are not kept
            saved = conn.execute(sa.text("SELECT turns FROM mnemon_review_activity")).scalar()
        assert "Tuesdays" not in saved
        gate.record_turn("t", TurnActivity(user_text="and one more", tool_calls=("edit",)))
        assert gate.on_turn_end("t") is not None  # eligible and admitted: a review is due
        assert gate.on_fire("t", gate.generation("t")).action == "run"
        gate.on_review_finished("t", gate.generation("t"), success=False)  # failure keeps it
        attempted = gate.last_attempt_at("t")
    finally:
        mem.close()

    mem = _open(root, database_url=database_url)
    try:
        gate = mem.review_gate
        assert gate.attempts("t") == 1
        assert gate.last_attempt_at("t") == attempted
        assert len(gate.activity("t").turns) == 2
        # The minimum interval (300 s) counts from the attempt before the restart.
        delay = gate.on_turn_end("t")
        assert delay is not None
        assert delay > 250
        assert gate.on_fire("t", gate.generation("t")).action == "reschedule"
    finally:
        mem.close()


def test_item6_a_completed_review_clears_the_saved_activity(tmp_path: Path) -> None:
    root = tmp_path / "root"
    mem = _open(root)
    try:
        fast = ReviewSettings(delay_seconds=0.05, min_interval_seconds=0)
        gate = ReviewGate(fast, store=SqlActivityStore(mem.database))  # as the host builds it
        reviews = mem._reviews = BackgroundReviews(mem, gate)
        text = REMEMBER + " " + "Context. " * 20
        _agent(mem).invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": "t"}})
        assert wait_for(lambda: reviews.outcomes)
        assert reviews.outcomes[0][1].action == "changed"
        assert wait_for(lambda: gate.last_review_at("t") is not None)
    finally:
        mem.close()
    mem = _open(root)
    try:
        assert mem.review_gate.activity("t").turns == []  # success cleared it, durably
        assert mem.review_gate.attempts("t") == 1
        assert mem.review_gate.last_review_at("t") is not None
    finally:
        mem.close()


def test_item6_a_read_only_host_keeps_review_activity_in_memory_only(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with _open(root) as mem:
        mem.runtime.add("memory", "Seed.")
    mem = _open(root, write_enabled=False)
    try:
        before = _files(root)
        db_before = (root / "mnemon.db").exists()
        mem.review_gate.record_turn("t", TurnActivity(user_text=REMEMBER))
        assert len(mem.review_gate.activity("t").turns) == 1
        assert _files(root) == before
        assert (root / "mnemon.db").exists() == db_before
    finally:
        mem.close()


def test_item6_a_failing_activity_store_never_stops_the_gate(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Down:
        def load(self, thread_id: str) -> SavedActivity | None:
            raise StorageError("database is down", code="database-unavailable")

        def save(self, thread_id: str, saved: SavedActivity) -> None:
            raise StorageError("database is down", code="database-unavailable")

    gate = ReviewGate(ReviewSettings(), store=Down(), clock=lambda: 0.0)
    for _ in range(2):
        gate.record_turn("t", TurnActivity(user_text=REMEMBER, tool_calls=("a", "b", "c", "d")))
    assert gate.activity("t").admitted()  # kept in memory
    assert gate.on_turn_end("t") is not None
    assert "activity of a thread not saved" in caplog.text


@pytest.mark.parametrize(
    ("layers", "active"),
    [
        ({}, True),
        ({"runtime": {"participation": {"write": "manual"}}}, True),  # Documents still admit
        (
            {
                "runtime": {"participation": {"write": "manual"}},
                "documents": {"participation": {"write": "off"}},
            },
            False,
        ),
        ({"runtime": {"enabled": False}, "documents": {"enabled": False}}, False),
    ],
)
def test_item6_no_review_is_scheduled_when_the_kernel_admits_none_of_its_writes(
    tmp_path: Path, layers: dict[str, Any], active: bool
) -> None:
    """A review that could write nothing would only spend a model call: the gate is inactive,
    and a live switch (PATCH /settings calls settings_changed) updates it."""
    mem = _open(tmp_path / "root", layers=layers)
    try:
        assert mem.review_gate.settings.active is active
        mem.config.layers.runtime.enabled = True
        mem.config.layers.runtime.participation.write = "automatic"
        mem.settings_changed()
        assert mem.review_gate.settings.active is True
    finally:
        mem.close()
