"""The graphs ``langgraph.json`` serves, compiled bare over the process-wide host.

LangGraph server supplies persistence (our ``checkpointer`` and ``store`` factories), so nothing
here is compiled with a checkpointer or store of its own. Inputs from clients are JSON, so each
served graph validates them into the layer's models before the layer runs.

Served graph ids: ``mnemon_agent`` (demo agent), ``mnemon_turn`` (turn lifecycle subgraph in a
parent), ``mnemon_recall`` (recall-refine, one turn per run), ``mnemon_write_worker``,
``mnemon_idle_review`` and ``mnemon_agent_query``.

Triggers: a run a client starts for ``mnemon_write_worker`` or ``mnemon_agent_query`` asks as
an explicit request (an application asked); the demo agent's tools, the turn lifecycle and
the recall-refine graph set ``acting("automatic")`` themselves; ``mnemon_idle_review`` claims its
queue row and runs the pass under ``acting("automatic")`` in a fresh context.

Scopes: every run works in the scope of its config (``Mnemon.resolve_scope``: the
authenticated LangGraph user, else ``user_id``; ``mnemon_project``). The worker, recall, agent
query and review graphs are built once per scope over ``mem.scoped(scope)`` (kept, least
recently used dropped first); the agent and turn graphs resolve the scope at each turn. A run
naming another user than the authenticated one is refused (``error``), nothing is read.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any, TypedDict

from langchain.agents import create_agent
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from pydantic import ValidationError

from langgraph_mnemon.errors import (
    InvalidInputError,
    MnemonError,
    ParticipationError,
    ReadOnlyError,
    ScopeMismatchError,
)
from langgraph_mnemon.graphs.agent_query import AgentQueryState, build_agent_query_graph
from langgraph_mnemon.graphs.recall import build_recall_graph
from langgraph_mnemon.graphs.turn import MnemonTurnState
from langgraph_mnemon.graphs.write_worker import build_write_worker_graph
from langgraph_mnemon.host import Mnemon
from langgraph_mnemon.memory_layers.activity import ReviewDecision
from langgraph_mnemon.memory_layers.scopes import ScopedLayers
from langgraph_mnemon.memory_layers.write_worker import WriteCandidate
from langgraph_mnemon.reviews import REVIEW_GRAPH, ServerReviews, host_review_gate
from langgraph_mnemon.server._authority import langgraph_auth
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
    token: str
    outcome: dict[str, Any]
    error: str


def _single(name: str, state: type, node: Any) -> CompiledStateGraph:
    graph = StateGraph(state)
    graph.add_node(name, node)
    graph.add_edge(START, name)
    graph.add_edge(name, END)
    return graph.compile(name=name)


class _PerScope:
    """What ``build`` makes of ``mem.scoped(scope)``, once per scope (built off the loop)."""

    def __init__(self, mem: Mnemon, build: Any) -> None:
        self._mem = mem
        self._built: ScopedLayers[Any] = ScopedLayers(lambda scope: build(mem.scoped(scope)))

    async def of(self, config: RunnableConfig) -> Any:
        """The scope's graph for the run with ``config`` (raises on a refused scope)."""
        scope = self._mem.resolve_scope(config)
        return await asyncio.to_thread(self._built.get, scope)


def _write_worker(mem: Mnemon) -> CompiledStateGraph:
    inner = _PerScope(mem, lambda view: build_write_worker_graph(view.spaces, mem.worker_model))

    # Async wrappers: the inner graph runs as a subgraph on the server's async saver, its sync
    # nodes on worker threads.
    async def write(state: _WriteIO, config: RunnableConfig) -> dict[str, Any]:
        try:
            candidate = WriteCandidate.model_validate(state.get("candidate"))
        except ValidationError as exc:
            return {"error": f"invalid candidate: {_first_error(exc)}"}
        try:
            graph = await inner.of(config)
            out = await graph.ainvoke({"candidate": candidate}, config)
        except _KERNEL_REFUSALS as exc:  # an answer for the client, not a failed run
            return _refused(exc)
        return {"receipt": out.get("receipt"), "error": out.get("error")}

    return _single("mnemon_write_worker", _WriteIO, write)


