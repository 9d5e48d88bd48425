"""Model tools through the kernel (issue 13, items 1, 3 and 7), in real ``create_agent`` runs.

- a tool whose channel can never admit a model (``off``, ``manual``, a disabled layer,
  ``write_enabled=false`` for a write) is not in ``mem.tools()``; management reads always are;
- a switch flipped while a turn is pinned (after the tools were built) refuses the next call
  with ``{"error", "message", "decision"}``, writes nothing (files and layer rows
  byte-identical) and is not recorded as a memory failure;
- the Wake offers only what the kernel admits a model (no recall route under manual recall);
- ``mnemon_status`` / ``mnemon_memory_bodies`` report real provider health;
- ``mnemon_runtime_memory(action="search")`` finds archived Runtime entries (local only).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_support import (
    BASE,
    NEW_DOCUMENT,
    NEW_MEMORY,
    NEW_RULE,
    SPACE_ID,
    Seed,
    agent_bookkeeping,
    build_template,
    decision_matches,
    flip,
    fresh_root,
    snapshot,
)
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.store.memory import InMemoryStore

import langgraph_mnemon.middleware as middleware
from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.messages import plugin_form
from langgraph_mnemon.adapters.providers.store import StoreProvider
from langgraph_mnemon.graphs import MnemonTurnState
from langgraph_mnemon.graphs.recall import build_recall_graph
from langgraph_mnemon.memory_layers.kernel import current_trigger
from langgraph_mnemon.memory_layers.runtime import RuntimeMutation
from langgraph_mnemon.testing import ScriptedChatModel, tool_call
from langgraph_mnemon.tools import TOOL_CHANNELS

# What each model tool works on, written out independently of the implementation's table.
CHANNELS: dict[str, list[tuple[str, str]]] = {
    "mnemon_recall": [("memory_spaces", "recall")],
    "mnemon_related": [("memory_spaces", "recall")],
    "mnemon_document_search": [("documents", "recall")],
    "mnemon_runtime_memory": [("runtime", "write"), ("runtime", "recall")],
    "mnemon_remember": [("memory_spaces", "write")],
    "mnemon_link": [("memory_spaces", "write")],
    "mnemon_forget": [("memory_spaces", "write")],
    "mnemon_document_create": [("documents", "write")],
    "mnemon_document_manage": [("documents", "write")],
    "mnemon_memory_body_create": [("memory_spaces", "maintenance")],
    "mnemon_memory_body_update": [("memory_spaces", "maintenance")],
    "mnemon_memory_body_merge": [("memory_spaces", "maintenance")],
}
MANAGEMENT = {"mnemon_status", "mnemon_memory_bodies"}


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    made = build_template(tmp_path_factory.mktemp("template") / "root")
    with Mnemon.open(made.template, **BASE) as mem:  # one turn: every lifecycle table exists
        agent = create_agent(ScriptedChatModel(responses=["ok"]), middleware=[mem.middleware()])
        agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "warm"}})
    return made


@pytest.fixture
def opener(seed: Seed, tmp_path: Path) -> Iterator[Callable[..., Mnemon]]:
    """Open a host on a private copy of the seeded root (closed afterwards)."""
    opened: list[Mnemon] = []

    def open_host(**settings: Any) -> Mnemon:
        root = tmp_path / "root"
        if not root.exists():
            fresh_root(seed, root)
        mem = Mnemon.open(root, **{**BASE, **settings})
        opened.append(mem)
        return mem

    yield open_host
    for mem in opened:
        mem.close()


def _refuse(mem: Mnemon, pairs: list[tuple[str, str]], mode: str) -> None:
    for layer, channel in pairs:
        flip(mem.config, layer, channel, mode)


def _names(mem: Mnemon) -> set[str]:
    return {t.name for t in mem.tools()}


def _results(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    return [json.loads(m.content) for m in messages if m.type == "tool"]


# --- item 1: what is offered ------------------------------------------------------------------


def test_item1_the_tool_table_names_every_channel() -> None:
    assert {k: list(v) for k, v in TOOL_CHANNELS.items() if k in CHANNELS} == CHANNELS
    assert {k for k, v in TOOL_CHANNELS.items() if not v} == MANAGEMENT | {"mnemon_view_route"}


@pytest.mark.parametrize("mode", ["off", "manual", "disabled"])
@pytest.mark.parametrize("tool", sorted(CHANNELS))
def test_item1_tool_absent_when_its_channel_cannot_admit_a_model(
    opener: Callable[..., Mnemon], tool: str, mode: str
) -> None:
    mem = opener()
    assert tool in _names(mem)  # automatic: offered
    _refuse(mem, CHANNELS[tool], mode)
    names = _names(mem)
    assert tool not in names
    assert names >= MANAGEMENT  # management reads stay whatever the switches


def test_item1_runtime_tool_stays_while_one_of_its_channels_admits(
    opener: Callable[..., Mnemon],
) -> None:
    mem = opener()
    flip(mem.config, "runtime", "write", "manual")
    assert "mnemon_runtime_memory" in _names(mem)  # search still admits a model
    flip(mem.config, "runtime", "recall", "off")
    assert "mnemon_runtime_memory" not in _names(mem)


def test_item1_read_only_offers_reads_only(opener: Callable[..., Mnemon]) -> None:
    mem = opener(write_enabled=False)
    reads = {"mnemon_recall", "mnemon_related", "mnemon_document_search", "mnemon_runtime_memory"}
    assert _names(mem) == MANAGEMENT | reads
    general = opener(write_enabled=False, strategy="general")
    assert _names(general) == {"mnemon_view_route"}


# --- item 1: a switch flipped during a pinned turn refuses the next call ----------------------

# tool, arguments ("<m0>"/"<m1>": the seeded memory ids), the layer and channel it asks.
CALLS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "mnemon_runtime_memory",
        {"action": "add", "target": "memory", "content": NEW_RULE},
        "runtime",
        "write",
    ),
    (
        "mnemon_runtime_memory",
        {"action": "search", "target": "memory", "query": "deploys"},
        "runtime",
        "recall",
    ),
    ("mnemon_document_search", {"query": "restart queue"}, "documents", "recall"),
    (
        "mnemon_document_create",
        {"title": NEW_DOCUMENT[0], "content": NEW_DOCUMENT[1]},
        "documents",
        "write",
    ),
    (
        "mnemon_document_manage",
        {"action": "create", "title": "T", "content": "C"},
        "documents",
        "write",
    ),
    ("mnemon_recall", {"query": "database port"}, "memory_spaces", "recall"),
    ("mnemon_related", {"id": "<m0>", "memory_body_id": SPACE_ID}, "memory_spaces", "recall"),
    ("mnemon_remember", {"content": NEW_MEMORY}, "memory_spaces", "write"),
    (
        "mnemon_link",
        {"source_id": "<m0>", "target_id": "<m1>", "memory_body_id": SPACE_ID},
        "memory_spaces",
        "write",
    ),
    ("mnemon_forget", {"id": "<m0>", "memory_body_id": SPACE_ID}, "memory_spaces", "write"),
    (
        "mnemon_memory_body_create",
        {"name": "Research", "description": "Papers."},
        "memory_spaces",
        "maintenance",
    ),
    (
        "mnemon_memory_body_update",
        {"memory_body_id": SPACE_ID, "name": "Operations"},
        "memory_spaces",
        "maintenance",
    ),
    (
        "mnemon_memory_body_merge",
        {"target_memory_body_id": SPACE_ID, "source_memory_body_ids": ["x"]},
        "memory_spaces",
        "maintenance",
    ),
]
GENERAL_CALLS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "mnemon_view_route",
        {"route_id": "memory-spaces/search", "input": {"query": "database"}},
        "memory_spaces",
        "recall",
    ),
    (
        "mnemon_view_route",
        {"route_id": "runtime/search", "input": {"query": "deploys", "target": "memory"}},
        "runtime",
        "recall",
    ),
    (
        "mnemon_view_route",
        {"route_id": "documents/search", "input": {"query": "restart"}},
        "documents",
        "recall",
    ),
    (
        "mnemon_view_action",
        {
            "offer_id": "runtime/write",
            "input": {"action": "add", "target": "user", "content": "Likes tea."},
        },
        "runtime",
        "write",
    ),
    (
        "mnemon_view_action",
        {"offer_id": "memory-spaces/remember", "input": {"content": NEW_MEMORY}},
        "memory_spaces",
        "write",
    ),
    (
        "mnemon_view_action",
        {
            "offer_id": "memory-spaces/manage",
            "input": {"operation": "create", "name": "R", "description": "x"},
        },
        "memory_spaces",
        "maintenance",
    ),
]


def _args(args: dict[str, Any], seed: Seed) -> dict[str, Any]:
    """``args`` with the placeholders ``<m0>`` / ``<m1>`` replaced by the seeded memory ids."""
    ids = {f"<m{i}>": mid for i, mid in enumerate(seed.memory_ids)}
    return {k: ids.get(v, v) if isinstance(v, str) else v for k, v in args.items()}


def _run_flipping(
    mem: Mnemon, tool: str, args: dict[str, Any], during: Callable[[], None] | None
) -> dict[str, Any]:
    """One agent turn whose model flips the switch (after the turn pinned its view and the
    tools were built), then calls ``tool`` once; returns that call's result."""

    def script(messages: list[BaseMessage]) -> BaseMessage:
        if any(m.type == "tool" for m in messages):
            return AIMessage(content="Done.")
        if during is not None:
            during()
        return tool_call(tool, args, "c1")

    agent = create_agent(
        ScriptedChatModel(script=script), tools=mem.tools(), middleware=[mem.middleware()]
    )
    out = agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t"}})
    (result,) = _results(out["messages"])
    return result


