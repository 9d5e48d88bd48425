"""USER compaction graph: model path, every kind of bad output, conflicts, heuristic path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from langgraph_mnemon.graphs import build_user_compaction_graph
from langgraph_mnemon.memory_layers.runtime import (
    CompactionProposal,
    RuntimeMemory,
    RuntimeMutation,
    heuristic_budget,
    heuristic_compaction,
    validate_proposal,
)
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

LIMIT = 140
ENTRIES = [
    ("Name is Ada Lovelace.", "critical"),
    ("Prefers tea.", "normal"),
    ("Prefers green tea in the morning.", "normal"),
    ("Lives in London.", "low"),
    ("Works on analytical engines.", "normal"),
]
PENDING = RuntimeMutation(
    action="add", target="user", content="Writes notes on Bernoulli numbers.", importance="normal"
)


def _files(root: Path) -> dict[str, bytes]:
    folder = root / "runtime"
    return {p.name: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def runtime(tmp_path: Path) -> RuntimeMemory:
    rm = RuntimeMemory(tmp_path, user_limit_bytes=LIMIT)
    for content, importance in ENTRIES:
        rm.add("user", content, importance=importance)  # type: ignore[arg-type]
    return rm


def _result(entries: list[dict[str, Any]], action: str = "compacted") -> AIMessage:
    return tool_call(
        "mnemon_compaction_result",
        {"summary": "merged", "action": action, "compacted_entries": entries},
    )


GOOD = [
    {"content": "Ada Lovelace.", "importance": "critical", "source_indexes": [1]},
    {"content": "Green tea mornings.", "importance": "normal", "source_indexes": [2, 3]},
    {"content": "London; engines.", "importance": "normal", "source_indexes": [4, 5]},
]


def test_overflow_is_detected(runtime: RuntimeMemory) -> None:
    plan = runtime.plan_maintenance(PENDING)
    assert plan.requires_maintenance
    assert plan.budget == 98 - 34 - 4


def test_model_path_commits_and_keeps_originals(runtime: RuntimeMemory, tmp_path: Path) -> None:
    model = ScriptedChatModel(responses=[_result(GOOD)])
    out = build_user_compaction_graph(runtime, model).invoke({"request": PENDING})
    assert "error" not in out, out.get("error")
    receipt = out["receipt"]
    assert receipt.status == "committed"
    assert [e.content for e in runtime.entries("user")] == [
        "Ada Lovelace.",
        "Green tea mornings.",
        "London; engines.",
        "Writes notes on Bernoulli numbers.",
    ]
    assert runtime.usage("user").used <= LIMIT
    # The compactor saw the numbered entries and the byte budget, and no data tools.
    prompt = model.calls[0]
    assert "1. [importance=critical] Name is Ada Lovelace." in prompt[1].content
    assert "60 UTF-8 bytes" in prompt[0].content
    assert [t["function"]["name"] for t in model.bound_tools] == ["mnemon_compaction_result"]
    # Originals merged away are kept locally, never dropped.
    archived = {r["entry"]["content"] for r in runtime.archived("user")}
    assert archived == {c for c, _ in ENTRIES}


BAD_OUTPUTS = {
    "missing index": _result(GOOD[:2]),
    "duplicate index": _result(
        [*GOOD[:2], {"content": "x", "importance": "normal", "source_indexes": [3, 4, 5]}]
    ),
    "out of range": _result(
        [*GOOD[:2], {"content": "x", "importance": "normal", "source_indexes": [4, 5, 6]}]
    ),
    "zero index": _result(
        [*GOOD[:2], {"content": "x", "importance": "normal", "source_indexes": [0, 4, 5]}]
    ),
    "lowered importance": _result(
        [{"content": "Ada.", "importance": "normal", "source_indexes": [1]}, *GOOD[1:]]
    ),
    "over budget": _result(
        [{"content": "A" * 60, "importance": "critical", "source_indexes": [1]}, *GOOD[1:]]
    ),
    "section sign": _result(
        [{"content": "Ada § L.", "importance": "critical", "source_indexes": [1]}, *GOOD[1:]]
    ),
    "no source indexes": _result(
        [*GOOD, {"content": "extra", "importance": "low", "source_indexes": []}]
    ),
    "failed action": _result([], action="failed"),
    "invalid json": AIMessage(content="{not json"),
    "no tool call": AIMessage(content=""),
    "wrong schema": tool_call("mnemon_compaction_result", {"entries": "nope"}),
    "model exception": RuntimeError("provider overloaded"),
}


@pytest.mark.parametrize("case", sorted(BAD_OUTPUTS))
def test_bad_output_changes_nothing(runtime: RuntimeMemory, tmp_path: Path, case: str) -> None:
    before = _files(tmp_path)
    model = ScriptedChatModel(responses=[BAD_OUTPUTS[case]])
    out = build_user_compaction_graph(runtime, model).invoke({"request": PENDING})
    assert out.get("error"), case
    assert "receipt" not in out
    assert _files(tmp_path) == before


def test_concurrent_write_between_plan_and_commit(runtime: RuntimeMemory, tmp_path: Path) -> None:
    def compactor(messages: list) -> AIMessage:
        # Another writer lands while the model is thinking.
        RuntimeMemory(tmp_path, user_limit_bytes=LIMIT).remove("user", "Lives in London.")
        return _result(GOOD)

    out = build_user_compaction_graph(runtime, ScriptedChatModel(script=compactor)).invoke(
        {"request": PENDING}
    )
    assert "changed while archival was running" in out["error"]
    # The concurrent write stands; nothing of the compaction was applied; nothing lost.
    contents = [e.content for e in runtime.entries("user")]
    assert contents == [c for c, _ in ENTRIES if c != "Lives in London."]
    assert runtime.archived("user") == []


def test_heuristic_path_refuses_rather_than_archive_a_fact(
    runtime: RuntimeMemory, tmp_path: Path
) -> None:
    # Issue 13 item 7: without a model no USER fact leaves USER.md (the old heuristic packed
    # by importance and moved "Prefers green tea..." and "Works on..." to runtime/archived/).
    before = _files(tmp_path)
    out = build_user_compaction_graph(runtime).invoke({"request": PENDING})
    assert "receipt" not in out
    assert "no room for the new entry" in out["error"]
    assert "'Prefers green tea in the morning.' (33 bytes)" in out["error"]
    assert _files(tmp_path) == before
    assert runtime.archived("user") == []


def test_heuristic_folds_duplicates(tmp_path: Path) -> None:
    rm = RuntimeMemory(tmp_path, user_limit_bytes=70)
    rm.add("user", "Prefers tea.")
    rm.add("user", "prefers TEA!", importance="critical")
    rm.add("user", "Prefers tea, strong.")
    out = build_user_compaction_graph(rm).invoke(
        {"request": RuntimeMutation(action="add", target="user", content="Owns a cat named Tom.")}
    )
    assert "error" not in out, out.get("error")
    # All three fold into the longest, at the highest importance among them.
    entries = rm.entries("user")
    assert [(e.content, e.importance) for e in entries] == [
        ("Prefers tea, strong.", "critical"),
        ("Owns a cat named Tom.", "normal"),
    ]
    assert set(out["receipt"].left_out) == {"Prefers tea.", "prefers TEA!"}


def test_fits_after_all_applies_directly(runtime: RuntimeMemory) -> None:
    small = RuntimeMutation(action="add", target="user", content="Tall.")
    out = build_user_compaction_graph(runtime, ScriptedChatModel()).invoke({"request": small})
    assert out["receipt"].message == "Entry added."
    assert "proposal" not in out


def test_bad_request_is_an_error_not_a_crash(runtime: RuntimeMemory) -> None:
    bad = RuntimeMutation(action="remove", target="user", old_text="no such entry")
    out = build_user_compaction_graph(runtime).invoke({"request": bad})
    assert out["error"] == 'No user entry contains "no such entry".'


def test_heuristic_proposal_is_also_a_valid_full_cover_when_it_fits(
    runtime: RuntimeMemory,
) -> None:
    plan = runtime.plan_maintenance(PENDING).model_copy(update={"limit": 1000})
    proposal = heuristic_compaction(plan)
    assert isinstance(proposal, CompactionProposal)
    # every index exactly once, within the heuristic's budget (the limit less the pending add)
    compacted = validate_proposal(plan, proposal, budget=heuristic_budget(plan))
    assert sorted(i for c in compacted for i in c.source_indexes) == [1, 2, 3, 4, 5]
