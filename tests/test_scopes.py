"""Scopes: a run's user and project decide whose memory its turn, tools and reviews touch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from review_support import edit, grep, read, shell, wait_for

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.messages import plugin_form
from langgraph_mnemon.config import ScopesConfig
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import InvalidInputError, ScopeMismatchError, StorageError
from langgraph_mnemon.memory_layers.activity import ReviewGate, ReviewSettings
from langgraph_mnemon.memory_layers.scopes import resolve_scope, scope_folder
from langgraph_mnemon.memory_layers.turns import TurnScope
from langgraph_mnemon.reviews import BackgroundReviews
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

ALICE = {"configurable": {"thread_id": "ta", "user_id": "alice"}}
BOB = {"configurable": {"thread_id": "tb", "user_id": "bob"}}


def _files(root: Path) -> dict[str, bytes]:
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if not name.startswith(".") and path.suffix in {".json", ".md"}:
                out[str(path.relative_to(root))] = path.read_bytes()
    return out


# --- resolving a run's scope ------------------------------------------------------------------


def test_the_scope_of_a_run_comes_from_its_config() -> None:
    cfg = ScopesConfig()
    assert resolve_scope({}, cfg) == Scope()
    assert resolve_scope(None, cfg).is_local
    assert resolve_scope({"user_id": "alice"}, cfg) == Scope(user="alice")
    assert resolve_scope({"user_id": "a", "mnemon_project": "p"}, cfg) == Scope(
        user="a", project="p"
    )
    # The authenticated LangGraph user wins; naming it again is fine, naming another is refused.
    authed = {"langgraph_auth_user_id": "alice", "langgraph_auth_user": {"identity": "alice"}}
    assert resolve_scope(authed, cfg).user == "alice"
    assert resolve_scope({**authed, "user_id": "alice"}, cfg).user == "alice"
    with pytest.raises(ScopeMismatchError, match="not the authenticated user"):
        resolve_scope({**authed, "user_id": "bob"}, cfg)
    # A user's served graph is its project; the product's own graphs stay in the local project.
    assert resolve_scope({"graph_id": "researcher"}, cfg).project == "researcher"
    assert resolve_scope({"graph_id": "mnemon_agent"}, cfg).project == "local"
    assert resolve_scope({"graph_id": "g"}, ScopesConfig(project_from_graph=False)).is_local
    for bad in ("", " ", "x" * 201, "a\x00b", "line\nbreak"):
        with pytest.raises(InvalidInputError):
            resolve_scope({"user_id": bad or 5, "mnemon_project": bad or None}, cfg)


def test_resolve_scope_takes_a_config_or_its_configurable(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path) as mem:
        assert mem.resolve_scope(ALICE).user == "alice"
        assert mem.resolve_scope(ALICE["configurable"]).user == "alice"
        assert mem.resolve_scope(None).is_local
        with pytest.raises(InvalidInputError, match="scoped"):
            mem.scoped(Scope(), user="alice")


# --- where a scope's memory lives ------------------------------------------------------------


def test_the_local_scope_keeps_todays_files(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path)
    assert mem.scoped() is mem
    assert mem.scoped(Scope()) is mem
    mem.runtime.add("user", "Local user likes tea.")
    mem.documents.create("Runbook", "restart the service")
    assert not (tmp_path / "scopes").exists()
    assert (tmp_path / "runtime" / "USER.md").read_text().strip() == "Local user likes tea."
    mem.close()


def test_each_user_and_project_has_its_own_memory(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path)
    mem.runtime.add("user", "Local user likes tea.")
    alice = mem.scoped(user="alice", project="billing")
    assert mem.scoped(user="alice", project="billing") is alice  # one view per scope
    alice.runtime.add("user", "Alice prefers metric units.")
    alice.runtime.add("memory", "Billing deploys on Tuesdays.")
    alice.documents.create("Billing ADR", "invoices are immutable")
    # Alice in another project: same USER, other MEMORY and Documents.
    elsewhere = mem.scoped(user="alice", project="search")
    assert [e.content for e in elsewhere.runtime.entries("user")] == ["Alice prefers metric units."]
    assert elsewhere.runtime.entries("memory") == []
    assert elsewhere.documents.list() == []
    # Bob in billing shares the project's MEMORY and Documents, not Alice's USER.
    bob = mem.scoped(user="bob", project="billing")
    assert bob.runtime.entries("user") == []
    assert [e.content for e in bob.runtime.entries("memory")] == ["Billing deploys on Tuesdays."]
    assert [d.title for d in bob.documents.list()] == ["Billing ADR"]
    # The local scope sees none of it.
    assert [e.content for e in mem.runtime.entries()] == ["Local user likes tea."]
    assert mem.documents.list() == []
    users = tmp_path / "scopes" / "users" / scope_folder("alice") / "runtime" / "USER.md"
    assert users.read_text().strip() == "Alice prefers metric units."
    mem.close()


def test_user_project_memory_keeps_each_users_project_notes_apart(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path, scopes={"project_memory": "user_project"})
    mem.scoped(user="alice", project="billing").runtime.add("memory", "Alice's billing note.")
    mem.scoped(user="alice", project="billing").documents.create("Mine", "alice only")
    bob = mem.scoped(user="bob", project="billing")
    assert bob.runtime.entries("memory") == []
    assert bob.documents.list() == []
    mem.close()


@pytest.mark.parametrize("hostile", ["../../etc", "a/b", "..", "x" * 200, "😀 name", "C:\\x"])
def test_any_id_maps_to_one_folder_inside_the_root(tmp_path: Path, hostile: str) -> None:
    mem = Mnemon.open(tmp_path / "root")
    view = mem.scoped(user=hostile, project=hostile)
    view.runtime.add("user", "kept inside")
    view.documents.create("Inside", "body")
    written = [p for p in (tmp_path).rglob("*") if p.is_file()]
    assert all(p.is_relative_to(tmp_path / "root") for p in written)
    assert "/" not in scope_folder(hostile)
    assert not scope_folder(hostile).startswith(".")
    assert scope_folder(hostile) != scope_folder(hostile + "!")
    mem.close()


def test_a_linked_scope_folder_is_refused(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "root" / "scopes").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(StorageError) as caught:
        mem.scoped(user="alice")
    assert caught.value.code == "symlink-refused"
    assert list((tmp_path / "elsewhere").iterdir()) == []
    mem.close()


# --- a turn pins its scope --------------------------------------------------------------------


def test_a_turn_pins_its_scope_and_shows_only_its_memory(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path)
    mem.runtime.add("user", "Local user likes tea.")
    mem.scoped(user="alice").runtime.add("user", "Alice prefers metric units.")
    start = mem.turns.begin(TurnScope(thread_id="t1", memory_scope=Scope(user="alice")))
    assert start.view.scope == Scope(user="alice")
    assert "metric" in start.wake.text
    assert "tea" not in start.wake.text
    local = mem.turns.begin(TurnScope(thread_id="t2"))
    assert local.view.scope.is_local
    assert "tea" in local.wake.text
    assert "metric" not in local.wake.text
    mem.turns.end(start.turn_id)
    mem.turns.end(local.turn_id)
    mem.close()


def _agent(mem: Mnemon, responses: list) -> tuple:
    model = ScriptedChatModel(responses=responses)
    agent = create_agent(
        model, tools=mem.tools(), middleware=[mem.middleware()], checkpointer=mem.checkpointer()
    )
    return agent, model


def test_two_users_of_one_agent_never_see_each_others_memory(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path)
    add = {"action": "add", "target": "user", "content": "Alice is allergic to peanuts."}
    agent, model = _agent(mem, [tool_call("mnemon_runtime_memory", add, "c1"), "Noted.", "Hi."])
    agent.invoke({"messages": [HumanMessage("Remember my allergy.")]}, ALICE)
    assert [e.content for e in mem.scoped(user="alice").runtime.entries("user")] == [add["content"]]
    assert mem.runtime.entries() == []
    assert mem.scoped(user="bob").runtime.entries() == []
    out = agent.invoke({"messages": [HumanMessage("Hello")]}, BOB)["messages"]
    assert "peanuts" not in " ".join(str(m.content) for m in out)
    assert "peanuts" not in str(model.calls[-1])  # nothing of Alice's reached Bob's model call
    again = agent.invoke({"messages": [HumanMessage("And me?")]}, {**ALICE})["messages"]
    wakes = [m for m in again if plugin_form(m) == "recall"]
    assert "peanuts" in str(wakes[-1].content)
    mem.close()


def test_a_run_naming_another_user_gets_no_memory_and_still_finishes(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path)
    mem.scoped(user="bob").runtime.add("user", "Bob's favourite is pistachio.")
    agent, model = _agent(mem, ["Answer without memory."])
    config = {
        "configurable": {
            "thread_id": "tx",
            "user_id": "bob",
            "langgraph_auth_user_id": "mallory",
            "langgraph_auth_user": {"identity": "mallory"},
        }
    }
    out = agent.invoke({"messages": [HumanMessage("What does Bob like?")]}, config)["messages"]
    assert out[-1].content == "Answer without memory."
    assert "pistachio" not in str(model.calls)
    report = mem.health.report()
    assert report.degraded
    assert "not the authenticated user" in str(report.problems)
    mem.close()


def test_the_idle_review_writes_in_the_scope_of_the_turn(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    gate = ReviewGate(ReviewSettings(delay_seconds=0.05, min_interval_seconds=0))
    reviews = mem._reviews = BackgroundReviews(mem, gate)  # a short debounce for the test
    steps = [
        tool_call("shell", {"cmd": "make"}, "a"),
        tool_call("read", {"path": "x"}, "b"),
        tool_call("grep", {"pattern": "y"}, "c"),
        tool_call("edit", {"path": "x"}, "d"),
        "Done.",
    ]
    agent = create_agent(
        ScriptedChatModel(responses=steps),
        tools=[shell, read, grep, edit],
        middleware=[mem.middleware()],
        checkpointer=mem.checkpointer(),
    )
    text = "Please remember that releases are cut on Tuesdays. " + "Context. " * 20
    config = {"configurable": {"thread_id": "t", "user_id": "alice", "mnemon_project": "rel"}}
    agent.invoke({"messages": [HumanMessage(text)]}, config)
    assert wait_for(lambda: reviews.outcomes)
    assert reviews.outcomes[0][1].action == "changed"
    alice = mem.scoped(user="alice", project="rel")
    assert [e.content for e in alice.runtime.entries("memory")] == ["Releases are cut on Tuesdays."]
    assert mem.runtime.entries() == []
    mem.close()


def test_files_of_the_local_scope_are_untouched_by_other_scopes(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path)
    mem.runtime.add("memory", "Local note.")
    before = _files(tmp_path)
    view = mem.scoped(user="carol", project="x")
    view.runtime.add("memory", "Carol's note.")
    view.documents.create("Carol doc", "body")
    after = {k: v for k, v in _files(tmp_path).items() if not k.startswith("scopes")}
    assert after == before
    mem.close()
