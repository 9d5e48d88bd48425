"""What the model-facing tools need from the host, and the executing run's memory turn.

The tools sit below the host (DESIGN "Layers": ``host`` → ``tools``), so they never import it;
:class:`~langgraph_mnemon.Mnemon` satisfies :class:`ToolContext` as it is and passes itself to
:func:`~langgraph_mnemon.tools.build_tools`. Every read of the pinned View, the turn's scope or
its recall budgets goes through the functions here (``ctx.turns`` is used nowhere else in the
tools).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from langgraph.config import get_config

from langgraph_mnemon.errors import InvalidInputError, MnemonError, NotFoundError
from langgraph_mnemon.memory_layers.turns import TurnRetrieval, TurnView
from langgraph_mnemon.nodes import DEGRADED_TURN

if TYPE_CHECKING:
    from collections.abc import Mapping

    from langchain_core.language_models import BaseChatModel

    from langgraph_mnemon.config import MnemonConfig
    from langgraph_mnemon.contracts import Scope
    from langgraph_mnemon.memory_layers.documents import (
        DocumentMutation,
        DocumentReceipt,
        Documents,
    )
    from langgraph_mnemon.memory_layers.health import HealthRecord
    from langgraph_mnemon.memory_layers.kernel import Kernel
    from langgraph_mnemon.memory_layers.mnemos import Mnemos
    from langgraph_mnemon.memory_layers.runtime import (
        RuntimeMemory,
        RuntimeMutation,
        RuntimeReceipt,
    )
    from langgraph_mnemon.memory_layers.spaces import MemorySpaces
    from langgraph_mnemon.memory_layers.turns import Turns
    from langgraph_mnemon.memory_layers.write_worker import WriteCandidate, WriteReceipt

__all__ = [
    "ToolContext",
    "is_root_turn",
    "pinned_view",
    "scoped_context",
    "thread_id",
    "turn_id",
    "turn_retrieval",
]


class ToolContext(Protocol):
    """The host services and operations the memory tools use (``Mnemon`` is one).

    Reads go to the services directly; every write goes through the host's operations
    (``write_runtime``, ``write_document``, ``archive_document``, ``remember``), which run the
    maintenance graphs an overflowing write needs.
    """

    @property
    def config(self) -> MnemonConfig: ...
    @property
    def root(self) -> Path: ...
    @property
    def kernel(self) -> Kernel: ...
    @property
    def health(self) -> HealthRecord: ...
    @property
    def runtime(self) -> RuntimeMemory: ...
    @property
    def documents(self) -> Documents: ...
    @property
    def spaces(self) -> MemorySpaces: ...
    @property
    def worker_model(self) -> BaseChatModel | None: ...
    @property
    def turns(self) -> Turns: ...
    @property
    def mnemos(self) -> Mnemos: ...
    @property
    def scope(self) -> Scope: ...

    def scoped(self, scope: Scope) -> ToolContext:
        """The same context in ``scope`` (``Mnemon.scoped``)."""
        ...

    def resolve_scope(self, config: Mapping[str, Any] | None) -> Scope:
        """The scope of a run config (``Mnemon.resolve_scope``)."""
        ...

    def status(self) -> Any:
        """The host's ``Status`` report (declared in the host, which the tools cannot import)."""
        ...

    def write_runtime(self, request: RuntimeMutation) -> RuntimeReceipt: ...
    def write_document(self, mutation: DocumentMutation) -> DocumentReceipt: ...
    def archive_document(self, document_id: str) -> DocumentReceipt: ...
    def remember(self, candidate: WriteCandidate) -> WriteReceipt: ...


def turn_id(state: dict[str, Any]) -> str:
    """The executing agent's pinned turn id, or a typed error saying why there is none."""
    turn = state.get("mnemon_turn") if isinstance(state, dict) else None
    if turn == DEGRADED_TURN:
        raise MnemonError(
            "memory is unavailable for this turn (its begin step failed; mem.status().health "
            "says why); go on without it",
            code="memory-degraded",
        )
    if not turn or not isinstance(turn, str):
        raise InvalidInputError(
            "this tool needs a pinned memory turn: run the agent with mem.middleware() "
            "or put mem.turn_graph() around the agent node"
        )
    return turn


def scoped_context(ctx: ToolContext, state: Any) -> ToolContext:
    """``ctx`` in the scope the call runs in: the one its turn's view pinned, else the run's.

    Tools built on a scoped view (``mem.scoped(...).tools()``) stay in that view's scope.

    Raises:
        ScopeMismatchError: the run names a user other than the authenticated one.
    """
    if not ctx.scope.is_local:
        return ctx
    turn = state.get("mnemon_turn") if isinstance(state, dict) else None
    if isinstance(turn, str) and turn and turn != DEGRADED_TURN:
        try:
            return ctx.scoped(ctx.turns.pinned(turn).scope)
        except NotFoundError:
            pass  # the turn is gone (a restarted process): the run's config says whose it is
    try:
        config = get_config()
    except RuntimeError:
        return ctx  # called outside a run: the context's own scope
    return ctx.scoped(ctx.resolve_scope(config))


def pinned_view(ctx: ToolContext, turn: str) -> TurnView:
    """The View pinned for ``turn`` (its offers stay as they were at the turn's start)."""
    return ctx.turns.pinned(turn)


def turn_retrieval(ctx: ToolContext, turn: str) -> TurnRetrieval:
    """The recall, related and route budgets of ``turn``."""
    return ctx.turns.retrieval(turn)


def is_root_turn(ctx: ToolContext, turn: str) -> bool:
    """Whether ``turn`` belongs to the root agent (child agents do not archive Documents)."""
    return bool(ctx.turns.scope(turn).root)


def thread_id() -> str | None:
    """The thread id of the executing run, when the tool runs inside one."""
    try:
        config = get_config()
    except RuntimeError:
        return None
    thread = (config.get("configurable") or {}).get("thread_id")
    return str(thread)[:200] if thread else None
