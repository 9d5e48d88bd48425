"""The providers a configuration asks for, built over the shared database.

Every provider here is constructed lazily: no heavy import (chromadb, httpx, mem0), no disk and
no network until its first operation, because the host builds all of them at start-up. A
provider whose optional package is not installed is simply absent (its spaces report
``provider-disabled``).
"""

from __future__ import annotations

import importlib.util
from typing import Any

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.storage.db import Database

__all__ = ["configured_providers"]


def configured_providers(config: MnemonConfig, database: Database) -> list[Any]:
    """The configured providers: the native one, plus each enabled and installed one.

    Args:
        config: The host's configuration (``chroma``, ``facts``, ``http``, ``mem0`` sections).
        database: The shared SQL database of the native provider.

    Returns:
        Provider objects: ``mnemos`` first, then ``chroma``, ``facts``, ``http``, ``mem0``
        (each when enabled and importable).

    Raises:
        InvalidInputError: ``mem0.infer`` is on and ``worker_model`` cannot be built.

    Example:
        >>> [p.descriptor.id for p in configured_providers(MnemonConfig(), db)]
        ['mnemos', 'chroma', 'facts', 'http', 'mem0']
    """
    from langgraph_mnemon.adapters.embeddings import build_embedder
    from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider

    embedder = build_embedder(config.embedding)
    providers: list[Any] = [MnemosProvider(database, embedder=embedder)]
    for build in (_chroma, _facts, _http, _mem0):
        provider = build(config, embedder)
        if provider is not None:
            providers.append(provider)
    return providers


def _chroma(config: MnemonConfig, embedder: Any) -> Any:
    if not config.chroma.enabled or importlib.util.find_spec("chromadb") is None:
        return None  # chromadb not installed: the provider is simply absent
    from langgraph_mnemon.adapters.embeddings import WordLlamaEmbedder

    try:
        from langgraph_mnemon.adapters.providers.chroma import ChromaProvider
    except ImportError:  # the module is not part of this build
        return None
    token = config.chroma.token.get_secret_value() if config.chroma.token else None
    return ChromaProvider(
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


def _facts(config: MnemonConfig, embedder: Any) -> Any:
    if not config.facts.enabled:
        return None
    try:
        from langgraph_mnemon.adapters.providers.facts import FactFileProvider
    except ImportError:  # the module is not part of this build
        return None
    return FactFileProvider(config.root_path, embedder=embedder)


def _http(config: MnemonConfig, embedder: Any) -> Any:
    if not config.http.enabled:
        return None
    try:
        from langgraph_mnemon.adapters.providers.http import HttpProvider
    except ImportError:  # the module is not part of this build
        return None
    section = config.http
    return HttpProvider(
        timeout_s=section.timeout_s,
        retries=section.retries,
        max_response_bytes=section.max_response_bytes,
        allowed_hosts=section.allowed_hosts,  # never an internal address the list does not name
    )


def _mem0(config: MnemonConfig, embedder: Any) -> Any:
    if not config.mem0.enabled or importlib.util.find_spec("mem0") is None:
        return None  # mem0ai is an extra: pip install 'langgraph-mnemon[mem0]'
    try:
        from langgraph_mnemon.adapters.providers.mem0 import Mem0Provider
    except ImportError:  # the module is not part of this build
        return None
    from langgraph_mnemon.adapters.embeddings import WordLlamaEmbedder

    model = None
    if config.mem0.infer:  # config validation already asked for a worker model
        from langgraph_mnemon.adapters.models import resolve_chat_model

        model = resolve_chat_model(config.worker_model)
    return Mem0Provider(
        config.root_path / "mem0",
        embedder=embedder if embedder is not None else WordLlamaEmbedder(),
        model=model,
        infer=config.mem0.infer,
    )
