"""A served graph that writes one item through the server's store without a ``ttl`` of its
own, so ``store.ttl.default_ttl`` of ``langgraph.json`` decides when it expires
(``tests/test_store_ttl_served.py`` serves it with ``langgraph dev``)."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime


class State(TypedDict):
    key: str
    text: str


async def put(state: State, runtime: Runtime[Any]) -> dict[str, Any]:
    assert runtime.store is not None  # the server supplies its store
    await runtime.store.aput(("served",), state["key"], {"text": state["text"]})
    return {}


builder = StateGraph(State)
builder.add_node("put", put)
builder.add_edge(START, "put")
builder.add_edge("put", END)
graph = builder.compile()
