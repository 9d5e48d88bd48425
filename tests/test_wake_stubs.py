"""Issue 31, part B: a thread keeps one complete Runtime snapshot, not one per change.

Each Runtime Memory change sends a new Wake (a complete snapshot). The older Wakes of the
thread are replaced in place (same id) by one-line stubs naming the revision they showed and
the one that superseded them; ``runtime.keep_snapshots`` keeps them all (a stable prompt-cache
prefix). Stubs survive a restart on the same checkpoints, history compaction, a history that
``create_agent`` repaired, and threads written before stubs existed.

Real components: storage roots, SQLite files and the shared PostgreSQL (``database_url``),
``create_agent`` runs with the middleware and the checkpointer, deterministic scripted models.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_mnemon import Mnemon, MnemonConfig, latest_request
from langgraph_mnemon.adapters.messages import PLUGIN_ID_PREFIX, plugin_form
from langgraph_mnemon.memory_layers.messages import messages_chars, read_messages
from langgraph_mnemon.memory_layers.turns import plugin_metadata
from langgraph_mnemon.nodes import compact_history
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

CHANGES = 10
STUB = re.compile(r"^\[Runtime Memory snapshot r([0-9a-f]{12}) superseded by r([0-9a-f]{12})\]$")
FILLER = "The deployment checklist says to run the smoke tests against staging first. "


def _script(messages: list[BaseMessage]) -> AIMessage:
    """Saves what the user asks to remember (one Runtime change), else answers."""
    request = latest_request(messages)
    assert request is not None
    if isinstance(messages[-1], ToolMessage) or not request.content.startswith("Remember: "):
        return AIMessage("Done.")
    fact = request.content.removeprefix("Remember: ")
    call = tool_call(
        "mnemon_runtime_memory", {"action": "add", "target": "memory", "content": fact}
    )
    call.tool_calls[0]["id"] = f"call_{uuid.uuid4().hex[:8]}"
    return call


def _agent(mem: Mnemon, model: ScriptedChatModel) -> Any:
    return create_agent(
        model, tools=mem.tools(), middleware=[mem.middleware()], checkpointer=mem.checkpointer()
    )


def _forms(messages: list[BaseMessage]) -> list[str | None]:
    return [plugin_form(m) for m in messages]


def _wakes_seen(model: ScriptedChatModel) -> list[BaseMessage]:
    """Every complete Wake the model was sent, once each, in order."""
    seen: dict[str, BaseMessage] = {}
    for call in model.calls:
        for message in call:
            if plugin_form(message) == "recall":
                seen.setdefault(message.id, message)
    return list(seen.values())


def _revision(wake: BaseMessage) -> str:
    return wake.additional_kwargs["mnemon"]["source"]["runtime_revision"]


def _run_changes(tmp_path: Path, database_url: str, keep: bool) -> tuple[Mnemon, Any, Any]:
    mem = Mnemon.open(
        tmp_path / "root",
        workspace=tmp_path,
        database_url=database_url,
        runtime={"keep_snapshots": keep},
    )
    mem.runtime.add("memory", FILLER * 20)  # a snapshot of realistic size
    model = ScriptedChatModel(script=_script)
    agent = _agent(mem, model)
    cfg = {"configurable": {"thread_id": "t"}}
    for i in range(CHANGES):
        agent.invoke({"messages": [HumanMessage(f"Remember: fact number {i} holds.")]}, cfg)
    agent.invoke({"messages": [HumanMessage("What do you know?")]}, cfg)  # shows the 10th
    return mem, model, agent.get_state(cfg).values["messages"]


@pytest.mark.parametrize("keep", [False, True], ids=["stubs", "keep_snapshots"])
def test_ten_runtime_changes_leave_one_snapshot(
    tmp_path: Path, database_url: str, keep: bool
) -> None:
    mem, model, thread = _run_changes(tmp_path, database_url, keep)
    wakes = _wakes_seen(model)
    assert len(wakes) == CHANGES + 1  # one Wake per turn: each turn saw a new revision
    full = [m for m in thread if plugin_form(m) == "recall"]
    stubs = [m for m in thread if plugin_form(m) == "superseded"]
    size = messages_chars(read_messages(thread))
    wake_chars = sum(len(w.content) for w in wakes)
    others = size - sum(len(m.content) for m in [*full, *stubs])
    if keep:
        assert [m.id for m in full] == [w.id for w in wakes]
        assert [m.content for m in full] == [w.content for w in wakes]
        assert stubs == []
        assert size == others + wake_chars
    else:
        assert [m.id for m in full] == [wakes[-1].id]
        assert full[0].content == wakes[-1].content
        # Each older Wake is a stub at its own place (same id) naming its revision and the next.
        assert [m.id for m in stubs] == [w.id for w in wakes[:-1]]
        for stub, old, new in zip(stubs, wakes, wakes[1:], strict=False):
            named = STUB.match(stub.content)
            assert named is not None, stub.content
            assert named.groups() == (_revision(old)[:12], _revision(new)[:12])
            assert stub.id.startswith(PLUGIN_ID_PREFIX)
            source = stub.additional_kwargs["mnemon"]["source"]
            assert source["runtime_revision"] == _revision(old)
            assert source["superseded_by"] == new.additional_kwargs["mnemon"]["source"]["digest"]
        assert size == others + len(wakes[-1].content) + sum(len(s.content) for s in stubs)
        assert size < others + 2 * len(wakes[-1].content)  # vs. 11 snapshots kept
        assert wake_chars > 10 * len(wakes[-1].content) // 2
    # Every model call is sent what the thread holds: the last one got one complete snapshot
    # (or all of them, kept).
    last = model.calls[-1]
    assert _forms(last).count("recall") == (CHANGES + 1 if keep else 1)
    assert _forms(last).count("superseded") == (0 if keep else CHANGES)
    mem.close()


def test_the_setting_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert MnemonConfig().runtime.keep_snapshots is False
    monkeypatch.setenv("MNEMON_RUNTIME__KEEP_SNAPSHOTS", "true")
    assert MnemonConfig().runtime.keep_snapshots is True


def test_stubs_survive_a_restart_and_a_compaction(tmp_path: Path, database_url: str) -> None:
    settings = {"workspace": tmp_path, "database_url": database_url}
    cfg = {"configurable": {"thread_id": "r"}}
    with Mnemon.open(tmp_path / "root", **settings) as mem:
        agent = _agent(mem, ScriptedChatModel(script=_script))
        for i in range(3):
            agent.invoke({"messages": [HumanMessage(f"Remember: fact {i}.")]}, cfg)
        before = agent.get_state(cfg).values["messages"]
    assert _forms(before).count("recall") == 1
    assert _forms(before).count("superseded") == 2

    with Mnemon.open(tmp_path / "root", **settings) as mem:  # a restarted process
        model = ScriptedChatModel(script=_script)
        agent = _agent(mem, model)
        agent.invoke({"messages": [HumanMessage("Remember: fact 3.")]}, cfg)
        after = agent.get_state(cfg).values["messages"]
        assert after[: len(before)] != before  # the last Wake became a stub, in place
        assert [m.id for m in after[: len(before)]] == [m.id for m in before]
        assert _forms(after).count("recall") == 1
        assert _forms(after).count("superseded") == 3
        agent.invoke({"messages": [HumanMessage("Anything new?")]}, cfg)  # shows fact 3
        shown = agent.get_state(cfg).values["messages"]
        assert _forms(shown).count("superseded") == 4
        agent.invoke({"messages": [HumanMessage("And now?")]}, cfg)  # nothing changed
        quiet = agent.get_state(cfg).values["messages"]
        assert _forms(quiet[len(shown) :]) == [None, None]  # no Wake, no stub
        assert [m.content for m in quiet[: len(shown)]] == [m.content for m in shown]

        # History compaction cuts stubs and the Wake like any message; the next change sends
        # a complete Wake again and stubs nothing that is gone.
        update = compact_history(quiet, keep_last=2, summary="Earlier: four facts were saved.")
        agent.update_state(cfg, {"messages": update})
        compacted = agent.get_state(cfg).values["messages"]
        assert "recall" not in _forms(compacted)
        agent.invoke({"messages": [HumanMessage("Remember: fact 4.")]}, cfg)
        final = agent.get_state(cfg).values["messages"]
        assert _forms(final).count("recall") == 1
        assert _forms(final).count("superseded") == 0
        wake = next(m for m in final if plugin_form(m) == "recall")
        assert "fact 3." in wake.content  # complete: every fact saved before this turn
        assert "fact 0." in wake.content


def test_stubs_replace_in_place_when_create_agent_repairs_the_history(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    broken = AIMessage(
        "Let me try.",
        invalid_tool_calls=[
            {"name": "lookup", "args": "{oops", "id": "bad1", "error": "bad JSON", "type": "x"}
        ],
    )
    model = ScriptedChatModel(responses=[broken, "fine"])
    agent = _agent(mem, model)
    cfg = {"configurable": {"thread_id": "p"}}
    first = agent.invoke({"messages": [HumanMessage("hi")]}, cfg)["messages"]
    old_wake = next(m for m in first if plugin_form(m) == "recall")
    mem.runtime.add("user", "Prefers tea.")
    # The unanswered invalid call makes create_agent rewrite the whole history on this call.
    out = agent.invoke({"messages": [HumanMessage("again")]}, cfg)["messages"]
    assert any(isinstance(m, ToolMessage) and m.tool_call_id == "bad1" for m in out)
    ids = [m.id for m in out]
    assert len(ids) == len(set(ids))
    assert plugin_form(out[ids.index(old_wake.id)]) == "superseded"
    assert _forms(out).count("recall") == 1
    assert "Prefers tea." in next(m for m in out if plugin_form(m) == "recall").content
    mem.close()


def test_a_wake_from_before_stubs_is_stubbed_by_its_own_id(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    mem.runtime.add("user", "Prefers tea.")
    agent = _agent(mem, ScriptedChatModel(responses=["ok"]))
    fresh = agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "n"}})
    wake = next(m for m in fresh["messages"] if plugin_form(m) == "recall")
    revision = wake.additional_kwargs["mnemon"]["source"]["runtime_revision"]
    # A thread written by an older version: a plain id, no revision in the metadata.
    legacy = HumanMessage(
        wake.content,
        id="0b5c3f4e-legacy",
        additional_kwargs={"mnemon": plugin_metadata("recall", digest="old-digest")},
    )
    cfg = {"configurable": {"thread_id": "legacy"}}
    out = agent.invoke({"messages": [HumanMessage("before"), legacy, HumanMessage("now")]}, cfg)
    stub = next(m for m in out["messages"] if m.id == "0b5c3f4e-legacy")
    named = STUB.match(stub.content)
    assert named is not None, stub.content
    assert named.group(1) == revision[:12]  # read from the snapshot's own Revision line
    assert _forms(out["messages"]).count("recall") == 1
    mem.close()
