"""``MnemonMiddleware``: the turn lifecycle for ``langchain.agents.create_agent``.

Before the agent: pin the turn's view, append the Wake when it changed and the one cue. Around
every model call: add the system sections (the Runtime Memory protocol and routing guidance,
byte-stable across writes). After the agent: release the pin and record the turn's activity.

Example:
    >>> agent = create_agent(model, tools=[...], middleware=[mem.middleware()],
    ...                      checkpointer=mem.checkpointer())
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain_core.messages import SystemMessage
from langgraph.config import get_config

from langgraph_mnemon.graphs.turn import begin_turn, end_turn, task_of, thread_of
from langgraph_mnemon.memory_layers.view import system_sections

if TYPE_CHECKING:
    from langgraph_mnemon.host import Mnemon

__all__ = ["MnemonAgentState", "MnemonMiddleware"]


class MnemonAgentState(AgentState):
    """Agent state plus the id of the turn being run (``None`` between turns)."""

    mnemon_turn: NotRequired[str | None]


class MnemonMiddleware(AgentMiddleware[MnemonAgentState]):
    """Memory for a ``create_agent`` agent; ``root=False`` for a child agent (no cue, no review)."""

    state_schema = MnemonAgentState

    def __init__(
        self,
        mem: Mnemon,
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
        # turn ends; its own turns pin that view with their own budgets.
        self.retained = (
            mem.views.retain(mem.views.pinned(parent_turn)) if parent_turn is not None else None
        )

    def close(self) -> None:
        """Give back the retained parent view (a child agent that is done)."""
        if self.retained is not None:
            self.mem.views.unretain(self.retained)
            self.retained = None

    @property
    def name(self) -> str:
        return "MnemonMiddleware"

    def before_agent(self, state: MnemonAgentState, runtime: Any) -> dict[str, Any] | None:
        config = get_config()
        thread = thread_of(config)
        turn, new = begin_turn(
            self.mem,
            thread,
            state["messages"],
            agent_id=self.agent_id,
            root=self.root,
            task=task_of(self.mem, config, thread),
            retained=self.retained,
        )
        return {"mnemon_turn": turn, "messages": new}

    def after_agent(self, state: MnemonAgentState, runtime: Any) -> dict[str, Any] | None:
        turn = state.get("mnemon_turn")
        update: list[Any] = []
        if turn:
            config = get_config()
            thread = thread_of(config)
            update = end_turn(
                self.mem,
                thread,
                turn,
                state["messages"],
                root=self.root,
                task=task_of(self.mem, config, thread),
            )
        return {"mnemon_turn": None, "messages": update}

    # The async hooks run the same sync code in a worker thread: it does file and SQL I/O, which
    # must not block an event loop (LangGraph server raises on blocking calls in async code).
    async def abefore_agent(self, state: MnemonAgentState, runtime: Any) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.before_agent, state, runtime)

    async def aafter_agent(self, state: MnemonAgentState, runtime: Any) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.after_agent, state, runtime)

    def _with_sections(self, request: ModelRequest) -> ModelRequest:
        turn = request.state.get("mnemon_turn") if request.state else None
        view = self.mem.views.pinned(turn) if turn else None
        sections = "\n\n".join(text for _, text in system_sections(self.mem.config, view))
        if not sections:
            return request
        base = request.system_message.content if request.system_message else ""
        text = f"{base}\n\n{sections}" if isinstance(base, str) and base else sections
        return request.override(system_message=SystemMessage(content=text))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        return handler(self._with_sections(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        return await handler(await asyncio.to_thread(self._with_sections, request))
