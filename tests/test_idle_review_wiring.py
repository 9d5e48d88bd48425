"""End of turn schedules idle review in the background; a new turn cancels it."""

from __future__ import annotations

from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from review_support import edit, grep, read, shell, wait_for

from langgraph_mnemon import Mnemon
from langgraph_mnemon.memory_layers.activity import ReviewGate, ReviewSettings
from langgraph_mnemon.reviews import BackgroundReviews
from langgraph_mnemon.testing import ScriptedChatModel, tool_call


def _fast_reviews(mem: Mnemon) -> BackgroundReviews:
    gate = ReviewGate(ReviewSettings(delay_seconds=0.05, min_interval_seconds=0))
    mem._reviews = BackgroundReviews(mem, gate)  # a short debounce for the test
    return mem._reviews


def _busy_turn() -> list:
    return [
        tool_call("shell", {"cmd": "make"}, "a"),
        tool_call("read", {"path": "x"}, "b"),
        tool_call("grep", {"pattern": "y"}, "c"),
        tool_call("edit", {"path": "x"}, "d"),
        "Done.",
    ]


def test_a_busy_turn_is_reviewed_in_the_background(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    reviews = _fast_reviews(mem)
    model = ScriptedChatModel(responses=_busy_turn())
    agent = create_agent(
        model,
        tools=[shell, read, grep, edit],
        middleware=[mem.middleware()],
        checkpointer=mem.checkpointer(),
    )
    text = "Please remember that releases are cut on Tuesdays. " + "Context. " * 20
    agent.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": "t"}})
    assert wait_for(lambda: reviews.outcomes)
    thread, outcome = reviews.outcomes[0]
    assert (thread, outcome.action) == ("t", "changed")
    assert [e.content for e in mem.runtime.entries("memory")] == ["Releases are cut on Tuesdays."]
    assert reviews.gate.activity("t").turns == []  # success cleared the activity
    mem.close()


def test_a_new_turn_cancels_the_pending_review(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    gate = ReviewGate(ReviewSettings(delay_seconds=0.3, min_interval_seconds=0))
    mem._reviews = BackgroundReviews(mem, gate)
    model = ScriptedChatModel(responses=[*_busy_turn(), "quick answer"])
    agent = create_agent(
        model,
        tools=[shell, read, grep, edit],
        middleware=[mem.middleware()],
        checkpointer=mem.checkpointer(),
    )
    cfg = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("remember: tabs, not spaces " * 15)]}, cfg)
    agent.invoke({"messages": [HumanMessage("thanks")]}, cfg)  # within the debounce
    assert wait_for(lambda: mem.reviews.outcomes, timeout=3)
    assert len(mem.reviews.outcomes) == 1  # one review, after the last turn
    assert gate.attempts("t") == 1
    mem.close()


def test_no_review_when_writeback_is_off(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, writeback_mode="off")
    model = ScriptedChatModel(responses=_busy_turn())
    agent = create_agent(model, tools=[shell, read, grep, edit], middleware=[mem.middleware()])
    agent.invoke(
        {"messages": [HumanMessage("Please remember X. " * 20)]},
        {"configurable": {"thread_id": "t"}},
    )
    assert mem.review_gate.attempts("t") == 0
    assert not mem.reviews.outcomes
    mem.close()
