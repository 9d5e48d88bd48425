"""Test support for Memory Spaces: real providers over real backends, plus small providers with
deliberate behaviour (one that always raises, one that counts calls, one that takes secrets).

None of these mock a database: the extra providers keep their rows in a real LangGraph
``InMemoryStore`` through the shipped :class:`StoreProvider`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langgraph.store.memory import InMemoryStore

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.embeddings import HashingEmbedder
from langgraph_mnemon.adapters.providers.base import BaseProvider
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.adapters.providers.store import StoreProvider
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.spaces import (
    Capabilities,
    MemoryRecord,
    MemorySpaces,
    ProviderDescriptor,
    ProviderSearchRequest,
    ProviderSearchResult,
    QualitySettings,
    SpaceBinding,
)
from langgraph_mnemon.storage.db import (
    Database,
    create_engine,
    ensure_sqlite_directory,
)


def sqlite_database(root: Path) -> Database:
    url = f"sqlite:///{root / 'mnemon.db'}"
    ensure_sqlite_directory(url)
    return Database(create_engine(url), owns_engine=True)


def make_spaces(
    root: Path,
    providers: list[Any] | None = None,
    *,
    database: Database | None = None,
    embedder: Any = None,
    **kwargs: Any,
) -> MemorySpaces:
    """MemorySpaces on a SQLite file under ``root`` with the native provider (plus extras)."""
    db = database or sqlite_database(root)
    native = MnemosProvider(db, embedder=embedder)
    return MemorySpaces(db, root=root, providers=[native, *(providers or [])], **kwargs)


class FailingProvider(BaseProvider):
    """A provider whose every data-plane call raises (for the "provider raises → hint" rule)."""

    descriptor = ProviderDescriptor(
        id="failing",
        label="Always failing",
        capabilities=Capabilities(search=True, remember=True, forget=True),
        score_semantics="normalized",
        deletion_mode="hard",
    )

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        raise ConnectionError("connection refused by upstream")

    def _remember(self, space: SpaceBinding, item: Any) -> dict[str, Any]:
        raise ConnectionError("connection refused by upstream")

    def _forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        raise ConnectionError("connection refused by upstream")


class SlowProvider(BaseProvider):
    """A provider that answers after ``delay`` seconds."""

    descriptor = ProviderDescriptor(id="slow", label="Slow", score_semantics="normalized")

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        time.sleep(self.delay)
        return ProviderSearchResult(results=[])


class ScriptedProvider(BaseProvider):
    """Answers every search with the given ``(content, score)`` rows, in order.

    The rows are stored as real items of an ``InMemoryStore``-backed space by the test; this
    provider only fixes the scores so quality-policy boundaries can be checked end to end.
    """

    def __init__(
        self,
        rows: list[tuple[str, float | None]],
        *,
        provider_id: str = "scripted",
        normalized: bool = True,
    ) -> None:
        self.rows = rows
        self.calls: list[ProviderSearchRequest] = []
        self.descriptor = ProviderDescriptor(
            id=provider_id,
            label=f"Scripted {provider_id}",
            capabilities=Capabilities(search=True),
            score_semantics="normalized" if normalized else "unknown",
        )

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        self.calls.append(request)
        return ProviderSearchResult(
            results=[
                MemoryRecord(id=f"{self.descriptor.id}-{i}", content=text, score=score)
                for i, (text, score) in enumerate(self.rows)
            ][: request.limit]
        )


class CountingStoreProvider(StoreProvider):
    """The shipped store provider, counting searches per mode."""

    def __init__(self, store: InMemoryStore | None = None, **kwargs: Any) -> None:
        super().__init__(store or InMemoryStore(), **kwargs)
        self.modes: list[str] = []

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        self.modes.append(request.mode)
        return super()._search(space, request)


class SecretStoreProvider(StoreProvider):
    """A store provider that requires an ``api_key`` secret per space (like a remote service)."""

    def __init__(self) -> None:
        super().__init__(InMemoryStore(), provider_id="vault", label="Vault", local=False)
        self.descriptor = self.descriptor.model_copy(update={"secret_fields": ("api_key",)})
        self.seen_keys: list[str] = []

    def check_config(self, config: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
        if "api_key" not in secrets:
            raise InvalidInputError("vault spaces need secrets={'api_key': ...}")
        return super().check_config(config, {})

    def _remember_many(self, space: SpaceBinding, items: list[Any]) -> list[dict[str, Any]]:
        self.seen_keys.append(space.secrets.get("api_key", ""))
        return super()._remember_many(space, items)


def unique_id(prefix: str = "sp") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def hashing() -> HashingEmbedder:
    return HashingEmbedder(256)


STRICT = QualitySettings()


@contextmanager
def keyword_host(root: Path, database_url: str, texts: list[str]) -> Iterator[Mnemon]:
    """A host on ``database_url`` ranking by keywords alone (no dense vectors, no Chroma) with
    one native space ``chat`` holding ``texts``, one memory each, in order."""
    host = Mnemon.open(
        root, database_url=database_url, chroma={"enabled": False}, embedding={"enabled": False}
    )
    try:
        host.spaces.create_space("Chat", space_id="chat")
        if texts:
            host.spaces.remember_many(
                [{"content": t, "category": "context"} for t in texts], space_id="chat"
            )
        yield host
    finally:
        host.close()
