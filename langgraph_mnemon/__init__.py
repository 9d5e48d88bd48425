"""langgraph-mnemon: layered long-term memory for LangGraph agents.

Example:
    >>> from langgraph_mnemon import Mnemon
    >>> mem = Mnemon.open("./.mnemon")
    >>> mem.runtime.add("user", "Prefers concise answers.").message
    'Entry added.'
"""

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.host import Mnemon

__all__ = ["Mnemon", "MnemonConfig", "__version__"]
__version__ = "0.1.0"
