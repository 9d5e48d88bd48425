"""History compaction never separates an AI tool call from its tool messages."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.message import add_messages

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.nodes import compact_history, safe_cut, valid_tool_sequence


def conversation(turns: list[int], rng: random.Random) -> list[BaseMessage]:
    """A system prompt, then per turn: a user message and AI steps calling 0..3 tools each."""
    messages: list[BaseMessage] = [SystemMessage("be brief")]
    n = 0
    for steps in turns:
        messages.append(HumanMessage(f"question {n}"))
        for _ in range(steps):
            calls = [
                {"name": "read", "args": {"p": k}, "id": f"c{n}_{k}", "type": "tool_call"}
                for k in range(rng.randint(1, 3))
            ]
            messages.append(AIMessage(content="", tool_calls=calls))
            messages.extend(ToolMessage(f"out {c['id']}", tool_call_id=c["id"]) for c in calls)
            n += 1
        messages.append(AIMessage(f"answer {n}"))
        n += 1
    return add_messages([], messages)


@settings(max_examples=200, deadline=None)
@given(
    turns=st.lists(st.integers(0, 4), min_size=1, max_size=8),
    keep=st.integers(1, 30),
    seed=st.integers(0, 10_000),
)
def test_compaction_keeps_a_sequence_a_provider_accepts(
    turns: list[int], keep: int, seed: int
) -> None:
    messages = conversation(turns, random.Random(seed))
    assert valid_tool_sequence(messages)
    update = compact_history(messages, keep, "they talked")
    after = add_messages(messages, update) if update else messages
    assert valid_tool_sequence(after)
    assert isinstance(after[0], SystemMessage)
    if update:
        assert after[1].content.startswith("[Summary of the earlier conversation]")
        assert len(after) - 2 <= keep  # the kept tail never exceeds keep_last
        assert isinstance(update[0], RemoveMessage)
        kept = after[2:]
        assert [m.id for m in kept] == [m.id for m in messages[len(messages) - len(kept) :]]


def test_cut_moves_back_to_a_group_boundary() -> None:
    messages = add_messages(
        [],
        [
            SystemMessage("s"),
            HumanMessage("q1"),
            AIMessage(
                "",
                tool_calls=[
                    {"name": "t", "args": {}, "id": "a", "type": "tool_call"},
                    {"name": "t", "args": {}, "id": "b", "type": "tool_call"},
                ],
            ),
            ToolMessage("ra", tool_call_id="a"),
            ToolMessage("rb", tool_call_id="b"),
            AIMessage("done"),
            HumanMessage("q2"),
        ],
    )
    # Keeping 3 would start at ToolMessage "rb": the cut moves to the next group start instead.
    assert safe_cut(messages, 3) == 5
    assert safe_cut(messages, 100) == 0  # nothing to remove
    assert compact_history(messages, 100, "x") == []


def test_validation() -> None:
    with pytest.raises(InvalidInputError):
        safe_cut([], 0)
    with pytest.raises(InvalidInputError):
        compact_history([HumanMessage("a")], 1, "  ")
    plain = compact_history([HumanMessage("a"), HumanMessage("b"), HumanMessage("c")], 1, "x")
    assert [m.content for m in add_messages([], plain)] == [
        "[Summary of the earlier conversation]\nx",
        "c",
    ]
    broken = [AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "a", "type": "tool_call"}])]
    assert not valid_tool_sequence(broken)
    assert not valid_tool_sequence([ToolMessage("x", tool_call_id="zz")])
