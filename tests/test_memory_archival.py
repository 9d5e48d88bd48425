"""MEMORY archival graph on real Memory Spaces (native provider, SQLite)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from langgraph_mnemon import Mnemon
from langgraph_mnemon.graphs.memory_archival import build_memory_archival_graph
from langgraph_mnemon.memory_layers.runtime import RuntimeMemory, RuntimeMutation
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

LIMIT = 800  # the 12 rules take 770 bytes: the pending add overflows
PENDING = RuntimeMutation(
    action="add", target="memory", content="Release notes go in CHANGELOG.md under Unreleased."
)


def _fill(mem: Mnemon) -> list[str]:
    contents = []
    for i in range(12):
        importance = "critical" if i % 5 == 0 else "normal"
        text = f"Rule {i}: module {i} is tested with pytest -k m{i} before merging."
        mem.runtime.add("memory", text, importance=importance)  # type: ignore[arg-type]
        contents.append(text)
    return contents


@pytest.fixture
def mem(tmp_path: Path) -> Mnemon:
    m = Mnemon.open(tmp_path / "root", runtime={"memory_limit_bytes": LIMIT})
    yield m
    m.close()


def _runtime_files(mem: Mnemon) -> dict[str, bytes]:
    folder = mem.root / "runtime"
    return {p.name: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _stored(mem: Mnemon, space_id: str) -> set[str]:
    return {row.content for row in mem.spaces.browse(space_id, limit=200)}


def test_no_space_keeps_what_fits_and_archives_locally(mem: Mnemon) -> None:
    originals = _fill(mem)
    out = build_memory_archival_graph(mem.runtime, mem.spaces).invoke({"request": PENDING})
    assert "error" not in out, out.get("error")
    assert out["receipt"].status == "committed"
    hot = [e.content for e in mem.runtime.entries("memory")]
    assert hot[-1] == PENDING.content
    assert mem.runtime.usage("memory").used <= LIMIT
    archived = {r["entry"]["content"] for r in mem.runtime.archived("memory")}
    assert archived == set(originals) - set(hot)
    assert archived  # something had to move
    assert all(c in hot for c in originals if c.startswith(("Rule 0:", "Rule 5:", "Rule 10:")))


def test_one_space_gets_every_entry_verbatim(mem: Mnemon) -> None:
    originals = _fill(mem)
    space = mem.spaces.create_space("Project", "Project rules", active=True).space
    assert space is not None
    out = build_memory_archival_graph(mem.runtime, mem.spaces).invoke({"request": PENDING})
    assert "error" not in out, out.get("error")
    assert out["routed_by"] == "host"
    assert _stored(mem, space.id) >= set(originals)
    assert len(out["copies"]) == len(originals)
    hot = [e.content for e in mem.runtime.entries("memory")]
    assert hot[-1] == PENDING.content
    assert mem.runtime.archived("memory") == []  # durable copies exist, nothing local


def _two_spaces(mem: Mnemon) -> tuple[str, str]:
    a = mem.spaces.create_space("Testing", "How modules are tested", active=True).space
    b = mem.spaces.create_space("Ops", "Deploys and infrastructure", active=True).space
    assert a is not None
    assert b is not None
    return a.id, b.id


def _routes(mapping: list[tuple[list[int], str]], action: str = "planned") -> AIMessage:
    return tool_call(
        "mnemon_archive_routes",
        {
            "summary": "routed",
            "action": action,
            "routes": [{"source_indexes": s, "memory_body_id": m} for s, m in mapping],
        },
    )


def test_planner_routes_between_spaces(mem: Mnemon) -> None:
    originals = _fill(mem)
    a, b = _two_spaces(mem)
    model = ScriptedChatModel(
        responses=[_routes([(list(range(1, 7)), a), ([7, 8, 9, 10, 11, 12], b)])]
    )
    out = build_memory_archival_graph(mem.runtime, mem.spaces, model).invoke({"request": PENDING})
    assert "error" not in out, out.get("error")
    assert out["routed_by"] == "model"
    assert _stored(mem, a) == set(originals[:6])
    assert _stored(mem, b) == set(originals[6:])
    human = model.calls[0][1].content
    assert "1. [importance=critical; branches=all] Rule 0:" in human
    assert f"- {a}: Testing" in human


BAD_ROUTES: dict[str, Any] = {
    "unknown destination": lambda a, b: _routes([(list(range(1, 13)), "no-such-space")]),
    "missing index": lambda a, b: _routes([(list(range(1, 12)), a)]),
    "duplicate index": lambda a, b: _routes([(list(range(1, 13)), a), ([3], b)]),
    "out of range": lambda a, b: _routes([(list(range(1, 14)), a)]),
    "failed action": lambda a, b: _routes([], action="failed"),
    "invalid json": lambda a, b: AIMessage(content="routes: all to a"),
    "wrong schema": lambda a, b: tool_call("mnemon_archive_routes", {"routes": 3}),
}


@pytest.mark.parametrize("case", sorted(BAD_ROUTES))
def test_bad_routes_write_nothing(mem: Mnemon, case: str) -> None:
    _fill(mem)
    a, b = _two_spaces(mem)
    before = _runtime_files(mem)
    model = ScriptedChatModel(responses=[BAD_ROUTES[case](a, b)])
    out = build_memory_archival_graph(mem.runtime, mem.spaces, model).invoke({"request": PENDING})
    assert out.get("error"), case
    assert _runtime_files(mem) == before
    assert _stored(mem, a) == set()
    assert _stored(mem, b) == set()


def test_model_failure_falls_back_to_host_routing(mem: Mnemon) -> None:
    originals = _fill(mem)
    a, _ = _two_spaces(mem)
    model = ScriptedChatModel(responses=[RuntimeError("planner offline")])
    out = build_memory_archival_graph(mem.runtime, mem.spaces, model).invoke({"request": PENDING})
    assert "error" not in out, out.get("error")
    assert out["routed_by"] == "fallback"
    assert _stored(mem, a) >= set(originals)


def test_late_conflict_keeps_hot_memory_and_safe_copies(mem: Mnemon, tmp_path: Path) -> None:
    originals = _fill(mem)
    a, _b = _two_spaces(mem)

    def planner(messages: list) -> AIMessage:
        # Another process changes MEMORY while the planner runs.
        RuntimeMemory(mem.root, memory_limit_bytes=LIMIT).remove("memory", "Rule 3:")
        return _routes([(list(range(1, 13)), a)])

    out = build_memory_archival_graph(
        mem.runtime, mem.spaces, ScriptedChatModel(script=planner)
    ).invoke({"request": PENDING})
    assert "changed while archival was running" in out["error"]
    hot = [e.content for e in mem.runtime.entries("memory")]
    assert hot == [c for c in originals if not c.startswith("Rule 3:")]
    assert _stored(mem, a) >= set(originals)  # durable copies stay as safe duplicates


def test_fitting_mutation_is_applied_directly(mem: Mnemon) -> None:
    out = build_memory_archival_graph(mem.runtime, mem.spaces).invoke({"request": PENDING})
    assert out["receipt"].message == "Entry added."
