"""langgraph-mnemon: layered long-term memory for LangGraph agents.

Example:
    >>> from langgraph_mnemon import Mnemon
    >>> mem = Mnemon.open("./.mnemon")
    >>> mem.runtime.add("user", "Prefers concise answers.").message
    'Entry added.'
"""

from typing import TYPE_CHECKING

from langgraph_mnemon.storage.lazy import lazy_attributes

if TYPE_CHECKING:
    from langgraph_mnemon.adapters.messages import latest_request
    from langgraph_mnemon.checkpointers import AsyncMnemosSaver, MnemosSaver
    from langgraph_mnemon.config import MnemonConfig
    from langgraph_mnemon.host import Mnemon
    from langgraph_mnemon.memory_layers.documents import DocumentMutation
    from langgraph_mnemon.memory_layers.runtime import RuntimeMutation
    from langgraph_mnemon.memory_layers.write_worker import WriteCandidate

__all__ = [
    "AsyncMnemosSaver",
    "DocumentMutation",
    "Mnemon",
    "MnemonConfig",
    "MnemosSaver",
    "RuntimeMutation",
    "WriteCandidate",
    "__version__",
    "latest_request",
]
__version__ = "0.1.0"

# Every public name is loaded on first access (PEP 562): importing a subpackage (the ``mnemon``
# command's ``langgraph_mnemon.cli``, ``langgraph_mnemon.contracts``) then costs nothing of the
# host, and ``from langgraph_mnemon import Mnemon`` loads only what the host needs. The savers
# import LangGraph.
_PUBLIC = {
    "AsyncMnemosSaver": "langgraph_mnemon.checkpointers",
    "DocumentMutation": "langgraph_mnemon.memory_layers.documents",
    "Mnemon": "langgraph_mnemon.host",
    "MnemonConfig": "langgraph_mnemon.config",
    "MnemosSaver": "langgraph_mnemon.checkpointers",
    "RuntimeMutation": "langgraph_mnemon.memory_layers.runtime",
    "WriteCandidate": "langgraph_mnemon.memory_layers.write_worker",
    "latest_request": "langgraph_mnemon.adapters.messages",
}


__getattr__ = lazy_attributes(__name__, _PUBLIC)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
