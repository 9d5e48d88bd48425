"""A run's scope from its LangGraph v1 runtime context (issue 31, part 1).

``user_id`` and ``mnemon_project`` count alike as keys or attributes of the run's ``context``
(``create_agent(..., context_schema=Ctx)`` + ``invoke(..., context=Ctx(...))``) and as keys of
``configurable``; two different ids are the typed ``ScopeMismatchError``, and in a run that
means no memory for the turn (the run goes on), exactly as a user other than the authenticated
one does. Real components: ``create_agent`` and a compiled ``StateGraph`` driven by the
deterministic ``ScriptedChatModel``, on a real SQLite file and the real PostgreSQL server
(``database_url``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel
from turn_support import memory_graph

from langgraph_mnemon import Mnemon
from langgraph_mnemon.config import ScopesConfig
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import ProjectNotGrantedError, ScopeMismatchError
from langgraph_mnemon.graphs import MnemonTurnState
from langgraph_mnemon.memory_layers.scopes import resolve_scope
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

FACT = "Alice is allergic to peanuts."
SAVE = {"action": "add", "target": "user", "content": FACT}


@dataclass
class Ctx:
    user_id: str | None = None
    mnemon_project: str | None = None


class CtxDict(TypedDict, total=False):
    user_id: str
    mnemon_project: str


class CtxModel(BaseModel):
    user_id: str | None = None
    mnemon_project: str | None = None


@pytest.fixture
def mem(database_url: str, tmp_path: Path) -> Iterator[Mnemon]:
    """A host on ``database_url`` (on PostgreSQL every tier lives in the database)."""
    host = Mnemon.open(
        tmp_path / "root",
        database_url=database_url,
        chroma={"enabled": False},
        embedding={"enabled": False},
    )
    try:
        yield host
    finally:
        host.close()


def _agent(mem: Mnemon, responses: list[Any], schema: Any = Ctx, **kwargs: Any) -> Any:
    model = ScriptedChatModel(responses=responses)
    return create_agent(
        model,
        tools=[*mem.tools(), *kwargs.pop("tools", [])],
        middleware=[mem.middleware()],
        checkpointer=mem.checkpointer(),
        context_schema=schema,
        **kwargs,
    )


def _user(mem: Mnemon, user: str | None = None, project: str | None = None) -> list[str]:
    view = mem if user is None and project is None else mem.scoped(user=user, project=project)
    return [e.content for e in view.runtime.entries("user")]


def _tool_results(out: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in out["messages"] if m.type == "tool"]


# --- the one resolution function ----------------------------------------------------------


def test_resolve_scope_reads_the_context_like_configurable() -> None:
    cfg = ScopesConfig()
    alice = Scope(user="alice", project="kitchen")
    for context in (
        Ctx("alice", "kitchen"),
        CtxModel(user_id="alice", mnemon_project="kitchen"),
        {"user_id": "alice", "mnemon_project": "kitchen"},
        SimpleNamespace(user_id="alice", mnemon_project="kitchen"),
    ):
        assert resolve_scope({}, cfg, context=context) == alice, context
    # The context as LangGraph keeps it: the run's Runtime in configurable.
    runtime = SimpleNamespace(context=Ctx("alice", "kitchen"))
    assert resolve_scope({"__pregel_runtime": runtime}, cfg) == alice
    # Unset fields, other objects and no context leave configurable (or local) as before.
    assert resolve_scope({"user_id": "bob"}, cfg, context=Ctx()) == Scope(user="bob")
    assert resolve_scope({}, cfg, context="just a string").is_local
    assert resolve_scope({}, cfg, context={"user_id": ""}).is_local
    # Both places may name the same id; two different ids are refused, saying what to do.
    assert resolve_scope({"user_id": "alice"}, cfg, context=Ctx("alice")) == Scope(user="alice")
    with pytest.raises(ScopeMismatchError, match=r"user_id .* in one place"):
        resolve_scope({"user_id": "bob"}, cfg, context=Ctx("alice"))
    with pytest.raises(ScopeMismatchError, match=r"mnemon_project .* in one place"):
        resolve_scope({"mnemon_project": "garden"}, cfg, context={"mnemon_project": "kitchen"})


def test_under_auth_the_context_is_checked_like_configurable() -> None:
    cfg = ScopesConfig()
    authed = {"langgraph_auth_user_id": "alice", "langgraph_auth_user": {"identity": "alice"}}
    assert resolve_scope(authed, cfg, context=Ctx("alice")) == Scope(user="alice")
    with pytest.raises(ScopeMismatchError, match="not the authenticated user"):
        resolve_scope(authed, cfg, context=Ctx("bob"))
    with pytest.raises(ProjectNotGrantedError, match="not granted the project 'kitchen'"):
        resolve_scope(authed, cfg, context=Ctx(mnemon_project="kitchen"))
    granted = {**authed, "langgraph_auth_permissions": ["mnemon:project:kitchen"]}
    assert resolve_scope(granted, cfg, context=Ctx(mnemon_project="kitchen")).project == "kitchen"


# --- create_agent runs ---------------------------------------------------------------------

CONTEXTS: dict[str, tuple[Any, Callable[[str], Any]]] = {
    "dataclass": (Ctx, lambda user: Ctx(user_id=user)),
    "pydantic": (CtxModel, lambda user: CtxModel(user_id=user)),
    "typeddict": (CtxDict, lambda user: CtxDict(user_id=user)),
    "dict-no-schema": (None, lambda user: {"user_id": user}),
}


@pytest.mark.parametrize("kind", list(CONTEXTS))
def test_a_fact_written_in_a_context_run_lands_in_that_users_scope(mem: Mnemon, kind: str) -> None:
    schema, make = CONTEXTS[kind]
    agent = _agent(mem, [tool_call("mnemon_runtime_memory", SAVE), "Noted.", "Hi."], schema)
    out = agent.invoke(
        {"messages": [HumanMessage("Remember my allergy.")]},
        {"configurable": {"thread_id": "a1"}},
        context=make("alice"),
    )
    assert '"status":"committed"' in _tool_results(out)[0]
    assert _user(mem, "alice") == [FACT]
    assert _user(mem) == []  # the shared local scope got nothing
    # A new thread of Alice's gets it in the Wake; a run for Bob does not.
    model = ScriptedChatModel(responses=["ok"])
    agent = create_agent(model, middleware=[mem.middleware()], context_schema=schema)
    agent.invoke({"messages": [HumanMessage("hi")]}, context=make("alice"))
    assert FACT in str(model.calls[-1])
    agent.invoke({"messages": [HumanMessage("hi")]}, context=make("bob"))
    assert FACT not in str(model.calls[-1])


def test_a_project_named_in_the_context_is_the_runs_project(mem: Mnemon) -> None:
    note = {"action": "add", "target": "memory", "content": "The oven runs hot."}
    agent = _agent(mem, [tool_call("mnemon_runtime_memory", note), "Noted."])
    asyncio.run(
        agent.ainvoke(
            {"messages": [HumanMessage("Note the oven.")]},
            {"configurable": {"thread_id": "a1"}},
            context=Ctx(user_id="alice", mnemon_project="kitchen"),
        )
    )
    kitchen = mem.scoped(user="bob", project="kitchen")  # the project's MEMORY.md is shared
    assert [e.content for e in kitchen.runtime.entries("memory")] == ["The oven runs hot."]
    assert mem.scoped(user="alice").runtime.entries("memory") == []  # not Alice's own project
    assert mem.runtime.entries("memory") == []


def test_context_and_configurable_naming_two_users_get_no_memory_and_run_on(mem: Mnemon) -> None:
    mem.scoped(user="bob").runtime.add("user", "Bob's locker code is 4711.")
    model = ScriptedChatModel(responses=[tool_call("mnemon_runtime_memory", SAVE), "Done."])
    agent = create_agent(
        model,
        tools=mem.tools(),
        middleware=[mem.middleware()],
        checkpointer=mem.checkpointer(),
        context_schema=Ctx,
    )
    out = agent.invoke(
        {"messages": [HumanMessage("Remember my allergy.")]},
        {"configurable": {"thread_id": "t1", "user_id": "bob"}},
        context=Ctx(user_id="alice"),
    )
    # As for a user other than the authenticated one: the run ends normally, memory is off.
    assert out["messages"][-1].content == "Done."
    refused = json.loads(_tool_results(out)[0])  # the tool's structured error, not a crash
    assert refused["error"] == "scope-mismatch"
    assert "give user_id in one place" in refused["message"]
    assert "4711" not in str(model.calls)
    assert _user(mem, "alice") == []
    assert _user(mem) == []
    assert _user(mem, "bob") == ["Bob's locker code is 4711."]
    report = mem.health.report()
    assert report.degraded
    assert "user_id in one place" in str(report.problems)


# --- a hand-built graph: context_schema and the turn subgraph ------------------------------


def test_a_state_graph_with_context_schema_and_the_turn_subgraph(mem: Mnemon) -> None:
    tools = mem.tools()
    model = ScriptedChatModel(responses=[tool_call("mnemon_runtime_memory", SAVE), "Noted."])
    bound = model.bind_tools(tools)

    def agent(state: MnemonTurnState) -> dict[str, Any]:
        return {"messages": [bound.invoke([SystemMessage("be brief"), *state["messages"]])]}

    graph = memory_graph(mem, agent, tools=tools, context_schema=Ctx)
    out = graph.invoke(
        {"messages": [HumanMessage("Remember my allergy.")]},
        {"configurable": {"thread_id": "g1"}},
        context=Ctx(user_id="alice"),
    )
    assert out["mnemon_turn"] is None
    assert '"status":"committed"' in _tool_results(out)[0]
    assert _user(mem, "alice") == [FACT]
    assert _user(mem) == []


# --- the store facade inside a run ----------------------------------------------------------


@tool
def keep_note(text: str, runtime: ToolRuntime[Ctx]) -> str:
    """Keep a note in the store."""
    assert runtime.store is not None
    runtime.store.put(("notes",), "n1", {"text": text})
    return "kept"


def test_the_store_from_a_tool_puts_into_the_context_users_scope(mem: Mnemon) -> None:
    agent = _agent(
        mem,
        [tool_call("keep_note", {"text": "Alice takes the 8:15 train."}), "Kept."],
        tools=[keep_note],
        store=mem.store(),
    )
    # LangMem's langgraph_user_id loses to the context's user_id, as it does to configurable's.
    config = {"configurable": {"thread_id": "s1", "langgraph_user_id": "mallory"}}
    out = agent.invoke({"messages": [HumanMessage("note it")]}, config, context=Ctx("alice"))
    assert _tool_results(out) == ["kept"]
    alice = mem.store().scoped(Scope(user="alice"))
    item = alice.get(("notes",), "n1")
    assert item is not None
    assert item.value == {"text": "Alice takes the 8:15 train."}
    assert mem.store().get(("notes",), "n1") is None  # not in the local scope
    assert mem.store().scoped(Scope(user="mallory")).get(("notes",), "n1") is None
    found = mem.scoped(user="alice").spaces.search("8:15 train").results
    assert [row.content for row in found] == ["Alice takes the 8:15 train."]
