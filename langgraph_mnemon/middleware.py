"""``MnemonMiddleware``: the turn lifecycle for ``langchain.agents.create_agent``.

Everything runs inside the agent's model node (``wrap_model_call``), so the middleware adds no
graph step, checkpoint or write batch of its own. The first model call of a turn begins it
(``mem.turns``: pin its view, the Wake when it changed and the one cue, in front of the model's
answer in the thread); before every model call Mnemos observes the request's messages and acts
on the task's fatigue (checkpoint, REM warning, EMERGENCY compaction of the history, see
:mod:`langgraph_mnemon.nodes.mnemos`); every call gets the system sections (the Runtime Memory
protocol and routing guidance, byte-stable across writes); a response without tool calls ends
the turn (record its activity, release it). The logic is :mod:`langgraph_mnemon.nodes.agent_turn`
over the turn subgraph's node functions (:mod:`langgraph_mnemon.nodes.turn`).

Memory never ends the agent's run: a failing hook is logged, recorded in ``mem.health`` (shown
by ``mem.status().health``) and skipped; the agent's messages and model request stay untouched.
Every hook is an automatic trigger (``acting("automatic")``): the kernel admits what the
lifecycle does exactly as it would a model tool's call.

Example:
    >>> agent = create_agent(model, tools=[...], middleware=[mem.middleware()],
    ...                      checkpointer=mem.checkpointer())
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langchain_core.messages import SystemMessage
from langgraph.config import get_config
from langgraph.types import Command

from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.memory_layers.mnemos import SeenMessages
from langgraph_mnemon.memory_layers.turns import system_sections
from langgraph_mnemon.nodes import memory_step
from langgraph_mnemon.nodes.agent_turn import CallPlan, finish_call, plan_call, release_begun
from langgraph_mnemon.nodes.mnemos import call_window
from langgraph_mnemon.nodes.turn import DEGRADED_TURN, TurnHost

__all__ = ["MnemonAgentState", "MnemonMiddleware"]


class MnemonAgentState(AgentState):
    """Agent state plus the id of the turn being run (``None`` between turns) and where
    Mnemos's last pass over the messages stopped (``SeenMessages.to_state()``: the next pass
    reads only what is new)."""

    mnemon_turn: NotRequired[str | None]
    mnemon_seen: NotRequired[dict[str, Any] | None]


class MnemonMiddleware(AgentMiddleware[MnemonAgentState]):
    """Memory for a ``create_agent`` agent: the turn lifecycle and the system sections.

    Args:
        mem: the host (``Mnemon``; its ``turns``, ``health``, ``kernel``, ``config``, ``mnemos``).
        agent_id: the agent whose turns these are.
        root: ``False`` for a child agent (no cue, no idle review).
        parent_turn: the parent state's ``mnemon_turn`` for a child started during a parent
            turn: the child keeps the parent's view (and is not root).

    Raises:
        NotFoundError: ``parent_turn`` is not a live turn of ``mem``.

    Example:
        >>> child = mem.middleware(agent_id="child", parent_turn=state["mnemon_turn"])
        >>> ...; child.close()      # give back the parent's view when the child is done
    """

    state_schema = MnemonAgentState

    def __init__(
        self,
        mem: TurnHost,
        *,
        agent_id: str = "main",
        root: bool = True,
        parent_turn: str | None = None,
    ) -> None:
        super().__init__()
        self.mem = mem
        self.agent_id = agent_id
        self.root = root and parent_turn is None
        # A child keeps its parent's view for as long as it lives, even after the parent's
        # turn ends; its own turns pin that view with their own budgets. A parent whose begin
        # failed has no view to keep: the child composes its own.
        self.retained = (
            mem.turns.retain(mem.turns.pinned(parent_turn))
            if parent_turn is not None and parent_turn != DEGRADED_TURN
            else None
        )

    def close(self) -> None:
        """Give back the retained parent view (a child agent that is done)."""
        if self.retained is not None:
            self.mem.turns.unretain(self.retained)
            self.retained = None

    @property
    def name(self) -> str:
        return "MnemonMiddleware"

    # No before_agent / before_model / after_agent hooks: each would be a graph node of its
    # own (a checkpoint and a write batch per turn or per model call). The lifecycle runs
    # inside the model node instead (``nodes.agent_turn``).

    def _plan(self, request: ModelRequest) -> CallPlan:
        """Begin the turn (first call), tend the task; guarded: never fails the call."""
        state = request.state or {}
        # "lifecycle": a step name of its own, so its success never clears another step's
        # failure (the begin, end and Mnemos steps inside guard and record themselves).
        with acting("automatic"), memory_step(self.mem.health, "lifecycle"):
            return plan_call(
                self.mem,
                get_config(),
                state.get("messages"),
                state.get("mnemon_turn"),
                agent_id=self.agent_id,
                root=self.root,
                retained=self.retained,
                window=call_window(self.mem, request.model),  # the called model's own window
                seen=SeenMessages.from_state(state.get("mnemon_seen")),
            )
        return CallPlan(turn_id=None)  # memory failed: no turn for this call

    def _request(self, request: ModelRequest, plan: CallPlan) -> ModelRequest:
        """The request the model gets: the plan's messages, then the system sections."""
        if plan.before:
            request = request.override(messages=plan.model_messages(request.messages))
        return self._with_sections(request, plan.turn_id)

    def _finish(self, plan: CallPlan, response: Any) -> Any:
        """The response with the plan's messages in front and the turn's state update."""
        result = response if isinstance(response, ModelResponse) else _as_response(response)
        update: dict[str, Any] = {}
        with acting("automatic"), memory_step(self.mem.health, "lifecycle"):
            update = finish_call(
                self.mem,
                get_config(),
                plan,
                result.result,
                root=self.root,
                structured=result.structured_response,
            )
        if not plan.before and not update:
            return response
        # In front of the answer, in the model node's own update: the thread reads as if a
        # hook node had appended them before the call (``[request, cue, Wake, answer]``).
        merged = ModelResponse(
            result=[*plan.before, *result.result], structured_response=result.structured_response
        )
        if not update:
            return merged
        return ExtendedModelResponse(model_response=merged, command=Command(update=update))

    def _release(self, plan: CallPlan) -> None:
        with acting("automatic"), memory_step(self.mem.health, "lifecycle"):
            release_begun(self.mem, plan)

    def _with_sections(self, request: ModelRequest, turn_id: str | None) -> ModelRequest:
        """The request with the system sections added; unchanged when memory fails."""
        with acting("automatic"), memory_step(self.mem.health, "model-call"):
            return self._add_sections(request, turn_id)
        return request  # memory failed: the model gets the agent's own request

    def _add_sections(self, request: ModelRequest, turn_id: str | None) -> ModelRequest:
        live = turn_id and turn_id != DEGRADED_TURN
        view = self.mem.turns.pinned(turn_id) if live else None
        found = system_sections(self.mem.config, view, kernel=self.mem.kernel)
        sections = "\n\n".join(text for _, text in found)
        if not sections:
            return request
        base = request.system_message.content if request.system_message else ""
        content: str | list[Any] = sections
        if isinstance(base, str) and base:
            content = f"{base}\n\n{sections}"
        elif isinstance(base, list) and base:  # content blocks: keep them, add one text block
            content = [*base, {"type": "text", "text": sections}]
        return request.override(system_message=SystemMessage(content=content))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        plan = self._plan(request)
        try:
            response = handler(self._request(request, plan))
        except BaseException:
            self._release(plan)  # a retry (or the next run) begins the turn again
            raise
        return self._finish(plan, response)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        # The memory steps do file and SQL I/O: a worker thread keeps the event loop free
        # (LangGraph server raises on blocking calls in async code).
        plan = await asyncio.to_thread(self._plan, request)
        try:
            response = await handler(await asyncio.to_thread(self._request, request, plan))
        except BaseException:
            await asyncio.to_thread(self._release, plan)
            raise
        return await asyncio.to_thread(self._finish, plan, response)


def _as_response(response: Any) -> ModelResponse:
    """A handler's result as a ``ModelResponse`` (an ``AIMessage`` is one message)."""
    if isinstance(response, ExtendedModelResponse):
        return response.model_response
    return ModelResponse(result=[response])