def _refusal_case(
    opener: Callable[..., Mnemon],
    seed: Seed,
    call: tuple[str, dict[str, Any], str, str],
    mode: str,
    **settings: Any,
) -> None:
    tool, args, layer, channel = call
    mem = opener(**settings)
    assert tool in _names(mem)
    before = snapshot(mem.root, skip=agent_bookkeeping)
    result = _run_flipping(
        mem, tool, _args(args, seed), lambda: flip(mem.config, layer, channel, mode)
    )
    code = {"off": "channel-off", "manual": "channel-manual", "disabled": "layer-disabled"}[mode]
    assert result["error"] == code, result
    assert f"layers.{layer}." in result["message"]
    decision_matches(result["decision"], layer, channel, "automatic", mode, code)
    assert snapshot(mem.root, skip=agent_bookkeeping).diff(before) == []
    assert not mem.health.degraded  # a refusal is an answer, not a memory failure


@pytest.mark.parametrize("call", CALLS, ids=lambda c: f"{c[0]}-{c[3]}")
def test_item1_switch_off_after_build_refuses_and_writes_nothing(
    opener: Callable[..., Mnemon], seed: Seed, call: tuple[str, dict[str, Any], str, str]
) -> None:
    _refusal_case(opener, seed, call, "off")


@pytest.mark.parametrize("mode", ["manual", "disabled"])
@pytest.mark.parametrize(
    "call", [CALLS[0], CALLS[2], CALLS[5], CALLS[7], CALLS[10]], ids=lambda c: f"{c[0]}-{c[3]}"
)
def test_item1_manual_or_disabled_after_build_refuses_the_model(
    opener: Callable[..., Mnemon],
    seed: Seed,
    call: tuple[str, dict[str, Any], str, str],
    mode: str,
) -> None:
    _refusal_case(opener, seed, call, mode)


