"""langgraph-mnemon: layered long-term memory for LangGraph agents.

Example:
    >>> from langgraph_mnemon import Mnemon
    >>> mem = Mnemon.open("./.mnemon")
    >>> mem.runtime.add("user", "Prefers concise answers.").message
    'Entry added.'
"""

from typing import TYPE_CHECKING, Any

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.host import Mnemon
from langgraph_mnemon.memory_layers.documents import DocumentMutation
from langgraph_mnemon.memory_layers.runtime import RuntimeMutation
from langgraph_mnemon.memory_layers.write_worker import WriteCandidate

if TYPE_CHECKING:
    from langgraph_mnemon.checkpointers import AsyncMnemosSaver, MnemosSaver

__all__ = [
    "AsyncMnemosSaver",
    "DocumentMutation",
    "Mnemon",
    "MnemonConfig",
    "MnemosSaver",
    "RuntimeMutation",
    "WriteCandidate",
    "__version__",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The savers import LangGraph: load them on first access to keep the import light.
    if name in ("MnemosSaver", "AsyncMnemosSaver"):
        from langgraph_mnemon import checkpointers

        return getattr(checkpointers, name)
    raise AttributeError(f"module 'langgraph_mnemon' has no attribute {name!r}")
