"""Memory Space providers: the contract base class and the shipped implementations.

* :class:`BaseProvider` — capability gating and input checks (``base``).
* :class:`MnemosProvider` — the native provider on the shared SQL database (``mnemos``).
* :class:`ChromaProvider` — Chroma collections, local or server (``chroma``; imported lazily
  because ``chromadb`` is heavy).
* :class:`StoreProvider` — any LangGraph ``BaseStore`` (``store``).
"""

from __future__ import annotations

from typing import Any

from langgraph_mnemon.adapters.providers._configured import configured_providers
from langgraph_mnemon.adapters.providers.base import BaseProvider
from langgraph_mnemon.adapters.providers.mnemos import HybridWeights, MnemosProvider

__all__ = [
    "BaseProvider",
    "ChromaProvider",
    "HybridWeights",
    "MnemosProvider",
    "StoreProvider",
    "configured_providers",
]


def __getattr__(name: str) -> Any:
    if name == "ChromaProvider":
        from langgraph_mnemon.adapters.providers.chroma import ChromaProvider

        return ChromaProvider
    if name == "StoreProvider":
        from langgraph_mnemon.adapters.providers.store import StoreProvider

        return StoreProvider
    raise AttributeError(name)
