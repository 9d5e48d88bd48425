"""The ``backend_down`` check: a provider whose backend is unreachable degrades, never breaks.

First the provider alone (status unhealthy with an error text, search a typed error or a
hint, both within 30 s), then the host path: federated recall over a native space with a row
and a space on the down provider returns the native row plus a per-space hint.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langgraph_mnemon.errors import ProviderError, StorageError
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    DiscoveredSpace,
    GraphProjection,
    LinkRequest,
    MemoryProvider,
    MemoryRecord,
    ProviderSearchRequest,
    ProviderSearchResult,
    ProviderStatus,
    RelatedRequest,
    RememberItem,
    SpaceBinding,
    settle,
)
from langgraph_mnemon.testing._conformance_base import (
    CheckFailed,
    Context,
    NotRun,
    bounded,
    expect,
    made,
    short,
)

__all__ = ["DOWN_TIMEOUT", "check_backend_down"]

DOWN_TIMEOUT = 30.0
_NATIVE_ROW = "Down probe native: the compass room key hangs by the door."


def _within(call: Callable[[], Any], what: str) -> Any:
    """``call()`` (its result settled), bounded by :data:`DOWN_TIMEOUT`."""
    try:
        return bounded(lambda: settle(call()), DOWN_TIMEOUT, name="cf-down")
    except TimeoutError:
        raise CheckFailed(f"{what} took more than {DOWN_TIMEOUT:.0f} s on a down backend") from None


def _no_secret(ctx: Context, text: str, what: str) -> None:
    for value in ctx.secrets.values():
        expect(value not in text, f"{what} shows a secret value")


def check_backend_down(ctx: Context) -> str:
    """Status unhealthy, search typed error or hint; federated recall keeps the native row."""
    if ctx.make_down is None:
        raise NotRun("the harness has no make_down (a provider whose backend is unreachable)")
    down = made(ctx.make_down)
    ctx.opened.append(down)
    space = ctx.space("down", provider=down)
    try:
        status = _within(lambda: down.status(space), "status")
    except Exception as exc:
        raise CheckFailed(f"status raised {type(exc).__name__} instead of healthy=False") from None
    expect(isinstance(status, ProviderStatus), f"status returned {short(status)}")
    expect(status.healthy is False, "status says healthy on a down backend")
    expect(status.error and status.error.strip(), "an unhealthy status carries no error text")
    _no_secret(ctx, str(status.error), "the status error")
    if down.descriptor.capabilities.search:
        _search_down(ctx, down, space)
    hint = _host_path(ctx, down)
    return f"status error: {short(status.error, 300)} | recall hint: {short(hint, 300)}"


def _search_down(ctx: Context, down: MemoryProvider, space: SpaceBinding) -> None:
    request = ProviderSearchRequest(query="down probe compass room")
    try:
        result = _within(lambda: down.search(space, request), "search")
    except CheckFailed:
        raise
    except (ProviderError, StorageError) as exc:
        _no_secret(ctx, str(exc), "the search error")
        return
    except Exception as exc:
        raise CheckFailed(
            f"search on a down backend raised {type(exc).__name__}: {short(str(exc))}; "
            "raise ProviderError (or return a hint) instead"
        ) from None
    expect(isinstance(result, ProviderSearchResult), f"search returned {short(result)}")
    expect(
        not result.results and result.hint,
        "search on a down backend returned rows or no hint instead of an error",
    )


def _host_path(ctx: Context, down: MemoryProvider) -> str:
    """Federated recall over a native space with a row and a space on ``down``."""
    from langgraph_mnemon.adapters.embeddings import HashingEmbedder
    from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
    from langgraph_mnemon.memory_layers.spaces import MemorySpaces
    from langgraph_mnemon.storage.db import Database, create_engine

    root = Path(tempfile.mkdtemp(prefix="mnemon-conformance-"))
    database = Database(create_engine(f"sqlite:///{root / 'mnemon.db'}"), owns_engine=True)
    guest = _Guest(down)
    native = MnemosProvider(database, embedder=HashingEmbedder(256))
    spaces = MemorySpaces(database, root=root, providers=[native, guest])
    try:
        spaces.create_space("Native", provider_id="mnemos", space_id="cf-native")
        spaces.remember(_NATIVE_ROW, space_id="cf-native")
        created = spaces.create_space(
            "Down",
            provider_id=guest.descriptor.id,
            config=dict(ctx.config),
            secrets=dict(ctx.secrets),
            space_id="cf-down",
            active=True,
        )
        expect(created.status == "committed", f"creating a space on it failed: {created.message}")
        recall = _within(lambda: spaces.search("compass room key", limit=5), "federated recall")
    finally:
        spaces.close()
        database.dispose()
        shutil.rmtree(root, ignore_errors=True)
    expect(
        _NATIVE_ROW in [r.content for r in recall.results],
        "federated recall lost the native row while one provider was down",
    )
    source = next((s for s in recall.sources if s.space_id == "cf-down"), None)
    expect(source is not None, "federated recall has no report for the down space")
    assert source is not None
    expect(source.status == "unavailable", f"the down space reports status {source.status!r}")
    expect(source.hint, "the down space's report carries no hint")
    _no_secret(ctx, str(source.hint), "the recall hint")
    return str(source.hint)


class _Guest:
    """The down provider as the host sees it: renamed when its id is the native one (both sit
    in one registry), and not closed by the host (the check that made it closes it)."""

    def __init__(self, inner: MemoryProvider) -> None:
        self.inner = inner
        own = inner.descriptor.id
        self.descriptor = inner.descriptor.model_copy(
            update={"id": f"{own}-down" if own == "mnemos" else own}
        )

    def check_config(self, config: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
        return self.inner.check_config(config, secrets)

    def place(self, space_id: str, config: dict[str, Any]) -> dict[str, Any]:
        return self.inner.place(space_id, config)

    def status(self, space: SpaceBinding) -> ProviderStatus:
        return settle(self.inner.status(space))

    def search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        return settle(self.inner.search(space, request))

    def browse(self, space: SpaceBinding, request: BrowseRequest) -> list[MemoryRecord]:
        return settle(self.inner.browse(space, request))

    def graph(self, space: SpaceBinding, limit: int = 200) -> GraphProjection:
        return settle(self.inner.graph(space, limit))

    def remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        return settle(self.inner.remember(space, item))

    def remember_many(
        self, space: SpaceBinding, items: Sequence[RememberItem]
    ) -> list[dict[str, Any]]:
        return settle(self.inner.remember_many(space, items))

    def related(self, space: SpaceBinding, request: RelatedRequest) -> list[MemoryRecord]:
        return settle(self.inner.related(space, request))

    def link(self, space: SpaceBinding, request: LinkRequest) -> dict[str, Any]:
        return settle(self.inner.link(space, request))

    def forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        return settle(self.inner.forget(space, insight_id))

    def discover(
        self, config: Mapping[str, Any], secrets: Mapping[str, str]
    ) -> list[DiscoveredSpace]:
        return settle(self.inner.discover(config, secrets))

    def close(self) -> None:
        """The inner provider is closed by the check that made it."""
