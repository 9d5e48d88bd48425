"""The providers registered in one process, and the rule that an operation needs its capability.

A space whose provider is not registered stays in the catalog (``provider_registered=False``)
and every data-plane call on it fails with ``provider-disabled``; an operation the provider does
not declare fails with ``unsupported``, both before any I/O.
"""

from __future__ import annotations

from langgraph_mnemon.errors import InvalidInputError, NotFoundError, ProviderError
from langgraph_mnemon.memory_layers.spaces._models import MemoryProvider
from langgraph_mnemon.memory_layers.spaces._records import SpaceRecord

__all__ = ["ProviderRegistry"]


class ProviderRegistry:
    """:class:`MemoryProvider` objects by their descriptor id (one object serves many spaces)."""

    def __init__(self) -> None:
        self._by_id: dict[str, MemoryProvider] = {}

    def register(self, provider: MemoryProvider) -> None:
        """Add ``provider`` (replacing one registered under the same id)."""
        descriptor = getattr(provider, "descriptor", None)
        if descriptor is None or not isinstance(provider, MemoryProvider):
            raise InvalidInputError(
                f"{type(provider).__name__} is not a MemoryProvider: subclass "
                "adapters.providers.base.BaseProvider and declare a descriptor"
            )
        self._by_id[descriptor.id] = provider

    def all(self) -> dict[str, MemoryProvider]:
        """A copy of the registered providers by id."""
        return dict(self._by_id)

    def get(self, provider_id: str) -> MemoryProvider | None:
        """The provider ``provider_id``, or None when it is not registered."""
        return self._by_id.get(provider_id)

    def require(self, provider_id: str) -> MemoryProvider:
        """The provider ``provider_id``; :class:`NotFoundError` when it is not registered."""
        if not isinstance(provider_id, str):
            raise InvalidInputError(
                f"provider_id must be a string such as 'mnemos' (got {type(provider_id).__name__})"
            )
        found = self._by_id.get(provider_id)
        if found is None:
            raise NotFoundError(
                f"no provider {provider_id!r} is registered; available: "
                f"{', '.join(sorted(self._by_id)) or 'none'}"
            )
        return found

    def capable(self, record: SpaceRecord, capability: str) -> MemoryProvider:
        """The provider of ``record`` when it is registered and declares ``capability``."""
        provider = self._by_id.get(record.provider_id)
        if provider is None:
            raise ProviderError(
                f"Memory Space {record.id!r} uses provider {record.provider_id!r}, which is not "
                "registered in this process; configure it before using the space",
                code="provider-disabled",
            )
        if not getattr(provider.descriptor.capabilities, capability, False):
            raise ProviderError(
                f"Memory Space {record.id!r} ({record.provider_id}) does not support "
                f"{capability.replace('_', ' ')}; use a space whose provider does",
                code="unsupported",
            )
        return provider

    def capabilities(self, provider_id: str) -> list[str]:
        """The operation names ``provider_id`` declares (empty when it is not registered)."""
        provider = self._by_id.get(provider_id)
        return provider.descriptor.capabilities.names() if provider else []

    def label(self, provider_id: str) -> str:
        """The provider's label, or its id when it is not registered."""
        provider = self._by_id.get(provider_id)
        return provider.descriptor.label if provider else provider_id
