"""Memory Space providers: the contract base class and the shipped implementations.

* :class:`BaseProvider` — capability gating and input checks (``base``).
* :class:`MnemosProvider` — the native provider on the shared SQL database (``mnemos``).
* :class:`ChromaProvider` — Chroma collections, local or server (``chroma``; imported lazily
  because ``chromadb`` is heavy).
* :class:`StoreProvider` — any LangGraph ``BaseStore`` (``store``).
* :class:`FactFileProvider` — a crash-safe local JSON fact file per space (``facts``).
* :class:`HttpProvider` — any memory service speaking the documented JSON contract (``http``).
* :class:`Mem0Provider` — mem0's open-source ``Memory``, offline (``mem0``; needs the extra
  ``langgraph-mnemon[mem0]``).

Every provider but the native one is imported on first use of its name, so importing this
package imports none of their dependencies.
"""

from __future__ import annotations

from langgraph_mnemon.adapters.providers._configured import configured_providers
from langgraph_mnemon.adapters.providers.base import BaseProvider
from langgraph_mnemon.adapters.providers.mnemos import HybridWeights, MnemosProvider
from langgraph_mnemon.storage.lazy import lazy_attributes

__all__ = [
    "BaseProvider",
    "ChromaProvider",
    "FactFileProvider",
    "HttpProvider",
    "HybridWeights",
    "Mem0Provider",
    "MnemosProvider",
    "StoreProvider",
    "configured_providers",
]

# Lazily imported names -> the module that defines them.
__getattr__ = lazy_attributes(
    __name__,
    {
        "ChromaProvider": ".chroma",
        "StoreProvider": ".store",
        "FactFileProvider": ".facts",
        "HttpProvider": ".http",
        "Mem0Provider": ".mem0",
    },
)
