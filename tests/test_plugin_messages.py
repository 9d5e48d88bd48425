"""Issue 31, part A: the plugin's messages are marked as not the user's.

Every message the plugin adds to a thread (the Wake, the cue, the stubs of older Wakes, a
resume block, a REM warning, a compaction note) has an id that starts with ``do-not-render-``
(chat UIs hide those) and keeps its ``plugin_form`` mark; ``add_messages`` removals and
replacements by id still work on them. ``latest_request`` finds what the user asked among
them. A hand-built agent that took "the last human message" as the request read the Wake; with
``latest_request`` it stores the user's fact and the next thread knows it.

Real components: storage roots, SQLite files and the shared PostgreSQL (``database_url``),
``create_agent`` and compiled ``StateGraph`` runs with deterministic scripted models.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from turn_support import memory_graph

from langgraph_mnemon import Mnemon, latest_request
from langgraph_mnemon.adapters.messages import PLUGIN_ID_PREFIX, plugin_form
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.graphs import MnemonTurnState
from langgraph_mnemon.memory_layers.turns import plugin_metadata
from langgraph_mnemon.nodes import compact_history
from langgraph_mnemon.nodes.mnemos import tend_task
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

WINDOW = 6_000
HIDDEN = "do-not-render-"


def _plugin_ids(messages: list[BaseMessage]) -> dict[str, str]:
    """``{id: form}`` of the plugin's messages; every other message is not hidden."""
    found = {}
    for message in messages:
        form = plugin_form(message)
        if form is None:
            assert not (message.id or "").startswith(HIDDEN), message
            continue
        assert (message.id or "").startswith(PLUGIN_ID_PREFIX), message
        assert message.id not in found  # unique
        found[message.id] = form
    return found


# --- create_agent with the middleware ------------------------------------------------------


def _rem_script(messages: list[BaseMessage]) -> AIMessage:
    """Saves what the user asks to remember, else answers; always reports 88 % of the window
    (REM: a checkpoint and a warning)."""
    tokens = int(0.88 * WINDOW)
    usage = {"input_tokens": tokens, "output_tokens": 5, "total_tokens": tokens + 5}
    request = latest_request(messages)
    assert request is not None  # the scripted model itself finds the request past the Wake
    if isinstance(messages[-1], ToolMessage) or not request.content.startswith("Remember: "):
        return AIMessage("Done.", usage_metadata=usage)
    fact = request.content.removeprefix("Remember: ")
    call = tool_call("mnemon_runtime_memory", {"action": "add", "target": "user", "content": fact})
    call.tool_calls[0]["id"] = f"call_{uuid.uuid4().hex[:8]}"
    call.usage_metadata = usage
    return call


def test_every_message_the_middleware_adds_is_hidden(tmp_path: Path, database_url: str) -> None:
    mem = Mnemon.open(
        tmp_path / "root",
        workspace=tmp_path,
        database_url=database_url,
        mnemos={"context_window_tokens": WINDOW, "git_state": False},
    )
    model = ScriptedChatModel(script=_rem_script)
    agent = create_agent(
        model, tools=mem.tools(), middleware=[mem.middleware()], checkpointer=mem.checkpointer()
    )
    first = {"configurable": {"thread_id": "a", "mnemos_task_id": "diet"}}
    agent.invoke({"messages": [HumanMessage("Remember: I eat no meat.")]}, first)
    agent.invoke({"messages": [HumanMessage("Remember: I drink no milk.")]}, first)
    second = {"configurable": {"thread_id": "b", "mnemos_task_id": "diet"}}  # same task
    agent.invoke({"messages": [HumanMessage("What do I eat?")]}, second)

    thread_a = agent.get_state(first).values["messages"]
    thread_b = agent.get_state(second).values["messages"]
    forms_a = _plugin_ids(thread_a)
    forms_b = _plugin_ids(thread_b)
    assert not set(forms_a) & set(forms_b)
    assert {"instructions", "recall", "superseded", "warning"} <= set(forms_a.values())
    assert {"resume", "recall"} <= set(forms_b.values())  # a new thread of the task
    # Every model call saw the same hidden ids the thread keeps.
    sent = {m.id for call in model.calls for m in call if plugin_form(m)}
    assert sent <= {*forms_a, *forms_b}
    assert latest_request(thread_a).content == "Remember: I drink no milk."
    assert latest_request(thread_b).content == "What do I eat?"
    mem.close()


