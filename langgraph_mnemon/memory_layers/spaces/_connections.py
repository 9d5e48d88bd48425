"""Provider connections: what each provider offers, connection tests, Disconnect and Remove.

The control plane adds, configures, tests and removes spaces through these methods of
:class:`~langgraph_mnemon.memory_layers.spaces.MemorySpaces` (a mixin, so the service module
stays one concern):

* :meth:`SpaceConnections.alist_providers` lists every registered provider with what it
  declares and the form a new space takes (``config_fields``; secrets as ``kind="secret"``).
* :meth:`SpaceConnections.atest_connection` checks a configuration with the provider's own
  ``check_config`` and asks its ``status`` on a probe space that holds no data;
  :meth:`SpaceConnections.atest_space` asks the same of a stored space. A test writes nothing,
  and its error text never shows a secret value, URL credentials or a host path.
* Memory Space removal is a separate, dangerous action. A third-party space is
  **disconnected** (:meth:`SpaceConnections.adisconnect_space`): its catalog entry and its
  host-side secrets go, the provider's data is never touched. A native (``mnemos``) space is
  **removed** (:meth:`SpaceConnections.aremove_space`): its rows are deleted by the native
  provider, and the catalog entry goes only after that succeeded. Both need ``confirm`` equal
  to the space id.

Example:
    >>> mem.spaces.test_connection("mnemos").ok
    True
    >>> mem.spaces.remove_space("scratch", confirm="scratch").status
    'committed'
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from langgraph_mnemon.errors import (
    InvalidInputError,
    MnemonError,
    ProviderError,
    SecretKeyError,
)
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.memory_layers.spaces._catalog import SpaceCatalog
from langgraph_mnemon.memory_layers.spaces._health import (
    PROBE_BINDING,
    HealthCache,
    _provider_secrets,
    redact,
)
from langgraph_mnemon.memory_layers.spaces._locations import admit_outbound
from langgraph_mnemon.memory_layers.spaces._models import (
    ConfigField,
    MemoryProvider,
    ProviderStatus,
    SpaceBinding,
    is_committed,
)
from langgraph_mnemon.memory_layers.spaces._records import (
    ConnectionTest,
    ProviderInfo,
    SpaceReceipt,
    SpaceRecord,
)
from langgraph_mnemon.memory_layers.spaces._registry import ProviderRegistry
from langgraph_mnemon.memory_layers.spaces._secrets import split_config
from langgraph_mnemon.memory_layers.spaces._validation import NATIVE_PROVIDER_ID
from langgraph_mnemon.storage.loop import sync_twin

__all__ = ["BUILTIN_FIELDS", "SpaceConnections", "SpaceRemover", "check_confirm", "config_fields"]

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


@runtime_checkable
class SpaceRemover(Protocol):
    """A provider that can delete every row of one space (the native provider)."""

    def remove_space(self, space: SpaceBinding) -> dict[str, Any]:
        """Delete every row of ``space`` for good; return the raw receipt."""
        ...


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


def _info(provider_id: str, provider: MemoryProvider | None, count: int) -> ProviderInfo:
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


def _answer(
    provider_id: str,
    provider: MemoryProvider | None,
    space_id: str | None,
    **found: Any,
) -> ConnectionTest:
    declared: dict[str, Any] = {}
    if provider is not None:
        d = provider.descriptor
        declared = {
            "capabilities": d.capabilities.names(),
            "score_semantics": d.score_semantics,
            "write_mode": d.write_mode,
            "deletion_mode": d.deletion_mode,
            "local": d.local,
        }
    found.setdefault("healthy", False)
    found.setdefault("ok", False)
    return ConnectionTest(provider_id=provider_id, space_id=space_id, **declared, **found)


def _raw_secret_values(secrets: Any) -> list[str]:
    """Every string value of a secrets mapping (to mask in messages, even a refused one)."""
    if not isinstance(secrets, Mapping):
        return []
    return [v for v in secrets.values() if isinstance(v, str)]


def check_confirm(space_id: str, confirm: Any, action: str) -> None:
    """``confirm`` must be the space id typed again (surrounding blanks ignored).

    Raises:
        InvalidInputError: code ``confirm-mismatch``; nothing was changed.
    """
    if not isinstance(confirm, str) or confirm.strip() != space_id:
        raise InvalidInputError(
            f"to {action} Memory Space {space_id!r}, pass confirm={space_id!r} (the space id "
            "typed again); nothing was changed",
            code="confirm-mismatch",
        )


class SpaceConnections:
    """Listing providers, testing connections, Disconnect and Remove (a :class:`MemorySpaces`
    mixin; the service provides the attributes below)."""

    _catalog: SpaceCatalog
    _registry: ProviderRegistry
    _health: HealthCache
    kernel: Kernel
    timeout: float
    root: Path

    # ------------------------------------------------------------------ providers

    async def alist_providers(self) -> list[ProviderInfo]:
        """Every registered provider (and every provider a visible space names but this process
        has not registered), with its declarations and the form fields of a new space.

        A management read: the kernel is not asked. When the catalog cannot be read the
        providers are still listed (with zero space counts).

        Returns:
            One :class:`ProviderInfo` per provider: the registered ones in registration order
            (the native one first), then the missing ones by id.

        Example:
            >>> [(p.id, p.removal) for p in await mem.spaces.alist_providers()]
            [('mnemos', 'remove'), ('chroma', 'disconnect')]
        """
        try:
            records = await asyncio.to_thread(self._catalog.list_spaces)
        except MnemonError:  # the database is down: the providers are still worth listing
            records = []
        counts = Counter(r.provider_id for r in records)
        registered = self._registry.all()  # in registration order: the native one first
        infos = [_info(pid, p, counts[pid]) for pid, p in registered.items()]
        infos += [_info(pid, None, n) for pid, n in sorted(counts.items()) if pid not in registered]
        return infos

    list_providers = sync_twin(alist_providers)

    # ------------------------------------------------------------------ connection tests

    async def atest_connection(
        self,
        provider_id: str,
        *,
        config: Mapping[str, Any] | None = None,
        secrets: Mapping[str, str] | None = None,
    ) -> ConnectionTest:
        """Check a configuration for a new space and ask the provider whether it answers.

        The provider's ``check_config`` runs first (no I/O); then its ``status`` on a probe
        space that holds no data, bounded by ``timeout_ms``. Nothing is written, and the
        catalog is not read. A configuration the provider refuses, a status call that raises,
        times out or says unhealthy is ``ok=False`` with the reason in ``error`` (secrets,
        URL credentials and host paths masked), never an exception. Under
        ``data_boundary="local-only"`` a remote provider is not contacted at all.

        Args:
            provider_id: A registered provider.
            config: The provider settings a new space would get (no credentials).
            secrets: Its credentials (used for this test only, never stored).

        Returns:
            A :class:`ConnectionTest`.

        Raises:
            NotFoundError: ``provider_id`` is not registered.
            AuthorityError: a caller who is not an admin tests a provider that connects out,
                its endpoint is an internal address, or the configuration names a storage
                location the caller may not use (:mod:`._locations`); nothing is contacted.

        Example:
            >>> result = await mem.spaces.atest_connection("http", config={"endpoint": url},
            ...                                            secrets={"api_key": key})
            >>> result.ok, result.latency_ms
            (True, 12.5)
        """
        provider = self._registry.require(provider_id)
        settings = config if isinstance(config, Mapping) else None
        await admit_outbound(provider, settings, admin=self._catalog.admin, what="testing")
        places = [str(self.root)]
        masked = _raw_secret_values(secrets)
        if self._catalog.local_only and not provider.descriptor.local:
            message = (
                f"provider {provider_id!r} keeps data outside this machine and the persistence "
                "strategy is local-only (persistence_strategy.rules.data_boundary); it was not "
                "contacted"
            )
            return _answer(provider_id, provider, None, error=message)
        try:
            checked, values = split_config(provider, config, secrets)
            placed = provider.place(PROBE_BINDING.id, checked)
        except MnemonError as exc:
            return _answer(provider_id, provider, None, error=redact(exc.message, masked, places))
        # The probe reads where its settings point: the same locations as a new space's.
        owner = self._catalog.owners.owner_of_new(False)
        self._catalog.check_location(provider, PROBE_BINDING.id, owner, placed)
        binding = SpaceBinding(
            id=PROBE_BINDING.id, name=PROBE_BINDING.name, config=placed, secrets=values
        )
        return await self._probe(provider_id, provider, binding, None)

    test_connection = sync_twin(atest_connection)

    async def atest_space(self, space_id: str) -> ConnectionTest:
        """Test a stored space: its config re-checked by the provider, then its ``status``.

        Like :meth:`atest_connection` with the space's stored configuration and secrets; a
        management read (the kernel is not asked, nothing is written).

        Args:
            space_id: A visible space.

        Returns:
            A :class:`ConnectionTest` naming ``space_id``; ``ok=False`` with the reason when
            the provider is not registered, refuses the stored configuration or fails.

        Raises:
            InvalidInputError: ``space_id`` is not a valid id.
            NotFoundError: there is no space ``space_id`` (in this scope).
            AuthorityError: a caller who is not an admin tests a space that connects out, or
                the space's stored location is refused on use (:mod:`._locations`).
            StorageError: the catalog or the secrets file cannot be read.

        Example:
            >>> (await mem.spaces.atest_space("ops")).healthy
            True
        """
        record = await asyncio.to_thread(self._catalog.get_space, space_id)
        provider = self._registry.get(record.provider_id)
        if provider is None:
            message = f"provider {record.provider_id!r} is not registered in this process"
            return _answer(record.provider_id, None, record.id, error=message)
        await admit_outbound(provider, record.config, admin=self._catalog.admin, what="testing")
        try:
            binding = await self._catalog.abinding(record)
        except SecretKeyError as exc:  # its secrets do not open with the configured key
            return _answer(record.provider_id, provider, record.id, error=exc.message)
        try:
            split_config(provider, binding.config, binding.secrets)
        except MnemonError as exc:
            masked = list(binding.secrets.values())
            error = redact(exc.message, masked, [str(self.root)])
            return _answer(record.provider_id, provider, record.id, error=error)
        return await self._probe(record.provider_id, provider, binding, record.id)

    test_space = sync_twin(atest_space)

    async def _probe(
        self,
        provider_id: str,
        provider: MemoryProvider,
        binding: SpaceBinding,
        space_id: str | None,
    ) -> ConnectionTest:
        """One bounded status call, timed; never raises for the provider's failure."""
        masked = [*binding.secrets.values(), *_provider_secrets(provider)]
        places = [str(self.root)]
        started = time.perf_counter()
        status: ProviderStatus | None = None
        error: str | None = None
        try:
            status = await asyncio.wait_for(provider.status(binding), timeout=self.timeout)
        except TimeoutError:
            error = f"the status call gave no answer within {int(self.timeout * 1000)} ms"
        except Exception as exc:  # any failure of the provider is the answer, not an error
            error = redact(str(exc) or type(exc).__name__, masked, places)
        latency = round((time.perf_counter() - started) * 1000, 1)
        healthy = bool(getattr(status, "healthy", False))
        if status is not None and not isinstance(status, ProviderStatus):
            status, healthy, error = None, False, "the status call returned no ProviderStatus"
        if status is not None and not healthy:
            error = redact(status.error or "the provider reported unhealthy", masked, places)
        if status is not None and status.error:
            status = status.model_copy(update={"error": redact(status.error, masked, places)})
        return _answer(
            provider_id,
            provider,
            space_id,
            ok=healthy,
            healthy=healthy,
            error=error,
            latency_ms=latency,
            status=status,
        )

    # ------------------------------------------------------------------ leaving the catalog

    async def adisconnect_space(self, space_id: str, *, confirm: str) -> SpaceReceipt:
        """Disconnect a third-party space: drop its catalog entry and host-side secrets.

        The provider's data is never deleted (a fresh provider object still finds it; add a
        space with the same settings, or discover, to map it again). A catalog change: the
        kernel is asked first (Memory Spaces maintenance).

        Args:
            space_id: A visible space whose provider is not the native ``mnemos``.
            confirm: The space id typed again.

        Returns:
            A committed :class:`SpaceReceipt` whose ``space`` is the entry that was dropped.

        Raises:
            InvalidInputError: a native space (code ``disconnect-native``: use
                :meth:`aremove_space`), or ``confirm`` is not the space id (code
                ``confirm-mismatch``); nothing was changed.
            NotFoundError: there is no space ``space_id`` (in this scope).
            ParticipationError: the kernel refused Memory Spaces maintenance.
            ReadOnlyError: writes are switched off (``write_enabled=false``).
            StorageError: the database or the secrets file refused the change (the entry
                stays).

        Example:
            >>> (await mem.spaces.adisconnect_space("team-notes", confirm="team-notes")).status
            'committed'
        """
        self.kernel.admit("memory_spaces", "maintenance")
        record = await asyncio.to_thread(self._catalog.get_space, space_id)
        if record.provider_id == NATIVE_PROVIDER_ID:
            raise InvalidInputError(
                f"Memory Space {record.id!r} is native ({NATIVE_PROVIDER_ID}): disconnecting "
                "would leave its rows behind in this database; remove it instead "
                f"(spaces.remove_space({record.id!r}, confirm={record.id!r}))",
                code="disconnect-native",
            )
        check_confirm(record.id, confirm, "disconnect")
        await asyncio.to_thread(self._catalog.delete_entry, record)
        self._health.clear()
        return SpaceReceipt(
            status="committed",
            message=f"Memory Space {record.name!r} disconnected (id {record.id!r}); the data in "
            f"provider {record.provider_id!r} was not touched.",
            changed=True,
            revision=str(record.revision),
            space=record,
        )

    disconnect_space = sync_twin(adisconnect_space)

    async def aremove_space(self, space_id: str, *, confirm: str) -> SpaceReceipt:
        """Remove a native space: delete its rows, then (only after that) its catalog entry.

        A dangerous action: every memory, edge, vector and keyword entry of the space is
        deleted for good by the native provider. If that fails the catalog entry stays, so the
        removal can be retried. Third-party spaces are disconnected instead
        (:meth:`adisconnect_space`); their data is never deleted from here. A catalog change:
        the kernel is asked first (Memory Spaces maintenance).

        Args:
            space_id: A visible native (``mnemos``) space.
            confirm: The space id typed again.

        Returns:
            A committed :class:`SpaceReceipt` (``provider_receipt`` says how many rows went).

        Raises:
            InvalidInputError: a third-party space (code ``remove-third-party``: use
                disconnect), or ``confirm`` is not the space id (code ``confirm-mismatch``);
                nothing was changed.
            NotFoundError: there is no space ``space_id`` (in this scope).
            ProviderError: the native provider is not registered or did not confirm the
                deletion (the entry stays).
            ParticipationError: the kernel refused Memory Spaces maintenance.
            ReadOnlyError: writes are switched off (``write_enabled=false``).
            StorageError: the database refused the deletion (nothing was deleted).

        Example:
            >>> (await mem.spaces.aremove_space("scratch", confirm="scratch")).provider_receipt
            {'status': 'removed', 'id': 'scratch', 'removed': 3, 'live': 2}
        """
        self.kernel.admit("memory_spaces", "maintenance")
        record = await asyncio.to_thread(self._catalog.get_space, space_id)
        if record.provider_id != NATIVE_PROVIDER_ID:
            raise InvalidInputError(
                f"Memory Space {record.id!r} lives in provider {record.provider_id!r}: use "
                "disconnect (provider data is never deleted from here): "
                f"spaces.disconnect_space({record.id!r}, confirm={record.id!r})",
                code="remove-third-party",
            )
        check_confirm(record.id, confirm, "remove")
        raw = await self._delete_rows(record)
        await asyncio.to_thread(self._catalog.delete_entry, record)
        self._health.clear()
        return SpaceReceipt(
            status="committed",
            message=f"Memory Space {record.name!r} removed (id {record.id!r}): its memories "
            "were deleted.",
            changed=True,
            revision=str(record.revision),
            space=record,
            provider_receipt=dict(raw),
        )

    remove_space = sync_twin(aremove_space)

    async def _delete_rows(self, record: SpaceRecord) -> dict[str, Any]:
        provider = self._registry.get(record.provider_id)
        if provider is None or not isinstance(provider, SpaceRemover):
            raise ProviderError(
                f"Memory Space {record.id!r} cannot be removed: its provider "
                f"{record.provider_id!r} is not registered in this process (or cannot delete "
                "a space); nothing was deleted",
                code="provider-disabled",
            )
        raw = await provider.aremove_space(await self._catalog.abinding(record))
        if not is_committed(raw):
            raise ProviderError(
                f"the native provider did not confirm deleting the rows of {record.id!r}; the "
                "space is kept, retry the removal",
                code="remove-failed",
            )
        return raw if isinstance(raw, dict) else {}
