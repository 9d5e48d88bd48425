"""Keyed items: rows of a Memory Space addressed by a key (the ``BaseStore`` facade's items).

A provider that can address rows by key (the native ``mnemos`` provider: an indexed, unique
``store_key`` column over live rows) implements :class:`KeyedProvider`; :class:`KeyedItems` is
the Memory Spaces layer's entry to it. Like every layer operation, a write asks the kernel
first (Memory Spaces *write*), validates every item before anything is written and returns one
:class:`MemoryReceipt` per write (a committed write activates its space); reads by key, pages
and the live-space check are management reads (the kernel is not asked, like ``browse``);
scoring rows for a query is part of a recall (the kernel is asked, Memory Spaces *recall*).

A keyed write may carry a time to live (``KeyedWrite.ttl``, minutes): the row then expires
``ttl`` minutes after it was written or last refreshed (:meth:`KeyedItems.refresh`). An expired
row is gone for every read at once (keyed reads, pages, the live-space check, recall and
browse) and is soft-deleted by :meth:`KeyedItems.sweep`.

Everything here is sync and blocking (one transaction per call on the provider's sync
engine): the facade calls it directly from a sync call and through ``asyncio.to_thread`` from
an async one, so both paths share this code and no call hops through an event loop.

Example:
    >>> keyed = mem.spaces.keyed
    >>> record = mem.spaces.get_space("notes")
    >>> keyed.write([(record, [KeyedWrite("k1", {"content": '{"x": 1}'})])])[0][0].status
    'committed'
    >>> keyed.get(record, "k1").content
    '{"x": 1}'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

import sqlalchemy as sa

from langgraph_mnemon.contracts import shown
from langgraph_mnemon.errors import InvalidInputError, NotFoundError, ProviderError
from langgraph_mnemon.memory_layers.spaces._models import (
    Embedder,
    MemoryReceipt,
    RememberItem,
    SpaceBinding,
    is_committed,
)
from langgraph_mnemon.memory_layers.spaces._validation import MAX_BATCH, remember_items
from langgraph_mnemon.memory_layers.spaces._writes import NOT_PROVIDER_FAILURES, failed
from langgraph_mnemon.memory_layers.spaces.schema import MIGRATIONS, SPACES

if TYPE_CHECKING:
    from langgraph_mnemon.memory_layers.kernel import Kernel
    from langgraph_mnemon.memory_layers.spaces._catalog import SpaceCatalog
    from langgraph_mnemon.memory_layers.spaces._records import SpaceRecord
    from langgraph_mnemon.memory_layers.spaces._registry import ProviderRegistry

__all__ = [
    "MAX_TTL_MINUTES",
    "KeyedItems",
    "KeyedProvider",
    "KeyedPut",
    "KeyedRow",
    "KeyedWrite",
    "StaleSpace",
    "check_minutes",
]

# What any change of the catalog moves: a create or a delete changes the count, every update
# bumps its row's revision and stamps updated_at (one aggregate over a small table).
_CATALOG_REVISION = sa.select(
    sa.func.count(),
    sa.func.coalesce(sa.func.sum(SPACES.c.revision), 0),
    sa.func.max(SPACES.c.updated_at),
    sa.func.max(SPACES.c.created_at),
)


# Longer than any deployment lives (and far from overflowing a float of UNIX seconds).
MAX_TTL_MINUTES = 100 * 366 * 24 * 60


def check_minutes(value: Any, name: str) -> float | None:
    """A time to live (or an interval) in minutes: None, or a positive finite number up to
    :data:`MAX_TTL_MINUTES` (about a century).

    Args:
        value: The minutes given.
        name: What the error message calls it (``"ttl"``, ``"default_ttl"`` ...).

    Returns:
        The minutes as a float, or None.

    Raises:
        InvalidInputError: ``value`` is not None or a number in that range.

    Example:
        >>> check_minutes(0.5, "ttl")
        0.5
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(
            f"{name} must be a number of minutes or None (got {shown(value)}), e.g. 60 for an hour"
        )
    try:
        minutes = float(value)
    except OverflowError:  # an int too large for a float
        minutes = math.inf
    if not math.isfinite(minutes) or minutes <= 0 or minutes > MAX_TTL_MINUTES:
        raise InvalidInputError(
            f"{name} must be more than 0 and at most {MAX_TTL_MINUTES} minutes "
            f"(got {shown(value)}); use None for no expiry"
        )
    return minutes


