"""The graphs ``langgraph.json`` serves, compiled bare over the process-wide host.

LangGraph server supplies persistence (our ``checkpointer`` and ``store`` factories), so nothing
here is compiled with a checkpointer or store of its own. Inputs from clients are JSON, so each
served graph validates them into the layer's models before the layer runs.

Served graph ids: ``mnemon_agent`` (demo agent), ``mnemon_turn`` (turn lifecycle subgraph in a
parent), ``mnemon_recall`` (recall-refine, one turn per run), ``mnemon_write_worker``,
``mnemon_idle_review`` and ``mnemon_agent_query``.

Triggers: a run a client starts for ``mnemon_write_worker`` or ``mnemon_agent_query`` asks as
an explicit request (an application asked); the demo agent's tools, the turn lifecycle and
the recall-refine graph set ``acting("automatic")`` themselves; ``mnemon_idle_review`` runs its
pass under ``acting("automatic")`` here.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any, TypedDict

from langchain.agents import create_agent
from langchain_core.messages import messages_from_dict
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from pydantic import ValidationError

from langgraph_mnemon.errors import InvalidInputError, ParticipationError, ReadOnlyError
from langgraph_mnemon.graphs.agent_query import build_agent_query_graph
from langgraph_mnemon.graphs.recall import build_recall_graph
from langgraph_mnemon.graphs.review import build_review_graph
from langgraph_mnemon.graphs.turn import MnemonTurnState
from langgraph_mnemon.graphs.write_worker import build_write_worker_graph
from langgraph_mnemon.host import Mnemon
from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.memory_layers.write_worker import WriteCandidate
from langgraph_mnemon.reviews import REVIEW_GRAPH, ServerReviews
from langgraph_mnemon.server._host import shared_host
from langgraph_mnemon.server.demo import demo_model

__all__ = ["build_server_graphs"]


class _WriteIO(TypedDict, total=False):
    candidate: dict[str, Any]
    receipt: Any
    error: str
    refusal: dict[str, Any]


class _RecallIO(TypedDict, total=False):
    query: str
    space_ids: list[str]
    limit: int
    mode: str
    output: dict[str, Any]
    error: str
    refusal: dict[str, Any]


class _ReviewIO(TypedDict, total=False):
    thread_id: str
    generation: int
    transcript: list[dict[str, Any]]
    outcome: dict[str, Any]
    error: str


def _single(name: str, state: type, node: Any) -> CompiledStateGraph:
    graph = StateGraph(state)
    graph.add_node(name, node)
    graph.add_edge(START, name)
    graph.add_edge(name, END)
    return graph.compile(name=name)


def _write_worker(mem: Mnemon) -> CompiledStateGraph:
    inner = build_write_worker_graph(mem.spaces, mem.worker_model)

    # Async wrappers: the inner graph runs as a subgraph on the server's async saver, its sync
    # nodes on worker threads.
    async def write(state: _WriteIO, config: RunnableConfig) -> dict[str, Any]:
        try:
            candidate = WriteCandidate.model_validate(state.get("candidate"))
        except ValidationError as exc:
            return {"error": f"invalid candidate: {_first_error(exc)}"}
        try:
            out = await inner.ainvoke({"candidate": candidate}, config)
        except _KERNEL_REFUSALS as exc:  # an answer for the client, not a failed run
            return _refused(exc)
        return {"receipt": out.get("receipt"), "error": out.get("error")}

    return _single("mnemon_write_worker", _WriteIO, write)


def _recall(mem: Mnemon) -> CompiledStateGraph:
    inner = build_recall_graph(mem.spaces, mem.worker_model, turns=mem.turns.budgets)

    async def recall(state: _RecallIO, config: RunnableConfig) -> dict[str, Any]:
        # Each run is one turn with its own envelope over the active spaces.
        key = f"server:{uuid.uuid4().hex}"
        spaces = await mem.spaces.alist_spaces(active=True)
        inputs: dict[str, Any] = {
            "query": state.get("query"),
            "turn_id": key,
            "granted_space_ids": [s.id for s in spaces],
        }
        inputs.update({k: state[k] for k in ("space_ids", "limit", "mode") if k in state})
        try:
            out = await inner.ainvoke(inputs, config)
        except _KERNEL_REFUSALS as exc:
            return _refused(exc)
        finally:
            mem.turns.budgets.end(key)
        return {"output": out.get("output"), "error": out.get("error")}

    return _single("mnemon_recall", _RecallIO, recall)


def _idle_review(mem: Mnemon) -> CompiledStateGraph:
    cfg = mem.config.idle_review
    inner = build_review_graph(
        mem,
        mem.worker_model,
        runtime_memory=cfg.runtime_memory,
        max_context_chars=cfg.max_context_chars,
        max_tokens=cfg.max_tokens,
    )

    async def review(state: _ReviewIO, config: RunnableConfig) -> dict[str, Any]:
        reviews = mem.reviews
        if not isinstance(reviews, ServerReviews):
            return {"error": "idle review runs are scheduled by the server host only"}
        thread, generation = state["thread_id"], state["generation"]
        transcript = state.get("transcript") or []
        # The gate reads and saves the thread's activity in the database: off the event loop.
        decision = await asyncio.to_thread(reviews.fire, thread, generation)
        if decision.action == "reschedule" and decision.delay_seconds is not None:
            await asyncio.to_thread(
                reviews.reschedule, thread, generation, decision.delay_seconds, transcript
            )
            return {"outcome": {"action": "rescheduled", "summary": decision.reason}}
        if decision.action != "run":
            return {"outcome": {"action": "dropped", "summary": decision.reason}}
        success = False
        try:
            # A review is an automatic trigger: manual and off channels refuse its writes.
            with acting("automatic"):
                out = await inner.ainvoke({"messages": messages_from_dict(transcript)}, config)
            outcome = out["outcome"]
            success = outcome.action != "failed"
            return {"outcome": outcome.model_dump(mode="json"), "error": out.get("error")}
        finally:
            await asyncio.to_thread(reviews.finished, thread, generation, success=success)

    return _single(REVIEW_GRAPH, _ReviewIO, review)


def _turn(mem: Mnemon) -> CompiledStateGraph:
    # The turn subgraph as a parent would use it: first run begins a turn, the next ends it.
    graph = StateGraph(MnemonTurnState)
    graph.add_node("turn", mem.turn_graph())
    graph.add_edge(START, "turn")
    graph.add_edge("turn", END)
    return graph.compile(name="mnemon_turn")


def _agent(mem: Mnemon) -> CompiledStateGraph:
    return create_agent(
        demo_model(mem),
        tools=mem.tools(),
        middleware=[mem.middleware()],
        system_prompt="You are a helpful assistant with layered long-term memory.",
        name="mnemon_agent",
    )


_KERNEL_REFUSALS = (ParticipationError, ReadOnlyError)


def _refused(exc: ParticipationError | ReadOnlyError) -> dict[str, Any]:
    """A kernel refusal as the run's output: ``error`` says why, ``refusal`` is its JSON."""
    return {"error": f"{exc.code}: {exc.message}", "refusal": exc.to_dict()}


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "input"
    return f"{where}: {err['msg']}"


def build_server_graphs(mem: Mnemon) -> dict[str, CompiledStateGraph]:
    """Every served graph over ``mem``, by graph id, compiled without checkpointer or store."""
    if not isinstance(mem, Mnemon):
        raise InvalidInputError("build_server_graphs takes a Mnemon host")
    return {
        "mnemon_agent": _agent(mem),
        "mnemon_turn": _turn(mem),
        "mnemon_recall": _recall(mem),
        "mnemon_write_worker": _write_worker(mem),
        REVIEW_GRAPH: _idle_review(mem),
        "mnemon_agent_query": build_agent_query_graph(mem.spaces, mem.worker_model),
    }


_host = shared_host()
# Under LangGraph server, idle reviews become delayed runs on the server itself.
if os.environ.get("LANGGRAPH_API_URL"):
    _host.set_reviews(ServerReviews(_host.review_gate, os.environ["LANGGRAPH_API_URL"]))
_graphs = build_server_graphs(_host)
agent = _graphs["mnemon_agent"]
turn = _graphs["mnemon_turn"]
recall = _graphs["mnemon_recall"]
write_worker = _graphs["mnemon_write_worker"]
idle_review = _graphs[REVIEW_GRAPH]
agent_query = _graphs["mnemon_agent_query"]
