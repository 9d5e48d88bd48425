"""The catalog methods of :class:`~langgraph_mnemon.memory_layers.spaces.MemorySpaces`.

Creating, listing, reading and changing spaces, merging native spaces and mapping what a
provider already holds into spaces: a mixin of the service (it keeps the service module to one
screenful of concerns). Every change asks the kernel first (Memory Spaces maintenance); reads
do not. Every method is synchronous; its ``a``-prefixed form runs it in a worker thread.

Example:
    >>> mem.spaces.create_space("Ops", "Runbooks.", space_id="ops").space.id
    'ops'
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph_mnemon.errors import AuthorityError, InvalidInputError, ProviderError
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.memory_layers.spaces._catalog import SpaceCatalog
from langgraph_mnemon.memory_layers.spaces._health import HealthCache
from langgraph_mnemon.memory_layers.spaces._locations import admit_outbound
from langgraph_mnemon.memory_layers.spaces._merge import merge
from langgraph_mnemon.memory_layers.spaces._models import DiscoveredSpace, settle
from langgraph_mnemon.memory_layers.spaces._records import SpaceReceipt, SpaceRecord
from langgraph_mnemon.memory_layers.spaces._registry import ProviderRegistry
from langgraph_mnemon.memory_layers.spaces._secret_store import SecretsReport
from langgraph_mnemon.memory_layers.spaces._secrets import split_config
from langgraph_mnemon.memory_layers.spaces._validation import (
    NATIVE_PROVIDER_ID,
    check_merge_sources,
)

__all__ = ["CatalogMethods"]


class CatalogMethods:
    """Catalog operations of :class:`MemorySpaces` (a mixin; the service provides the
    attributes below)."""

    _catalog: SpaceCatalog
    _registry: ProviderRegistry
    _health: HealthCache
    kernel: Kernel

    def create_space(
        self,
        name: str,
        description: str = "",
        *,
        provider_id: str | None = None,
        config: Mapping[str, Any] | None = None,
        secrets: Mapping[str, str] | None = None,
        space_id: str | None = None,
        active: bool | None = None,
        shared: bool = False,
    ) -> SpaceReceipt:
        """Create a Memory Space (inactive until its first committed write unless ``active``).

        The first space of an empty catalog gets the id ``default``. A catalog change: the
        kernel is asked first (Memory Spaces maintenance). In a scope's view the space is its
        user's, or with ``shared`` its project's (seen by every user of the project).

        Args:
            name: The space's name, up to 120 characters.
            description: What the space holds, up to 500 characters (may be empty).
            provider_id: Defaults to the persistence strategy's provider (``mnemos``).
            config: The provider's settings (no credentials).
            secrets: API keys and tokens, stored host-side only and never returned.
            space_id: An id of your own (1-64 letters, digits, ``.``, ``_``, ``-``).
            active: Take part in recall at once.
            shared: Owned by the scope's project instead of its user.

        Returns:
            A committed :class:`SpaceReceipt` with the new ``space``.

        Raises:
            InvalidInputError: a bad argument, a taken id, a credential in ``config``, or a
                remote provider under ``data_boundary="local-only"``.
            NotFoundError: ``provider_id`` is not registered.
            AuthorityError: ``config`` names a storage location the caller may not use, or a
                caller who is not an admin adds a space that connects out, or its endpoint is
                an internal address (codes ``storage-location``, ``admin-required``,
                ``internal-address``; :mod:`._locations`).
            ParticipationError: the kernel refused Memory Spaces maintenance.
            ReadOnlyError: writes are switched off (``write_enabled=false``).
            StorageError: the local database refused the write (nothing was created).

        Example:
            >>> spaces.create_space("Ops", "Runbooks.", space_id="ops").space.id
            'ops'
        """
        self.kernel.admit("memory_spaces", "maintenance")
        self._admit_outbound(provider_id, config, "adding")
        create = self._catalog.create_space
        return create(
            name, description, provider_id, config, secrets, space_id, active, shared=shared
        )

    async def acreate_space(
        self,
        name: str,
        description: str = "",
        *,
        provider_id: str | None = None,
        config: Mapping[str, Any] | None = None,
        secrets: Mapping[str, str] | None = None,
        space_id: str | None = None,
        active: bool | None = None,
        shared: bool = False,
    ) -> SpaceReceipt:
        """Async form of :meth:`create_space`: the same call, run in a worker thread."""
        return await asyncio.to_thread(
            self.create_space,
            name,
            description,
            provider_id=provider_id,
            config=config,
            secrets=secrets,
            space_id=space_id,
            active=active,
            shared=shared,
        )

    def list_spaces(self, *, active: bool | None = None) -> list[SpaceRecord]:
        """All spaces (or only active / inactive ones), oldest first.

        A catalog read: the kernel is not asked, and a database nothing was written to yet
        gives an empty list (a read creates no tables). Secret values never appear.

        Args:
            active: ``True`` for the active spaces only, ``False`` for the inactive ones,
                ``None`` (default) for all.

        Returns:
            One :class:`SpaceRecord` per space, oldest first.

        Raises:
            InvalidInputError: ``active`` is not ``True``, ``False`` or ``None``.
            StorageError: the catalog cannot be read (the database is down or damaged).

        Example:
            >>> [s.id for s in spaces.list_spaces(active=True)]
            ['default', 'ops']
        """
        if active is not None and not isinstance(active, bool):
            raise InvalidInputError("active must be true, false or None")
        return self._catalog.list_spaces(active)

    async def alist_spaces(self, *, active: bool | None = None) -> list[SpaceRecord]:
        """Async form of :meth:`list_spaces`: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.list_spaces, active=active)

    def get_space(self, space_id: str) -> SpaceRecord:
        """One space by id (:class:`NotFoundError` when there is none)."""
        return self._catalog.get_space(space_id)

    async def aget_space(self, space_id: str) -> SpaceRecord:
        """Async form of :meth:`get_space`: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.get_space, space_id)

    def update_space(
        self,
        space_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        active: bool | None = None,
        config: Mapping[str, Any] | None = None,
        secrets: Mapping[str, str] | None = None,
    ) -> SpaceReceipt:
        """Change a space's name, description, active flag, provider settings or secrets.

        A catalog change: the kernel is asked first (Memory Spaces maintenance). ``config``
        is merged into the stored settings (a key set to ``None`` is removed) and the result
        is checked again by the provider's ``check_config`` before anything is written.
        Secrets are write-only: a value sets its key, ``""`` removes it, keys not named stay
        unchanged; read APIs keep showing only ``secrets_configured``. Arguments left
        ``None`` are not changed; a call that changes nothing commits with ``changed=False``.

        Args:
            space_id: The space's id.
            name: A new name (up to 120 characters).
            description: A new description (up to 500 characters; may be empty).
            active: Take part in recall and default writes, or stop.
            config: Provider settings to set (``None`` values remove a setting).
            secrets: Credentials to set (``""`` removes one), stored host-side only.

        Returns:
            A committed :class:`SpaceReceipt` with the updated ``space``.

        Raises:
            InvalidInputError: a bad name, description or flag; or (code
                ``invalid-provider-config``) settings or secrets the provider refuses.
            NotFoundError: there is no space ``space_id`` (in this scope).
            ProviderError: its provider is not registered (settings cannot be checked).
            AuthorityError: the settings name a storage location the caller may not use, or
                a caller who is not an admin configures a space that connects out
                (:mod:`._locations`).
            ParticipationError: the kernel refused Memory Spaces maintenance.
            ReadOnlyError: writes are switched off (``write_enabled=false``).
            StorageError: the database or the secrets file refused the write (nothing
                changed).

        Example:
            >>> receipt = spaces.update_space("team", secrets={"api_key": "new-key"})
            >>> receipt.space.secrets_configured
            ['api_key']
        """
        self.kernel.admit("memory_spaces", "maintenance")
        if config is not None or secrets is not None:
            self._admit_reconfiguring(space_id, config)
        update = self._catalog.update_space
        receipt = update(space_id, name, description, active, config, secrets)
        if config is not None or secrets is not None:
            self._health.clear()  # a provider's state may depend on the space's settings
        return receipt

    async def aupdate_space(
        self,
        space_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        active: bool | None = None,
        config: Mapping[str, Any] | None = None,
        secrets: Mapping[str, str] | None = None,
    ) -> SpaceReceipt:
        """Async form of :meth:`update_space`: the same call, run in a worker thread."""
        return await asyncio.to_thread(
            self.update_space,
            space_id,
            name=name,
            description=description,
            active=active,
            config=config,
            secrets=secrets,
        )

    def _admit_reconfiguring(self, space_id: str, config: Any) -> None:
        """Refuse configuring a space that connects out unless an admin does it, with the
        settings it would then have."""
        record = self._catalog.get_space(space_id)
        merged = dict(record.config)
        if isinstance(config, Mapping):
            merged = {k: v for k, v in {**merged, **config}.items() if v is not None}
        self._admit_outbound(record.provider_id, merged, "configuring")

    def _admit_outbound(self, provider_id: Any, config: Any, what: str) -> None:
        """Refuse a space that connects out unless an admin sets it up (:mod:`._locations`)."""
        if provider_id is None:
            provider_id = self._catalog.default_provider_id
        provider = self._registry.get(provider_id) if isinstance(provider_id, str) else None
        if provider is not None:  # an unknown or bad id is refused by the catalog's checks
            settings = config if isinstance(config, Mapping) else None
            admit_outbound(provider, settings, admin=self._catalog.admin, what=what)

    def set_active(self, space_id: str, active: bool) -> SpaceReceipt:
        """Switch whether a space takes part in recall and default writes (data is kept).

        A catalog change: the kernel is asked first (Memory Spaces maintenance). An inactive
        space is still searched when a call names it in ``space_ids``.

        Args:
            space_id: The space's id.
            active: ``True`` to take part in recall and default writes, ``False`` to stop.

        Returns:
            A committed :class:`SpaceReceipt` with the updated ``space``; ``changed`` is false
            when the flag already had that value.

        Raises:
            InvalidInputError: ``active`` is not a bool, or ``space_id`` is not a valid id.
            NotFoundError: there is no space ``space_id``.
            ParticipationError: the kernel refused Memory Spaces maintenance.
            ReadOnlyError: writes are switched off (``write_enabled=false``).
            StorageError: the local database refused the write.

        Example:
            >>> spaces.set_active("ops", False).space.active
            False
        """
        if not isinstance(active, bool):
            raise InvalidInputError("active must be true or false")
        return self.update_space(space_id, active=active)

    async def aset_active(self, space_id: str, active: bool) -> SpaceReceipt:
        """Async form of :meth:`set_active`: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.set_active, space_id, active)

    def merge_spaces(
        self,
        target_space_id: str,
        source_space_ids: Sequence[str],
        *,
        deactivate_sources: bool = True,
    ) -> SpaceReceipt:
        """Copy the rows of native source spaces into a native target (sources are kept).

        Duplicates (same content and metadata) are skipped; with ``deactivate_sources`` the
        sources whose rows were copied stop taking part in recall. A catalog change: the
        kernel is asked first (Memory Spaces maintenance). Each source is one step of the
        receipt (``steps``); ``outcome`` is ``partial`` when some source failed.
        """
        self.kernel.admit("memory_spaces", "maintenance")
        sources = check_merge_sources(source_space_ids, deactivate_sources)
        return merge(
            self._catalog,
            self._registry,
            target_space_id,
            sources,
            deactivate_sources=deactivate_sources,
            native_id=NATIVE_PROVIDER_ID,
        )

    async def amerge_spaces(
        self,
        target_space_id: str,
        source_space_ids: Sequence[str],
        *,
        deactivate_sources: bool = True,
    ) -> SpaceReceipt:
        """Async form of :meth:`merge_spaces`: the same call, run in a worker thread."""
        return await asyncio.to_thread(
            self.merge_spaces,
            target_space_id,
            source_space_ids,
            deactivate_sources=deactivate_sources,
        )

    def discover(
        self,
        provider_id: str,
        *,
        config: Mapping[str, Any] | None = None,
        secrets: Mapping[str, str] | None = None,
        sync: bool = False,
    ) -> list[DiscoveredSpace] | SpaceReceipt:
        """Namespaces a provider already holds; with ``sync=True`` map them into spaces.

        Syncing is authoritative for that provider: every discovered namespace without a space
        gets one (inactive), and spaces of that provider whose namespace vanished lose their
        catalog entry (provider data is never deleted). A failed discovery changes nothing.

        Args:
            provider_id: The registered provider to ask.
            config: The provider's settings for the discovered spaces (no credentials).
            secrets: Credentials for them, stored host-side only.
            sync: Map the namespaces into the catalog (Memory Spaces maintenance).

        Returns:
            The namespaces found, or with ``sync`` a receipt listing that provider's spaces.

        Raises:
            AuthorityError: called on a scope's view; discovery is the local scope's.
            NotFoundError: ``provider_id`` is not registered.
            ProviderError: the provider cannot discover.

        Example:
            >>> [d.external_id for d in mem.spaces.discover("mnemos")]
            ['old-notes']
        """
        if not self._catalog.owners.local:
            raise AuthorityError(
                "discovering a provider's collections is the local scope's (they map into "
                "spaces of the local user); run it on the host's own spaces: "
                "mem.spaces.discover(...)"
            )
        provider = self._registry.require(provider_id)
        if not provider.descriptor.capabilities.discover:
            raise ProviderError(
                f"provider {provider_id!r} does not support discover", code="unsupported"
            )
        if sync:  # mapping namespaces into spaces changes the catalog: asked before any I/O
            self.kernel.admit("memory_spaces", "maintenance")
        checked, secret_values = split_config(provider, config, secrets)
        found = settle(provider.discover(checked, secret_values))
        if not sync:
            return found
        return self._catalog.map_discovered(provider_id, found, checked, secret_values)

    async def adiscover(
        self,
        provider_id: str,
        *,
        config: Mapping[str, Any] | None = None,
        secrets: Mapping[str, str] | None = None,
        sync: bool = False,
    ) -> list[DiscoveredSpace] | SpaceReceipt:
        """Async form of :meth:`discover`: the same call, run in a worker thread."""
        return await asyncio.to_thread(
            self.discover, provider_id, config=config, secrets=secrets, sync=sync
        )

    # ------------------------------------------------------------------ provider secrets

    def secrets_report(self) -> SecretsReport:
        """How the stored provider secrets are kept: how many rows are encrypted with the
        configured ``secret_key``, with another key, or stored as plain text (counts only,
        never a name or a value; a management read, the kernel is not asked).

        Example:
            >>> mem.spaces.secrets_report().plain
            0
        """
        return self._catalog.secrets.report()

    async def asecrets_report(self) -> SecretsReport:
        """Async form of :meth:`secrets_report`: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.secrets_report)

    def rotate_secrets(self) -> SecretsReport:
        """Re-encrypt every stored provider secret with the configured ``secret_key``
        (``MNEMON_SECRET_KEY``), in one transaction; rows under ``secret_key_previous`` and
        plain-text rows are opened and sealed again. Afterwards the previous key opens
        nothing and may be dropped. Every space of every owner: the host operator's.

        Returns:
            The report after the rotation (``rotated``: how many rows were re-encrypted).

        Raises:
            AuthorityError: called on a scope's view (every owner's rows change).
            ReadOnlyError: writes are switched off.
            SecretKeyError: no ``secret_key`` is configured, or a row opens with neither key
                (then nothing is changed).

        Example:
            >>> mem.spaces.rotate_secrets().rotated
            3
        """
        if not self._catalog.owners.local:
            raise AuthorityError(
                "rotating the secret key re-encrypts every owner's secrets: run it on the "
                "host's own spaces (mem.spaces.rotate_secrets(), or `mnemon secrets rotate`)"
            )
        self.kernel.require_writes("the provider secrets")
        return self._catalog.secrets.rotate()

    async def arotate_secrets(self) -> SecretsReport:
        """Async form of :meth:`rotate_secrets`: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.rotate_secrets)
