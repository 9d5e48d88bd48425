"""Memory Spaces (tier 3): the catalog and federated recall over provider-backed spaces.

A *Memory Space* is a named store (id, name, description, provider id, active flag, provider
configuration) kept in the ``mnemon_spaces`` table of the shared SQL database; its provider
secrets (API keys, tokens) are kept beside it in ``mnemon_space_secrets``, encrypted when
``secret_key`` is set, and no read API returns them (:mod:`._catalog`, :mod:`._secret_store`,
:mod:`._secrets`). :meth:`MemorySpaces.search` is federated over every readable space
(:mod:`._search`); writes go to one space and return receipts (:mod:`._writes`).

Each space has an owner; :meth:`MemorySpaces.for_scope` gives one scope's view (:mod:`._views`).
The catalog methods live in :mod:`._service_catalog`; listing providers, connection tests,
Disconnect and Remove in :mod:`._connections` (mixins of this class).

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

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langgraph_mnemon.errors import AuthorityError, InvalidInputError, MnemonError, ProviderError
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.memory_layers.spaces._catalog import SpaceCatalog
from langgraph_mnemon.memory_layers.spaces._connections import SpaceConnections
from langgraph_mnemon.memory_layers.spaces._fanout import ProviderCalls
from langgraph_mnemon.memory_layers.spaces._fusion import QualitySettings
from langgraph_mnemon.memory_layers.spaces._health import (
    HEALTH_TIMEOUT_SECONDS,
    PROBE_BINDING,
    HealthCache,
    SpacesHealth,
    assess,
    redact,
    refused_spaces,
    status_report,
)
from langgraph_mnemon.memory_layers.spaces._item_text import as_recalled, recalled
from langgraph_mnemon.memory_layers.spaces._locations import StorageRules
from langgraph_mnemon.memory_layers.spaces._models import (
    CATEGORIES,
    EDGE_TYPES,
    BrowseRequest,
    GraphProjection,
    LinkRequest,
    MemoryProvider,
    MemoryReceipt,
    MemoryRecord,
    RelatedRequest,
    RememberItem,
    SpaceBinding,
    settle,
)
from langgraph_mnemon.memory_layers.spaces._records import (
    EntityCount,
    RecallResult,
    RelatedResult,
    SpaceRecord,
    SpacesStatus,
)
from langgraph_mnemon.memory_layers.spaces._registry import ProviderRegistry
from langgraph_mnemon.memory_layers.spaces._search import FederatedSearch, decorate
from langgraph_mnemon.memory_layers.spaces._secret_store import SecretStore
from langgraph_mnemon.memory_layers.spaces._service_catalog import CatalogMethods
from langgraph_mnemon.memory_layers.spaces._validation import (
    MAX_BROWSE_OFFSET,
    MAX_ENTITY_SCAN_ROWS,
    MAX_MEMORY_ID_CHARS,
    NATIVE_PROVIDER_ID,
    check_choice,
    check_int,
    check_link,
    check_policy,
    check_search,
    check_text_arg,
    remember_item,
    remember_items,
)
from langgraph_mnemon.memory_layers.spaces._views import ScopeViews
from langgraph_mnemon.memory_layers.spaces._writes import write_many, write_one
from langgraph_mnemon.storage.db import Database
from langgraph_mnemon.storage.secret_box import SecretBox

__all__ = ["MemorySpaces"]

_ENTITY_PAGE = 500


class MemorySpaces(CatalogMethods, SpaceConnections, ScopeViews):
    """Memory Space catalog and federated recall (``Mnemon.spaces``).

    A space whose provider is not registered stays in the catalog and reports
    ``provider-disabled``. Every recall and write asks the kernel first; a refusal reaches no
    provider.

    Args:
        database: The shared SQL database (``Database(create_engine(url))``).
        root: The storage root (an old ``state/space-secrets.json`` there is adopted into the
            database on open).
        providers: :class:`MemoryProvider` objects, keyed by their descriptor id.
        quality: Thresholds of the recall quality policies.
        policy: The recall quality policy id (``strict-v1``, ``balanced-v1``, ...).
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
        self.root = Path(root).expanduser().absolute()
        self.quality = quality or QualitySettings()
        self.policy = policy
        self.candidate_multiplier = float(candidate_multiplier)
        self.default_limit = check_int(default_limit, "default_limit", 1, 50)
        self.timeout = check_int(timeout_ms, "timeout_ms", 100, 120_000) / 1000.0
        # Every operation asks the kernel; a layer built alone gets one of its own.
        self.kernel = kernel or Kernel.standalone(write_enabled=bool(write_enabled))
        self._registry = ProviderRegistry()
        self._secrets = SecretStore(
            database, secret_box or SecretBox(), self.root, lock_timeout, clock
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
        self._root = self  # a scope's view keeps the service it was made from
        self._every: MemorySpaces | None = None
        for provider in providers:
            self.register_provider(provider)

    def __repr__(self) -> str:
        seen = "" if self.owners.local else f", owners={sorted(self.owners.keys or ())}"
        return f"MemorySpaces(database={self.db.url!r}, providers={sorted(self.providers)}{seen})"

    @property
    def write_enabled(self) -> bool:
        """Whether writes are on (the kernel's ``write_enabled``)."""
        return self.kernel.write_enabled

    @property
    def default_provider_id(self) -> str:
        """The provider of a new space when none is named."""
        return self._catalog.default_provider_id

    @property
    def local_only(self) -> bool:
        """Whether only providers whose data stays on this machine are accepted."""
        return self._catalog.local_only

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

    def close(self) -> None:
        """Close providers and the fan-out pool (a scope's view closes nothing: the service
        owns them)."""
        if self._root is not self:
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
        return StorageRules(self.root, tuple(Path(folder) for folder in folders))

    def _binding(self, record: SpaceRecord) -> SpaceBinding:
        """What a provider receives about ``record`` (secrets included, never serialised)."""
        return self._catalog.binding(record)

    def _activate(self, space_id: str) -> bool:
        return self._catalog.activate(space_id)

    def _target(self, space_id: str | None, operation: str) -> SpaceRecord:
        return self._catalog.target(space_id, operation)

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
        """Search the readable spaces concurrently and return fused, quality-selected rows.

        The kernel is asked first (Memory Spaces recall): a refusal reaches no provider. A
        provider that fails or times out becomes a per-space hint (``sources``), never an error.
        A store item (a row the ``BaseStore`` facade wrote) comes back as its text (item_text).

        Args:
            query: Up to 2,000 characters.
            limit: At most this many rows (1-50; default ``default_limit``).
            mode: ``smart`` (with coverage recovery), ``keyword`` or ``basic``.
            space_ids: Only these spaces, active or not; default: the active ones with a provider.
            category: Only rows of this category (``fact``, ``decision``, ... ``CATEGORIES``).
            source: Only rows from this source (user, agent, external).
            intent: The question's intent (WHY, WHEN, ENTITY, GENERAL), handed to providers.
            policy: A quality policy id for this call instead of the configured one.
            verbatim: Keep every row's content as stored (a store item's JSON text: what the
                ``BaseStore`` facade decodes back into the value).

        Returns:
            A :class:`RecallResult`: ``results`` best first, one ``sources`` report per space.

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
            policy_id=self.policy if policy is None else policy,
            default_limit=self.default_limit,
        )
        records = self._catalog.readable(space_ids)
        found = self._federated().run(args, records)
        return found if verbatim else recalled(found)

    async def asearch(
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
        """Async form of :meth:`search`: the same call, run in a worker thread."""
        return await asyncio.to_thread(
            self.search,
            query,
            limit=limit,
            mode=mode,
            space_ids=space_ids,
            category=category,
            source=source,
            intent=intent,
            policy=policy,
            verbatim=verbatim,
        )

    def _federated(self) -> FederatedSearch:
        return FederatedSearch(
            self._registry,
            self._catalog.binding,
            self._calls,
            self.quality,
            self.candidate_multiplier,
            self.timeout,
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

    async def aremember(
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
        """Async form of :meth:`remember`: the same call, run in a worker thread."""
        return await asyncio.to_thread(
            self.remember,
            content,
            space_id=space_id,
            category=category,
            importance=importance,
            tags=tags,
            entities=entities,
            source=source,
            metadata=metadata,
        )

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

    async def aremember_many(
        self, items: Sequence[Mapping[str, Any]], *, space_id: str | None = None
    ) -> list[MemoryReceipt]:
        """Async form of :meth:`remember_many`: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.remember_many, items, space_id=space_id)

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

    async def alink(
        self,
        source_id: str,
        target_id: str,
        *,
        space_id: str | None = None,
        type: str = "semantic",
        weight: float = 0.5,
        reason: str | None = None,
    ) -> MemoryReceipt:
        """Async form of :meth:`link`: the same call, run in a worker thread."""
        return await asyncio.to_thread(
            self.link,
            source_id,
            target_id,
            space_id=space_id,
            type=type,
            weight=weight,
            reason=reason,
        )

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

    async def aforget(self, memory_id: str, *, space_id: str | None = None) -> MemoryReceipt:
        """Async form of :meth:`forget`: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.forget, memory_id, space_id=space_id)

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

    async def arelated(
        self,
        memory_id: str,
        *,
        space_id: str | None = None,
        depth: int = 2,
        edge: str | None = None,
        limit: int = 20,
    ) -> RelatedResult:
        """Async form of :meth:`related`: the same call, run in a worker thread."""
        return await asyncio.to_thread(
            self.related, memory_id, space_id=space_id, depth=depth, edge=edge, limit=limit
        )

    def browse(
        self,
        space_id: str | None = None,
        *,
        limit: int = 50,
        offset: int = 0,
        category: str | None = None,
    ) -> list[MemoryRecord]:
        """Stored memories of one space, newest first.

        A management read (what ``mnemon spaces browse`` shows): the kernel is not asked.

        Args:
            space_id: The space; without it exactly one active space must exist.
            limit: At most this many memories (1-500).
            offset: Skip this many of the newest first (0-10,000,000), to page.
            category: Only memories of this category (preference, decision, fact, insight,
                context, general).

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
                BrowseRequest(limit=limit, offset=offset, category=category),
            )
        )
        return [decorate(record, r, self._registry) for r in rows]

    async def abrowse(
        self,
        space_id: str | None = None,
        *,
        limit: int = 50,
        offset: int = 0,
        category: str | None = None,
    ) -> list[MemoryRecord]:
        """Async form of :meth:`browse`: the same call, run in a worker thread."""
        return await asyncio.to_thread(
            self.browse, space_id, limit=limit, offset=offset, category=category
        )

    def graph(self, space_id: str | None = None, *, limit: int = 200) -> GraphProjection:
        """Nodes and typed edges of one space (at most ``limit`` nodes)."""
        check_int(limit, "limit", 1, 5000)
        record = self._target(space_id, "graph")
        provider = self._registry.capable(record, "graph")
        return settle(provider.graph(self._catalog.binding(record), limit))

    async def agraph(self, space_id: str | None = None, *, limit: int = 200) -> GraphProjection:
        """Async form of :meth:`graph`: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.graph, space_id, limit=limit)

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

    async def aentities(
        self, space_id: str | None = None, *, limit: int = 100
    ) -> list[EntityCount]:
        """Async form of :meth:`entities`: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.entities, space_id, limit=limit)

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
            timeout=self.timeout,
            places=[str(self.root)],
        )

    async def astatus(self, *, probe: bool = True) -> SpacesStatus:
        """Async form of :meth:`status`: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.status, probe=probe)

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
            error = redact(exc.message, places=[str(self.root)])

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
            timeout=min(self.timeout, HEALTH_TIMEOUT_SECONDS),
            max_age=max(0.0, float(max_age)),
            places=[str(self.root)],
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
                refused[record.id] = redact(exc.message, places=[str(self.root)])
        return refused

    async def ahealth(self, *, max_age: float = 5.0) -> SpacesHealth:
        """Async form of :meth:`health`: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.health, max_age=max_age)
