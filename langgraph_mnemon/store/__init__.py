"""``MnemonStore``: a LangGraph ``BaseStore`` facade over the Memory Spaces (``Mnemon.store()``).

The mapping of namespaces, keys and values to Memory Spaces and rows is described in
:mod:`langgraph_mnemon.store._facade`. ``Done``, ``DoneCount`` and ``RunningFuture`` are what
``setup()`` and the TTL sweep methods return: values that async code may also ``await``.

>>> from langgraph_mnemon import Mnemon
>>> store = Mnemon.open("./.mnemon").store()        # doctest: +SKIP
>>> store.put(("notes",), "k1", {"text": "hello"})  # doctest: +SKIP
"""

from langgraph_mnemon.store._both import Done, DoneCount, RunningFuture
from langgraph_mnemon.store._facade import (
    MAX_KEY_CHARS,
    MAX_VALUE_CHARS,
    NAMESPACE_PREFIX,
    MnemonStore,
    StoreHost,
)

__all__ = [
    "MAX_KEY_CHARS",
    "MAX_VALUE_CHARS",
    "NAMESPACE_PREFIX",
    "Done",
    "DoneCount",
    "MnemonStore",
    "RunningFuture",
    "StoreHost",
]
