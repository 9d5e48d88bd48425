"""Issue 30, item 2: an idle review never runs inside the agent's LangGraph run.

The turn hooks run inside the agent's run, whose context variables hold its configuration
(thread, checkpointer, namespace). A review started from there ran as a subgraph of the
agent: with LangGraph's ``SqliteSaver`` (no async methods) every review failed and health went
unhealthy; with an async-capable saver the review wrote its own checkpoints into the user's
thread, under ``model:<uuid>``. Each review now runs in a fresh context.

Real components: storage roots, SQLite files (``SqliteSaver``, the Mnemos saver), LangGraph's
``InMemorySaver``, real ``create_agent`` runs with a deterministic fake model.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from review_support import edit, grep, read, shell, wait_for

from langgraph_mnemon import Mnemon
from langgraph_mnemon.memory_layers.activity import ReviewGate, ReviewSettings
from langgraph_mnemon.memory_layers.activity_store import SqlActivityStore
from langgraph_mnemon.reviews import BackgroundReviews
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

QUIET = {"embedding": {"enabled": False}}
TEXT = "Please remember that releases are cut on Tuesdays. " + "Context. " * 20
DELAY = 0.4  # long enough to count the thread's checkpoints before the review runs


def _busy_turn() -> list[Any]:
    return [
        tool_call("shell", {"cmd": "make"}, "a"),
        tool_call("read", {"path": "x"}, "b"),
        tool_call("grep", {"pattern": "y"}, "c"),
        tool_call("edit", {"path": "x"}, "d"),
        "Done.",
    ]


@contextmanager
def _saver(kind: str, mem: Mnemon, tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    if kind == "sqlite":  # LangGraph's own: sync methods only
        conn = sqlite3.connect(tmp_path / "agent.db", check_same_thread=False)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()
    elif kind == "memory":
        yield InMemorySaver()
    else:
        yield mem.checkpointer()


def _host(tmp_path: Path) -> tuple[Mnemon, BackgroundReviews]:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, **QUIET)
    settings = ReviewSettings(delay_seconds=DELAY, min_interval_seconds=0)
    gate = ReviewGate(settings, store=SqlActivityStore(mem.database))  # as the host builds it
    reviews = BackgroundReviews(mem, gate)
    mem.set_reviews(reviews)
    return mem, reviews


def _namespaces(saver: BaseCheckpointSaver[Any], thread: str) -> list[str]:
    cfg = {"configurable": {"thread_id": thread}}
    return [c.config["configurable"]["checkpoint_ns"] for c in saver.list(cfg)]  # type: ignore[arg-type]


def _check_reviewed(
    mem: Mnemon, reviews: BackgroundReviews, count: Callable[[], list[str]], before: list[str]
) -> None:
    assert wait_for(lambda: reviews.outcomes, timeout=10), mem.health.report()
    assert [(t, o.action) for t, o in reviews.outcomes] == [("t", "changed")]
    assert [e.content for e in mem.runtime.entries("memory")] == ["Releases are cut on Tuesdays."]
    assert not mem.health.report().degraded, mem.health.report()
    time.sleep(0.2)  # anything the review might still write to the thread
    after = count()
    assert after == before, "the review wrote checkpoints into the user's thread"
    assert not [ns for ns in after if ns.startswith("model:")]
    assert set(after) == {""}


@pytest.mark.parametrize("kind", ["sqlite", "memory", "mnemos"])
def test_the_review_runs_whatever_checkpointer_the_agent_uses(tmp_path: Path, kind: str) -> None:
    mem, reviews = _host(tmp_path)
    try:
        with _saver(kind, mem, tmp_path) as saver:
            agent = create_agent(
                ScriptedChatModel(responses=_busy_turn()),
                tools=[shell, read, grep, edit],
                middleware=[mem.middleware()],
                checkpointer=saver,
            )
            agent.invoke({"messages": [HumanMessage(TEXT)]}, {"configurable": {"thread_id": "t"}})
            before = _namespaces(saver, "t")
            assert not reviews.outcomes  # still pending: the count above is the agent's own
            _check_reviewed(mem, reviews, lambda: _namespaces(saver, "t"), before)
    finally:
        mem.close()


@pytest.mark.parametrize("kind", ["memory", "mnemos"])
def test_an_async_agent_run_does_not_carry_its_context_into_the_review(
    tmp_path: Path, kind: str
) -> None:
    mem, reviews = _host(tmp_path)
    try:
        with _saver(kind, mem, tmp_path) as saver:
            agent = create_agent(
                ScriptedChatModel(responses=_busy_turn()),
                tools=[shell, read, grep, edit],
                middleware=[mem.middleware()],
                checkpointer=saver,
            )
            cfg = {"configurable": {"thread_id": "t"}}

            async def run() -> list[str]:
                await agent.ainvoke({"messages": [HumanMessage(TEXT)]}, cfg)
                return _namespaces(saver, "t")

            before = asyncio.run(run())
            _check_reviewed(mem, reviews, lambda: _namespaces(saver, "t"), before)
    finally:
        mem.close()


def test_a_review_sees_no_run_configuration_of_the_turn(tmp_path: Path) -> None:
    """The review model is called with no configuration of the agent's run."""
    from langchain_core.runnables.config import var_child_runnable_config

    seen: list[Any] = []

    class Spy(ScriptedChatModel):
        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            seen.append(var_child_runnable_config.get())
            return super()._generate(messages, stop, run_manager, **kw)

    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, **QUIET)
    try:
        gate = ReviewGate(ReviewSettings(delay_seconds=0.05, min_interval_seconds=0))
        review_model = Spy(responses=[tool_call("mnemon_review_result", {"action": "skipped"})])
        reviews = BackgroundReviews(mem, gate, review_model)
        mem.set_reviews(reviews)
        agent = create_agent(
            ScriptedChatModel(responses=_busy_turn()),
            tools=[shell, read, grep, edit],
            middleware=[mem.middleware()],
            checkpointer=InMemorySaver(),
        )
        agent.invoke({"messages": [HumanMessage(TEXT)]}, {"configurable": {"thread_id": "t"}})
        assert wait_for(lambda: reviews.outcomes, timeout=10), mem.health.report()
        assert seen, "the review model was not called"
        for config in seen:
            configurable = (config or {}).get("configurable", {})
            assert "thread_id" not in configurable, configurable
            assert configurable.get("__pregel_checkpointer") is None  # not the agent's saver
    finally:
        mem.close()