@pytest.mark.parametrize(
    "call", GENERAL_CALLS, ids=lambda c: f"{c[1].get('route_id') or c[1]['offer_id']}"
)
def test_item1_general_view_tools_refuse_through_the_kernel(
    opener: Callable[..., Mnemon], seed: Seed, call: tuple[str, dict[str, Any], str, str]
) -> None:
    _refusal_case(opener, seed, call, "off", strategy="general")


WRITES = {"write", "maintenance"}


@pytest.mark.parametrize("call", CALLS + GENERAL_CALLS, ids=lambda c: f"{c[0]}-{c[2]}-{c[3]}")
def test_item1_automatic_channel_admits_the_model(
    opener: Callable[..., Mnemon], seed: Seed, call: tuple[str, dict[str, Any], str, str]
) -> None:
    tool, args, _layer, channel = call
    mem = opener(strategy="general" if tool.startswith("mnemon_view_") else "layered")
    before = snapshot(mem.root, skip=agent_bookkeeping)
    result = _run_flipping(mem, tool, _args(args, seed), None)
    if tool == "mnemon_memory_body_merge":  # admitted: the layer itself answers (no such space)
        assert result["error"] == "not-found", result
        return
    assert "error" not in result, result
    if channel in WRITES:
        assert snapshot(mem.root, skip=agent_bookkeeping).diff(before) != []


