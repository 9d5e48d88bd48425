"""The LangChain objects mem0 is handed: embeddings over a langgraph-mnemon :class:`Embedder`,
and a chat model that refuses every call when none is configured.

Split from :mod:`._mem0_support` because defining them needs LangChain's model classes (about a
second to import): the mem0 provider imports this module when it opens mem0, not when the host
builds it.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from langgraph_mnemon.errors import ProviderError
from langgraph_mnemon.memory_layers.spaces import Embedder

__all__ = ["EmbedderEmbeddings", "NoChatModel"]


class EmbedderEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` over a langgraph-mnemon :class:`Embedder` (for mem0).

    Example:
        >>> EmbedderEmbeddings(HashingEmbedder(256)).embed_query("hello")[:2]
        [...]
    """

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        return [[float(x) for x in v] for v in self._embedder.embed_documents(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        """The vector of one text (mem0 embeds stored rows and queries with this)."""
        return [float(x) for x in self._embedder.embed_query(text)]


class NoChatModel(BaseChatModel):
    """The chat model mem0 gets when none is configured: it refuses every call.

    mem0 needs an LLM object even when ``infer=False`` never asks it anything; this one makes
    an unexpected call a clear error instead of a request to a hosted API.
    """

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise ProviderError(
            "mem0 asked for a chat model but the mem0 provider has none; pass model= to "
            "Mem0Provider (and infer=True to let mem0 extract facts)",
            code="no-model",
        )

    @property
    def _llm_type(self) -> str:
        return "mnemon-no-model"