def test_compaction_notes_are_hidden(tmp_path: Path) -> None:
    mem = Mnemon.open(
        tmp_path / "root",
        workspace=tmp_path,
        mnemos={"context_window_tokens": WINDOW, "git_state": False},
    )
    usage = {"input_tokens": 5_900, "output_tokens": 10, "total_tokens": 5_910}
    history: list[BaseMessage] = [HumanMessage("Read every record.", id="u")]
    for i in range(30):
        call = {"name": "read", "args": {"n": i}, "id": f"c{i}", "type": "tool_call"}
        history.append(AIMessage("", tool_calls=[call], id=f"a{i}", usage_metadata=usage))
        history.append(ToolMessage("record " * 60, tool_call_id=f"c{i}", id=f"t{i}"))
    emergency = tend_task(mem, "s", history)  # EMERGENCY: the history compacted
    assert emergency[0].type == "remove"
    assert set(_plugin_ids(emergency[1:]).values()) == {"resume"}
    summary = compact_history(history, keep_last=4, summary="Earlier: records 0-27 read.")
    assert set(_plugin_ids(summary[1:]).values()) == {"summary"}
    mem.close()


# --- the turn subgraph -------------------------------------------------------------------------


def _graph(mem: Mnemon, agent: Any) -> Any:
    return memory_graph(mem, agent)


def test_the_turn_subgraph_hides_its_messages_and_ids_work_with_the_reducer(
    tmp_path: Path,
) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    graph = _graph(mem, lambda state: {"messages": [AIMessage("ok")]})
    cfg = {"configurable": {"thread_id": "t"}}
    first = graph.invoke({"messages": [HumanMessage("hello")]}, cfg)["messages"]
    assert [plugin_form(m) or m.type for m in first] == ["human", "instructions", "recall", "ai"]
    forms = _plugin_ids(first)
    wake = first[2]
    assert forms[wake.id] == "recall"

    mem.runtime.add("user", "Prefers tea.")
    second = graph.invoke({"messages": [HumanMessage("again")]}, cfg)["messages"]
    # The old Wake is replaced in place (same id) by its stub; the new one is appended.
    assert second[2].id == wake.id
    assert plugin_form(second[2]) == "superseded"
    assert [plugin_form(m) or m.type for m in second[4:]] == ["human", "recall", "ai"]
    _plugin_ids(second)

    # A user's own RemoveMessage by the hidden id removes the Wake; the next turn sends it anew.
    new_wake = second[5]
    graph.update_state(cfg, {"messages": [RemoveMessage(id=new_wake.id)]})
    assert new_wake.id not in {m.id for m in graph.get_state(cfg).values["messages"]}
    third = graph.invoke({"messages": [HumanMessage("third")]}, cfg)["messages"]
    assert [plugin_form(m) or m.type for m in third[-3:]] == ["human", "recall", "ai"]
    assert "Prefers tea." in third[-2].content
    assert third[-2].id != new_wake.id
    # Replacing a plugin message by its id (as a user's node may) edits it in place.
    graph.update_state(cfg, {"messages": [HumanMessage("edited", id=third[1].id)]})
    edited = graph.get_state(cfg).values["messages"]
    assert edited[1].content == "edited"
    assert len(edited) == len(third)
    mem.close()


# --- latest_request ------------------------------------------------------------------------------


def _wake(text: str = "Runtime Memory ...") -> HumanMessage:
    return HumanMessage(
        text,
        id=f"{PLUGIN_ID_PREFIX}recall-1",
        additional_kwargs={"mnemon": plugin_metadata("recall", digest="d")},
    )


