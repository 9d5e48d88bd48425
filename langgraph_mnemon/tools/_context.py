"""What the model-facing tools need from the host, as a structural type.

The tools sit below the host (DESIGN "Layers": ``host`` → ``tools``), so they never import it;
:class:`~langgraph_mnemon.Mnemon` satisfies :class:`ToolContext` as it is and passes itself to
:func:`~langgraph_mnemon.tools.build_tools`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

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

__all__ = ["ToolContext"]


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
