"""``MnemonMiddleware``: the turn lifecycle for ``langchain.agents.create_agent``.

Before the agent: begin the turn (``mem.turns``: pin its view, append the Wake when it changed
and the one cue). Before every model call: Mnemos observes the request's messages and acts on
the task's fatigue (checkpoint, REM warning, EMERGENCY compaction of the history, see
:mod:`langgraph_mnemon.nodes.mnemos`). Around every model call: add the system sections (the
Runtime Memory protocol and routing guidance, byte-stable across writes). After the agent: end
the turn (record its activity, release it). The hooks are the turn subgraph's node functions
(:mod:`langgraph_mnemon.nodes.turn`).

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
from langchain_core.messages import SystemMessage
from langgraph.config import get_config

from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.memory_layers.turns import system_sections
from langgraph_mnemon.nodes import memory_step
from langgraph_mnemon.nodes.mnemos import model_call_update
from langgraph_mnemon.nodes.turn import DEGRADED_TURN, TurnHost, begin_update, end_update

__all__ = ["MnemonAgentState", "MnemonMiddleware"]


class MnemonAgentState(AgentState):
    """Agent state plus the id of the turn being run (``None`` between turns)."""

    mnemon_turn: NotRequired[str | None]


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

    def before_agent(self, state: MnemonAgentState, runtime: Any) -> dict[str, Any] | None:
        return begin_update(
            self.mem,
            get_config(),
            state.get("messages"),
            agent_id=self.agent_id,
            root=self.root,
            retained=self.retained,
        )

    def after_agent(self, state: MnemonAgentState, runtime: Any) -> dict[str, Any] | None:
        turn_id = state.get("mnemon_turn")
        return end_update(self.mem, get_config(), turn_id, state.get("messages"), root=self.root)

    def before_model(self, state: MnemonAgentState, runtime: Any) -> dict[str, Any] | None:
        # The update goes through the state's add_messages reducer before the model node reads
        # the state, so a compaction (RemoveMessage(REMOVE_ALL_MESSAGES) first) is what the
        # model is sent.
        update = model_call_update(self.mem, get_config(), state.get("messages"), root=self.root)
        return update or None

    # The async hooks run the same sync code in a worker thread: it does file and SQL I/O, which
    # must not block an event loop (LangGraph server raises on blocking calls in async code).
    async def abefore_agent(self, state: MnemonAgentState, runtime: Any) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.before_agent, state, runtime)

    async def abefore_model(self, state: MnemonAgentState, runtime: Any) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.before_model, state, runtime)

    async def aafter_agent(self, state: MnemonAgentState, runtime: Any) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.after_agent, state, runtime)

    def _with_sections(self, request: ModelRequest) -> ModelRequest:
        """The request with the system sections added; unchanged when memory fails."""
        with acting("automatic"), memory_step(self.mem.health, "model-call"):
            return self._add_sections(request)
        return request  # memory failed: the model gets the agent's own request

    def _add_sections(self, request: ModelRequest) -> ModelRequest:
        turn_id = request.state.get("mnemon_turn") if request.state else None
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
        return handler(self._with_sections(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        return await handler(await asyncio.to_thread(self._with_sections, request))
