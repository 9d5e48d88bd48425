"""Memory Spaces (tier 3): the catalog and federated recall over provider-backed spaces.

MemorySpaces is one service: every operation on Memory Spaces (catalog, scope views, provider
connections, federated search, writes, reads, health) enters here and asks the kernel, the
catalog and the registry in the same few steps; over 900 lines because it is the whole public
surface of the layer with each method's documented contract and its ``a``-prefixed async form,
while the machinery it calls lives in the modules named below.

A *Memory Space* is a named store (id, name, description, provider id, active flag, provider
configuration) kept in the ``mnemon_spaces`` table of the shared SQL database with its owner
(:mod:`._catalog`); its provider secrets (API keys, tokens) are kept beside it in
``mnemon_space_secrets``, encrypted when ``secret_key`` is set, and no read API returns them
(:mod:`._secrets`). :meth:`MemorySpaces.search` is federated over every readable space
(:mod:`._search`, :mod:`._fusion`); writes go to one space and return receipts
(:mod:`._writes`). Each space has an owner; :meth:`MemorySpaces.for_scope` gives one scope's
view: the same service reading through that scope's owner filter.

Every public method validates its input (:mod:`._validation`) and raises a typed error from
:mod:`langgraph_mnemon.errors` whose message says what to do; a failed operation changes
nothing. A write that the local database refuses (full disk, read-only file, damaged file)
raises its :class:`StorageError`; a failing remote provider gives a ``failed`` receipt instead.

One sync/async rule: the service is synchronous inside (the SQL catalog, the secrets, the
provider calls). Every ``aX`` method (``asearch``, ``aremember``, ``acreate_space``, …) is the
same call run in a worker thread with ``asyncio.to_thread``, once, at this edge, so an async
caller's loop never blocks. A call to one space runs in the caller's thread; a federated call
to several runs on the service's bounded pool with the provider timeout (:mod:`._fanout`).
Sync calls work anywhere: scripts, worker threads, notebook cells, code inside a running event
loop, and a provider calling back into the service.

Example:
    >>> spaces = mem.spaces
    >>> spaces.remember("The staging database is db-stage-2 on port 5433.").status
    'committed'
    >>> [r.content for r in spaces.search("which port does staging use?").results]
    ['The staging database is db-stage-2 on port 5433.']
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import (
    AuthorityError,
    ConflictError,
    InvalidInputError,
    MnemonError,
    NotFoundError,
    ProviderError,
    SecretKeyError,
)
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.memory_layers.spaces._catalog import (
    EVERY_OWNER,
    Owners,
    SpaceCatalog,
    owners_of,
)
from langgraph_mnemon.memory_layers.spaces._fanout import ProviderCalls
from langgraph_mnemon.memory_layers.spaces._fusion import DEPTH_POLICY, QualitySettings
from langgraph_mnemon.memory_layers.spaces._health import (
    HEALTH_TIMEOUT_SECONDS,
    PROBE_BINDING,
    HealthCache,
    SpacesHealth,
    assess,
    provider_secrets,
    redact,
    refused_spaces,
    status_report,
)
from langgraph_mnemon.memory_layers.spaces._item_text import as_recalled, recalled
from langgraph_mnemon.memory_layers.spaces._keyed import KeyedItems
from langgraph_mnemon.memory_layers.spaces._locations import StorageRules, admit_outbound
from langgraph_mnemon.memory_layers.spaces._models import (
    CATEGORIES,
    EDGE_TYPES,
    BrowseRequest,
    DiscoveredSpace,
    GraphProjection,
    HistoryProvider,
    LinkRequest,
    MemoryProvider,
    MemoryReceipt,
    MemoryRecord,
    ProviderStatus,
    RelatedRequest,
    RememberItem,
    SpaceBinding,
    is_committed,
    settle,
)
from langgraph_mnemon.memory_layers.spaces._records import (
    ConnectionTest,
    EntityCount,
    ProviderInfo,
    RecallResult,
    RelatedResult,
    SpaceReceipt,
    SpaceRecord,
    SpacesStatus,
)
from langgraph_mnemon.memory_layers.spaces._registry import ProviderRegistry, provider_info
from langgraph_mnemon.memory_layers.spaces._search import FederatedSearch, decorate
from langgraph_mnemon.memory_layers.spaces._secrets import SecretsReport, SecretStore, split_config
from langgraph_mnemon.memory_layers.spaces._validation import (
    MAX_BROWSE_OFFSET,
    MAX_ENTITY_SCAN_ROWS,
    MAX_MEMORY_ID_CHARS,
    NATIVE_PROVIDER_ID,
    check_choice,
    check_confirm,
    check_int,
    check_link,
    check_merge_sources,
    check_policy,
    check_search,
    check_text_arg,
    remember_item,
    remember_items,
    supersede_item,
)
from langgraph_mnemon.memory_layers.spaces._writes import merge, write_many, write_one
from langgraph_mnemon.storage.db import Database
from langgraph_mnemon.storage.edge import async_form
from langgraph_mnemon.storage.secret_box import SecretBox

__all__ = ["MemorySpaces", "durable_copy"]

_ENTITY_PAGE = 500
MAX_HISTORY_LINKS = 100
"""How many supersede links :meth:`MemorySpaces.history` follows at most."""


class MemorySpaces:
    """Memory Space catalog and federated recall (``Mnemon.spaces``).

    Public surface (each method but ``for_scope``, ``every_owner``, ``as_admin``,
    ``register_provider``, ``provider``, ``validate_items``, ``setup`` and ``close`` also has an
    ``a``-prefixed async form: ``asearch``, ``acreate_space``, ...):

    * catalog: ``create_space``, ``list_spaces``, ``get_space``, ``update_space``,
      ``set_active``, ``merge_spaces``, ``discover``, ``disconnect_space``, ``remove_space``;
    * scopes: ``for_scope``, ``every_owner``, ``as_admin``;
    * providers: ``providers``, ``provider``, ``register_provider``, ``list_providers``,
      ``test_connection``, ``test_space``, ``secrets_report``, ``rotate_secrets``;
    * memories: ``search``, ``remember``, ``remember_many``, ``validate_items``, ``link``,
      ``forget``, ``related``, ``browse``, ``graph``, ``entities``;
    * history: ``supersede``, ``restore``, ``get``, ``history``;
    * state: ``status``, ``health``, ``kernel``, ``setup``, ``close``.

    A space whose provider is not registered stays in the catalog and reports
    ``provider-disabled``. Every recall and write asks the kernel first; a refusal reaches no
    provider.

    Args:
        database: The shared SQL database (``Database(create_engine(url))``).
        root: The storage root (an old ``state/space-secrets.json`` there is adopted into the
            database on open).
        providers: :class:`MemoryProvider` objects, keyed by their descriptor id.
        quality: Thresholds of the recall quality policies.
        policy: The quality policy of the model's recall envelope (``strict-v1``,
            ``balanced-v1``, ...): what :attr:`envelope_policy` names. A plain :meth:`search`
            is not the envelope and cuts nothing unless a caller names a policy.
        candidate_multiplier: Rows asked of each space per result wanted (1-5).
        default_limit: Results of a search without ``limit`` (1-50).
        timeout_ms: How long a provider may take per call (100-120,000).
        write_enabled: Whether writes are on (for a service built without a ``kernel``).
        kernel: The host's kernel (participation, write_enabled); one of its own otherwise.
        default_provider_id: The provider of a new space when none is named.
        local_only: Accept only providers whose data stays on this machine.
        lock_timeout: Seconds to wait for the old secrets file's lock while adopting it.
        secret_box: The keys provider secrets are sealed with in the database (default:
            none, plain text; :class:`~langgraph_mnemon.storage.secret_box.SecretBox`).
        clock: Seconds since the epoch (injectable for tests).

    Raises:
        InvalidInputError: not a :class:`Database`, an unknown policy, or a value out of range.

    Example:
        >>> db = Database(create_engine("sqlite:///.mnemon/mnemon.db"))
        >>> spaces = MemorySpaces(db, root=".mnemon", providers=[MnemosProvider(db)])
        >>> spaces.create_space("Work", "Facts about work.").space.id
        'default'
    """

    def __init__(
        self,
        database: Database,
        *,
        root: Path | str,
        providers: Iterable[MemoryProvider] = (),
        quality: QualitySettings | None = None,
        policy: str = "strict-v1",
        candidate_multiplier: float = 3.0,
        default_limit: int = 10,
        timeout_ms: int = 10_000,
        write_enabled: bool = True,
        kernel: Kernel | None = None,
        default_provider_id: str = NATIVE_PROVIDER_ID,
        local_only: bool = False,
        lock_timeout: float = 10.0,
        clock: Callable[[], float] = time.time,
        secret_box: SecretBox | None = None,
    ) -> None:
        if not isinstance(database, Database):
            raise InvalidInputError(
                f"MemorySpaces() takes a Database (got {type(database).__name__}); "
                "use Database(create_engine(url))"
            )
        check_policy(policy)
        if not 1 <= float(candidate_multiplier) <= 5:
            raise InvalidInputError("candidate_multiplier must be between 1 and 5")
        self.db = database
        self._root = Path(root).expanduser().absolute()
        self._quality = quality or QualitySettings()
        self._policy = policy
        self._candidate_multiplier = float(candidate_multiplier)
        self._default_limit = check_int(default_limit, "default_limit", 1, 50)
        self._timeout = check_int(timeout_ms, "timeout_ms", 100, 120_000) / 1000.0
        # Every operation asks the kernel; a layer built alone gets one of its own.
        self.kernel = kernel or Kernel.standalone(write_enabled=bool(write_enabled))
        self._registry = ProviderRegistry()
        self._secrets = SecretStore(
            database, secret_box or SecretBox(), self._root, lock_timeout, clock
        )
        self._catalog = SpaceCatalog(
            database,
            self._registry,
            self._secrets,
            default_provider_id=default_provider_id,
            local_only=bool(local_only),
            clock=clock,
            storage=self._storage_rules,
        )
        self._calls = ProviderCalls()  # the fan-out pool, shared with every scope's view
        self._health = HealthCache()
        self._origin = self  # a scope's view keeps the service it was made from
        self._every: MemorySpaces | None = None
        for provider in providers:
            self.register_provider(provider)

    def __repr__(self) -> str:
        owners = self._catalog.owners
        seen = "" if owners.local else f", owners={sorted(owners.keys or ())}"
        return f"MemorySpaces(database={self.db.url!r}, providers={sorted(self.providers)}{seen})"

    # ------------------------------------------------------------------ setup and providers

    def setup(self) -> None:
        """Create or migrate the Memory Space tables (idempotent; also done lazily)."""
        self.kernel.require_writes("Memory Spaces")  # a read-only host creates no tables
        self._catalog.setup()

    def register_provider(self, provider: MemoryProvider) -> None:
        """Make a provider available to spaces that name its id.

        Raises:
            InvalidInputError: ``provider`` does not implement :class:`MemoryProvider`.
        """
        self._registry.register(provider)

    @property
    def providers(self) -> dict[str, MemoryProvider]:
        """Registered providers by id."""
        return self._registry.all()

    def provider(self, provider_id: str) -> MemoryProvider:
        """The registered provider ``provider_id`` (:class:`NotFoundError` if there is none)."""
        return self._registry.require(provider_id)

    @property
    def keyed(self) -> KeyedItems:
        """Keyed items of this view's spaces: rows addressed by a key (what the BaseStore
        facade stores), on providers that implement :class:`KeyedProvider`.

        Example:
            >>> record = mem.spaces.get_space("notes")
            >>> mem.spaces.keyed.get(record, "k1") is None
            True
        """
        keyed = self.__dict__.get("_keyed")
        if keyed is None or keyed.catalog_view is not self._catalog:  # a view has its own
            keyed = self._keyed = KeyedItems(self._catalog, self._registry, self.kernel)
        return keyed

    def list_providers(self) -> list[ProviderInfo]:
        """Every registered provider (and every provider a visible space names but this process
        has not registered), with its declarations and the form fields of a new space.

        A management read: the kernel is not asked. When the catalog cannot be read the
        providers are still listed (with zero space counts).

        Returns:
            One :class:`ProviderInfo` per provider: the registered ones in registration order
            (the native one first), then the missing ones by id.

        Example:
            >>> [(p.id, p.removal) for p in mem.spaces.list_providers()]
            [('mnemos', 'remove'), ('chroma', 'disconnect')]
        """
        try:
            records = self._catalog.list_spaces()
        except MnemonError:  # the database is down: the providers are still worth listing
            records = []
        counts = Counter(r.provider_id for r in records)
        registered = self._registry.all()  # in registration order: the native one first
        infos = [provider_info(pid, p, counts[pid]) for pid, p in registered.items()]
        infos += [
            provider_info(pid, None, n)
            for pid, n in sorted(counts.items())
            if pid not in registered
        ]
        return infos

    alist_providers = async_form(list_providers)

    def close(self) -> None:
        """Close providers and the fan-out pool (a scope's view closes nothing: the service
        owns them)."""
        if self._origin is not self:
            return
        for provider in list(self.providers.values()):
            # ``close`` in the sync contract; ``aclose`` is an older async provider's.
            closer = getattr(provider, "close", None) or getattr(provider, "aclose", None)
            if not callable(closer):
                continue
            try:
                settle(closer())
            except Exception:  # closing is best effort
                continue
        self._calls.close()

    def _storage_rules(self) -> StorageRules:
        """Where spaces may keep data: the root, and ``providers.allowed_paths`` (live)."""
        folders = self.kernel.config.providers.allowed_paths
        return StorageRules(self._root, tuple(Path(folder) for folder in folders))

    def _binding(self, record: SpaceRecord) -> SpaceBinding:
        """What a provider receives about ``record`` (secrets included, never serialised)."""
        return self._catalog.binding(record)

    def _activate(self, space_id: str) -> bool:
        return self._catalog.activate(space_id)

    def _target(self, space_id: str | None, operation: str) -> SpaceRecord:
        return self._catalog.target(space_id, operation)

    # ------------------------------------------------------------------ scope views

    def for_scope(self, scope: Scope, *, per_user: bool = False) -> Self:
        """The Memory Spaces of one scope: the same API, over the spaces that scope may see.

        Visible are the spaces owned by the scope's user (``user:alice``) and by its project
        (``project:billing``, shared by the project's users), plus, when the scope's user is
        the local user, the spaces without an owner (every space from before scopes). Every
        method reads through that filter: an id of another owner's space raises the same
        :class:`NotFoundError` as an unknown id, before any provider is asked; federated
        search without ``space_ids`` asks the view's active spaces only; ``create_space``
        makes the space the user's (``shared=True``: the project's). Providers, the fan-out
        pool and the health cache are the service's own.

        Args:
            scope: The :class:`~langgraph_mnemon.contracts.Scope`.
            per_user: ``project_memory = user_project``: the project's spaces are held per
                user (owner ``project:<p>/user:<u>``) like its MEMORY.md and Documents.

        Returns:
            The service itself for the local scope, else a view of the scope (closing a view
            closes nothing).

        Raises:
            InvalidInputError: ``scope`` is not a :class:`Scope`.

        Example:
            >>> alice = mem.spaces.for_scope(Scope(user="alice", project="billing"))
            >>> alice.create_space("Alice's notes").space.owner
            'user:alice'
            >>> "Alice's notes" in [s.name for s in mem.spaces.list_spaces()]
            False
        """
        if not isinstance(scope, Scope):
            raise InvalidInputError(
                f"for_scope() takes a Scope (got {type(scope).__name__}); e.g. "
                "Scope(user='alice', project='billing')"
            )
        if scope.is_local:
            return self._origin
        return self._origin._view(owners_of(scope, bool(per_user)))

    def every_owner(self) -> Self:
        """A view over every owner's spaces: the host operator's, for host code only.

        The store facade's local scope reads through it (its namespaces stay global, as
        before scopes). Spaces it creates are the local user's. Never hand it to a model, a
        request or a user's run.

        Returns:
            The view (the same object on every call).

        Example:
            >>> [s.owner for s in mem.spaces.every_owner().list_spaces()]
            [None, 'user:alice']
        """
        origin = self._origin
        if origin._every is None:
            origin._every = origin._view(EVERY_OWNER)
        return origin._every

    def as_admin(self) -> Self:
        """This view for an admin: the control plane's, for a caller with ``mnemon:admin``.

        Its spaces and owners stay the scope's; only what its caller may set changes (a
        location inside ``providers.allowed_paths``, a space that connects out). Never hand it
        to a model, a run or a user who is not an admin.

        Returns:
            The same view when it is an admin's already, else an admin's copy.

        Example:
            >>> view = mem.spaces.for_scope(Scope(user="root-op")).as_admin()
            >>> view.create_space("N", provider_id="facts", config={"path": "/srv/n.json"}).status
            'committed'
        """
        if self._catalog.admin:
            return self
        view = copy.copy(self)
        view._catalog = self._catalog.owned_by(self._catalog.owners, admin=True)
        return view

    def _view(self, owners: Owners) -> Self:
        view = copy.copy(self)  # shares the providers, the fan-out pool and the health cache
        view._catalog = self._catalog.owned_by(owners)
        return view

    # ------------------------------------------------------------------ the catalog

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

    acreate_space = async_form(create_space)

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

    alist_spaces = async_form(list_spaces)

    def get_space(self, space_id: str) -> SpaceRecord:
        """One space by id (:class:`NotFoundError` when there is none)."""
        return self._catalog.get_space(space_id)

    aget_space = async_form(get_space)

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

    aupdate_space = async_form(update_space)

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

    aset_active = async_form(set_active)

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

    amerge_spaces = async_form(merge_spaces)

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

    adiscover = async_form(discover)

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

    asecrets_report = async_form(secrets_report)

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

    arotate_secrets = async_form(rotate_secrets)

    # ------------------------------------------------------------------ federated search

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        mode: str = "smart",
        space_ids: Sequence[str] | None = None,
        category: str | None = None,
        source: str | None = None,
        intent: str | None = None,
        policy: str | None = None,
        verbatim: bool = False,
    ) -> RecallResult:
        """Search the readable spaces concurrently and return fused, ranked rows.

        The kernel is asked first: a refusal reaches no provider. A failing or slow provider
        becomes a per-space hint (``sources``), never an error; a store item comes as its text.

        Args:
            query: Up to 2,000 characters.
            limit: At most this many rows (1-50; default ``default_limit``).
            mode: ``smart`` (with coverage recovery), ``keyword`` or ``basic``.
            space_ids: Only these spaces, active or not; default: the active ones with a provider.
            category: Only rows of this category (``fact``, ``decision``, ... ``CATEGORIES``).
            source: Only rows from this source (user, agent, external).
            intent: The question's intent (WHY, WHEN, ENTITY, GENERAL), handed to providers.
            policy: A quality cut (e.g. :attr:`envelope_policy`). Default: none, ``limit``
                rows whenever the spaces hold them (smart mode ranks every row with a vector),
                each with its ``normalized_score`` and ``relevance_tier``.
            verbatim: Keep every row's content as stored (a store item's JSON text: what the
                ``BaseStore`` facade decodes back into the value).

        Returns:
            A :class:`RecallResult`: ``results`` best first, one ``sources`` report per space
            (the model's envelope passes ``policy=spaces.envelope_policy``).

        Raises:
            InvalidInputError: a bad ``query``, ``limit``, ``mode``, filter, policy or space list.
            NotFoundError: a space named in ``space_ids`` does not exist.
            ParticipationError: the kernel refused Memory Spaces recall.
            StorageError: the catalog cannot be read.

        Example:
            >>> spaces.search("staging port", limit=3).results[0].content
            'The staging database is db-stage-2 on port 5433.'
        """
        self.kernel.admit("memory_spaces", "recall")
        args = check_search(
            query,
            limit=limit,
            mode=mode,
            category=category,
            source=source,
            intent=intent,
            policy_id=DEPTH_POLICY if policy is None else policy,
            default_limit=self._default_limit,
        )
        records = self._catalog.readable(space_ids)
        found = self._federated().run(args, records)
        return found if verbatim else recalled(found)

    asearch = async_form(search)

    @property
    def envelope_policy(self) -> str:
        """The quality policy of the model's recall envelope (``recall_quality.policy``,
        ``strict-v1`` by default): the callers that show rows to a model pass it to
        :meth:`search`.

        Example:
            >>> spaces.search("staging port", policy=spaces.envelope_policy).policy_id
            'strict-v1'
        """
        return self._policy

    def _federated(self) -> FederatedSearch:
        return FederatedSearch(
            self._registry,
            self._catalog.binding,
            self._calls,
            self._quality,
            self._candidate_multiplier,
            self._timeout,
        )

    # ------------------------------------------------------------------ writes

    def remember(
        self,
        content: str,
        *,
        space_id: str | None = None,
        category: str = "general",
        importance: int = 3,
        tags: Sequence[str] | None = None,
        entities: Sequence[str] | None = None,
        source: str = "agent",
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryReceipt:
        """Store one memory; a committed write activates its space.

        The kernel is asked first (Memory Spaces write).

        Args:
            content: Up to 65,536 characters.
            space_id: The space; without it exactly one active space must exist (an empty
                catalog gets the native ``default`` space).
            category: preference, decision, fact, insight, context or general.
            importance: 1 (low) to 5 (critical); 3 is normal.
            tags: Up to 20 short labels.
            entities: Up to 50 names the memory is about (the space's entity index).
            source: user, agent or external.
            metadata: Up to 32 scalar values (string, number, bool) under short keys.

        Returns:
            A :class:`MemoryReceipt`; only ``status="committed"`` means it was stored. A
            provider that fails gives ``status="failed"`` (nothing stored), not an error.

        Raises:
            InvalidInputError: a bad argument or no single target space.
            NotFoundError: there is no space ``space_id``.
            ProviderError: the space's provider is not registered or cannot remember.
            ParticipationError: the kernel refused Memory Spaces writes.
            ReadOnlyError: writes are switched off (``write_enabled=false``).
            StorageError: the local database refused the write.

        Example:
            >>> spaces.remember("Deploys go through CI.", category="fact").status
            'committed'
        """
        self.kernel.admit("memory_spaces", "write")
        item = remember_item(content, category, importance, tags, entities, source, metadata)
        record = self._target(space_id, "remember")
        provider = self._registry.capable(record, "remember")

        def call() -> Any:
            return settle(provider.remember(self._catalog.binding(record), item))

        return write_one(record, "remember", call, self._activate)

    aremember = async_form(remember)

    def validate_items(self, items: Sequence[Mapping[str, Any]]) -> list[RememberItem]:
        """Validate remember items (mappings with ``content`` and optional fields) without
        writing anything; raises :class:`InvalidInputError` naming the first bad item."""
        return remember_items(items)

    def remember_many(
        self, items: Sequence[Mapping[str, Any]], *, space_id: str | None = None
    ) -> list[MemoryReceipt]:
        """Store several memories in one provider call; one receipt per item, in order.

        Each item is a mapping with ``content`` and optionally ``category``, ``importance``,
        ``tags``, ``entities``, ``source``, ``metadata``. Every item is validated before
        anything is written. The kernel is asked first (Memory Spaces write).
        """
        self.kernel.admit("memory_spaces", "write")
        checked = remember_items(items)
        if not checked:
            return []
        record = self._target(space_id, "remember")
        provider = self._registry.capable(record, "remember")
        binding = self._catalog.binding(record)
        return write_many(record, provider, binding, checked, self._activate)

    aremember_many = async_form(remember_many)

    def link(
        self,
        source_id: str,
        target_id: str,
        *,
        space_id: str | None = None,
        type: str = "semantic",
        weight: float = 0.5,
        reason: str | None = None,
    ) -> MemoryReceipt:
        """Add a typed edge (temporal, semantic, causal, entity) with a weight in 0..1.

        The kernel is asked first (Memory Spaces write). Both memories must be in the same
        space; linking the same pair with the same type again updates its weight and reason.

        Args:
            source_id: The id of the memory the edge starts from.
            target_id: The id of the memory it points to.
            space_id: The space of both memories; without it exactly one active space must
                exist.
            type: The edge type: ``temporal``, ``semantic``, ``causal`` or ``entity``.
            weight: How strong the relation is, from 0 to 1.
            reason: Why they are related (up to 1,000 characters; optional).

        Returns:
            A :class:`MemoryReceipt` whose ``id`` is ``"<source_id>-><target_id>"``; only
            ``status="committed"`` means the edge was stored.

        Raises:
            InvalidInputError: a bad argument (an empty id, an unknown ``type``, a ``weight``
                outside 0..1) or no single target space.
            NotFoundError: there is no space ``space_id``, or (native ``mnemos`` provider)
                one of the two ids is not a stored memory of that space.
            ProviderError: the space's provider is not registered or cannot link.
            ParticipationError: the kernel refused Memory Spaces writes.
            ReadOnlyError: writes are switched off (``write_enabled=false``).
            StorageError: the local database refused the write.

        Example:
            >>> spaces.link(fact.id, decision.id, type="causal", weight=0.9).status
            'committed'
        """
        self.kernel.admit("memory_spaces", "write")
        src, dst, checked_weight, note = check_link(source_id, target_id, type, weight, reason)
        record = self._target(space_id, "link")
        provider = self._registry.capable(record, "link")
        request = LinkRequest(
            source_id=src, target_id=dst, type=type, weight=checked_weight, reason=note
        )

        def call() -> Any:
            return settle(provider.link(self._catalog.binding(record), request))

        return write_one(record, "link", call, self._activate, object_id=f"{src}->{dst}")

    alink = async_form(link)

    def forget(self, memory_id: str, *, space_id: str | None = None) -> MemoryReceipt:
        """Delete one memory by its exact id (soft or hard, as the provider declares).

        The kernel is asked first (Memory Spaces write). A forgotten memory no longer appears
        in search, browse or related.

        Args:
            memory_id: The memory's exact id (as a search or browse row shows it).
            space_id: The memory's space; without it exactly one active space must exist.

        Returns:
            A :class:`MemoryReceipt` whose ``id`` is ``memory_id``; only ``status="committed"``
            means it was deleted.

        Raises:
            InvalidInputError: an empty or too long ``memory_id``, or no single target space.
            NotFoundError: there is no space ``space_id``, or (native ``mnemos`` provider)
                no stored memory ``memory_id`` in it.
            ProviderError: the space's provider is not registered or cannot delete memories.
            ParticipationError: the kernel refused Memory Spaces writes.
            ReadOnlyError: writes are switched off (``write_enabled=false``).
            StorageError: the local database refused the write.

        Example:
            >>> spaces.forget(row.id, space_id="ops").status
            'committed'
        """
        self.kernel.admit("memory_spaces", "write")
        mid = check_text_arg(memory_id, "memory_id", limit=MAX_MEMORY_ID_CHARS)
        record = self._target(space_id, "forget")
        provider = self._registry.capable(record, "forget")
        if provider.descriptor.deletion_mode == "unsupported":
            raise ProviderError(
                f"provider {record.provider_id!r} cannot delete memories", code="unsupported"
            )

        def call() -> Any:
            return settle(provider.forget(self._catalog.binding(record), mid))

        return write_one(record, "forget", call, self._activate, object_id=mid)

    aforget = async_form(forget)

    # ------------------------------------------------------------------ history

    def _historian(self, record: SpaceRecord) -> HistoryProvider:
        """The space's provider when it keeps history (declares it and has the methods)."""
        # Not registered: ``capable`` raises its provider-disabled error.
        provider = self._registry.get(record.provider_id) or self._registry.capable(
            record, "history"
        )
        if not provider.descriptor.capabilities.history or not isinstance(
            provider, HistoryProvider
        ):
            raise ProviderError(
                f"Memory Space {record.id!r} ({record.provider_id}) keeps no history; "
                "choose a space whose provider keeps history (the native mnemos provider)",
                code="unsupported",
            )
        return provider

    def supersede(
        self,
        memory_id: str,
        content: str,
        *,
        space_id: str | None = None,
        category: str = "general",
        importance: int = 3,
        tags: Sequence[str] | None = None,
        entities: Sequence[str] | None = None,
        source: str = "agent",
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryReceipt:
        """Replace one memory with a new one, keeping the old one as superseded.

        The kernel is asked first (Memory Spaces write). In one transaction the new memory is
        stored (metadata ``supersedes``: the old id) and the old one leaves recall as
        :meth:`forget` takes it out, its metadata recording ``superseded_by`` (the new id) and
        ``superseded_at``. Default recall shows only the new one; :meth:`get`, :meth:`history`
        and ``browse(history=True)`` show both; :meth:`restore` undoes it.

        Args:
            memory_id: The exact id of the live memory replaced.
            content: The new memory (up to 65,536 characters).
            space_id: The space of both; without it exactly one active space must exist.
            category, importance, tags, entities, source: As for :meth:`remember`.
            metadata: Up to 31 scalar values (``supersedes`` is added; the history keys
                ``supersedes``, ``superseded_by``, ``superseded_at`` are refused).

        Returns:
            A :class:`MemoryReceipt` whose ``id`` is the NEW memory's id and whose
            ``provider_receipt`` is ``{"status": "superseded", "id": new, "replaced": old}``.

        Raises:
            InvalidInputError: a bad argument or no single target space.
            NotFoundError: no space ``space_id``, or no live memory ``memory_id`` in it
                (nothing was written).
            ProviderError: the space's provider keeps no history (code ``unsupported``) or
                is not registered.
            ParticipationError: the kernel refused Memory Spaces writes.
            ReadOnlyError: writes are switched off (``write_enabled=false``).
            StorageError: the local database refused the write.

        Example:
            >>> new = spaces.supersede(old.id, "Deploys need three approvals.")
            >>> spaces.get(old.id).status, spaces.get(old.id).superseded_by == new.id
            ('superseded', True)
        """
        self.kernel.admit("memory_spaces", "write")
        mid = check_text_arg(memory_id, "memory_id", limit=MAX_MEMORY_ID_CHARS)
        item = supersede_item(mid, content, category, importance, tags, entities, source, metadata)
        record = self._target(space_id, "supersede")
        provider = self._historian(record)

        def call() -> Any:
            return settle(provider.supersede(self._catalog.binding(record), mid, item))

        return write_one(record, "supersede", call, self._activate)

    asupersede = async_form(supersede)

    def restore(self, memory_id: str, *, space_id: str | None = None) -> MemoryReceipt:
        """Make a forgotten or superseded memory current again (the undo of :meth:`forget`
        and of a :meth:`supersede`'s retirement).

        The kernel is asked first (Memory Spaces write). The memory returns to the keyword
        index, the term statistics and (re-embedded) the vectors, so search finds it as
        before; ``superseded_by`` / ``superseded_at`` leave its metadata. The memory that
        superseded it stays current. A memory that is current already is a committed no-op
        (``changed=False``).

        Args:
            memory_id: The memory's exact id.
            space_id: Its space; without it exactly one active space must exist.

        Returns:
            A :class:`MemoryReceipt` whose ``id`` is ``memory_id``.

        Raises:
            InvalidInputError: an empty or too long ``memory_id``, or no single target space.
            NotFoundError: no space ``space_id``, or no memory ``memory_id`` in it.
            ConflictError: the memory is a keyed item whose key a current memory holds now.
            ProviderError: the space's provider keeps no history or is not registered.
            ParticipationError: the kernel refused Memory Spaces writes.
            ReadOnlyError: writes are switched off (``write_enabled=false``).
            StorageError: the local database refused the write.

        Example:
            >>> spaces.restore(old.id).status, spaces.get(old.id).status
            ('committed', 'current')
        """
        self.kernel.admit("memory_spaces", "write")
        mid = check_text_arg(memory_id, "memory_id", limit=MAX_MEMORY_ID_CHARS)
        record = self._target(space_id, "restore")
        provider = self._historian(record)

        def call() -> Any:
            return settle(provider.restore(self._catalog.binding(record), mid))

        return write_one(
            record, "restore", call, self._activate, object_id=mid, raises=(ConflictError,)
        )

    arestore = async_form(restore)

    def get(self, memory_id: str, *, space_id: str | None = None) -> MemoryRecord:
        """One memory by id, current or not (a management read: the kernel is not asked).

        Args:
            memory_id: The memory's exact id.
            space_id: Its space; without it exactly one active space must exist.

        Returns:
            The :class:`MemoryRecord` with ``status`` (``current``, ``superseded`` or
            ``forgotten``) and the ``supersedes`` / ``superseded_by`` links.

        Raises:
            InvalidInputError: an empty or too long ``memory_id``, or no single target space.
            NotFoundError: no space ``space_id``, or no memory ``memory_id`` in it.
            ProviderError: the space's provider keeps no history or is not registered.
            StorageError: the database cannot be read.

        Example:
            >>> spaces.get(old.id).status
            'superseded'
        """
        mid = check_text_arg(memory_id, "memory_id", limit=MAX_MEMORY_ID_CHARS)
        record = self._target(space_id, "get")
        provider = self._historian(record)
        return self._fetch(record, provider, mid)

    aget = async_form(get)

    def _fetch(
        self, record: SpaceRecord, provider: HistoryProvider, memory_id: str
    ) -> MemoryRecord:
        row = settle(provider.get(self._catalog.binding(record), memory_id))
        return decorate(record, row, self._registry)

    def history(self, memory_id: str, *, space_id: str | None = None) -> list[MemoryRecord]:
        """The chain of versions ``memory_id`` belongs to, oldest first, itself included.

        A management read (the kernel is not asked): it follows the ``supersedes`` links back
        and the ``superseded_by`` links forward, at most ``MAX_HISTORY_LINKS`` (100) links,
        and stops at a row it has seen (a cycle cannot loop) or one it cannot read.

        Args:
            memory_id: Any version's exact id.
            space_id: Its space; without it exactly one active space must exist.

        Returns:
            :class:`MemoryRecord` rows with ``status`` and links, oldest first.

        Raises:
            InvalidInputError: an empty or too long ``memory_id``, or no single target space.
            NotFoundError: no space ``space_id``, or no memory ``memory_id`` in it.
            ProviderError: the space's provider keeps no history or is not registered.
            StorageError: the database cannot be read.

        Example:
            >>> [(m.content, m.status) for m in spaces.history(new.id)]
            [('Deploys need two approvals.', 'superseded'), ('... three approvals.', 'current')]
        """
        mid = check_text_arg(memory_id, "memory_id", limit=MAX_MEMORY_ID_CHARS)
        record = self._target(space_id, "history")
        provider = self._historian(record)
        start = self._fetch(record, provider, mid)
        seen = {start.id}
        older = self._walk(record, provider, start, "supersedes", seen)
        newer = self._walk(record, provider, start, "superseded_by", seen)
        return [*reversed(older), start, *newer]

    ahistory = async_form(history)

    def _walk(
        self,
        record: SpaceRecord,
        provider: HistoryProvider,
        start: MemoryRecord,
        link: str,
        seen: set[str],
    ) -> list[MemoryRecord]:
        """Rows reached from ``start`` through ``link``, nearest first (bounded, acyclic)."""
        out: list[MemoryRecord] = []
        nxt = getattr(start, link)
        while nxt and nxt not in seen and len(seen) <= MAX_HISTORY_LINKS:
            seen.add(nxt)
            try:
                row = self._fetch(record, provider, nxt)
            except NotFoundError:  # a link to a row removed for good ends the chain
                break
            out.append(row)
            nxt = getattr(row, link)
        return out

    # ------------------------------------------------------------------ reads of one space

    def related(
        self,
        memory_id: str,
        *,
        space_id: str | None = None,
        depth: int = 2,
        edge: str | None = None,
        limit: int = 20,
    ) -> RelatedResult:
        """Memories reachable from ``memory_id`` within ``depth`` (1-5) edges (Memory Spaces
        recall: the kernel is asked first).

        Edges are followed in both directions; the start memory itself is not a result.

        Args:
            memory_id: The id of the memory to start from.
            space_id: Its space; without it exactly one active space must exist.
            depth: How many edges away to look (1-5).
            edge: Follow only edges of this type (temporal, semantic, causal, entity);
                ``None`` follows every type.
            limit: At most this many memories (1-100).

        Returns:
            A :class:`RelatedResult`: the start ``id``, its ``space_id``, and ``results``
            (the reachable memories as :class:`MemoryRecord` rows, nearest first; a store
            item as its text, as in :meth:`asearch`).

        Raises:
            InvalidInputError: a bad argument (an empty ``memory_id``, ``depth`` or ``limit``
                out of range, an unknown ``edge``) or no single target space.
            NotFoundError: there is no space ``space_id``, or (native ``mnemos`` provider)
                no stored memory ``memory_id`` in it.
            ProviderError: the space's provider is not registered or cannot follow edges.
            ParticipationError: the kernel refused Memory Spaces recall.
            StorageError: the catalog cannot be read.

        Example:
            >>> [r.content for r in spaces.related(fact.id, depth=1).results]
            ['Deploys need two approvals.']
        """
        self.kernel.admit("memory_spaces", "recall")
        mid = check_text_arg(memory_id, "memory_id", limit=MAX_MEMORY_ID_CHARS)
        check_int(depth, "depth", 1, 5)
        check_int(limit, "limit", 1, 100)
        check_choice(edge, "edge", EDGE_TYPES, optional=True)
        record = self._target(space_id, "related")
        provider = self._registry.capable(record, "related")
        rows = settle(
            provider.related(
                self._catalog.binding(record),
                RelatedRequest(id=mid, depth=depth, edge=edge, limit=limit),
            )
        )
        found = [as_recalled(decorate(record, r, self._registry)) for r in rows[:limit]]
        return RelatedResult(id=mid, space_id=record.id, depth=depth, edge=edge, results=found)

    arelated = async_form(related)

    def browse(
        self,
        space_id: str | None = None,
        *,
        limit: int = 50,
        offset: int = 0,
        category: str | None = None,
        history: bool = False,
    ) -> list[MemoryRecord]:
        """Stored memories of one space, newest first.

        A management read (what ``mnemon spaces browse`` shows): the kernel is not asked.
        Only current memories, unless ``history``.

        Args:
            space_id: The space; without it exactly one active space must exist.
            limit: At most this many memories (1-500).
            offset: Skip this many of the newest first (0-10,000,000), to page.
            category: Only memories of this category (preference, decision, fact, insight,
                context, general).
            history: Also list superseded memories (``status="superseded"``) on a provider
                that keeps history; forgotten ones stay hidden.

        Returns:
            The memories as :class:`MemoryRecord` rows, newest first (empty past the last one).

        Raises:
            InvalidInputError: ``limit`` or ``offset`` is out of range, ``category`` is not
                one of the categories, or there is no single target space.
            NotFoundError: there is no space ``space_id``.
            ProviderError: the space's provider is not registered or cannot browse.
            StorageError: the catalog cannot be read.

        Example:
            >>> [m.content for m in spaces.browse("ops", limit=2)]
            ['Deploys need two approvals.', 'Staging is db-stage-2.']
        """
        check_int(limit, "limit", 1, 500)
        check_int(offset, "offset", 0, MAX_BROWSE_OFFSET)
        check_choice(category, "category", CATEGORIES, optional=True)
        record = self._target(space_id, "browse")
        provider = self._registry.capable(record, "browse")
        rows = settle(
            provider.browse(
                self._catalog.binding(record),
                BrowseRequest(
                    limit=limit,
                    offset=offset,
                    category=category,
                    # Only a provider that keeps history has superseded rows to add.
                    history=bool(history) and provider.descriptor.capabilities.history,
                ),
            )
        )
        return [decorate(record, r, self._registry) for r in rows]

    abrowse = async_form(browse)

    def graph(self, space_id: str | None = None, *, limit: int = 200) -> GraphProjection:
        """Nodes and typed edges of one space (at most ``limit`` nodes)."""
        check_int(limit, "limit", 1, 5000)
        record = self._target(space_id, "graph")
        provider = self._registry.capable(record, "graph")
        return settle(provider.graph(self._catalog.binding(record), limit))

    agraph = async_form(graph)

    def entities(self, space_id: str | None = None, *, limit: int = 100) -> list[EntityCount]:
        """The entity index of one space: entity names of its stored memories, most used first.

        Counts how many of the newest ``MAX_ENTITY_SCAN_ROWS`` browsed memories name each
        entity; ties are ordered by name. At most ``limit`` (1-1000) names are returned.
        """
        check_int(limit, "limit", 1, 1000)
        counts: dict[str, int] = {}
        for offset in range(0, MAX_ENTITY_SCAN_ROWS, _ENTITY_PAGE):
            rows = self.browse(space_id, limit=_ENTITY_PAGE, offset=offset)
            for row in rows:
                for name in dict.fromkeys(e.strip() for e in row.entities if e.strip()):
                    counts[name] = counts.get(name, 0) + 1
            if len(rows) < _ENTITY_PAGE:
                break
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return [EntityCount(name=name, count=count) for name, count in ranked[:limit]]

    aentities = async_form(entities)

    # ------------------------------------------------------------------ status and health

    def status(self, *, probe: bool = True) -> SpacesStatus:
        """Catalog counts and, with ``probe``, every space's provider status (concurrently)."""
        records = self.list_spaces()
        return status_report(
            records,
            self.providers,
            self._catalog.binding,
            self._calls,
            probe=probe,
            timeout=self._timeout,
            places=[str(self._root)],
        )

    astatus = async_form(status)

    def health(self, *, max_age: float = 5.0) -> SpacesHealth:
        """Each provider's real state and each catalog space's reachability (a management
        read: the kernel is not asked, and it never raises for a provider or the catalog).

        One status call per registered provider, concurrently, bounded by ``min(timeout_ms,
        2 s)`` and cached ``max_age`` seconds; see :mod:`._health`.

        Example:
            >>> report = mem.spaces.health()
            >>> report.unreachable, [p.state for p in report.providers]
            ([], ['healthy'])
        """
        if isinstance(max_age, bool) or not isinstance(max_age, (int, float)):
            raise InvalidInputError("max_age must be a number of seconds (0 = probe now)")
        error, records = None, []
        try:
            records = self._catalog.list_spaces()
        except MnemonError as exc:  # the database is down: say so, still probe the providers
            error = redact(exc.message, places=[str(self._root)])

        def binding(provider_id: str) -> SpaceBinding:
            for record in records:  # the first space it may use (a refused one reads nothing)
                if record.provider_id == provider_id and record.id not in refused:
                    return self._catalog.binding(record)
            return PROBE_BINDING

        refused = self._refused_locations(records)
        report = assess(
            self.providers,
            [(r.id, r.provider_id) for r in records],
            binding,
            self._health,
            self._calls,
            timeout=min(self._timeout, HEALTH_TIMEOUT_SECONDS),
            max_age=max(0.0, float(max_age)),
            places=[str(self._root)],
            catalog_error=error,
        )
        return refused_spaces(report, refused)

    def _refused_locations(self, records: Sequence[SpaceRecord]) -> dict[str, str]:
        """The spaces whose stored location is refused on use, with why (no I/O)."""
        refused = {}
        for record in records:
            try:
                self._catalog.check_use(record)
            except AuthorityError as exc:
                refused[record.id] = redact(exc.message, places=[str(self._root)])
        return refused

    ahealth = async_form(health)

    # ------------------------------------------------------------------ connection tests

    def test_connection(
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
            >>> result = mem.spaces.test_connection("http", config={"endpoint": url},
            ...                                            secrets={"api_key": key})
            >>> result.ok, result.latency_ms
            (True, 12.5)
        """
        provider = self._registry.require(provider_id)
        settings = config if isinstance(config, Mapping) else None
        admit_outbound(provider, settings, admin=self._catalog.admin, what="testing")
        places = [str(self._root)]
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
        return self._probe(provider_id, provider, binding, None)

    atest_connection = async_form(test_connection)

    def test_space(self, space_id: str) -> ConnectionTest:
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
            >>> mem.spaces.test_space("ops").healthy
            True
        """
        record = self._catalog.get_space(space_id)
        provider = self._registry.get(record.provider_id)
        if provider is None:
            message = f"provider {record.provider_id!r} is not registered in this process"
            return _answer(record.provider_id, None, record.id, error=message)
        admit_outbound(provider, record.config, admin=self._catalog.admin, what="testing")
        try:
            binding = self._catalog.binding(record)
        except SecretKeyError as exc:  # its secrets do not open with the configured key
            return _answer(record.provider_id, provider, record.id, error=exc.message)
        try:
            split_config(provider, binding.config, binding.secrets)
        except MnemonError as exc:
            masked = list(binding.secrets.values())
            error = redact(exc.message, masked, [str(self._root)])
            return _answer(record.provider_id, provider, record.id, error=error)
        return self._probe(record.provider_id, provider, binding, record.id)

    atest_space = async_form(test_space)

    def _probe(
        self,
        provider_id: str,
        provider: MemoryProvider,
        binding: SpaceBinding,
        space_id: str | None,
    ) -> ConnectionTest:
        """One bounded status call, timed; never raises for the provider's failure."""
        masked = [*binding.secrets.values(), *provider_secrets(provider)]
        places = [str(self._root)]
        started = time.perf_counter()
        status: ProviderStatus | None = None
        error: str | None = None
        try:
            # On the pool even alone: a provider that hangs must not hold its caller.
            answer = self._calls.run(
                [lambda: provider.status(binding)], self._timeout, inline=False
            )
            if isinstance(answer[0], BaseException):
                raise answer[0]
            status = answer[0]
        except TimeoutError:
            error = f"the status call gave no answer within {int(self._timeout * 1000)} ms"
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

    def disconnect_space(self, space_id: str, *, confirm: str) -> SpaceReceipt:
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
            >>> mem.spaces.disconnect_space("team-notes", confirm="team-notes").status
            'committed'
        """
        self.kernel.admit("memory_spaces", "maintenance")
        record = self._catalog.get_space(space_id)
        if record.provider_id == NATIVE_PROVIDER_ID:
            raise InvalidInputError(
                f"Memory Space {record.id!r} is native ({NATIVE_PROVIDER_ID}): disconnecting "
                "would leave its rows behind in this database; remove it instead "
                f"(spaces.remove_space({record.id!r}, confirm={record.id!r}))",
                code="disconnect-native",
            )
        check_confirm(record.id, confirm, "disconnect")
        self._catalog.delete_entry(record)
        self._health.clear()
        return SpaceReceipt(
            status="committed",
            message=f"Memory Space {record.name!r} disconnected (id {record.id!r}); the data in "
            f"provider {record.provider_id!r} was not touched.",
            changed=True,
            revision=str(record.revision),
            space=record,
        )

    adisconnect_space = async_form(disconnect_space)

    def remove_space(self, space_id: str, *, confirm: str) -> SpaceReceipt:
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
            >>> mem.spaces.remove_space("scratch", confirm="scratch").provider_receipt
            {'status': 'removed', 'id': 'scratch', 'removed': 3, 'live': 2}
        """
        self.kernel.admit("memory_spaces", "maintenance")
        record = self._catalog.get_space(space_id)
        if record.provider_id != NATIVE_PROVIDER_ID:
            raise InvalidInputError(
                f"Memory Space {record.id!r} lives in provider {record.provider_id!r}: use "
                "disconnect (provider data is never deleted from here): "
                f"spaces.disconnect_space({record.id!r}, confirm={record.id!r})",
                code="remove-third-party",
            )
        check_confirm(record.id, confirm, "remove")
        raw = self._delete_rows(record)
        self._catalog.delete_entry(record)
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

    aremove_space = async_form(remove_space)

    def _delete_rows(self, record: SpaceRecord) -> dict[str, Any]:
        provider = self._registry.get(record.provider_id)
        # ``remove_space`` in the sync contract; ``aremove_space`` is an older async provider's.
        remove = getattr(provider, "remove_space", None) or getattr(provider, "aremove_space", None)
        if provider is None or not callable(remove):
            raise ProviderError(
                f"Memory Space {record.id!r} cannot be removed: its provider "
                f"{record.provider_id!r} is not registered in this process (or cannot delete "
                "a space); nothing was deleted",
                code="provider-disabled",
            )
        raw = settle(remove(self._catalog.binding(record)))
        if not is_committed(raw):
            raise ProviderError(
                f"the native provider did not confirm deleting the rows of {record.id!r}; the "
                "space is kept, retry the removal",
                code="remove-failed",
            )
        return raw if isinstance(raw, dict) else {}


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


def durable_copy(
    spaces: MemorySpaces, space_id: str, content: str, receipt: MemoryReceipt
) -> str | None:
    """The memory id proving ``content`` is stored in ``space_id``, or None.

    A committed receipt proves it; a skipped one (the provider saw a duplicate) only when an
    exact keyword recall in that space returns the very same text.
    """
    if receipt.status == "committed" and receipt.id:
        return receipt.id
    if receipt.status != "skipped":
        return None
    try:
        found = spaces.search(content[:2000], mode="keyword", space_ids=[space_id], limit=10)
    except MnemonError:
        return None
    return next((row.id for row in found.results if row.content == content), None)
