"""Agent query graph: evidence-only answers with citations filtered to real rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_mnemon import Mnemon
from langgraph_mnemon.graphs.agent_query import build_agent_query_graph
from langgraph_mnemon.testing import ScriptedChatModel, tool_call


@pytest.fixture
def mem(tmp_path: Path) -> Mnemon:
    m = Mnemon.open(tmp_path / "root")
    space = m.spaces.create_space("Ops", "Deploys and infrastructure", active=True).space
    assert space is not None
    m.spaces.remember("Deploys go through the staging cluster first.", space_id=space.id)
    m.spaces.remember("Production deploys need two approvals.", space_id=space.id)
    m.spaces.remember("The cafeteria opens at eight.", space_id=space.id)
    yield m
    m.close()


def test_citations_are_filtered_to_real_rows(mem: Mnemon) -> None:
    evidence = mem.spaces.search("deploys approvals staging").results
    real = evidence[0]
    model = ScriptedChatModel(
        responses=[
            tool_call(
                "mnemon_query_answer",
                {
                    "answer": "Staging first, then two approvals.",
                    "citations": [
                        {"memory_body_id": real.space_id, "id": real.id},
                        {"memory_body_id": real.space_id, "id": real.id},  # repeated
                        {"memory_body_id": real.space_id, "id": "made-up"},
                        {"memory_body_id": "other-space", "id": real.id},
                    ],
                },
            )
        ]
    )
    out = build_agent_query_graph(mem.spaces, model).invoke({"query": "deploys approvals staging"})
    assert out["answer"].answer == "Staging first, then two approvals."
    assert [(c.memory_body_id, c.id) for c in out["answer"].citations] == [(real.space_id, real.id)]
    # The worker saw only the evidence and had only its result tool.
    assert [t["function"]["name"] for t in model.bound_tools] == ["mnemon_query_answer"]
    assert "Deploys go through the staging cluster first." in model.calls[0][1].content


def test_heuristic_answer_is_the_evidence(mem: Mnemon) -> None:
    out = build_agent_query_graph(mem.spaces).invoke({"query": "production deploys approvals"})
    answer = out["answer"]
    assert "two approvals" in answer.answer
    assert answer.citations
    assert all(c.memory_body_id for c in answer.citations)


def test_model_failure_and_bad_input(mem: Mnemon) -> None:
    failing = ScriptedChatModel(responses=[RuntimeError("down")])
    out = build_agent_query_graph(mem.spaces, failing).invoke({"query": "deploys"})
    assert "the answering model failed" in out["error"]
    bad = ScriptedChatModel(responses=[tool_call("mnemon_query_answer", {"citations": 5})])
    out = build_agent_query_graph(mem.spaces, bad).invoke({"query": "deploys"})
    assert "invalid result" in out["error"]
    out = build_agent_query_graph(mem.spaces).invoke({"query": ""})
    assert out["error"]
