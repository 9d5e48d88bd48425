"""The providers a configuration asks for, built over the shared database."""

from __future__ import annotations

from typing import Any

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.storage.db import Database

__all__ = ["configured_providers"]


def configured_providers(config: MnemonConfig, database: Database) -> list[Any]:
    """The configured providers: the native one, plus Chroma when enabled and installed."""
    from langgraph_mnemon.adapters.embeddings import WordLlamaEmbedder, build_embedder
    from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider

    embedder = build_embedder(config.embedding)
    providers: list[Any] = [MnemosProvider(database, embedder=embedder)]
    if not config.chroma.enabled:
        return providers
    try:
        from langgraph_mnemon.adapters.providers.chroma import ChromaProvider
    except ImportError:  # chromadb not installed: the provider is simply absent
        return providers
    token = config.chroma.token.get_secret_value() if config.chroma.token else None
    providers.append(
        ChromaProvider(
            embedder if embedder is not None else WordLlamaEmbedder,
            path=config.chroma.path or config.root_path / "chroma",
            host=config.chroma.host,
            port=config.chroma.port,
            ssl=config.chroma.ssl,
            token=token,
            tenant=config.chroma.tenant,
            database=config.chroma.database,
            # <root>/chroma is managed: never through a link; a named path is the user's.
            follow_symlinks=config.chroma.path is not None,
        )
    )
    return providers
