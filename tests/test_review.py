"""Idle review: guard, heuristic and model passes, tool set, and the asyncio scheduler."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langgraph_mnemon import Mnemon
from langgraph_mnemon.graphs import build_review_graph
from langgraph_mnemon.memory_layers.activity import ReviewGate, ReviewSettings, TurnActivity
from langgraph_mnemon.memory_layers.review import ReviewGuard, explicit_assertions
from langgraph_mnemon.reviews import IdleReviewScheduler
from langgraph_mnemon.testing import ScriptedChatModel, tool_call


@pytest.fixture
def mem(tmp_path: Path) -> Mnemon:
    m = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    yield m
    m.close()


def test_guard_one_layer_per_pass() -> None:
    guard = ReviewGuard()
    assert guard.admit("user") is None
    assert guard.admit("documents") is None
    assert guard.admit("documents") is None  # the same layer again is the persona's business
    assert "already created a Document" in (guard.admit("memory") or "")
    assert guard.admit("user") is None  # USER stays independent
    other = ReviewGuard()
    assert other.admit("memory") is None
    assert "already changed MEMORY.md" in (other.admit("documents") or "")


def test_explicit_assertions() -> None:
    found = explicit_assertions(
        [
            "Please remember that the API uses snake_case. Thanks!",
            "remember I prefer dark mode",
            "记住：发布前先跑 lint",
            "Don't remember any of this: the password is hunter2.",
            "What time is it?",
        ]
    )
    assert found == [
        ("memory", "The API uses snake_case."),
        ("user", "I prefer dark mode"),
        ("memory", "发布前先跑 lint"),
    ]


def test_heuristic_writes_only_explicit_requests(mem: Mnemon) -> None:
    graph = build_review_graph(mem)
    out = graph.invoke(
        {
            "messages": [
                HumanMessage("Please remember that releases are cut on Tuesdays."),
                AIMessage("Noted."),
                HumanMessage("Also remember I work in UTC+2."),
            ]
        }
    )
    assert out["outcome"].action == "changed"
    assert [e.content for e in mem.runtime.entries("memory")] == ["Releases are cut on Tuesdays."]
    assert [e.content for e in mem.runtime.entries("user")] == ["I work in UTC+2."]
    quiet = graph.invoke({"messages": [HumanMessage("What's 2+2?"), AIMessage("4")]})
    assert quiet["outcome"].action == "skipped"
    vetoed = graph.invoke(
        {"messages": [HumanMessage("remember X is Y"), HumanMessage("actually don't remember it")]}
    )
    assert vetoed["outcome"].action == "skipped"
    assert len(mem.runtime.entries()) == 2


def test_model_pass_tools_and_guard(mem: Mnemon) -> None:
    model = ScriptedChatModel(
        responses=[
            tool_call("mnemon_document_search", {"query": "release process"}, "c1"),
            tool_call(
                "mnemon_document_create",
                {"title": "Release process", "content": "Cut on Tuesdays; tag; publish."},
                "c2",
            ),
            tool_call(
                "mnemon_runtime_memory",
                {"action": "add", "target": "memory", "content": "Releases on Tuesdays."},
                "c3",
            ),
            tool_call(
                "mnemon_runtime_memory",
                {"action": "add", "target": "user", "content": "Works in UTC+2."},
                "c4",
            ),
            tool_call("mnemon_review_result", {"action": "changed", "summary": "doc + user"}, "c5"),
        ]
    )
    out = build_review_graph(mem, model).invoke(
        {"messages": [HumanMessage("We cut releases on Tuesdays. I work in UTC+2.")]}
    )
    assert "error" not in out, out.get("error")
    names = [t["function"]["name"] for t in model.bound_tools]
    assert names == [
        "mnemon_document_search",
        "mnemon_runtime_memory",
        "mnemon_document_create",
        "mnemon_review_result",
    ]
    assert [d.title for d in mem.documents.list("active")] == ["Release process"]
    assert mem.runtime.entries("memory") == []  # refused: the pass already created a Document
    assert [e.content for e in mem.runtime.entries("user")] == ["Works in UTC+2."]
    refused = [m for m in model.calls[-1] if m.type == "tool"][2]
    assert "one layer per pass" in refused.content
    assert out["outcome"].action == "changed"


def test_runtime_tool_absent_when_switched_off(mem: Mnemon) -> None:
    model = ScriptedChatModel(
        responses=[
            tool_call(
                "mnemon_runtime_memory",
                {"action": "add", "target": "user", "content": "x"},
                "c1",
            ),
            tool_call("mnemon_review_result", {"action": "skipped"}, "c2"),
        ]
    )
    out = build_review_graph(mem, model, runtime_memory=False).invoke(
        {"messages": [HumanMessage("hi")]}
    )
    assert "mnemon_runtime_memory" not in [t["function"]["name"] for t in model.bound_tools]
    assert mem.runtime.entries() == []
    assert out["outcome"].action == "skipped"


def test_failed_model_keeps_data(mem: Mnemon) -> None:
    out = build_review_graph(mem, ScriptedChatModel(responses=[RuntimeError("down")])).invoke(
        {"messages": [HumanMessage("remember everything")]}
    )
    assert out["outcome"].action == "failed"
    assert "review model failed" in out["error"]
    assert mem.runtime.entries() == []


def _eligible_turns() -> list[TurnActivity]:
    return [
        TurnActivity(user_text="do it", tool_calls=("shell",)),
        TurnActivity(user_text="more", tool_calls=("read", "grep")),
        TurnActivity(user_text="and", tool_calls=("edit",)),
    ]


def test_scheduler_debounces_cancels_and_clears() -> None:
    async def scenario() -> None:
        runs: list[str] = []

        async def review(thread: str) -> bool:
            runs.append(thread)
            return True

        settings = ReviewSettings(delay_seconds=0.05, min_interval_seconds=0)
        scheduler = IdleReviewScheduler(ReviewGate(settings), review)
        turns = _eligible_turns()
        scheduler.turn_finished("t", turns[0])
        scheduler.turn_finished("t", turns[1])
        assert scheduler.turn_finished("t", turns[2]) == 0.05
        scheduler.turn_started("t")  # a new turn cancels the timer
        await asyncio.sleep(0.1)
        assert runs == []
        scheduler.turn_finished("t", TurnActivity(user_text="ok"))  # re-armed
        await asyncio.sleep(0.1)
        assert runs == ["t"]
        assert scheduler.gate.activity("t").turns == []  # success cleared the activity
        await scheduler.aclose()

    asyncio.run(scenario())


def test_scheduler_aborts_a_running_review() -> None:
    async def scenario() -> None:
        started = asyncio.Event()

        async def review(thread: str) -> bool:
            started.set()
            await asyncio.sleep(10)
            return True

        gate = ReviewGate(ReviewSettings(delay_seconds=0.01, min_interval_seconds=0))
        scheduler = IdleReviewScheduler(gate, review)
        for turn in _eligible_turns():
            scheduler.turn_finished("t", turn)
        await asyncio.wait_for(started.wait(), 1)
        scheduler.turn_started("t")
        await asyncio.sleep(0.02)
        assert gate.activity("t").score().eligible  # aborted: activity kept
        assert gate.attempts("t") == 1
        await scheduler.aclose()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "reply",
    [
        tool_call("mnemon_review_result", {"action": "maybe"}),
        tool_call("mnemon_review_result", {"outcome": "changed"}),
        AIMessage(content="I think we are done."),
    ],
)
def test_malformed_review_results_write_nothing(mem: Mnemon, reply: AIMessage) -> None:
    out = build_review_graph(mem, ScriptedChatModel(responses=[reply])).invoke(
        {"messages": [HumanMessage("Please remember that builds use uv.")]}
    )
    assert out["outcome"].action == "failed"
    assert out["error"]
    assert mem.runtime.entries() == []
    assert mem.documents.list("active") == []


def test_plugin_messages_are_not_the_user(mem: Mnemon) -> None:
    cue = HumanMessage(
        "[MNEMON] remember to save only what the user asks to remember.",
        additional_kwargs={"mnemon": {"source": {"kind": "plugin", "form": "instructions"}}},
    )
    out = build_review_graph(mem).invoke({"messages": [cue, HumanMessage("What's 2+2?")]})
    assert out["outcome"].action == "skipped"
    assert mem.runtime.entries() == []
