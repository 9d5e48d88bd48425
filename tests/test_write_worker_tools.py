"""The write worker gets only what its request needs (issue 13, item 4).

``mnemon_forget`` only for a request to forget or supersede (an explicit ``intent`` or the
request text), enforced by the host and not only by the schema list; at most
``MAX_WRITES_PER_RUN`` writes per run; the receipt lists every write (kind, space, id); the
worker's writes run under the trigger of whoever asked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_support import BASE, agent_bookkeeping, snapshot

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import ParticipationError
from langgraph_mnemon.graphs.write_worker import build_write_worker_graph
from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.memory_layers.write_worker import (
    MAX_WRITES_PER_RUN,
    WriteCandidate,
    asks_to_forget,
)
from langgraph_mnemon.testing import ScriptedChatModel, tool_call


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Mnemon]:
    with Mnemon.open(tmp_path / "root", **BASE) as m:
        yield m


def _ops(mem: Mnemon) -> str:
    created = mem.spaces.create_space("Ops", "Deploys and infrastructure", active=True)
    assert created.space is not None
    return created.space.id


def _bound(model: ScriptedChatModel) -> list[str]:
    return [t["function"]["name"] if "function" in t else t["name"] for t in model.bound_tools]


def _result(summary: str = "done") -> Any:
    return tool_call("mnemon_write_result", {"summary": summary, "action": "stored"}, "end")


@pytest.mark.parametrize(
    ("content", "intent", "forget"),
    [
        ("Deploys need two approvals.", None, False),
        ("Forget that deploys need two approvals.", None, True),
        ("Deploys no longer need two approvals.", None, True),
        ("Staging now uses port 5434 instead of 5433.", None, True),
        ("Deploys need two approvals.", "supersede", True),
        ("Deploys need two approvals.", "forget", True),
        ("Remember to forget nothing: keep every deploy log.", "remember", False),
    ],
)
def test_item4_forget_is_handed_only_when_the_request_asks(
    mem: Mnemon, content: str, intent: str | None, forget: bool
) -> None:
    _ops(mem)
    candidate = WriteCandidate(content=content, intent=intent)  # type: ignore[arg-type]
    assert asks_to_forget(candidate) is forget
    model = ScriptedChatModel(responses=[_result()])
    build_write_worker_graph(mem.spaces, model).invoke({"candidate": candidate})
    bound = _bound(model)
    assert ("mnemon_forget" in bound) is forget
    assert {"mnemon_remember", "mnemon_link", "mnemon_write_result"} <= set(bound)


def test_item4_an_unoffered_forget_is_refused_by_the_host(mem: Mnemon) -> None:
    ops = _ops(mem)
    kept = mem.spaces.remember("Deploys need two approvals.", space_id=ops)
    before = snapshot(mem.root, skip=agent_bookkeeping)
    model = ScriptedChatModel(
        responses=[
            tool_call("mnemon_forget", {"id": kept.id, "memory_body_id": ops}, "f"),
            _result(),
        ]
    )
    out = build_write_worker_graph(mem.spaces, model).invoke(
        {"candidate": WriteCandidate(content="Deploys need three approvals.")}
    )
    (answer,) = [m for m in model.calls[-1] if m.type == "tool"]
    assert '"tool-not-offered"' in answer.content
    assert out["receipt"].writes == ()
    assert snapshot(mem.root, skip=agent_bookkeeping).diff(before) == []


def test_item4_writes_per_run_are_limited_and_all_listed(mem: Mnemon) -> None:
    ops = _ops(mem)
    calls = [
        tool_call(
            "mnemon_remember", {"content": f"Fact number {i}.", "memory_body_id": ops}, f"r{i}"
        )
        for i in range(MAX_WRITES_PER_RUN + 2)
    ]
    model = ScriptedChatModel(responses=[*calls, _result("many")])
    out = build_write_worker_graph(mem.spaces, model, max_steps=10).invoke(
        {"candidate": WriteCandidate(content="Several facts.")}
    )
    answers = [m.content for m in model.calls[-1] if m.type == "tool"]
    assert sum('"write-limit"' in a for a in answers) == 2
    receipt = out["receipt"]
    assert len(receipt.writes) == MAX_WRITES_PER_RUN
    assert {(w.kind, w.space_id, w.status) for w in receipt.writes} == {
        ("remember", ops, "committed")
    }
    assert [w.id for w in receipt.writes] == list(receipt.memory_ids)
    stored = {row.content for row in mem.spaces.browse(ops, limit=50)}
    assert stored == {f"Fact number {i}." for i in range(MAX_WRITES_PER_RUN)}


def test_item4_the_receipt_lists_every_kind_of_write(mem: Mnemon) -> None:
    ops = _ops(mem)
    first = mem.spaces.remember("Deploys need two approvals.", space_id=ops)
    model = ScriptedChatModel(
        responses=[
            tool_call("mnemon_memory_body_create", {"name": "Releases", "description": "x"}, "c"),
            tool_call(
                "mnemon_remember",
                {"content": "Deploys need three approvals.", "memory_body_id": ops},
                "r",
            ),
            tool_call("mnemon_forget", {"id": first.id, "memory_body_id": ops}, "f"),
            _result("superseded"),
        ]
    )
    out = build_write_worker_graph(mem.spaces, model).invoke(
        {"candidate": WriteCandidate(content="Deploys need three approvals.", intent="supersede")}
    )
    writes = out["receipt"].writes
    assert [w.kind for w in writes] == ["create-space", "remember", "forget"]
    assert all(w.status == "committed" for w in writes)
    assert writes[0].id == writes[0].space_id != ops  # the space it created
    assert writes[2].id == first.id
    assert writes[1].id in out["receipt"].memory_ids


def test_item4_heuristic_receipt_lists_the_space_it_created(mem: Mnemon) -> None:
    receipt = mem.remember(WriteCandidate(content="The user likes short answers."))
    assert [w.kind for w in receipt.writes] == ["create-space", "remember"]
    (space,) = mem.spaces.list_spaces()
    assert receipt.writes[0].space_id == receipt.writes[1].space_id == space.id
    assert receipt.writes[1].id == receipt.memory_ids[0]


def test_item4_worker_writes_run_under_the_askers_trigger(tmp_path: Path) -> None:
    # Creating the first space is Memory Spaces maintenance; manual admits explicit only.
    manual = {**BASE, "layers": {"memory_spaces": {"participation": {"maintenance": "manual"}}}}
    with Mnemon.open(tmp_path / "model", **manual) as mem:
        before = snapshot(mem.root, skip=agent_bookkeeping)
        with acting("automatic"), pytest.raises(ParticipationError) as refused:
            mem.remember(WriteCandidate(content="Deploys need two approvals."))  # a model asked
        assert refused.value.decision is not None
        assert refused.value.decision["trigger"] == "automatic"
        assert refused.value.decision["channel"] == "maintenance"
        assert snapshot(mem.root, skip=agent_bookkeeping).diff(before) == []
        assert mem.remember(WriteCandidate(content="Deploys need two approvals.")).changed


def test_item4_worker_tools_follow_the_kernel(mem: Mnemon) -> None:
    _ops(mem)
    mem.config.layers.memory_spaces.participation.recall = "manual"
    mem.config.layers.memory_spaces.participation.maintenance = "off"
    candidate = WriteCandidate(content="Deploys need two approvals.")
    explicit = ScriptedChatModel(responses=[_result()])
    build_write_worker_graph(mem.spaces, explicit).invoke({"candidate": candidate})
    assert "mnemon_recall" in _bound(explicit)  # manual recall admits an explicit request
    assert "mnemon_memory_body_create" not in _bound(explicit)
    automatic = ScriptedChatModel(responses=[_result()])
    with acting("automatic"):
        build_write_worker_graph(mem.spaces, automatic).invoke({"candidate": candidate})
    assert "mnemon_recall" not in _bound(automatic)
