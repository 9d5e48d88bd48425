"""Write worker: heuristic routing, duplicates, model loop, honest receipts."""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import ReadOnlyError
from langgraph_mnemon.graphs.write_worker import build_write_worker_graph
from langgraph_mnemon.memory_layers.write_worker import WriteCandidate
from langgraph_mnemon.testing import ScriptedChatModel, tool_call


def _spaces(mem: Mnemon) -> tuple[str, str]:
    ops = mem.spaces.create_space("Ops", "Deploys, releases and infrastructure", active=True)
    food = mem.spaces.create_space("Lunch", "Team lunch places and food preferences", active=True)
    assert ops.space is not None
    assert food.space is not None
    return ops.space.id, food.space.id


def _contents(mem: Mnemon, space_id: str) -> list[str]:
    return [row.content for row in mem.spaces.browse(space_id, limit=50)]


def test_heuristic_picks_the_fitting_space_and_skips_duplicates(mem: Mnemon) -> None:
    ops, food = _spaces(mem)
    graph = build_write_worker_graph(mem.spaces)
    candidate = WriteCandidate(content="Production deploys need two approvals.", category="fact")
    out = graph.invoke({"candidate": candidate})
    receipt = out["receipt"]
    assert receipt.status == "committed"
    assert receipt.space_ids == (ops,)
    assert _contents(mem, ops) == ["Production deploys need two approvals."]
    assert _contents(mem, food) == []
    again = graph.invoke({"candidate": candidate})["receipt"]
    assert again.status == "skipped"
    assert "already stored" in again.message
    assert again.memory_ids == receipt.memory_ids
    assert len(_contents(mem, ops)) == 1


def test_heuristic_in_an_empty_root_creates_the_default_space(mem: Mnemon) -> None:
    out = build_write_worker_graph(mem.spaces).invoke(
        {"candidate": WriteCandidate(content="The user likes short answers.")}
    )
    assert out["receipt"].status == "committed"
    spaces = mem.spaces.list_spaces()
    assert len(spaces) == 1
    assert spaces[0].active  # activated by the committed write


def test_model_loop_writes_through_the_host(mem: Mnemon) -> None:
    ops, _ = _spaces(mem)
    model = ScriptedChatModel(
        responses=[
            tool_call("mnemon_memory_bodies", {}, "c1"),
            tool_call("mnemon_recall", {"query": "deploy approvals"}, "c2"),
            tool_call(
                "mnemon_remember",
                {"content": "Deploys need two approvals.", "memory_body_id": ops},
                "c3",
            ),
            tool_call(
                "mnemon_write_result",
                {"summary": "stored in Ops", "action": "stored", "memory_body_ids": [ops]},
                "c4",
            ),
        ]
    )
    out = build_write_worker_graph(mem.spaces, model).invoke(
        {"candidate": WriteCandidate(content="Deploys need two approvals.")}
    )
    assert "error" not in out, out.get("error")
    receipt = out["receipt"]
    assert (receipt.status, receipt.summary) == ("committed", "stored in Ops")
    assert _contents(mem, ops) == ["Deploys need two approvals."]
    tool_outputs = [m for m in model.calls[-1] if m.type == "tool"]
    assert "Ops" in tool_outputs[0].content  # the catalog reached the worker


def test_a_worker_that_claims_a_write_it_did_not_make(mem: Mnemon) -> None:
    ops, _ = _spaces(mem)
    model = ScriptedChatModel(
        responses=[
            tool_call(
                "mnemon_write_result",
                {"summary": "stored!", "action": "stored", "memory_body_ids": [ops]},
            )
        ]
    )
    out = build_write_worker_graph(mem.spaces, model).invoke(
        {"candidate": WriteCandidate(content="Deploys need two approvals.")}
    )
    assert out["receipt"].status == "skipped"
    assert out["receipt"].memory_ids == ()
    assert _contents(mem, ops) == []


@pytest.mark.parametrize(
    ("responses", "fragment"),
    [
        ([RuntimeError("model down")], "the write worker failed"),
        (["I stored it."], "without calling mnemon_write_result"),
        ([tool_call("mnemon_write_result", {"action": "maybe"})], "result was invalid"),
        ([tool_call("mnemon_recall", {"query": "x"}, f"c{i}") for i in range(3)], "all 2 steps"),
    ],
)
def test_misbehaving_workers_write_nothing(mem: Mnemon, responses: list, fragment: str) -> None:
    ops, food = _spaces(mem)
    graph = build_write_worker_graph(
        mem.spaces, ScriptedChatModel(responses=responses), max_steps=2
    )
    out = graph.invoke({"candidate": WriteCandidate(content="Deploys need two approvals.")})
    assert fragment in out["error"]
    assert out["receipt"].status == "skipped"
    assert _contents(mem, ops) == _contents(mem, food) == []


def test_bad_tool_arguments_come_back_as_tool_errors(mem: Mnemon) -> None:
    ops, _ = _spaces(mem)
    model = ScriptedChatModel(
        responses=[
            tool_call("mnemon_remember", {"content": "x", "memory_body_id": "nope"}, "c1"),
            tool_call("mnemon_remember", {"text": "wrong field"}, "c2"),
            tool_call("mnemon_write_result", {"action": "failed", "summary": "gave up"}, "c3"),
        ]
    )
    out = build_write_worker_graph(mem.spaces, model).invoke(
        {"candidate": WriteCandidate(content="x")}
    )
    outputs = [m.content for m in model.calls[-1] if m.type == "tool"]
    assert "not-found" in outputs[0] or "error" in outputs[0]
    assert "invalid arguments" in outputs[1]
    assert out["receipt"].status in ("failed", "skipped")
    assert _contents(mem, ops) == []


def test_read_only_rejects(tmp_path: Path) -> None:
    # Issue 13: the kernel's refusal is the typed error itself (not a failed write), raised
    # before the worker reads or writes anything.
    with Mnemon.open(tmp_path, write_enabled=False) as mem:
        graph = build_write_worker_graph(mem.spaces)
        with pytest.raises(ReadOnlyError, match="read-only"):
            graph.invoke({"candidate": WriteCandidate(content="anything")})
        assert mem.spaces.list_spaces() == []