def _cue() -> HumanMessage:
    return HumanMessage(
        "[MNEMON] cue", additional_kwargs={"mnemon": plugin_metadata("instructions")}
    )


def test_latest_request_skips_wakes_cues_tools_and_answers() -> None:
    request = HumanMessage("Deploy it.", id="u2")
    thread = [
        SystemMessage("You deploy."),
        HumanMessage("Build it.", id="u1"),
        _cue(),
        _wake(),
        AIMessage("Built."),
        request,
        _wake("Runtime Memory, newer"),
        AIMessage("", tool_calls=[{"name": "deploy", "args": {}, "id": "c1", "type": "tool_call"}]),
        ToolMessage("deployed", tool_call_id="c1"),
        AIMessage("Deployed."),
    ]
    assert latest_request(thread) is request  # the thread's own object
    # Anthropic's raw form: tool results travel as a user message; they are not a request.
    results = HumanMessage([{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}])
    assert latest_request([*thread, results]) is request
    # A request of content blocks (text and an image) counts.
    blocks = HumanMessage(
        [{"type": "text", "text": "What is this?"}, {"type": "image", "url": "https://x/y.png"}]
    )
    assert latest_request([*thread, blocks, _wake()]) is blocks
    # The naive reading takes the Wake.
    naive = [m for m in [*thread, blocks, _wake()] if isinstance(m, HumanMessage)][-1]
    assert plugin_form(naive) == "recall"


def test_latest_request_reads_other_message_forms_and_refuses_bad_input() -> None:
    assert latest_request([]) is None
    assert latest_request([_cue(), _wake(), AIMessage("hi")]) is None
    as_dicts = [{"role": "user", "content": "from a dict"}, {"role": "assistant", "content": "ok"}]
    assert latest_request(as_dicts).content == "from a dict"
    assert latest_request([("user", "a tuple"), ("ai", "ok")]).content == "a tuple"
    chat = latest_request([ChatMessage(content="chat form", role="user", id="c")])
    assert isinstance(chat, HumanMessage)
    assert (chat.content, chat.id) == ("chat form", "c")
    for bad in (None, "hello", {"messages": []}, [42]):
        with pytest.raises(InvalidInputError) as refused:
            latest_request(bad)  # type: ignore[arg-type]
        assert "messages" in str(refused.value)


# --- a first-time user's own agent -------------------------------------------------------------


def _own_agent(mem: Mnemon) -> Any:
    """A user's node: stores what the user asks to remember, answers from the newest Wake."""

    def agent(state: MnemonTurnState) -> dict[str, Any]:
        request = latest_request(state["messages"])
        assert request is not None
        text = str(request.content)
        if text.lower().startswith("remember:"):
            receipt = mem.runtime.add("user", text.split(":", 1)[1].strip())
            return {"messages": [AIMessage(f"Noted ({receipt.status}).")]}
        wakes = [m for m in state["messages"] if plugin_form(m) == "recall"]
        known = [line for line in wakes[-1].content.splitlines() if "diet" in line.lower()]
        answer = known[0] if known else "I know nothing about your diet."
        return {"messages": [AIMessage(answer)]}

    return _graph(mem, agent)


def test_a_first_time_users_own_agent_stores_the_fact_and_thread_two_knows_it(
    tmp_path: Path,
) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)  # nothing stored yet
    graph = _own_agent(mem)
    one = {"configurable": {"thread_id": "one"}}
    out = graph.invoke({"messages": [HumanMessage("Remember: my diet is vegetarian.")]}, one)
    # The last human-typed message of the thread is the plugin's Wake, not the user.
    humans = [m for m in out["messages"][:-1] if isinstance(m, HumanMessage)]
    assert plugin_form(humans[-1]) == "recall"
    assert out["messages"][-1].content == "Noted (committed)."
    assert [e.content for e in mem.runtime.entries("user")] == ["my diet is vegetarian."]

    two = {"configurable": {"thread_id": "two"}}
    answer = graph.invoke({"messages": [HumanMessage("What is my diet?")]}, two)["messages"][-1]
    assert "my diet is vegetarian." in answer.content
    mem.close()