def _recall(mem: Mnemon) -> CompiledStateGraph:
    def build(view: Mnemon) -> tuple[Mnemon, CompiledStateGraph]:
        return view, build_recall_graph(view.spaces, mem.worker_model, turns=mem.turns.budgets)

    inner = _PerScope(mem, build)

    async def recall(state: _RecallIO, config: RunnableConfig) -> dict[str, Any]:
        # Each run is one turn with its own envelope over the scope's active spaces.
        key = f"server:{uuid.uuid4().hex}"
        try:
            view, graph = await inner.of(config)
            spaces = await view.spaces.alist_spaces(active=True)
            inputs: dict[str, Any] = {
                "query": state.get("query"),
                "turn_id": key,
                "granted_space_ids": [s.id for s in spaces],
            }
            inputs.update({k: state[k] for k in ("space_ids", "limit", "mode") if k in state})
            out = await graph.ainvoke(inputs, config)
        except _KERNEL_REFUSALS as exc:
            return _refused(exc)
        finally:
            mem.turns.budgets.end(key)
        return {"output": out.get("output"), "error": out.get("error")}

    return _single("mnemon_recall", _RecallIO, recall)


def _agent_query(mem: Mnemon) -> CompiledStateGraph:
    inner = _PerScope(mem, lambda view: build_agent_query_graph(view.spaces, mem.worker_model))

    async def query(state: AgentQueryState, config: RunnableConfig) -> dict[str, Any]:
        try:
            graph = await inner.of(config)
        except _SCOPE_REFUSALS as exc:
            return {"error": f"{exc.code}: {exc.message}"}
        # A kernel refusal stays a failed run, as the unscoped graph raised it.
        return dict(await graph.ainvoke(state, config))

    return _single("mnemon_agent_query", AgentQueryState, query)


def _idle_review(mem: Mnemon) -> CompiledStateGraph:
    async def review(state: _ReviewIO, config: RunnableConfig) -> dict[str, Any]:
        reviews = mem.reviews
        if not isinstance(reviews, ServerReviews):
            return {"error": "idle review runs are scheduled by the server host only"}
        thread, token = state.get("thread_id"), state.get("token")
        if not isinstance(thread, str) or not isinstance(token, str):
            return {"error": "an idle review run takes the thread_id and token it was given"}
        try:  # the run carries the scope of the turn that scheduled it
            scope = mem.resolve_scope(config)
        except _SCOPE_REFUSALS as exc:
            return {"error": f"{exc.code}: {exc.message}"}
        # Claims the queue row and runs the review off the event loop, in a fresh context:
        # never as a subgraph of this run.
        done = await asyncio.to_thread(reviews.run_token, thread, token, scope)
        if done is None:
            return {"outcome": {"action": "failed", "summary": "the review pass failed"}}
        if isinstance(done, ReviewDecision):
            action = {"reschedule": "rescheduled", "drop": "dropped"}.get(done.action, "dropped")
            return {"outcome": {"action": action, "summary": done.reason}}
        return {"outcome": done.model_dump(mode="json")}

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


# A run that names another user than the authenticated one, or a malformed id.
_SCOPE_REFUSALS = (ScopeMismatchError, InvalidInputError)
_KERNEL_REFUSALS = (ParticipationError, ReadOnlyError, *_SCOPE_REFUSALS)


def _refused(exc: MnemonError) -> dict[str, Any]:
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
        "mnemon_agent_query": _agent_query(mem),
    }


_host = shared_host()
# Under LangGraph server, idle reviews become delayed runs on the server itself; with custom
# auth the server refuses our credential-less client, so they run in this process instead.
if os.environ.get("LANGGRAPH_API_URL"):
    _host.set_reviews(
        ServerReviews(
            host_review_gate(_host, write_enabled=_host.kernel.write_enabled),
            os.environ["LANGGRAPH_API_URL"],
            host=_host,
            model=_host.worker_model,
            in_process=langgraph_auth(),
        )
    )
_graphs = build_server_graphs(_host)
agent = _graphs["mnemon_agent"]
turn = _graphs["mnemon_turn"]
recall = _graphs["mnemon_recall"]
write_worker = _graphs["mnemon_write_worker"]
idle_review = _graphs[REVIEW_GRAPH]
agent_query = _graphs["mnemon_agent_query"]