class StaleSpace(Exception):
    """A keyed write found, inside its transaction, that a space it was given is gone or
    renamed since the caller resolved it (nothing was written). The caller re-reads those
    spaces from the catalog and writes again.

    Args:
        space_ids: The spaces that no longer match.
    """

    def __init__(self, space_ids: Sequence[str]) -> None:
        super().__init__(", ".join(space_ids))
        self.space_ids = list(space_ids)


@dataclass(frozen=True, slots=True)
class KeyedWrite:
    """One write of a keyed item: ``item`` (a remember mapping: ``content`` plus optional
    fields) stored under ``key``, or ``None`` to delete the key. ``text`` is what the row is
    keyword-indexed and embedded by (``None``: its content; ``""``: nothing); ``ttl``
    (minutes, or None for never) is the item's time to live."""

    key: str
    item: Mapping[str, Any] | None
    text: str | None = None
    ttl: float | None = None


class KeyedPut(NamedTuple):
    """One checked keyed write as a provider gets it."""

    key: str
    item: RememberItem | None
    text: str | None = None
    """What the row is keyword-indexed and embedded by (None: its content; "": nothing)."""
    ttl: float | None = None
    """Time to live in minutes (None: never expires)."""


@dataclass(frozen=True, slots=True)
class KeyedRow:
    """One live row as a keyed read returns it. ``key`` is ``None`` for a row written by
    another path (it is addressed by its memory id ``id``)."""

    key: str | None
    id: str
    seq: int
    space_id: str
    content: str
    created_at: float
    category: str = "general"
    importance: int = 3
    tags: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    source: str = "external"
    metadata: dict[str, Any] = field(default_factory=dict)
    expires_at: float | None = None  # UNIX seconds; None: never expires
    ttl_minutes: float | None = None


@runtime_checkable
class KeyedProvider(Protocol):
    """The optional keyed part of the provider contract: rows addressed by a key (blocking
    calls, one transaction each). The native ``mnemos`` provider implements it; the store
    facade needs it (``mem.spaces.keyed`` is the layer's entry to it)."""

    def keyed_get(self, space: SpaceBinding, key: str) -> KeyedRow | None:
        """The live row of ``key`` (or, for a memory-id key, that unkeyed row)."""
        ...

    def keyed_write(
        self, writes: Sequence[tuple[SpaceBinding, Sequence[KeyedPut]]]
    ) -> list[list[dict[str, Any]]]:
        """Apply every write ``(key, item or None, index text or None)`` in one transaction;
        one raw receipt per write."""
        ...

    def keyed_rank(
        self, spaces: Sequence[SpaceBinding], query: str
    ) -> list[tuple[int, float, float]]:
        """Every live row of the spaces as ``(seq, relevance 0..1, raw similarity)`` for
        ``query``, best first."""
        ...

    def keyed_rows(self, seqs: Sequence[int]) -> list[KeyedRow]:
        """The live rows among ``seqs``, in that order."""
        ...

    def use_embedder(self, space_id: str, embedder: Embedder) -> None:
        """Embed one space's rows and queries with ``embedder`` in this process."""
        ...

    def keyed_page(self, space_ids: Sequence[str], limit: int, offset: int) -> list[KeyedRow]:
        """Live rows of the spaces, newest written first."""
        ...

    def keyed_live_spaces(self, space_ids: Sequence[str]) -> set[str]:
        """Which of ``space_ids`` hold at least one live row (one statement)."""
        ...

    def keyed_refresh(self, ids: Sequence[str]) -> int:
        """Restart the time to live of the live, unexpired rows among ``ids`` that have one;
        how many were refreshed."""
        ...

    def keyed_sweep(self) -> int:
        """Soft-delete every expired live row of the provider; how many were deleted."""
        ...