# --- item 1/2: the Wake offers what the kernel admits a model -----------------------------------


def _wake(mem: Mnemon) -> str:
    agent = create_agent(
        ScriptedChatModel(responses=["ok"]), tools=mem.tools(), middleware=[mem.middleware()]
    )
    out = agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "w"}})
    (wake,) = [m for m in out["messages"] if plugin_form(m) == "recall"]
    return str(wake.content)


def test_item1_manual_recall_offers_no_recall_route(opener: Callable[..., Mnemon]) -> None:
    automatic = _wake(opener())
    assert "mnemon_recall" in automatic
    mem = opener(layers={"memory_spaces": {"participation": {"recall": "manual"}}})
    wake = _wake(mem)
    assert "mnemon_recall" not in wake
    assert "mnemon_related" not in wake
    assert "mnemon_memory_bodies" in wake  # the catalog is a management read
    assert "mnemon_recall" not in _names(mem)
    # The person's explicit search still works: manual admits explicit triggers.
    assert mem.spaces.search("database port", space_ids=[SPACE_ID]).results


def test_item1_general_wake_under_manual_recall_has_no_search_route(
    opener: Callable[..., Mnemon],
) -> None:
    assert '"id":"memory-spaces/search"' in _wake(opener(strategy="general"))
    mem = opener(
        strategy="general", layers={"memory_spaces": {"participation": {"recall": "manual"}}}
    )
    wake = _wake(mem)
    assert '"id":"memory-spaces/search"' not in wake
    assert '"id":"memory-spaces/inspect"' in wake


def test_item1_manual_projection_leaves_the_source_out_of_the_wake(
    opener: Callable[..., Mnemon],
) -> None:
    assert "Prefers short answers." in _wake(opener())
    mem = opener(layers={"runtime": {"participation": {"projection": "manual"}}})
    wake = _wake(mem)
    assert "Prefers short answers." not in wake
    assert "mnemon_runtime_memory" in wake  # writes and search are still offered


# --- item 3: health that tells the truth ------------------------------------------------------


