"""The providers registered in one process, and the rule that an operation needs its capability.

A space whose provider is not registered stays in the catalog (``provider_registered=False``)
and every data-plane call on it fails with ``provider-disabled``; an operation the provider does
not declare fails with ``unsupported``, both before any I/O.
"""

from __future__ import annotations

from langgraph_mnemon.errors import InvalidInputError, NotFoundError, ProviderError
from langgraph_mnemon.memory_layers.spaces._models import ConfigField, MemoryProvider
from langgraph_mnemon.memory_layers.spaces._records import ProviderInfo, SpaceRecord
from langgraph_mnemon.memory_layers.spaces._validation import NATIVE_PROVIDER_ID

__all__ = ["BUILTIN_FIELDS", "ProviderRegistry", "config_fields", "provider_info"]


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


BUILTIN_FIELDS: dict[str, tuple[ConfigField, ...]] = {
    "chroma": (
        ConfigField(
            name="collection",
            label="Collection",
            help="An existing Chroma collection to use; empty: a new collection of its own.",
        ),
    ),
    "store": (
        ConfigField(
            name="namespace",
            label="Namespace",
            help="The BaseStore namespace as a list of labels (a JSON array); empty: one of "
            "its own.",
        ),
    ),
}
"""Form fields of the shipped providers whose descriptors declare none (from their
``check_config`` keys)."""


def config_fields(provider: MemoryProvider) -> list[ConfigField]:
    """The form fields of ``provider``: its declared ones (else :data:`BUILTIN_FIELDS`), plus
    one ``secret`` field for each declared secret that no field names.

    Example:
        >>> [f.name for f in config_fields(chroma_provider)]
        ['collection']
    """
    descriptor = provider.descriptor
    fields = list(descriptor.config_fields) or list(BUILTIN_FIELDS.get(descriptor.id, ()))
    named = {f.name for f in fields}
    for key in descriptor.secret_fields:
        if key in named:
            continue
        try:
            fields.append(ConfigField(name=key, label=key.replace("_", " "), kind="secret"))
        except ValueError:  # a secret name no form field can carry: the API still takes it
            continue
    return fields


def provider_info(provider_id: str, provider: MemoryProvider | None, count: int) -> ProviderInfo:
    removal = "remove" if provider_id == NATIVE_PROVIDER_ID else "disconnect"
    if provider is None:
        return ProviderInfo(
            id=provider_id, label=provider_id, registered=False, removal=removal, spaces=count
        )
    d = provider.descriptor
    return ProviderInfo(
        id=provider_id,
        label=d.label,
        local=d.local,
        capabilities=d.capabilities.names(),
        score_semantics=d.score_semantics,
        write_mode=d.write_mode,
        deletion_mode=d.deletion_mode,
        secret_fields=list(d.secret_fields),
        config_fields=config_fields(provider),
        removal=removal,
        spaces=count,
    )