class KeyedItems:
    """The Memory Spaces layer's keyed-items entry over one view of the spaces.

    Reach it as ``mem.spaces.keyed`` (each scope's view has its own).

    Args:
        catalog: The catalog of the view (its owners decide which spaces it sees).
        registry: The registered providers.
        kernel: The kernel every write, recall and sweep asks first.
    """

    def __init__(self, catalog: SpaceCatalog, registry: ProviderRegistry, kernel: Kernel) -> None:
        self.catalog_view = catalog
        self._registry = registry
        self._kernel = kernel
        # Per view: the keyed provider of each provider id (a Protocol isinstance check costs
        # more than the indexed get itself) and the bindings of secret-free spaces by revision.
        self._providers: dict[str, KeyedProvider] = {}
        self._bindings: dict[tuple[str, int], SpaceBinding] = {}

    def provider(self, record: SpaceRecord) -> KeyedProvider:
        """The keyed provider of ``record``'s space.

        Raises:
            ProviderError: the space's provider is not registered or has no keyed items.
        """
        known = self._providers.get(record.provider_id)
        if known is not None:
            return known
        provider = self._registry.capable(record, "remember")
        if not isinstance(provider, KeyedProvider):
            raise ProviderError(
                f"provider {record.provider_id!r} of Memory Space {record.id!r} cannot address "
                "items by key; use a space of the native 'mnemos' provider",
                code="unsupported",
            )
        self._providers[record.provider_id] = provider
        return provider

    def space(self, space_id: str) -> SpaceRecord | None:
        """One space of this view by id, or None (a catalog read; the kernel is not asked)."""
        try:
            return self.catalog_view.get_space(space_id)
        except NotFoundError:
            return None

    def catalog_revision(self) -> tuple[Any, ...] | None:
        """A fingerprint of the whole catalog that every create, update or delete changes
        (in any process): what the facade keys its decoded catalog by. None before any write.

        Example:
            >>> mem.spaces.keyed.catalog_revision()
            (3, 5, 1718000000.1, 1717999990.0)
        """
        db = self.catalog_view.db
        if not db.ready_for_read(MIGRATIONS):
            return None
        with db.read() as conn:
            return tuple(conn.execute(_CATALOG_REVISION).one())

    def catalog(self) -> list[SpaceRecord]:
        """Every space of this view, oldest first (a catalog read)."""
        return self.catalog_view.list_spaces()

    def _binding(self, record: SpaceRecord) -> SpaceBinding:
        if record.secrets_configured:  # secrets live in a file another process may change
            return self.catalog_view.binding(record)
        cache_key = (record.id, record.revision)
        bound = self._bindings.get(cache_key)
        if bound is None:
            if len(self._bindings) > 4096:
                self._bindings.clear()
            bound = self._bindings[cache_key] = self.catalog_view.binding(record)
        return bound

    def get(self, record: SpaceRecord, key: str) -> KeyedRow | None:
        """The live row of ``key`` in ``record``'s space (a management read), or None."""
        return self.provider(record).keyed_get(self._binding(record), key)

    def page(self, records: Sequence[SpaceRecord], limit: int, offset: int) -> list[KeyedRow]:
        """Up to ``limit`` live rows of the spaces after ``offset``, newest written first."""
        if not records:
            return []
        return self.provider(records[0]).keyed_page([r.id for r in records], limit, offset)

    def live(self, records: Sequence[SpaceRecord]) -> set[str]:
        """The ids of the spaces among ``records`` that hold at least one live row."""
        if not records:
            return set()
        return self.provider(records[0]).keyed_live_spaces([r.id for r in records])

    def use_embedder(self, record: SpaceRecord, embedder: Embedder) -> None:
        """Embed ``record``'s rows and queries with ``embedder`` in this process (a store
        with its own index ``embed``; see the provider's ``use_embedder``).

        Raises:
            ConflictError: the space already uses an embedder of another model here.
        """
        self.provider(record).use_embedder(record.id, embedder)

    def rank(self, records: Sequence[SpaceRecord], query: str) -> list[tuple[int, float, float]]:
        """Every live row of the spaces ranked for ``query``: ``(seq, relevance 0..1, raw
        similarity)``, best first. Part of a recall, so the kernel is asked (Memory Spaces
        recall).

        Raises:
            ParticipationError: the kernel refused Memory Spaces recall.
            ProviderError: embedding the query failed.
        """
        self._kernel.admit("memory_spaces", "recall")
        if not records:
            return []
        provider = self.provider(records[0])
        return provider.keyed_rank([self._binding(r) for r in records], query)

    def rows(self, records: Sequence[SpaceRecord], seqs: Sequence[int]) -> list[KeyedRow]:
        """The live rows among ``seqs`` (of ``records``' spaces), in that order."""
        if not records or not seqs:
            return []
        return self.provider(records[0]).keyed_rows(seqs)

    def refresh(self, record: SpaceRecord, ids: Sequence[str]) -> int:
        """Restart the time to live of the rows ``ids`` of ``record``'s provider (a read that
        refreshes what it returned). A read-only host refreshes nothing: reads never fail
        because of it.

        Returns:
            How many rows were refreshed (rows without a time to live are left alone).

        Example:
            >>> keyed.refresh(record, [keyed.get(record, "k1").id])
            1
        """
        if not ids or not self._kernel.write_enabled:
            return 0
        return self.provider(record).keyed_refresh(list(dict.fromkeys(ids)))

    def sweep(self) -> int:
        """Soft-delete the expired rows of every keyed provider (all spaces, every owner: an
        expired row is already gone for every read, so no scope sees a difference).

        Returns:
            How many rows were deleted.

        Raises:
            ParticipationError: the kernel refused Memory Spaces maintenance.
            ReadOnlyError: writes are switched off.
            StorageError: the database refused the sweep.

        Example:
            >>> mem.spaces.keyed.sweep()
            3
        """
        self._kernel.admit("memory_spaces", "maintenance")
        providers = self._registry.all().values()
        return sum(p.keyed_sweep() for p in providers if isinstance(p, KeyedProvider))

    def write(
        self, groups: Sequence[tuple[SpaceRecord, Sequence[KeyedWrite]]]
    ) -> list[list[MemoryReceipt]]:
        """Apply the writes of every space in one transaction; one receipt per write.

        The kernel is asked first (Memory Spaces write) and every item is validated before
        anything is written. A committed write activates its space.

        Raises:
            InvalidInputError: an item is not a valid memory.
            StaleSpace: a space is gone or renamed since ``record`` was read (nothing written).
            ParticipationError: the kernel refused Memory Spaces writes.
            ReadOnlyError: writes are switched off.
            StorageError: the local database refused the write.
        """
        self._kernel.admit("memory_spaces", "write")
        plans = [(record, _checked(writes)) for record, writes in groups if writes]
        if not plans:
            return []
        provider = self.provider(plans[0][0])
        bound = [(self._binding(record), writes) for record, writes in plans]
        try:
            raws = provider.keyed_write(bound)
        except (StaleSpace, *NOT_PROVIDER_FAILURES):
            raise
        except Exception as exc:
            return [[failed(record, "remember", exc) for _ in writes] for record, writes in plans]
        activate = self.catalog_view.activate
        return [
            _receipts(record, raw, activate) for (record, _), raw in zip(plans, raws, strict=True)
        ]


