"""The provider contract as a base class: capability gating and input checks before any I/O.

:class:`BaseProvider` implements the ``MemoryProvider`` protocol of
:mod:`langgraph_mnemon.memory_layers.spaces._models`. Subclasses declare a
:class:`ProviderDescriptor` and override the ``_``-prefixed hooks of the operations they
support. The public methods reject an operation the descriptor does not declare with a
:class:`ProviderError` (code ``unsupported``) *before* touching the data plane, and validate
their arguments with :class:`InvalidInputError`.

Every method is synchronous. A subclass may still write its hooks as ``async def``: the public
methods pass each hook's result through :func:`settle`, which runs an awaitable to completion.

Example:
    >>> class Notes(BaseProvider):
    ...     descriptor = ProviderDescriptor(id="notes", label="Notes")
    ...     def _search(self, space, request):
    ...         return ProviderSearchResult(results=[])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from langgraph_mnemon.contracts import check_text, text_problem
from langgraph_mnemon.errors import InvalidInputError, ProviderError
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    Capabilities,
    DiscoveredSpace,
    GraphProjection,
    LinkRequest,
    MemoryProvider,
    MemoryRecord,
    ProviderDescriptor,
    ProviderSearchRequest,
    ProviderSearchResult,
    ProviderStatus,
    RelatedRequest,
    RememberItem,
    SpaceBinding,
    is_committed,
    settle,
)

__all__ = [
    "BaseProvider",
    "Capabilities",
    "MemoryProvider",
    "ProviderDescriptor",
    "check_item",
    "is_committed",
    "unsupported",
]


def unsupported(provider_id: str, operation: str) -> ProviderError:
    """The error for an operation a provider does not declare."""
    return ProviderError(
        f"provider {provider_id!r} does not support {operation}; "
        "choose a Memory Space whose provider lists it in its capabilities",
        code="unsupported",
    )


def check_item(item: RememberItem) -> None:
    """Refuse text no backend stores faithfully (NUL, lone surrogates) before any I/O.

    :class:`BaseProvider` runs it on every ``remember`` / ``remember_many``; providers with
    write paths of their own (the native keyed store writes) call it too.

    Raises:
        InvalidInputError: the content, a tag, an entity or a metadata key or value names the
            problem and where it is; nothing was stored.
    """
    texts = [("content", item.content), *(("a tag", t) for t in item.tags)]
    texts += [("an entity", e) for e in item.entities]
    for key, value in item.metadata.items():
        texts.append(("a metadata key", key))
        if isinstance(value, str):
            texts.append((f"metadata {key!r}", value))
    for what, text in texts:
        problem = text_problem(text)
        if problem is not None:
            raise InvalidInputError(f"{what} {problem}; nothing was stored")


class BaseProvider:
    """Shared behaviour of every provider; subclasses override the hooks they support."""

    descriptor: ClassVar[ProviderDescriptor]

    # ------------------------------------------------------------------ gating helpers

    def _require(self, capability: str) -> None:
        caps: Capabilities = self.descriptor.capabilities
        if not getattr(caps, capability, False):
            raise unsupported(self.descriptor.id, capability.replace("_", " "))

    @staticmethod
    def _space(space: Any) -> SpaceBinding:
        if not isinstance(space, SpaceBinding):
            raise InvalidInputError(
                f"space must be a SpaceBinding (got {type(space).__name__}); "
                "providers are called through Mnemon.spaces"
            )
        return space

    def check_config(self, config: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
        """Validate a space configuration; the default accepts none (an empty mapping)."""
        if config:
            raise InvalidInputError(
                f"provider {self.descriptor.id!r} takes no configuration "
                f"(got keys {', '.join(sorted(config))})"
            )
        if secrets:
            raise InvalidInputError(f"provider {self.descriptor.id!r} takes no secrets")
        return {}

    def place(self, space_id: str, config: dict[str, Any]) -> dict[str, Any]:
        """The config a new space is stored with; the default keeps the checked config."""
        return config

    # ------------------------------------------------------------------ public contract

    def status(self, space: SpaceBinding) -> ProviderStatus:
        """Health and statistics of one space."""
        return settle(self._status(self._space(space)))

    def search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        """Ranked rows for ``request`` (best first, at most ``request.limit``)."""
        self._require("search")
        if not isinstance(request, ProviderSearchRequest):
            raise InvalidInputError("request must be a ProviderSearchRequest")
        result = settle(self._search(self._space(space), request))
        if len(result.results) > request.limit:
            result = ProviderSearchResult(results=result.results[: request.limit], hint=result.hint)
        return result

    def browse(self, space: SpaceBinding, request: BrowseRequest) -> list[MemoryRecord]:
        """Stored rows, newest first."""
        self._require("browse")
        if not isinstance(request, BrowseRequest):
            raise InvalidInputError("request must be a BrowseRequest")
        return settle(self._browse(self._space(space), request))

    def graph(self, space: SpaceBinding, limit: int = 200) -> GraphProjection:
        """Nodes and typed edges of the space, at most ``limit`` nodes."""
        self._require("graph")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 5000:
            raise InvalidInputError("graph limit must be an integer between 1 and 5000")
        return settle(self._graph(self._space(space), limit))

    def remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        """Store one row; returns the provider's raw receipt."""
        self._require("remember")
        if not isinstance(item, RememberItem):
            raise InvalidInputError("item must be a RememberItem")
        check_item(item)
        return settle(self._remember(self._space(space), item))

    def remember_many(
        self, space: SpaceBinding, items: Sequence[RememberItem]
    ) -> list[dict[str, Any]]:
        """Store several rows; one raw receipt per item, in order."""
        self._require("remember")
        items = list(items)
        if not all(isinstance(i, RememberItem) for i in items):
            raise InvalidInputError("items must be RememberItem objects")
        for item in items:  # every item before the first write: a bad one stores nothing
            check_item(item)
        space = self._space(space)
        if not items:
            return []
        if self.descriptor.capabilities.remember_many:
            receipts = settle(self._remember_many(space, items))
            if len(receipts) != len(items):
                raise ProviderError(
                    f"provider {self.descriptor.id!r} returned {len(receipts)} receipts for "
                    f"{len(items)} items"
                )
            return receipts
        return [settle(self._remember(space, item)) for item in items]

    def related(self, space: SpaceBinding, request: RelatedRequest) -> list[MemoryRecord]:
        """Rows reachable from ``request.id`` within ``request.depth`` edges."""
        self._require("related")
        if not isinstance(request, RelatedRequest):
            raise InvalidInputError("request must be a RelatedRequest")
        return settle(self._related(self._space(space), request))

    def link(self, space: SpaceBinding, request: LinkRequest) -> dict[str, Any]:
        """Add or update a typed edge; returns the raw receipt."""
        self._require("link")
        if not isinstance(request, LinkRequest):
            raise InvalidInputError("request must be a LinkRequest")
        return settle(self._link(self._space(space), request))

    def forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        """Delete one row (soft or hard, per ``descriptor.deletion_mode``)."""
        self._require("forget")
        if not isinstance(insight_id, str) or not insight_id.strip():
            raise InvalidInputError("forget needs the exact id of a stored memory")
        insight_id = check_text(insight_id, "the memory id").strip()
        return settle(self._forget(self._space(space), insight_id))

    def supersede(self, space: SpaceBinding, memory_id: str, item: RememberItem) -> dict[str, Any]:
        """Store ``item`` in place of the live row ``memory_id``, keeping the old row as
        superseded (history providers); returns the raw receipt."""
        self._require("history")
        if not isinstance(item, RememberItem):
            raise InvalidInputError("item must be a RememberItem")
        check_item(item)
        memory_id = self._memory_id(memory_id, "supersede")
        return settle(self._supersede(self._space(space), memory_id, item))

    def restore(self, space: SpaceBinding, memory_id: str) -> dict[str, Any]:
        """Make a forgotten or superseded row live again (history providers)."""
        self._require("history")
        memory_id = self._memory_id(memory_id, "restore")
        return settle(self._restore(self._space(space), memory_id))

    def get(self, space: SpaceBinding, memory_id: str) -> MemoryRecord:
        """Any row of the space by id, live or not, with its status (history providers)."""
        self._require("history")
        memory_id = self._memory_id(memory_id, "get")
        return settle(self._get(self._space(space), memory_id))

    @staticmethod
    def _memory_id(memory_id: Any, operation: str) -> str:
        if not isinstance(memory_id, str) or not memory_id.strip():
            raise InvalidInputError(f"{operation} needs the exact id of a stored memory")
        return check_text(memory_id, "the memory id").strip()

    def discover(
        self, config: Mapping[str, Any], secrets: Mapping[str, str]
    ) -> list[DiscoveredSpace]:
        """Namespaces the provider already holds."""
        self._require("discover")
        return settle(self._discover(config, secrets))

    def close(self) -> None:
        """Release clients and connections (idempotent)."""

    def secrets_in_use(self) -> tuple[str, ...]:
        """Credentials the provider holds itself (a server token): health messages mask them."""
        return ()

    # ------------------------------------------------------------------ hooks

    def _status(self, space: SpaceBinding) -> ProviderStatus:
        return ProviderStatus(healthy=True)

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        raise unsupported(self.descriptor.id, "search")

    def _browse(self, space: SpaceBinding, request: BrowseRequest) -> list[MemoryRecord]:
        raise unsupported(self.descriptor.id, "browse")

    def _graph(self, space: SpaceBinding, limit: int) -> GraphProjection:
        raise unsupported(self.descriptor.id, "graph")

    def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        raise unsupported(self.descriptor.id, "remember")

    def _remember_many(
        self, space: SpaceBinding, items: list[RememberItem]
    ) -> list[dict[str, Any]]:
        return [settle(self._remember(space, item)) for item in items]

    def _related(self, space: SpaceBinding, request: RelatedRequest) -> list[MemoryRecord]:
        raise unsupported(self.descriptor.id, "related")

    def _link(self, space: SpaceBinding, request: LinkRequest) -> dict[str, Any]:
        raise unsupported(self.descriptor.id, "link")

    def _forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        raise unsupported(self.descriptor.id, "forget")

    def _supersede(self, space: SpaceBinding, memory_id: str, item: RememberItem) -> dict[str, Any]:
        raise unsupported(self.descriptor.id, "history")

    def _restore(self, space: SpaceBinding, memory_id: str) -> dict[str, Any]:
        raise unsupported(self.descriptor.id, "history")

    def _get(self, space: SpaceBinding, memory_id: str) -> MemoryRecord:
        raise unsupported(self.descriptor.id, "history")

    def _discover(
        self, config: Mapping[str, Any], secrets: Mapping[str, str]
    ) -> list[DiscoveredSpace]:
        raise unsupported(self.descriptor.id, "discover")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.descriptor.id!r})"