def test_item3_status_and_catalog_show_a_missing_provider(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with Mnemon.open(root, **BASE) as first:
        first.spaces.register_provider(StoreProvider(InMemoryStore()))
        created = first.spaces.create_space("Shared", "Shared notes", provider_id="store")
        assert created.space is not None
        shared = created.space.id
        first.spaces.create_space("Ops", "Operations", active=True)
    with Mnemon.open(root, **BASE) as mem:  # no store provider in this process: missing
        model = ScriptedChatModel(
            responses=[
                tool_call("mnemon_status", {}, "s1"),
                tool_call("mnemon_memory_bodies", {}, "s2"),
                "ok",
            ]
        )
        agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
        out = agent.invoke({"messages": [HumanMessage("status?")]}, {"configurable": {}})
        status, catalog = _results(out["messages"])
    assert status["healthy"] is False
    assert status["memorySpaces"]["unreachable"] == [shared]
    states = {p["id"]: p["state"] for p in status["memorySpaces"]["providers"]}
    assert states["store"] == "missing"
    assert states["mnemos"] == "healthy"
    reachable = {item["id"]: item["reachable"] for item in catalog["items"]}
    assert reachable[shared] is False
    assert set(reachable.values()) == {False, True}  # the native space is reachable
    assert str(root) not in json.dumps(status)


def test_item3_status_is_healthy_with_a_healthy_provider_and_not_after_a_failure(
    opener: Callable[..., Mnemon],
) -> None:
    mem = opener()
    model = ScriptedChatModel(
        responses=[
            tool_call("mnemon_status", {}, "s1"),
            "ok",
            tool_call("mnemon_status", {}, "s2"),
            "ok",
        ]
    )
    agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
    first = agent.invoke({"messages": [HumanMessage("a")]}, {"configurable": {"thread_id": "1"}})
    (healthy,) = _results(first["messages"])
    assert healthy["healthy"] is True
    assert healthy["memorySpaces"]["unreachable"] == []
    mem.health.failed("end", "storage-full", "the disk is full")  # a memory step failed
    second = agent.invoke({"messages": [HumanMessage("b")]}, {"configurable": {"thread_id": "2"}})
    (degraded,) = _results(second["messages"])
    assert degraded["healthy"] is False
    assert degraded["degraded"] == ["end: storage-full"]


# --- item 7: Runtime entries, archived ones included, are searchable by the model --------------


def test_item7_runtime_search_finds_archived_entries(tmp_path: Path) -> None:
    settings = {
        **BASE,
        "runtime": {"memory_limit_bytes": 120},
        "layers": {"memory_spaces": {"participation": {"write": "off"}}},  # local archive only
    }
    with Mnemon.open(tmp_path / "root", **settings) as mem:
        mem.runtime.add("memory", "The staging database listens on port 5433.")
        mem.runtime.add("memory", "Deploys go through CI.")
        mem.write_runtime(
            RuntimeMutation(
                action="add",
                target="memory",
                content="Release notes go in CHANGELOG.md under Unreleased.",
            )
        )
        assert "The staging database listens on port 5433." not in {
            e.content for e in mem.runtime.entries("memory")
        }
        model = ScriptedChatModel(
            responses=[
                tool_call(
                    "mnemon_runtime_memory",
                    {"action": "search", "target": "memory", "query": "staging database port"},
                    "r1",
                ),
                tool_call("mnemon_runtime_memory", {"action": "search", "target": "memory"}, "r2"),
                "ok",
            ]
        )
        agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
        out = agent.invoke({"messages": [HumanMessage("port?")]}, {"configurable": {}})
        found, no_query = _results(out["messages"])
    assert found["results"][0]["content"] == "The staging database listens on port 5433."
    assert found["results"][0]["archived"] is True
    assert found["results"][0]["archivedAt"]
    assert no_query["error"] == "invalid-input"


# --- item 1: the lifecycle and the recall-refine graph are automatic triggers ------------------


def test_item1_the_turn_lifecycle_runs_as_an_automatic_trigger(
    opener: Callable[..., Mnemon], monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = opener()
    seen: list[tuple[str, str]] = []
    pin, finished = mem.turns.composer.pin, mem.reviews.turn_finished
    sections = middleware.system_sections

    def spy(step: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            seen.append((step, current_trigger()))
            return fn(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(mem.turns.composer, "pin", spy("begin", pin))
    monkeypatch.setattr(mem.reviews, "turn_finished", spy("end", finished))
    monkeypatch.setattr(middleware, "system_sections", spy("model-call", sections))
    agent = create_agent(ScriptedChatModel(responses=["ok"]), middleware=[mem.middleware()])
    agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "m"}})
    assert seen == [("begin", "automatic"), ("model-call", "automatic"), ("end", "automatic")]

    seen.clear()
    model = ScriptedChatModel(responses=["ok"])
    builder = StateGraph(MnemonTurnState)
    builder.add_node("begin", mem.turn_graph())
    builder.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_node("end", mem.turn_graph())
    builder.add_edge(START, "begin")
    builder.add_edge("begin", "agent")
    builder.add_edge("agent", "end")
    builder.add_edge("end", END)
    graph = builder.compile()
    graph.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "g"}})
    assert seen == [("begin", "automatic"), ("end", "automatic")]
    assert current_trigger() == "explicit"  # nothing leaked out of the run


def test_item1_recall_graph_refuses_a_model_under_manual_recall(
    opener: Callable[..., Mnemon],
) -> None:
    mem = opener(layers={"memory_spaces": {"participation": {"recall": "manual"}}})
    searched: list[Any] = []
    real = mem.spaces.search
    mem.spaces.search = lambda *a, **k: searched.append(a) or real(*a, **k)  # type: ignore[method-assign]
    graph = build_recall_graph(mem.spaces)
    out = graph.invoke({"query": "database port", "turn_id": "k", "granted_space_ids": [SPACE_ID]})
    assert out["output"]["error"] == "channel-manual"
    decision_matches(
        out["output"]["decision"],
        "memory_spaces",
        "recall",
        "automatic",
        "manual",
        "channel-manual",
    )
    assert searched == []
    mem.config.layers.memory_spaces.participation.recall = "automatic"
    again = graph.invoke(
        {"query": "database port", "turn_id": "k2", "granted_space_ids": [SPACE_ID]}
    )
    assert again["output"]["results"]