def _checked(writes: Sequence[KeyedWrite]) -> list[KeyedPut]:
    wanted = [w.item for w in writes if w.item is not None]
    items: list[RememberItem] = []
    for start in range(0, len(wanted), MAX_BATCH):  # the layer's batch limit, per chunk
        items.extend(remember_items(wanted[start : start + MAX_BATCH]))
    checked = iter(items)
    return [
        KeyedPut(w.key, next(checked), w.text, check_minutes(w.ttl, "ttl"))
        if w.item is not None
        else KeyedPut(w.key, None)
        for w in writes
    ]


def _receipts(
    record: SpaceRecord, raws: Sequence[Mapping[str, Any]], activate: Callable[[str], bool]
) -> list[MemoryReceipt]:
    out: list[MemoryReceipt] = []
    for raw in raws:
        committed = is_committed(raw)
        activated = False
        if committed and not record.active and raw.get("created"):
            activated = activate(record.id)
            record = record.model_copy(update={"active": True})
        rid = str(raw.get("id") or "")
        out.append(
            MemoryReceipt(
                status="committed" if committed else "failed",
                message=(
                    f"Keyed write committed in {record.id!r}."
                    if committed
                    else f"The provider did not commit the keyed write in {record.id!r}."
                ),
                changed=committed and not raw.get("duplicate"),
                revision=rid,
                space_id=record.id,
                id=rid or None,
                completion="committed" if committed else "none",
                activated=activated,
                provider_receipt=dict(raw),
            )
        )
    return out
