"""The Chroma embedding function over a langgraph-mnemon :class:`Embedder` (``mnemon``).

Split from :mod:`.chroma` because defining it needs ``chromadb`` (its base class and registry),
which takes about a second to import: the provider imports this module on its first operation
and the host never pays for Chroma at start-up. Importing it registers the function with
Chroma under the name ``mnemon``, so a collection stored with it opens again by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from langgraph_mnemon.adapters.embeddings import (
    HashingEmbedder,
    SentenceTransformerEmbedder,
    WordLlamaEmbedder,
)
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.spaces import Embedder, is_embedder

__all__ = ["MnemonEmbeddingFunction"]


def _embedder_from_config(config: Mapping[str, Any]) -> Embedder:
    kind = config.get("kind")
    if kind == "hashing":
        return HashingEmbedder(int(config.get("dim", 512)))
    if kind == "wordllama":
        return WordLlamaEmbedder(int(config.get("dim", 256)))
    if kind == "minilm":
        return SentenceTransformerEmbedder()
    raise ValueError(
        f"collection embedding {config.get('model_id')!r} cannot be rebuilt from its config; "
        "open the collection through langgraph-mnemon with the same embedder"
    )


@register_embedding_function
class MnemonEmbeddingFunction(EmbeddingFunction[Documents]):
    """A Chroma embedding function over a langgraph-mnemon :class:`Embedder`."""

    def __init__(self, embedder: Embedder) -> None:
        if not is_embedder(embedder):
            raise InvalidInputError("MnemonEmbeddingFunction needs an Embedder instance")
        self.embedder = embedder

    def __call__(self, input: Documents) -> Embeddings:
        import numpy as np

        return [np.asarray(v, dtype=np.float32) for v in self.embedder.embed_documents(input)]

    def embed_query(self, input: Documents) -> Embeddings:
        """Query vectors (the embedder may treat queries differently)."""
        import numpy as np

        return [np.asarray(self.embedder.embed_query(t), dtype=np.float32) for t in input]

    @staticmethod
    def name() -> str:
        """The registered name: ``mnemon``."""
        return "mnemon"

    def get_config(self) -> dict[str, Any]:
        """Enough to rebuild the built-in embedders in another process."""
        model_id = self.embedder.model_id
        kind = "custom"
        if isinstance(self.embedder, HashingEmbedder):
            kind = "hashing"
        elif isinstance(self.embedder, WordLlamaEmbedder):
            kind = "wordllama"
        elif isinstance(self.embedder, SentenceTransformerEmbedder):
            kind = "minilm"
        config: dict[str, Any] = {"kind": kind, "model_id": model_id}
        dim = getattr(self.embedder, "dim", None)
        if isinstance(dim, int):
            config["dim"] = dim
        return config

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MnemonEmbeddingFunction:
        """Rebuild from :meth:`get_config` (built-in embedders only)."""
        return MnemonEmbeddingFunction(_embedder_from_config(config))

    def default_space(self) -> str:  # type: ignore[override]
        """Cosine distance."""
        return "cosine"

    def supported_spaces(self) -> list[str]:  # type: ignore[override]
        """Cosine, inner product and L2."""
        return ["cosine", "ip", "l2"]

    def is_legacy(self) -> bool:
        """Not a legacy (config-less) embedding function."""
        return False
