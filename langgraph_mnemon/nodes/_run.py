"""What every node of a run needs: the host's shape (:class:`TurnHost`), the run's thread and
its Mnemos task."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.memory_layers.health import HealthRecord
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.memory_layers.mnemos import Mnemos
from langgraph_mnemon.memory_layers.turns import Turns

__all__ = ["TurnHost", "task_of", "thread_of"]


class TurnHost(Protocol):
    """What the turn lifecycle needs of the host (``Mnemon`` satisfies it)."""

    @property
    def turns(self) -> Turns: ...

    @property
    def health(self) -> HealthRecord: ...

    @property
    def kernel(self) -> Kernel: ...

    @property
    def config(self) -> MnemonConfig: ...

    @property
    def mnemos(self) -> Mnemos: ...

    def resolve_scope(self, config: Mapping[str, Any] | None) -> Scope:
        """The user and project of a run (``Mnemon.resolve_scope``)."""
        ...


def thread_of(config: RunnableConfig | None) -> str:
    """The thread id of a run (``"default"`` when the run has none)."""
    return str(((config or {}).get("configurable") or {}).get("thread_id") or "default")


def task_of(mem: TurnHost, config: RunnableConfig | None, thread: str) -> str:
    """The Mnemos task of a run: ``configurable[mnemos.task_id_key]``, else the thread id."""
    value = ((config or {}).get("configurable") or {}).get(mem.config.mnemos.task_id_key)
    return str(value) if value else thread
