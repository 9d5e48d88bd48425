"""Issue 17 item 4: the scripted demo model answers from the Wake and from recall evidence.

The served test runs ``mnemon serve`` (``langgraph dev``) and drives the demo agent with
``langgraph_sdk``: a fact told in one thread is answered in another. The in-process tests run
the same model in a ``create_agent`` agent over a real storage root, so the Wakes and recall
evidence it reads are the real ones.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph_sdk import get_sync_client
from server_support import Served, serve

from langgraph_mnemon import Mnemon
from langgraph_mnemon.server.demo import DEMO_LABEL, scripted_demo_model, wake_entries

pytestmark = pytest.mark.timeout(240)

CI_FACT = "CI runs every night at 02:00"


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


# -- served, through langgraph_sdk ----------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("demo-served") / "m"
    with serve(root) as served:
        yield served


def _turn(client: Any, thread: str, text: str) -> list[dict[str, Any]]:
    out = client.runs.wait(thread, "mnemon_agent", input=_user(text))
    return out["messages"]


def _new_turn(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """The messages from the last real user message ``text`` on."""
    starts = [i for i, m in enumerate(messages) if m["type"] == "human" and m["content"] == text]
    return messages[starts[-1] :]


def test_item17_4_served_demo_answers_in_thread_b_what_thread_a_was_told(
    server: Served,
) -> None:
    client = get_sync_client(url=server.url, api_key=None)
    first = client.threads.create()["thread_id"]
    told = _turn(client, first, f"remember {CI_FACT}")
    assert json.loads(told[-2]["content"])["status"] == "committed", told[-2]

    second = client.threads.create()["thread_id"]
    turn = _new_turn(_turn(client, second, "when does CI run?"), "when does CI run?")
    answer = turn[-1]
    assert answer["type"] == "ai"
    assert answer["content"] == f"{DEMO_LABEL} From memory: {CI_FACT}", answer["content"]
    # Answered from the Wake the middleware injected, without any tool call.
    assert not any(m["type"] == "tool" for m in turn), turn


def test_item17_4_served_demo_quotes_recall_evidence_from_a_memory_space(
    server: Served,
) -> None:
    client = get_sync_client(url=server.url, api_key=None)
    host = f"db-stg-{uuid.uuid4().hex[:6]}"
    fact = f"The staging database host is {host}."
    # The write worker stores the fact in a Memory Space (creating the default one).
    stored = client.runs.wait(None, "mnemon_write_worker", input={"candidate": {"content": fact}})
    assert stored["receipt"]["status"] == "committed", stored

    thread = client.threads.create()["thread_id"]
    question = "which host runs the staging database?"
    turn = _new_turn(_turn(client, thread, question), question)
    tools = [m for m in turn if m["type"] == "tool"]
    assert [t["name"] for t in tools] == ["mnemon_recall"], turn
    answer = turn[-1]["content"]
    assert answer.startswith(f"{DEMO_LABEL} From recall: "), answer
    assert host in answer


# -- in process: the model's rules on real Wakes and real recall evidence ---------------------


def _agent(mem: Mnemon) -> Any:
    return create_agent(
        scripted_demo_model(),
        tools=mem.tools(),
        middleware=[mem.middleware()],
        checkpointer=mem.checkpointer(),
    )


def _ask(agent: Any, thread: str, text: str) -> list[Any]:
    out = agent.invoke(_user(text), {"configurable": {"thread_id": thread}})
    messages = out["messages"]
    start = max(
        i for i, m in enumerate(messages) if isinstance(m, HumanMessage) and m.content == text
    )
    return messages[start:]


def test_item17_4_demo_answers_the_best_matching_wake_entry(mem: Mnemon) -> None:
    mem.runtime.add("memory", "Deploys need two approvals from the platform team")
    mem.runtime.add("memory", CI_FACT)
    mem.runtime.add("user", "The user prefers short answers")
    agent = _agent(mem)
    turn = _ask(agent, "t1", "when does CI run?")
    assert turn[-1].content == f"{DEMO_LABEL} From memory: {CI_FACT}"
    assert not any(isinstance(m, ToolMessage) for m in turn)
    # The same thread, a question without "?": the Wake already sent is still read.
    turn = _ask(agent, "t1", "how many approvals do deploys need")
    assert turn[-1].content.endswith(
        "From memory: Deploys need two approvals from the platform team"
    )


def test_item17_4_demo_remembers_then_a_new_thread_knows(mem: Mnemon) -> None:
    agent = _agent(mem)
    turn = _ask(agent, "a", f"please remember that {CI_FACT}")
    calls = [c for m in turn if isinstance(m, AIMessage) for c in m.tool_calls]
    assert [(c["name"], c["args"]) for c in calls] == [
        ("mnemon_runtime_memory", {"action": "add", "target": "memory", "content": CI_FACT})
    ]
    assert turn[-1].content.startswith(DEMO_LABEL)
    assert _ask(agent, "b", "When does CI run?")[-1].content.endswith(f"From memory: {CI_FACT}")


def test_item17_4_demo_recalls_when_the_wake_has_no_match(mem: Mnemon) -> None:
    space = mem.spaces.create_space("Ops", "Operations", active=True).space
    mem.spaces.remember("The VPN interface on the build hosts is wg0.", space_id=space.id)
    mem.runtime.add("memory", CI_FACT)
    turn = _ask(_agent(mem), "t", "which VPN interface do the build hosts use?")
    calls = [c for m in turn if isinstance(m, AIMessage) for c in m.tool_calls]
    assert [(c["name"], c["args"]) for c in calls] == [
        ("mnemon_recall", {"query": "which VPN interface do the build hosts use?"})
    ]
    assert turn[-1].content == (
        f"{DEMO_LABEL} From recall: The VPN interface on the build hosts is wg0."
    )


def test_item17_4_demo_says_no_matching_memory_only_when_both_are_empty(mem: Mnemon) -> None:
    mem.runtime.add("memory", CI_FACT)
    # No Memory Space: the Wake offers no recall, so none is attempted.
    turn = _ask(_agent(mem), "t", "what colour is the logo?")
    assert not any(isinstance(m, ToolMessage) for m in turn)
    assert turn[-1].content.startswith(f"{DEMO_LABEL} No matching memory: ")

    # A space with nothing relevant: recall runs and finds nothing.
    space = mem.spaces.create_space("Ops", "Operations", active=True).space
    mem.spaces.remember("Backups are kept for thirty days.", space_id=space.id)
    turn = _ask(_agent(mem), "u", "what colour is the logo?")
    assert [m.name for m in turn if isinstance(m, ToolMessage)] == ["mnemon_recall"]
    assert turn[-1].content.startswith(f"{DEMO_LABEL} No matching memory: ")


def test_item17_4_demo_rules_without_memory_stay_labelled() -> None:
    model = scripted_demo_model()
    assert model.invoke([HumanMessage(content="hello there")]).content == (
        f"{DEMO_LABEL} You said: hello there"
    )
    # No Wake at all (a degraded turn): recall is tried, its error read as no match.
    call = model.invoke([HumanMessage(content="when does CI run?")])
    assert call.tool_calls[0]["name"] == "mnemon_recall"
    failed = ToolMessage(
        content=json.dumps({"error": "invalid-input", "message": "no space"}),
        name="mnemon_recall",
        tool_call_id=call.tool_calls[0]["id"],
    )
    reply = model.invoke([HumanMessage(content="when does CI run?"), call, failed]).content
    assert reply == (
        f"{DEMO_LABEL} No matching memory: neither the Wake nor recall has anything on that "
        "(recall: no space)."
    )


def test_item17_4_wake_entries_reads_both_files_of_a_real_snapshot(mem: Mnemon) -> None:
    mem.runtime.add("user", "The user is called Ada")
    mem.runtime.add("memory", "Deploys need two approvals")
    mem.runtime.add("memory", CI_FACT)
    assert wake_entries(mem.runtime.snapshot().text) == [
        "The user is called Ada",
        "Deploys need two approvals",
        CI_FACT,
    ]
    assert wake_entries("no snapshot here") == []
