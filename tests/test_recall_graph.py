"""The recall-refine graph: tool mode (one attempt per call) and standalone mode (judge model)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from test_recall_envelope import TieredProvider, remember

from langgraph_mnemon import Mnemon
from langgraph_mnemon.graphs.recall import REFINE_TOOL, build_recall_graph
from langgraph_mnemon.memory_layers.turns import (
    HINT_EXHAUSTED,
    HINT_REPLAY,
    HINT_SECOND,
    TurnRetrieval,
    TurnRetrievals,
)
from langgraph_mnemon.testing import ScriptedChatModel, tool_call


@pytest.fixture
def setup(tmp_path: Path) -> Any:
    mem = Mnemon.open(tmp_path / "root")
    provider = TieredProvider()
    mem.spaces.register_provider(provider)
    sid = mem.spaces.create_space("Ops", "", provider_id="tiered", active=True).space.id
    remember(mem, sid, "Deploys go through the staging cluster first.", 0.9)
    remember(mem, sid, "Production approvals come from the release manager.", 0.9)
    remember(mem, sid, "The cafeteria opens at eight.", 0.9)
    yield mem, provider, sid
    mem.close()


def test_tool_mode_one_attempt_per_call_and_shared_turn_budget(setup: Any) -> None:
    mem, provider, sid = setup
    turns = TurnRetrievals()
    graph = build_recall_graph(mem.spaces, turns=turns)
    base = {"turn_id": "thread-1:1", "granted_space_ids": [sid], "view_id": "v1"}

    first = graph.invoke({**base, "query": "staging deploys", "category": "fact"})
    assert [a.status for a in first["attempts"]] == ["searched"]
    out = first["output"]
    assert set(out) == {"query", "mode", "results", "hint", "evidence"}
    assert out["results"][0]["content"] == "Deploys go through the staging cluster first."
    assert out["evidence"]["view_id"] == "v1"

    replay = graph.invoke({"turn_id": "thread-1:1", "query": "STAGING, deploys?"})
    assert replay["attempts"][0].status == "replayed"
    assert replay["output"]["evidence"] == out["evidence"]
    assert provider.searches == 1

    second = graph.invoke({**base, "query": "production approvals"})
    assert second["attempts"][0].attempt == 2
    assert second["output"]["hint"] == HINT_SECOND
    third = graph.invoke({**base, "query": "cafeteria"})
    assert third["output"]["hint"] == HINT_EXHAUSTED
    assert provider.searches == 2
    # The same turn state is what the tools would use.
    assert len(turns.get("thread-1:1").attempts) == 2
    # A new turn starts with a fresh budget.
    fresh = graph.invoke({**base, "turn_id": "thread-1:2", "query": "cafeteria"})
    assert fresh["attempts"][0].attempt == 1
    assert provider.searches == 3


def test_ungranted_space_is_an_error_output_without_provider_call(setup: Any) -> None:
    mem, provider, sid = setup
    graph = build_recall_graph(mem.spaces)
    out = graph.invoke(
        {
            "query": "staging",
            "space_ids": ["elsewhere"],
            "turn_id": "t",
            "granted_space_ids": [sid],
        }
    )
    assert "outside pinned Source" in out["error"]
    assert out["output"]["error"] == "recall-rejected"
    assert provider.searches == 0
    missing = graph.invoke({"query": "staging"})
    assert "turn_id" in missing["error"]
    unknown = graph.invoke({"query": "staging", "turn_id": "never-begun"})
    assert unknown["output"]["error"] == "not-found"
    conflict = graph.invoke({"query": "x", "turn_id": "t", "granted_space_ids": [sid, "other"]})
    assert conflict["output"]["error"] == "revision-conflict"
    assert provider.searches == 0


def test_standalone_judge_submits_one_refinement(setup: Any) -> None:
    mem, provider, sid = setup
    judge = ScriptedChatModel(
        responses=[
            tool_call(
                REFINE_TOOL,
                {
                    "sufficient": False,
                    "query": "production approvals",
                    "reason": "approval owner missing",
                },
            )
        ]
    )
    graph = build_recall_graph(mem.spaces, judge)
    turn = TurnRetrieval([sid], view_id="v2")
    out = graph.invoke({"query": "staging deploys", "retrieval": turn, "limit": 1})
    assert [a.attempt for a in out["attempts"]] == [1, 2]
    assert out["output"]["query"] == "staging deploys"
    assert out["output"]["refined_query"] == "production approvals"
    contents = [r["content"] for r in out["output"]["results"]]
    assert contents == [
        "Deploys go through the staging cluster first.",
        "Production approvals come from the release manager.",
    ]
    assert provider.searches == 2
    # The judge had only its result tool and saw the admitted evidence as quoted data.
    assert [t["function"]["name"] for t in judge.bound_tools] == [REFINE_TOOL]
    assert "staging cluster first" in judge.calls[0][1].content
    # The turn budget is now closed: the standalone graph does not run a third query.
    again = graph.invoke({"query": "cafeteria", "retrieval": turn})
    assert again["attempts"][0].status == "exhausted"
    assert len(judge.calls) == 1


@pytest.mark.parametrize(
    ("reply", "note"),
    [
        (tool_call(REFINE_TOOL, {"sufficient": True}), "sufficient"),
        (tool_call(REFINE_TOOL, {"sufficient": False, "query": "Staging deploys!"}), "not mat"),
        (tool_call(REFINE_TOOL, {"sufficient": "maybe"}), "invalid result"),
        (AIMessage(content="no tool call"), "invalid result"),
        (RuntimeError("judge down"), "judge failed"),
    ],
)
def test_judge_without_a_valid_refinement_keeps_one_attempt(
    setup: Any, reply: Any, note: str
) -> None:
    mem, provider, sid = setup
    graph = build_recall_graph(mem.spaces, ScriptedChatModel(responses=[reply]))
    out = graph.invoke({"query": "staging deploys", "turn_id": "t", "granted_space_ids": [sid]})
    assert [a.attempt for a in out["attempts"]] == [1]
    assert note in out["judge_note"]
    assert "refined_query" not in out["output"]
    assert provider.searches == 1


def test_async_invocation_joins_concurrent_identical_calls(setup: Any) -> None:
    mem, provider, sid = setup
    provider.delay = 0.05
    judge = ScriptedChatModel(
        responses=[tool_call(REFINE_TOOL, {"sufficient": False, "query": "cafeteria hours"})]
    )
    turns = TurnRetrievals()
    tool_graph = build_recall_graph(mem.spaces, turns=turns)
    standalone = build_recall_graph(mem.spaces, judge, turns=turns)
    state = {"turn_id": "t", "granted_space_ids": [sid]}

    async def scenario() -> list[Any]:
        return await asyncio.gather(
            tool_graph.ainvoke({**state, "query": "staging deploys"}),
            tool_graph.ainvoke({**state, "query": "Staging  deploys."}),
        )

    a, b = asyncio.run(scenario())
    assert sorted([a["attempts"][0].status, b["attempts"][0].status]) == ["joined", "searched"]
    assert provider.searches == 1
    # A joined first attempt is not judged again; a fresh turn is.
    out = asyncio.run(standalone.ainvoke({**state, "turn_id": "t2", "query": "staging"}))
    assert [x.attempt for x in out["attempts"]] == [1, 2]
    assert out["output"]["refined_query"] == "cafeteria hours"
    assert provider.searches == 3


def test_runs_as_a_checkpointed_subgraph_with_a_turn_id(setup: Any) -> None:
    mem, provider, sid = setup

    class Parent(TypedDict, total=False):
        query: str
        turn_id: str
        granted_space_ids: list[str]
        output: dict[str, Any]

    turns = TurnRetrievals()
    parent = StateGraph(Parent)
    parent.add_node("recall", build_recall_graph(mem.spaces, turns=turns))
    parent.add_edge(START, "recall")
    parent.add_edge("recall", END)
    app = parent.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "thread-1"}}
    out = app.invoke(
        {"query": "staging deploys", "turn_id": "k", "granted_space_ids": [sid]}, config
    )
    assert out["output"]["results"][0]["content"].startswith("Deploys go through")
    again = app.invoke({"query": "staging deploys!", "turn_id": "k"}, config)
    assert again["output"]["hint"] == HINT_REPLAY
    assert again["output"]["evidence"] == out["output"]["evidence"]
    assert provider.searches == 1
