"""The remaining model tools in real create_agent runs: link / forget, Memory Space management,
Document management with overflow archiving, the General strategy's view route / action tools,
and the catalog under read-only mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage

from langgraph_mnemon import Mnemon
from langgraph_mnemon.testing import ScriptedChatModel, tool_call
from langgraph_mnemon.tools import CATALOG_LIMIT, VIEW_TOOLS, WRITE_TOOLS


def _run(mem: Mnemon, responses: list[Any], thread: str = "t") -> list[dict[str, Any]]:
    """Run one agent turn with the middleware; the JSON of every tool message, in order."""
    model = ScriptedChatModel(responses=[*responses, "Done."])
    agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
    out = agent.invoke(
        {"messages": [HumanMessage("please")]}, {"configurable": {"thread_id": thread}}
    )
    messages = out["messages"]
    assert isinstance(messages[-1], AIMessage)
    assert messages[-1].content == "Done."
    return [json.loads(m.content) for m in messages if m.type == "tool"]


def _native_space(mem: Mnemon) -> tuple[str, str, str]:
    space = mem.spaces.create_space("Ops", "Operations", active=True).space
    assert space is not None
    first = mem.spaces.remember("Deploys need two approvals.", space_id=space.id)
    second = mem.spaces.remember("Approvals come from the on-call lead.", space_id=space.id)
    assert first.id
    assert second.id
    return space.id, first.id, second.id


def test_link_and_forget_on_the_native_provider(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    space, first, second = _native_space(mem)
    names = {t.name for t in mem.tools()}
    assert {"mnemon_link", "mnemon_forget"} <= names
    linked, missing, out_of_range, forgotten, unknown = _run(
        mem,
        [
            tool_call(
                "mnemon_link",
                {
                    "source_id": first,
                    "target_id": second,
                    "weight": 0.7,
                    "reason": "same process",
                    "memory_body_id": space,
                },
                "l1",
            ),
            tool_call("mnemon_link", {"source_id": first, "target_id": "no-such-id"}, "l2"),
            tool_call("mnemon_link", {"source_id": first, "target_id": second, "weight": 2}, "l3"),
            tool_call("mnemon_forget", {"id": second}, "f1"),
            tool_call("mnemon_forget", {"id": "no-such-id", "memory_body_id": space}, "f2"),
        ],
    )
    assert linked["status"] == "committed"
    assert linked["space_id"] == space
    assert "provider_receipt" not in linked
    assert missing["error"] == "not-found"
    assert out_of_range["error"] == "invalid-input"
    assert "weight" in out_of_range["message"]
    assert forgotten["status"] == "committed"
    assert forgotten["id"] == second
    assert unknown["error"] == "not-found"
    hits = mem.spaces.search("approvals on-call lead", space_ids=[space]).results
    assert second not in {h.id for h in hits}
    mem.close()


def test_link_and_forget_absent_without_a_capable_active_space(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path) as mem:
        names = {t.name for t in mem.tools()}
        assert "mnemon_link" not in names
        assert "mnemon_forget" not in names
        assert "mnemon_memory_body_create" in names


def test_memory_body_create_update_merge(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    space, _first, _second = _native_space(mem)
    created, wrong_provider, empty_name = _run(
        mem,
        [
            tool_call(
                "mnemon_memory_body_create",
                {
                    "name": "Releases",
                    "description": "Release history and decisions.",
                    "reason": "a separate topic",
                    "confidence": 0.8,
                },
                "c1",
            ),
            tool_call(
                "mnemon_memory_body_create",
                {"name": "Elsewhere", "description": "x", "provider_id": "chroma"},
                "c2",
            ),
            tool_call("mnemon_memory_body_create", {"name": "", "description": "x"}, "c3"),
        ],
    )
    assert created["status"] == "committed"
    body = created["memoryBody"]
    assert body["provider"]["id"] == "mnemos"
    assert body["active"] is False  # inactive until its first committed write
    assert set(body) == {"id", "name", "description", "active", "provider"}
    assert created["providerChoice"] == {
        "mode": "manual",
        "providerId": "mnemos",
        "reason": "a separate topic",
        "confidence": 0.8,
    }
    assert wrong_provider["error"] == "invalid-input"
    assert "manual" in wrong_provider["message"]
    assert empty_name["error"] == "invalid-input"
    new_id = body["id"]

    updated, nothing, unknown, merged, self_merge = _run(
        mem,
        [
            tool_call(
                "mnemon_memory_body_update",
                {"memory_body_id": new_id, "name": "Release notes", "active": True},
                "u1",
            ),
            tool_call("mnemon_memory_body_update", {"memory_body_id": new_id}, "u2"),
            tool_call(
                "mnemon_memory_body_update", {"memory_body_id": "nope", "active": True}, "u3"
            ),
            tool_call(
                "mnemon_memory_body_merge",
                {"target_memory_body_id": new_id, "source_memory_body_ids": [space]},
                "m1",
            ),
            tool_call(
                "mnemon_memory_body_merge",
                {"target_memory_body_id": new_id, "source_memory_body_ids": [new_id]},
                "m2",
            ),
        ],
    )
    assert updated["status"] == "committed"
    assert (updated["memoryBody"]["name"], updated["memoryBody"]["active"]) == (
        "Release notes",
        True,
    )
    assert nothing["error"] == "invalid-input"
    assert unknown["error"] == "not-found"
    assert merged["status"] == "committed"
    assert [s["id"] for s in merged["sources"]] == [space]
    assert merged["sources"][0]["active"] is False  # deactivated, data kept
    assert self_merge["error"] == "invalid-input"
    moved = mem.spaces.search("approvals", space_ids=[new_id]).results
    assert "Deploys need two approvals." in {r.content for r in moved}
    kept = mem.spaces.search("approvals", space_ids=[space]).results
    assert "Deploys need two approvals." in {r.content for r in kept}  # non-destructive
    mem.close()


def test_memory_body_create_automatic_strategy_validates_the_choice(tmp_path: Path) -> None:
    mem = Mnemon.open(
        tmp_path / "root",
        workspace=tmp_path,
        persistence_strategy={"mode": "automatic", "rules": {"allowed_provider_ids": ["mnemos"]}},
    )
    chosen, refused = _run(
        mem,
        [
            tool_call(
                "mnemon_memory_body_create",
                {"name": "Notes", "description": "Notes.", "provider_id": "mnemos"},
                "c1",
            ),
            tool_call(
                "mnemon_memory_body_create",
                {"name": "Remote", "description": "Remote.", "provider_id": "chroma"},
                "c2",
            ),
        ],
    )
    assert chosen["providerChoice"] == {"mode": "automatic", "providerId": "mnemos"}
    assert refused["error"] == "invalid-input"
    assert "not allowed" in refused["message"]
    mem.close()


def test_document_manage_create_update_archive_with_overflow(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, documents={"active_limit_bytes": 2000})
    oldest = mem.documents.create("First", "a" * 300).document
    newer = mem.documents.create("Second", "b" * 300).document
    mem.documents.search("Second")  # touch Second: First is the least recently used
    created, updated, archived, no_title, unknown = _run(
        mem,
        [
            tool_call(
                "mnemon_document_manage",
                {
                    "action": "create",
                    "title": "Third",
                    "content": "c" * 900,
                    "description": "A large record.",
                    "source_paths": ["docs/third.md"],
                },
                "d1",
            ),
            tool_call(
                "mnemon_document_manage",
                {"action": "update", "id": newer.id, "description": "Updated."},
                "d2",
            ),
            tool_call("mnemon_document_manage", {"action": "archive", "id": newer.id}, "d3"),
            tool_call("mnemon_document_manage", {"action": "create", "content": "x"}, "d4"),
            tool_call(
                "mnemon_document_manage", {"action": "update", "id": "nope", "title": "T"}, "d5"
            ),
        ],
        thread="thread-42",
    )
    assert created["status"] == "committed"
    assert created["action"] == "create"
    assert created["archived"] == [{"id": oldest.id, "title": "First"}]
    assert created["usage"]["used"] <= 2000
    assert updated["status"] == "committed"
    assert updated["revision"] == 2
    assert archived["status"] == "committed"
    assert archived["documentStatus"] == "archived"
    assert no_title["error"] == "invalid-input"
    assert "title" in no_title["message"]
    assert "error" in unknown
    assert "path" not in json.dumps(created).lower()
    active = {d.title: d for d in mem.documents.list("active")}
    assert set(active) == {"Third"}
    assert active["Third"].session_ids == ("thread-42",)
    assert {d.title for d in mem.documents.list("archived")} == {"First", "Second"}
    mem.close()


def test_general_strategy_view_route_and_action(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, strategy="general")
    space, _first, _second = _native_space(mem)
    mem.documents.create("Runbook", "Deploy with make deploy after approvals.")
    tools = mem.tools()
    assert {t.name for t in tools} == VIEW_TOOLS
    (
        searched,
        inspected,
        docs,
        unoffered,
        outside,
        bad_input,
        action_as_route,
        wrote,
        remembered,
        route_as_action,
    ) = _run(
        mem,
        [
            tool_call(
                "mnemon_view_route",
                {"route_id": "memory-spaces/search", "input": {"query": "deploy approvals"}},
                "v1",
            ),
            tool_call(
                "mnemon_view_route", {"route_id": "memory-spaces/inspect", "input": {}}, "v2"
            ),
            tool_call(
                "mnemon_view_route",
                {"route_id": "documents/search", "input": {"query": "deploy"}},
                "v3",
            ),
            tool_call(
                "mnemon_view_route",
                {"route_id": "memory-spaces/recall", "input": {"query": "x"}},
                "v4",
            ),
            tool_call(
                "mnemon_view_route",
                {
                    "route_id": "memory-spaces/search",
                    "input": {"query": "x", "space_ids": ["elsewhere"]},
                },
                "v5",
            ),
            tool_call(
                "mnemon_view_route",
                {"route_id": "memory-spaces/search", "input": {"limit": 3}},
                "v6",
            ),
            tool_call("mnemon_view_route", {"route_id": "runtime/write", "input": {}}, "v7"),
            tool_call(
                "mnemon_view_action",
                {
                    "offer_id": "runtime/write",
                    "input": {"action": "add", "target": "user", "content": "Prefers tea."},
                },
                "a1",
            ),
            tool_call(
                "mnemon_view_action",
                {
                    "offer_id": "memory-spaces/remember",
                    "input": {"content": "Rollbacks use make rollback.", "space_id": space},
                },
                "a2",
            ),
            tool_call(
                "mnemon_view_action",
                {"offer_id": "documents/search", "input": {"query": "x"}},
                "a3",
            ),
        ],
    )
    assert searched["routeId"] == "memory-spaces/search"
    contents = [r["content"] for r in searched["output"]["results"]]
    assert "Deploys need two approvals." in contents
    assert len(contents) <= 6
    assert sum(len(c) for c in contents) <= 4800
    assert inspected["output"]["items"][0]["id"] == space
    assert [r["title"] for r in docs["output"]["results"]] == ["Runbook"]
    assert unoffered["error"] == "not-found"
    assert "memory-spaces/search" in unoffered["message"]  # says what is offered
    assert outside["error"] == "recall-rejected"
    assert bad_input["error"] == "invalid-input"
    assert "query" in bad_input["message"]
    assert action_as_route["error"] == "invalid-input"
    assert "mnemon_view_action" in action_as_route["message"]
    assert wrote["offerId"] == "runtime/write"
    assert wrote["receipt"]["status"] == "committed"
    assert [e.content for e in mem.runtime.entries("user")] == ["Prefers tea."]
    assert remembered["receipt"]["status"] == "committed"
    assert route_as_action["error"] == "invalid-input"
    mem.close()


def test_general_strategy_space_manage_and_link_actions(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, strategy="general")
    space, first, second = _native_space(mem)
    created, linked, no_sources = _run(
        mem,
        [
            tool_call(
                "mnemon_view_action",
                {
                    "offer_id": "memory-spaces/manage",
                    "input": {"operation": "create", "name": "Archive", "description": "Old."},
                },
                "a1",
            ),
            tool_call(
                "mnemon_view_action",
                {
                    "offer_id": "memory-spaces/link",
                    "input": {"source_id": first, "target_id": second, "space_id": space},
                },
                "a2",
            ),
            tool_call(
                "mnemon_view_action",
                {"offer_id": "memory-spaces/manage", "input": {"operation": "merge"}},
                "a3",
            ),
        ],
    )
    assert created["receipt"]["status"] == "committed"
    assert created["receipt"]["memoryBody"]["name"] == "Archive"
    assert linked["receipt"]["status"] == "committed"
    assert no_sources["error"] == "invalid-input"
    related = mem.spaces.related(first, space_id=space, depth=1).results
    assert [r.id for r in related] == [second]
    mem.close()


def test_layered_catalog_has_no_view_tools_and_fits_the_cap(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path / "root", workspace=tmp_path) as mem:
        _native_space(mem)
        names = [t.name for t in mem.tools()]
        assert not VIEW_TOOLS & set(names)
        assert len(names) == len(set(names)) <= CATALOG_LIMIT
        assert {
            "mnemon_document_manage",
            "mnemon_link",
            "mnemon_forget",
            "mnemon_memory_body_create",
            "mnemon_memory_body_update",
            "mnemon_memory_body_merge",
        } <= set(names)


def test_read_only_hides_every_write_tool(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path / "root", workspace=tmp_path) as mem:
        _native_space(mem)  # link / forget would be offered if writes were on
    for strategy in ("layered", "general"):
        with Mnemon.open(
            tmp_path / "root", workspace=tmp_path, write_enabled=False, strategy=strategy
        ) as mem:
            names = {t.name for t in mem.tools()}
            assert not names & WRITE_TOOLS
            assert names
    with Mnemon.open(
        tmp_path / "root", workspace=tmp_path, write_enabled=False, strategy="general"
    ) as mem:
        assert {t.name for t in mem.tools()} == {"mnemon_view_route"}
        (result,) = _run(
            mem,
            [
                tool_call(
                    "mnemon_view_route",
                    {"route_id": "memory-spaces/search", "input": {"query": "approvals"}},
                    "v1",
                )
            ],
        )
        assert result["output"]["results"]


def test_view_tools_need_a_pinned_turn(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path, strategy="general") as mem:
        model = ScriptedChatModel(
            responses=[
                tool_call("mnemon_view_route", {"route_id": "documents/search", "input": {}}, "v"),
                "ok",
            ]
        )
        out = create_agent(model, tools=mem.tools()).invoke({"messages": [HumanMessage("q")]})
        (result,) = [json.loads(m.content) for m in out["messages"] if m.type == "tool"]
        assert result["error"] == "invalid-input"
        assert "mem.middleware()" in result["message"]
