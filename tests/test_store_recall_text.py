"""Recall shows a store item as its text (issue 31, part 3).

The ``BaseStore`` facade keeps an item's value as its JSON text; ``mem.spaces.search``, the
model's ``mnemon_recall`` (through the recall envelope) and every other recall surface show the
item as text, while ``store.get`` and ``store.search`` still return exactly the value put. Real
components: a real SQLite file and the real PostgreSQL server (``database_url``), a real
``create_agent`` run driven by the deterministic ``ScriptedChatModel``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from langgraph_mnemon import Mnemon
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.memory_layers.spaces import item_text
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

NS = ("memories", "u42")
# key: (value put, the text recall shows, a query that finds it)
ITEMS: dict[str, tuple[dict[str, Any], str, str]] = {
    "text": ({"text": "Deploys need two approvals."}, "Deploys need two approvals.", "approvals"),
    "content": (
        {"content": "The user's dog is called Rex."},
        "The user's dog is called Rex.",
        "dog Rex",
    ),
    "memory": (
        {"memory": "Staging rebuilds on Mondays."},
        "Staging rebuilds on Mondays.",
        "staging",
    ),
    "extra": (
        {"text": "The VPN interface is wg0.", "team": "infra"},
        "The VPN interface is wg0. (team: infra)",
        "VPN interface",
    ),
    "pairs": ({"food": "pizza", "slices": 3}, "food: pizza; slices: 3", "pizza slices"),
    "schema": (  # LangMem's manage tool with a schema: {"kind": ..., "content": {...}}
        {"kind": "Profile", "content": {"name": "Alice", "pets": ["Rex", "Tom"]}},
        'name: Alice; pets: ["Rex", "Tom"] (kind: Profile)',
        "Alice pets",
    ),
}


@pytest.fixture
def mem(database_url: str, tmp_path: Path) -> Iterator[Mnemon]:
    host = Mnemon.open(tmp_path / "root", database_url=database_url, chroma={"enabled": False})
    try:
        yield host
    finally:
        host.close()


def test_item_text_rules() -> None:
    for value, text, _ in ITEMS.values():
        assert item_text(value) == text
    assert item_text({"text": "  ", "note": "x"}) == "text:   ; note: x"  # blank text: pairs
    assert item_text({"content": None, "memory": "m"}) == "m (content: null)"  # first with text
    assert item_text({}) == ""


def test_recall_shows_store_items_as_text_and_the_store_returns_the_values(mem: Mnemon) -> None:
    store = mem.store().scoped(Scope(user="u42"))
    for key, (value, _, _) in ITEMS.items():
        store.put(NS, key, value)
    # Not a store item: a remembered text that happens to be JSON stays as it is.
    space = mem.scoped(user="u42").spaces.create_space("Notes", "notes", active=True).space
    assert space is not None
    raw = '{"text": "a JSON snippet about the parser"}'
    mem.scoped(user="u42").spaces.remember(raw, space_id=space.id)
    spaces = mem.scoped(user="u42").spaces
    for key, (value, text, query) in ITEMS.items():
        shown = [row.content for row in spaces.search(query, limit=10).results]
        assert text in shown, (key, shown)
        assert not any(c.startswith("{") and c != raw for c in shown), shown
        found = {item.key: item.value for item in store.search(NS, query=query, limit=10)}
        assert found.get(key) == value, (key, found)
        assert store.get(NS, key).value == value
    assert raw in [row.content for row in spaces.search("JSON snippet parser").results]


def test_the_models_recall_gets_the_items_text(mem: Mnemon) -> None:
    mem.store().scoped(Scope(user="u42")).put(NS, "dog", ITEMS["content"][0])
    model = ScriptedChatModel(
        responses=[tool_call("mnemon_recall", {"query": "what is the dog called"}), "Rex."]
    )
    agent = create_agent(
        model, tools=mem.tools(), middleware=[mem.middleware()], checkpointer=mem.checkpointer()
    )
    out = agent.invoke(
        {"messages": [HumanMessage("What is my dog called?")]},
        {"configurable": {"thread_id": "t1", "user_id": "u42"}},
    )
    recalled = json.loads(next(m.content for m in out["messages"] if m.type == "tool"))
    assert [r["content"] for r in recalled["results"]] == ["The user's dog is called Rex."]
