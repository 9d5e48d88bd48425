"""Memory Spaces (tier 3): the catalog and federated recall over provider-backed spaces.

A *Memory Space* is a named store (id, name, description, provider id, active flag, provider
configuration) kept in the ``mnemon_spaces`` table of the shared SQL database. Provider secrets
(API keys, tokens) are stored only host-side, in ``<root>/state/space-secrets.json`` (mode 0600),
handed to the provider in each call and never returned by any read API: a space reports only
*which* secret keys are configured.

Catalog rules: the first space created in an empty catalog gets the native default id
``default``; later ids are generated. A new space is inactive until its first committed write
activates it (inactive spaces are not searched unless named explicitly). Merging native spaces
copies rows and never deletes the sources.

Federated search (:meth:`MemorySpaces.search`) follows §5.1 of the reference: each readable
space is asked for ``min(50, max(limit, ⌈limit × candidate_multiplier⌉))`` rows concurrently; a
provider that raises or times out becomes a per-space hint with status ``unavailable`` (the
search itself never fails for it); rows are fused with reciprocal-rank fusion when more than one
provider kind answered (raw scores kept); the quality policy selects; when no selected row covers
the query's exact anchors or enough of its tokens, the native spaces are searched once more in
keyword mode and covering rows are merged ahead; covering rows are finally ordered first.

Every public method validates its input and raises a typed error from
:mod:`langgraph_mnemon.errors` whose message says what to do; a failed operation changes
nothing. Text arguments (names, descriptions, content, tags, entities, queries, ids) have NUL
characters dropped; a lone surrogate (half of a character pair) or a value of the wrong type
raises :class:`InvalidInputError`, and so does NUL in metadata keys, metadata values and
secrets. Reads never create the tables: before the first write every read answers empty.
A write that the local database refuses (full disk, read-only file, damaged file) raises its
:class:`StorageError`; a failing remote provider gives a ``failed`` receipt instead.

Every method has an async twin (``asearch``, ``aremember``, …) and the sync methods run
the same coroutine, so both share one code path.

Example:
    >>> spaces = mem.spaces
    >>> spaces.remember("The staging database is db-stage-2 on port 5433.").status
    'committed'
    >>> [r.content for r in spaces.search("which port does staging use?").results]
    ['The staging database is db-stage-2 on port 5433.']
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
import time
import unicodedata
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Literal, TypeVar

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from langgraph_mnemon.contracts import Outcome, StepOutcome, check_text, shown
from langgraph_mnemon.errors import (
    InvalidInputError,
    MnemonError,
    NotFoundError,
    ProviderError,
    ReadOnlyError,
    StorageError,
)
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.memory_layers.mnemos.spaces_schema import MIGRATIONS, SPACES
from langgraph_mnemon.memory_layers.spaces import _merge as _space_merge
from langgraph_mnemon.memory_layers.spaces._fusion import (
    Candidate,
    CoveragePlan,
    QualitySettings,
    QualityStats,
    apply_quality,
    candidate_limit,
    classify_score,
    coverage_plan,
    covering,
    fuse,
    quality_policies,
    quality_stats,
)
from langgraph_mnemon.memory_layers.spaces._health import (
    HEALTH_TIMEOUT_SECONDS,
    PROBE_BINDING,
    HealthCache,
    ProviderHealth,
    SpaceHealth,
    SpacesHealth,
    assess,
    redact,
)
from langgraph_mnemon.memory_layers.spaces._models import (
    CATEGORIES,
    EDGE_TYPES,
    INTENTS,
    SEARCH_MODES,
    SOURCES,
    BrowseRequest,
    DiscoveredSpace,
    GraphProjection,
    Insight,
    LinkRequest,
    MemoryProvider,
    MemoryReceipt,
    ProviderSearchRequest,
    ProviderStatus,
    RelatedRequest,
    RememberItem,
    SpaceBinding,
    is_committed,
    is_pending,
)
from langgraph_mnemon.memory_layers.spaces._secrets import SecretStore
from langgraph_mnemon.storage.db import Database

__all__ = [
    "DEFAULT_SPACE_ID",
    "MAX_BROWSE_OFFSET",
    "MAX_MEMORY_ID_CHARS",
    "MAX_QUERY_CHARS",
    "SPACE_ID_PATTERN",
    "EntityCount",
    "MemorySpaces",
    "ProviderHealth",
    "RecallResult",
    "RecoveryReport",
    "RelatedResult",
    "SourceReport",
    "SpaceHealth",
    "SpaceReceipt",
    "SpaceRecord",
    "SpaceStatus",
    "SpacesHealth",
    "SpacesStatus",
]

DEFAULT_SPACE_ID = "default"
NATIVE_PROVIDER_ID = "mnemos"
MAX_QUERY_CHARS = 2000
MAX_CONTENT_CHARS = 65_536
MAX_NAME_CHARS = 120
MAX_DESCRIPTION_CHARS = 500
MAX_TAGS = 20
MAX_TAG_CHARS = 100
MAX_ENTITIES = 50
MAX_ENTITY_CHARS = 200
MAX_METADATA_KEYS = 32
MAX_METADATA_VALUE_CHARS = 1000
MAX_BATCH = 1000
MAX_MERGE_SOURCES = 20
MAX_ENTITY_SCAN_ROWS = 5000
_ENTITY_PAGE = 500
SPACE_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""What a Memory Space id looks like (``default``, ``space-3f2a...``)."""
MAX_MEMORY_ID_CHARS = 200
MAX_BROWSE_OFFSET = 10_000_000
_NOT_PROVIDER_FAILURES = (InvalidInputError, NotFoundError, ReadOnlyError, StorageError)
"""Raised as they are by writes: the caller's mistake or the local disk, not a provider's
failure (which becomes a ``failed`` receipt)."""
_SECRET_HINT = re.compile(r"(api[_-]?key|token|secret|password|authorization|credential)", re.I)
_T = TypeVar("_T")

SourceStatus = Literal["ready", "empty", "unavailable", "unsupported", "query-required"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class SpaceRecord(_Frozen):
    """A Memory Space as every read API shows it (secret values never appear here)."""

    id: str
    name: str
    description: str
    provider_id: str
    active: bool
    config: dict[str, Any] = Field(default_factory=dict)
    secrets_configured: list[str] = Field(default_factory=list)
    external_id: str | None = None
    created_at: float
    updated_at: float
    revision: int
    capabilities: list[str] = Field(default_factory=list)
    provider_registered: bool = True


class SpaceReceipt(_Frozen):
    """What a catalog mutation did (create, update, activate, merge, sync)."""

    status: Literal["committed", "skipped", "rejected", "failed"]
    message: str
    changed: bool
    revision: str
    space: SpaceRecord | None = None
    spaces: list[SpaceRecord] = Field(default_factory=list)
    provider_receipt: dict[str, Any] = Field(default_factory=dict)
    # Multi-step operations (a merge): how it ended and one outcome per step.
    outcome: Outcome | None = None
    steps: tuple[StepOutcome, ...] = ()

    @property
    def committed(self) -> bool:
        """Only ``committed`` means the catalog changed as asked (see ``outcome``)."""
        return self.status == "committed"


class SourceReport(_Frozen):
    """How one Memory Space answered a federated search."""

    space_id: str
    name: str
    provider_id: str
    provider_label: str
    mode: str
    status: SourceStatus
    item_count: int = 0
    hint: str | None = None
    quality: QualityStats | None = None


class RecoveryReport(_Frozen):
    """The coverage plan of a smart search and whether the native recovery pass ran."""

    kind: Literal["exact", "lexical", "none"]
    terms: list[str] = Field(default_factory=list)
    required: int = 0
    covered: bool = False
    ran: bool = False
    recovered: int = 0


class RecallResult(_Frozen):
    """Federated search output: selected rows (best first) and a report per space."""

    query: str
    mode: str
    limit: int
    policy_id: str
    fallback_from: str | None = None
    results: list[Insight] = Field(default_factory=list)
    sources: list[SourceReport] = Field(default_factory=list)
    recovery: RecoveryReport | None = None
    hint: str | None = None


class RelatedResult(_Frozen):
    """Rows reachable from one row through typed edges."""

    id: str
    space_id: str
    depth: int
    edge: str | None = None
    results: list[Insight] = Field(default_factory=list)


class EntityCount(_Frozen):
    """One entry of a space's entity index: an entity name and how many memories name it."""

    name: str
    count: int


class SpaceStatus(_Frozen):
    """Catalog entry plus the provider's status for it (:meth:`MemorySpaces.status`)."""

    space: SpaceRecord
    status: ProviderStatus


class SpacesStatus(_Frozen):
    """Memory Spaces at a glance."""

    total: int
    active: int
    healthy: int = 0
    unhealthy: int = 0
    provider_disabled: int = 0
    total_insights: int = 0
    spaces: list[SpaceStatus] = Field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Validation


def _text(value: Any, field: str, *, limit: int, required: bool = True) -> str:
    # NUL is dropped (as it always was here); a lone surrogate or a non-string is refused.
    text = check_text(value, field, nul="strip").strip()
    if required and not text:
        raise InvalidInputError(f"{field} must not be empty")
    if len(text) > limit:
        raise InvalidInputError(f"{field} is {len(text)} characters; the limit is {limit}")
    return text


def _string_list(value: Any, field: str, *, most: int, chars: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{field} must be a list of strings")
    out: list[str] = []
    for item in value:
        text = _text(item, f"each of {field}", limit=chars)
        if text not in out:
            out.append(text)
    if len(out) > most:
        raise InvalidInputError(f"{field} has {len(out)} items; at most {most} are allowed")
    return tuple(out)


def _metadata(value: Any) -> dict[str, str | int | float | bool]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError("metadata must be a mapping of short keys to scalar values")
    if len(value) > MAX_METADATA_KEYS:
        raise InvalidInputError(f"metadata has {len(value)} keys; at most {MAX_METADATA_KEYS}")
    out: dict[str, str | int | float | bool] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key.strip() or len(key) > 64:
            raise InvalidInputError("metadata keys must be non-empty strings of ≤64 characters")
        check_text(key, "a metadata key")
        if isinstance(item, str):
            if len(item) > MAX_METADATA_VALUE_CHARS:
                raise InvalidInputError(
                    f"metadata[{key!r}] is longer than {MAX_METADATA_VALUE_CHARS} characters"
                )
            check_text(item, f"metadata[{key!r}]")
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 2**63:
            raise InvalidInputError(f"metadata[{key!r}] must fit in 64 bits")
        elif isinstance(item, float) and not math.isfinite(item):
            raise InvalidInputError(f"metadata[{key!r}] must be a finite number")
        elif not isinstance(item, (bool, int, float)):
            raise InvalidInputError(
                f"metadata[{key!r}] must be a string, number or boolean (got {type(item).__name__})"
            )
        out[key] = item
    return out


def _choice(value: Any, field: str, allowed: Sequence[str], *, optional: bool) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str) or value not in allowed:
        raise InvalidInputError(f"{field} must be one of {', '.join(allowed)} (got {shown(value)})")
    return value


def _int(value: Any, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInputError(f"{field} must be an integer between {low} and {high}")
    return value


def _space_id(value: Any, field: str = "space_id") -> str:
    if not isinstance(value, str) or not SPACE_ID_PATTERN.match(value.strip()):
        raise InvalidInputError(
            f"{field} must be 1-64 characters of letters, digits, '.', '_' or '-' starting "
            f"with a letter or digit (got {shown(value)})"
        )
    return value.strip()


def _item(
    content: Any,
    category: Any,
    importance: Any,
    tags: Any,
    entities: Any,
    source: Any,
    metadata: Any,
) -> RememberItem:
    text = _text(content, "content", limit=MAX_CONTENT_CHARS)
    _choice(category, "category", CATEGORIES, optional=False)
    _int(importance, "importance", 1, 5)
    _choice(source, "source", SOURCES, optional=False)
    try:
        return RememberItem(
            content=text,
            category=category,
            importance=importance,
            tags=_string_list(tags, "tags", most=MAX_TAGS, chars=MAX_TAG_CHARS),
            entities=_string_list(entities, "entities", most=MAX_ENTITIES, chars=MAX_ENTITY_CHARS),
            source=source,
            metadata=_metadata(metadata),
        )
    except ValidationError as exc:
        raise InvalidInputError(f"invalid memory: {exc.errors()[0]['msg']}") from None


# --------------------------------------------------------------------------------------------
# Sync runner


class _LoopThread:
    """One private event loop in a daemon thread that runs the coroutines of sync calls.

    Sync calls work the same from plain scripts, threads and notebooks (where a loop is
    already running in the calling thread).
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._thread is None or not self._thread.is_alive():
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    ready.set()
                    loop.run_forever()

                thread = threading.Thread(target=run, name="mnemon-spaces-sync", daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    def run(self, coro: Awaitable[_T]) -> _T:
        loop = self._start()
        if threading.current_thread() is self._thread:
            raise RuntimeError("a sync Memory Spaces call cannot run inside its own event loop")
        future: Future[_T] = asyncio.run_coroutine_threadsafe(coro, loop)  # type: ignore[arg-type]
        return future.result()

    def close(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            loop.close()


# --------------------------------------------------------------------------------------------


class MemorySpaces:
    """Memory Space catalog and federated recall (``Mnemon.spaces``).

    ``providers`` are :class:`MemoryProvider` objects keyed by their descriptor id; a space
    whose provider is not registered stays in the catalog and reports ``provider-disabled``.
    """

    @property
    def write_enabled(self) -> bool:
        """Whether writes are on (the kernel's ``write_enabled``)."""
        return self.kernel.write_enabled

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
    ) -> None:
        if not isinstance(database, Database):
            raise InvalidInputError(
                f"MemorySpaces() takes a Database (got {type(database).__name__}); "
                "use Database(create_engine(url))"
            )
        if policy not in quality_policies():
            raise InvalidInputError(
                f"unknown recall quality policy {shown(policy)}; use one of "
                f"{', '.join(quality_policies())}"
            )
        if not 1 <= float(candidate_multiplier) <= 5:
            raise InvalidInputError("candidate_multiplier must be between 1 and 5")
        self.db = database
        self.root = Path(root).expanduser().absolute()
        self.quality = quality or QualitySettings()
        self.policy = policy
        self.candidate_multiplier = float(candidate_multiplier)
        self.default_limit = _int(default_limit, "default_limit", 1, 50)
        self.timeout = _int(timeout_ms, "timeout_ms", 100, 120_000) / 1000.0
        # Every operation asks the kernel; a layer built alone gets one of its own.
        self.kernel = kernel or Kernel.standalone(write_enabled=bool(write_enabled))
        self.default_provider_id = default_provider_id
        self.local_only = bool(local_only)
        self._clock = clock
        self._providers: dict[str, MemoryProvider] = {}
        self._secrets = SecretStore(self.root / "state" / "space-secrets.json", lock_timeout)
        self._runner = _LoopThread()
        self._health = HealthCache()
        for provider in providers:
            self.register_provider(provider)

    def __repr__(self) -> str:
        return f"MemorySpaces(database={self.db.url!r}, providers={sorted(self._providers)})"

    # ------------------------------------------------------------------ setup and providers

    def setup(self) -> None:
        """Create or migrate the Memory Space tables (idempotent; also done lazily)."""
        self.kernel.require_writes("Memory Spaces")  # a read-only host creates no tables
        self.db.setup(MIGRATIONS)

    def _ready(self) -> None:
        if not self.db.is_setup(MIGRATIONS):
            self.db.setup(MIGRATIONS)

    def register_provider(self, provider: MemoryProvider) -> None:
        """Make a provider available to spaces that name its id."""
        descriptor = getattr(provider, "descriptor", None)
        if descriptor is None or not isinstance(provider, MemoryProvider):
            raise InvalidInputError(
                f"{type(provider).__name__} is not a MemoryProvider: subclass "
                "adapters.providers.base.BaseProvider and declare a descriptor"
            )
        self._providers[descriptor.id] = provider

    @property
    def providers(self) -> dict[str, MemoryProvider]:
        """Registered providers by id."""
        return dict(self._providers)

    def provider(self, provider_id: str) -> MemoryProvider:
        """The registered provider ``provider_id``."""
        if not isinstance(provider_id, str):
            raise InvalidInputError(
                f"provider_id must be a string such as 'mnemos' (got {type(provider_id).__name__})"
            )
        found = self._providers.get(provider_id)
        if found is None:
            raise NotFoundError(
                f"no provider {provider_id!r} is registered; available: "
                f"{', '.join(sorted(self._providers)) or 'none'}"
            )
        return found

    def close(self) -> None:
        """Close providers and the sync runner."""
        for provider in list(self._providers.values()):
            try:
                self._runner.run(provider.aclose())
            except Exception:  # closing is best effort
                continue
        self._runner.close()

    def _run(self, coro: Awaitable[_T]) -> _T:
        return self._runner.run(coro)

    # ------------------------------------------------------------------ catalog (sync core)

    def _record(self, row: Mapping[str, Any], secret_keys: Mapping[str, list[str]]) -> SpaceRecord:
        provider = self._providers.get(row["provider_id"])
        return SpaceRecord(
            id=row["id"],
            name=row["name"],
            description=row["description"],
            provider_id=row["provider_id"],
            active=bool(row["active"]),
            config=dict(row["config"] or {}),
            secrets_configured=list(secret_keys.get(row["id"], [])),
            external_id=row["external_id"],
            created_at=float(row["created_at"]),
            updated_at=float(row["updated_at"]),
            revision=int(row["revision"]),
            capabilities=provider.descriptor.capabilities.names() if provider else [],
            provider_registered=provider is not None,
        )

    def _list_sync(self, active: bool | None = None) -> list[SpaceRecord]:
        if not self.db.ready_for_read(MIGRATIONS):
            return []  # nothing was ever written: a read creates no tables
        stmt = sa.select(SPACES).order_by(SPACES.c.created_at, SPACES.c.id)
        if active is not None:
            stmt = stmt.where(SPACES.c.active == active)
        with self.db.read() as conn:
            rows = conn.execute(stmt).mappings().all()
        keys = self._secrets.keys() if rows else {}
        return [self._record(r, keys) for r in rows]

    def _get_sync(self, space_id: str) -> SpaceRecord:
        space_id = _space_id(space_id)
        row = None
        if self.db.ready_for_read(MIGRATIONS):
            with self.db.read() as conn:
                row = (
                    conn.execute(sa.select(SPACES).where(SPACES.c.id == space_id))
                    .mappings()
                    .first()
                )
        if row is None:
            raise NotFoundError(
                f"no Memory Space {space_id!r}; list them with spaces.list_spaces() "
                "(CLI: mnemon spaces list)"
            )
        return self._record(row, self._secrets.keys())

    def _binding(self, record: SpaceRecord) -> SpaceBinding:
        secrets = self._secrets.get(record.id) if record.secrets_configured else {}
        return SpaceBinding(
            id=record.id,
            name=record.name,
            description=record.description,
            config=record.config,
            secrets=secrets,
        )

    async def _abinding(self, record: SpaceRecord) -> SpaceBinding:
        """:meth:`_binding` without blocking the event loop (secrets live in a file)."""
        if record.secrets_configured:
            return await asyncio.to_thread(self._binding, record)
        return self._binding(record)

    def _split_config(
        self,
        provider: MemoryProvider,
        config: Mapping[str, Any] | None,
        secrets: Mapping[str, str] | None,
    ) -> tuple[dict[str, Any], dict[str, str]]:
        if config is not None and not isinstance(config, Mapping):
            raise InvalidInputError("config must be a mapping of provider settings")
        if secrets is not None and not isinstance(secrets, Mapping):
            raise InvalidInputError("secrets must be a mapping of credential names to strings")
        config = dict(config or {})
        secrets = dict(secrets or {})
        secret_fields = set(provider.descriptor.secret_fields)
        for key in list(config):
            if key in secret_fields or _SECRET_HINT.search(str(key)):
                raise InvalidInputError(
                    f"config key {key!r} looks like a credential; pass it in secrets= so it is "
                    "stored host-side only"
                )
        for key, value in secrets.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise InvalidInputError("secrets must map string names to string values")
            check_text(key, "a secret name")
            check_text(value, f"secret {key!r}")
            if secret_fields and key not in secret_fields:
                raise InvalidInputError(
                    f"provider {provider.descriptor.id!r} takes the secrets "
                    f"{', '.join(sorted(secret_fields))} (got {key!r})"
                )
            if not secret_fields:
                raise InvalidInputError(
                    f"provider {provider.descriptor.id!r} takes no secrets (got {key!r})"
                )
        try:
            checked = provider.check_config(config, secrets)
        except MnemonError:
            raise
        except Exception as exc:
            raise InvalidInputError(
                f"invalid configuration for provider {provider.descriptor.id!r}: {exc}"
            ) from None
        return dict(checked), secrets

    def _create_sync(
        self,
        name: Any,
        description: Any,
        provider_id: Any,
        config: Mapping[str, Any] | None,
        secrets: Mapping[str, str] | None,
        space_id: Any,
        active: Any,
        external_id: str | None = None,
    ) -> SpaceReceipt:
        name = _text(name, "name", limit=MAX_NAME_CHARS)
        description = _text(description, "description", limit=MAX_DESCRIPTION_CHARS, required=False)
        if provider_id is None:
            provider_id = self.default_provider_id
        if not isinstance(provider_id, str):
            raise InvalidInputError("provider_id must be a string such as 'mnemos'")
        provider = self.provider(provider_id)
        if self.local_only and not provider.descriptor.local:
            raise InvalidInputError(
                f"provider {provider_id!r} keeps data outside this machine and the persistence "
                "strategy is local-only (persistence_strategy.rules.data_boundary); choose a "
                "local provider or allow remote data"
            )
        if space_id is not None:
            space_id = _space_id(space_id)
        if active is not None and not isinstance(active, bool):
            raise InvalidInputError("active must be true, false or None")
        checked, secret_values = self._split_config(provider, config, secrets)
        self._ready()
        now = self._clock()
        with self.db.write() as conn:
            count = conn.execute(sa.select(sa.func.count()).select_from(SPACES)).scalar() or 0
            if space_id is None:
                space_id = DEFAULT_SPACE_ID if count == 0 else f"space-{uuid.uuid4().hex[:12]}"
            if conn.execute(sa.select(SPACES.c.id).where(SPACES.c.id == space_id)).first():
                raise InvalidInputError(
                    f"a Memory Space with id {space_id!r} already exists; choose another id"
                )
            conn.execute(
                SPACES.insert().values(
                    id=space_id,
                    name=name,
                    description=description,
                    provider_id=provider_id,
                    active=bool(active),
                    config=provider.place(space_id, checked),
                    external_id=external_id,
                    created_at=now,
                    updated_at=now,
                    revision=1,
                )
            )
        if secret_values:
            try:
                self._secrets.put(space_id, secret_values)
            except BaseException:
                with self.db.write() as conn:
                    conn.execute(SPACES.delete().where(SPACES.c.id == space_id))
                raise
        record = self._get_sync(space_id)
        return SpaceReceipt(
            status="committed",
            message=f"Memory Space {record.name!r} created (id {space_id!r}).",
            changed=True,
            revision=str(record.revision),
            space=record,
        )

    def _update_sync(
        self,
        space_id: Any,
        name: Any = None,
        description: Any = None,
        active: Any = None,
    ) -> SpaceReceipt:
        record = self._get_sync(space_id)
        values: dict[str, Any] = {}
        if name is not None:
            values["name"] = _text(name, "name", limit=MAX_NAME_CHARS)
        if description is not None:
            values["description"] = _text(
                description, "description", limit=MAX_DESCRIPTION_CHARS, required=False
            )
        if active is not None:
            if not isinstance(active, bool):
                raise InvalidInputError("active must be true or false")
            values["active"] = active
        changes = {k: v for k, v in values.items() if getattr(record, k) != v}
        if not changes:
            return SpaceReceipt(
                status="committed",
                message="Nothing to change.",
                changed=False,
                revision=str(record.revision),
                space=record,
            )
        with self.db.write() as conn:
            conn.execute(
                SPACES.update()
                .where(SPACES.c.id == record.id)
                .values(**changes, updated_at=self._clock(), revision=SPACES.c.revision + 1)
            )
        updated = self._get_sync(record.id)
        return SpaceReceipt(
            status="committed",
            message=f"Memory Space {updated.name!r} updated (id {record.id!r}).",
            changed=True,
            revision=str(updated.revision),
            space=updated,
        )

    def _activate_sync(self, space_id: str) -> bool:
        with self.db.write() as conn:
            result = conn.execute(
                SPACES.update()
                .where(SPACES.c.id == space_id, SPACES.c.active.is_(False))
                .values(active=True, updated_at=self._clock(), revision=SPACES.c.revision + 1)
            )
        return bool(result.rowcount)

    def _target_sync(self, space_id: Any, operation: str) -> SpaceRecord:
        if space_id is not None:
            return self._get_sync(space_id)
        spaces = self._list_sync()
        active = [s for s in spaces if s.active]
        if len(active) == 1:
            return active[0]
        if len(active) > 1:
            raise InvalidInputError(
                f"{operation} requires an explicit Memory Space: {len(active)} are active "
                f"({', '.join(s.id for s in active[:8])}); pass space_id="
            )
        if len(spaces) == 1:
            return spaces[0]
        if not spaces and operation == "remember":
            if NATIVE_PROVIDER_ID not in self._providers:
                raise InvalidInputError(
                    "remember needs a Memory Space: create one with spaces.create_space()"
                )
            return self._create_sync(
                "Default", "Default Memory Space.", NATIVE_PROVIDER_ID, None, None, None, None
            ).space  # type: ignore[return-value]
        raise InvalidInputError(
            f"{operation} requires an explicit Memory Space (no single active space); "
            "pass space_id="
        )

    # ------------------------------------------------------------------ catalog API

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
    ) -> SpaceReceipt:
        """Create a Memory Space (inactive until its first committed write unless ``active``).

        ``provider_id`` defaults to the persistence strategy's provider (``mnemos``). The first
        space of an empty catalog gets the id ``default``. ``secrets`` (API keys, tokens) are
        stored host-side only and never returned. With ``data_boundary="local-only"`` only
        providers whose data stays on this machine are accepted. A catalog change: the
        kernel is asked first (Memory Spaces maintenance).
        """
        self.kernel.admit("memory_spaces", "maintenance")
        return await asyncio.to_thread(
            self._create_sync, name, description, provider_id, config, secrets, space_id, active
        )

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
    ) -> SpaceReceipt:
        """Sync twin of :meth:`acreate_space`."""
        return self._run(
            self.acreate_space(
                name,
                description,
                provider_id=provider_id,
                config=config,
                secrets=secrets,
                space_id=space_id,
                active=active,
            )
        )

    async def alist_spaces(self, *, active: bool | None = None) -> list[SpaceRecord]:
        """All spaces (or only active / inactive ones), oldest first."""
        if active is not None and not isinstance(active, bool):
            raise InvalidInputError("active must be true, false or None")
        return await asyncio.to_thread(self._list_sync, active)

    def list_spaces(self, *, active: bool | None = None) -> list[SpaceRecord]:
        """Sync twin of :meth:`alist_spaces`."""
        return self._run(self.alist_spaces(active=active))

    async def aget_space(self, space_id: str) -> SpaceRecord:
        """One space by id."""
        return await asyncio.to_thread(self._get_sync, space_id)

    def get_space(self, space_id: str) -> SpaceRecord:
        """Sync twin of :meth:`aget_space`."""
        return self._run(self.aget_space(space_id))

    async def aupdate_space(
        self,
        space_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        active: bool | None = None,
    ) -> SpaceReceipt:
        """Change a space's name, description or active flag (Memory Spaces maintenance)."""
        self.kernel.admit("memory_spaces", "maintenance")
        return await asyncio.to_thread(self._update_sync, space_id, name, description, active)

    def update_space(
        self,
        space_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        active: bool | None = None,
    ) -> SpaceReceipt:
        """Sync twin of :meth:`aupdate_space`."""
        return self._run(
            self.aupdate_space(space_id, name=name, description=description, active=active)
        )

    async def aset_active(self, space_id: str, active: bool) -> SpaceReceipt:
        """Switch whether a space takes part in recall and default writes (data is kept)."""
        if not isinstance(active, bool):
            raise InvalidInputError("active must be true or false")
        return await self.aupdate_space(space_id, active=active)

    def set_active(self, space_id: str, active: bool) -> SpaceReceipt:
        """Sync twin of :meth:`aset_active`."""
        return self._run(self.aset_active(space_id, active))

    async def amerge_spaces(
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
        if isinstance(source_space_ids, str) or not isinstance(source_space_ids, Sequence):
            raise InvalidInputError("source_space_ids must be a list of space ids")
        if not 1 <= len(source_space_ids) <= MAX_MERGE_SOURCES:
            raise InvalidInputError(f"merge takes 1 to {MAX_MERGE_SOURCES} source spaces")
        source_space_ids = [_space_id(s, "source_space_ids[]") for s in source_space_ids]
        if not isinstance(deactivate_sources, bool):
            raise InvalidInputError("deactivate_sources must be true or false")
        return await _space_merge.merge(
            self,
            target_space_id,
            source_space_ids,
            deactivate_sources=deactivate_sources,
            native_id=NATIVE_PROVIDER_ID,
        )

    def merge_spaces(
        self,
        target_space_id: str,
        source_space_ids: Sequence[str],
        *,
        deactivate_sources: bool = True,
    ) -> SpaceReceipt:
        """Sync twin of :meth:`amerge_spaces`."""
        return self._run(
            self.amerge_spaces(
                target_space_id, source_space_ids, deactivate_sources=deactivate_sources
            )
        )

    async def adiscover(
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
        """
        provider = self.provider(provider_id)
        if not provider.descriptor.capabilities.discover:
            raise ProviderError(
                f"provider {provider_id!r} does not support discover", code="unsupported"
            )
        if sync:  # mapping namespaces into spaces changes the catalog: asked before any I/O
            self.kernel.admit("memory_spaces", "maintenance")
        checked, secret_values = self._split_config(provider, config, secrets)
        found = await provider.discover(checked, secret_values)
        if not sync:
            return found
        return await asyncio.to_thread(
            self._sync_discovered, provider_id, found, checked, secret_values
        )

    def discover(
        self,
        provider_id: str,
        *,
        config: Mapping[str, Any] | None = None,
        secrets: Mapping[str, str] | None = None,
        sync: bool = False,
    ) -> list[DiscoveredSpace] | SpaceReceipt:
        """Sync twin of :meth:`adiscover`."""
        return self._run(self.adiscover(provider_id, config=config, secrets=secrets, sync=sync))

    def _sync_discovered(
        self,
        provider_id: str,
        found: list[DiscoveredSpace],
        config: dict[str, Any],
        secrets: dict[str, str],
    ) -> SpaceReceipt:
        self._ready()
        now = self._clock()
        created: list[str] = []
        removed: list[str] = []
        with self.db.write() as conn:
            rows = conn.execute(
                sa.select(SPACES.c.id, SPACES.c.external_id).where(
                    SPACES.c.provider_id == provider_id
                )
            ).all()
            mapped = {ext: sid for sid, ext in rows if ext is not None}
            wanted = {d.external_id for d in found}
            for sid, ext in rows:
                if ext is not None and ext not in wanted:
                    conn.execute(SPACES.delete().where(SPACES.c.id == sid))
                    removed.append(sid)
            for item in found:
                if item.external_id in mapped:
                    continue
                count = conn.execute(sa.select(sa.func.count()).select_from(SPACES)).scalar()
                if provider_id == NATIVE_PROVIDER_ID and SPACE_ID_PATTERN.match(item.external_id):
                    sid = item.external_id
                elif not count:
                    sid = DEFAULT_SPACE_ID
                else:
                    sid = f"space-{uuid.uuid4().hex[:12]}"
                conn.execute(
                    SPACES.insert().values(
                        id=sid,
                        name=item.name[:MAX_NAME_CHARS] or sid,
                        description=item.description[:MAX_DESCRIPTION_CHARS],
                        provider_id=provider_id,
                        active=False,
                        config={**config, **item.config},
                        external_id=item.external_id,
                        created_at=now,
                        updated_at=now,
                        revision=1,
                    )
                )
                created.append(sid)
            for sid in created:
                if secrets:
                    self._secrets.put(sid, secrets)
        for sid in removed:
            self._secrets.put(sid, None)
        spaces = [s for s in self._list_sync() if s.provider_id == provider_id]
        return SpaceReceipt(
            status="committed",
            message=f"Discovered {len(found)}: {len(created)} mapped, {len(removed)} unmapped.",
            changed=bool(created or removed),
            revision=str(len(spaces)),
            spaces=spaces,
        )

    # ------------------------------------------------------------------ federated search

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
    ) -> RecallResult:
        """Search the readable spaces concurrently and return fused, quality-selected rows.

        ``space_ids`` restricts (and explicitly grants) the spaces; by default every active
        space with a registered provider is searched. ``policy`` overrides the configured
        quality policy for this call. The kernel is asked first (Memory Spaces recall): a
        refusal reaches no provider.
        """
        self.kernel.admit("memory_spaces", "recall")
        q = _text(query, "query", limit=MAX_QUERY_CHARS)
        limit = self.default_limit if limit is None else _int(limit, "limit", 1, 50)
        _choice(mode, "mode", SEARCH_MODES, optional=False)
        _choice(category, "category", CATEGORIES, optional=True)
        _choice(source, "source", SOURCES, optional=True)
        _choice(intent, "intent", INTENTS, optional=True)
        policy_id = self.policy if policy is None else policy
        if policy_id not in quality_policies():
            raise InvalidInputError(
                f"unknown recall quality policy {shown(policy_id)}; use one of "
                f"{', '.join(quality_policies())}"
            )
        records = await asyncio.to_thread(self._readable_sync, space_ids)
        fetch = candidate_limit(limit, self.candidate_multiplier)
        request = ProviderSearchRequest(
            query=q, mode=mode, limit=fetch, category=category, source=source, intent=intent
        )
        answers = await asyncio.gather(
            *(self._query_space(order, record, request) for order, record in enumerate(records))
        )
        candidates = [c for _, _, _, found in answers for c in found]
        ranked = fuse(candidates)
        outcome = apply_quality(policy_id, ranked, limit, self.quality)
        filtered = bool(category or source or intent)
        plan = coverage_plan(q) if mode == "smart" and not filtered else CoveragePlan("none")
        recovery = RecoveryReport(kind=plan.kind, terms=plan.terms, required=plan.required)
        recovered: list[Candidate] = []
        if plan.kind != "none":
            covered = covering(plan, outcome.selected, _content)
            ran = False
            if not covered:
                natives = [
                    (order, record)
                    for order, (record, status, _, _) in enumerate(answers)
                    if record.provider_id == NATIVE_PROVIDER_ID and status in ("ready", "empty")
                ]
                if natives:
                    ran = True
                    recovered = await self._recover(plan, natives, fetch)
                if recovered:
                    keys = {c.key for c in recovered}
                    merged = recovered + [c for c in ranked if c.key not in keys]
                    merged = merged[:fetch]
                    if len({c.provider_id for c in merged}) > 1:
                        for position, c in enumerate(merged, start=1):
                            if c.recovered:
                                c.federated_score = 1.0 / (60 + position)
                    ranked = merged
                    outcome = apply_quality(policy_id, ranked, limit, self.quality)
            covering(plan, outcome.selected, _content)
            need = plan.required
            # Plan-covering rows first; each group keeps the fused order (sorting the covering
            # rows by raw match count measured worse on LoCoMo-R: common words inflate counts).
            outcome.selected = sorted(
                outcome.selected, key=lambda c: 0 if need and c.coverage >= need else 1
            )
            recovery = RecoveryReport(
                kind=plan.kind,
                terms=plan.terms,
                required=plan.required,
                covered=any(c.coverage >= need for c in outcome.selected) if need else False,
                ran=ran,
                recovered=sum(1 for c in outcome.selected if c.recovered),
            )
        return self._result(q, mode, limit, outcome, answers, ranked, recovered, recovery)

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
    ) -> RecallResult:
        """Sync twin of :meth:`asearch`."""
        return self._run(
            self.asearch(
                query,
                limit=limit,
                mode=mode,
                space_ids=space_ids,
                category=category,
                source=source,
                intent=intent,
                policy=policy,
            )
        )

    def _readable_sync(self, space_ids: Sequence[str] | None) -> list[SpaceRecord]:
        if space_ids is None:
            return [s for s in self._list_sync(active=True) if s.provider_registered]
        if isinstance(space_ids, str) or not isinstance(space_ids, Sequence):
            raise InvalidInputError("space_ids must be a list of Memory Space ids")
        wanted = list(dict.fromkeys(_space_id(s) for s in space_ids))
        if not wanted:
            raise InvalidInputError("space_ids must name at least one space (or be None for all)")
        spaces = {s.id: s for s in self._list_sync()}
        missing = [s for s in wanted if s not in spaces]
        if missing:
            raise NotFoundError(
                f"no Memory Space {missing[0]!r}; list them with spaces.list_spaces()"
            )
        return [spaces[s] for s in wanted]

    async def _query_space(
        self, order: int, record: SpaceRecord, request: ProviderSearchRequest
    ) -> tuple[SpaceRecord, SourceStatus, str | None, list[Candidate]]:
        provider = self._providers.get(record.provider_id)
        if provider is None:
            return (record, "unavailable", "unavailable: provider is not registered", [])
        descriptor = provider.descriptor
        if not descriptor.capabilities.search:
            return (record, "unsupported", "search is not supported by this provider", [])
        try:
            answer = await asyncio.wait_for(
                provider.search(await self._abinding(record), request), timeout=self.timeout
            )
        except TimeoutError:
            return (
                record,
                "unavailable",
                f"unavailable: no answer within {int(self.timeout * 1000)} ms",
                [],
            )
        except Exception as exc:
            message = " ".join(str(exc).split())[:300] or type(exc).__name__
            return (record, "unavailable", f"unavailable: {message}", [])
        normalized = descriptor.score_semantics == "normalized"
        found: list[Candidate] = []
        for rank, row in enumerate(answer.results[: request.limit], start=1):
            if not isinstance(row, Insight):
                continue
            found.append(
                Candidate(
                    row=row,
                    space_id=record.id,
                    provider_id=descriptor.id,
                    rank=rank,
                    order=order,
                    normalized=normalized,
                    score=row.score,
                )
            )
        return (record, "ready" if found else "empty", answer.hint, found)

    async def _recover(
        self,
        plan: CoveragePlan,
        natives: list[tuple[int, SpaceRecord]],
        fetch: int,
    ) -> list[Candidate]:
        request = ProviderSearchRequest(query=plan.recovery_query, mode="keyword", limit=fetch)
        answers = await asyncio.gather(
            *(self._query_space(order, record, request) for order, record in natives),
            return_exceptions=True,
        )
        found: list[Candidate] = []
        for answer in answers:
            if isinstance(answer, BaseException):
                continue
            found.extend(answer[3])
        covering(plan, found, _content)
        keep = [c for c in found if c.coverage >= plan.required]
        keep.sort(key=lambda c: (-c.coverage, -(c.score if c.score is not None else 0.0)))
        for c in keep:
            c.recovered = True
        return keep[:fetch]

    def _result(
        self,
        query: str,
        mode: str,
        limit: int,
        outcome: Any,
        answers: list[tuple[SpaceRecord, SourceStatus, str | None, list[Candidate]]],
        ranked: list[Candidate],
        recovered: list[Candidate],
        recovery: RecoveryReport,
    ) -> RecallResult:
        by_space: dict[str, list[Candidate]] = {}
        seen: set[tuple[str, str]] = set()
        for _, _, _, found in answers:
            for c in found:
                by_space.setdefault(c.space_id, []).append(c)
                seen.add(c.key)
        for c in recovered:
            if c.key not in seen:
                by_space.setdefault(c.space_id, []).append(c)
        for group in by_space.values():
            for c in group:
                if c.reason is None:
                    tier, norm, reason = classify_score(c.score, c.normalized, self.quality)
                    c.tier = tier or ("low" if reason != "invalid-score" else None)
                    c.normalized_score, c.reason = norm, reason
        sources: list[SourceReport] = []
        for record, status, hint, found in answers:
            provider = self._providers.get(record.provider_id)
            group = by_space.get(record.id, [])
            sources.append(
                SourceReport(
                    space_id=record.id,
                    name=record.name,
                    provider_id=record.provider_id,
                    provider_label=provider.descriptor.label if provider else record.provider_id,
                    mode=mode,
                    status=status,
                    item_count=len(found),
                    hint=hint,
                    quality=quality_stats(
                        group, outcome.selected, outcome.policy_id, outcome.fallback_from
                    )
                    if status in ("ready", "empty")
                    else None,
                )
            )
        multi = len({c.provider_id for c in ranked}) > 1
        rows: list[Insight] = []
        for c in outcome.selected:
            record = next(r for r, _, _, _ in answers if r.id == c.space_id)
            provider = self._providers.get(record.provider_id)
            rows.append(
                c.row.model_copy(
                    update={
                        "normalized_score": c.normalized_score,
                        "relevance_tier": c.tier,
                        "federated_score": c.federated_score if multi else None,
                        "space_id": record.id,
                        "space_name": record.name,
                        "provider_id": record.provider_id,
                        "capabilities": provider.descriptor.capabilities.names()
                        if provider
                        else [],
                        "matched_via": c.row.matched_via
                        or ("keyword-recovery" if c.recovered else None),
                    }
                )
            )
        hint = None
        if not answers:
            hint = "no active Memory Space to search; remember something or activate a space"
        elif not rows:
            hint = "no memory passed the quality policy for this query"
        return RecallResult(
            query=query,
            mode=mode,
            limit=limit,
            policy_id=outcome.policy_id,
            fallback_from=outcome.fallback_from,
            results=rows,
            sources=sources,
            recovery=recovery,
            hint=hint,
        )

    # ------------------------------------------------------------------ writes

    def _require(self, record: SpaceRecord, capability: str) -> MemoryProvider:
        provider = self._providers.get(record.provider_id)
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

    async def _receipt(
        self, record: SpaceRecord, raw: Any, action: str, *, object_id: str | None = None
    ) -> MemoryReceipt:
        raw_dict = dict(raw) if isinstance(raw, Mapping) else {"value": repr(raw)[:200]}
        rid = object_id or (str(raw_dict["id"]) if raw_dict.get("id") is not None else None)
        if is_committed(raw_dict):
            activated = False
            if not record.active:
                activated = await asyncio.to_thread(self._activate_sync, record.id)
            duplicate = bool(raw_dict.get("duplicate"))
            return MemoryReceipt(
                status="committed",
                message=(
                    f"Already stored in {record.id!r}."
                    if duplicate
                    else f"{action.capitalize()} committed in {record.id!r}."
                ),
                changed=not duplicate,
                revision=rid or "",
                space_id=record.id,
                id=rid,
                completion="committed",
                activated=activated,
                provider_receipt=raw_dict,
            )
        if is_pending(raw_dict):
            return MemoryReceipt(
                status="skipped",
                message=(
                    f"The provider accepted the {action} for later processing; it is not a "
                    "committed write yet."
                ),
                changed=False,
                revision=rid or "",
                space_id=record.id,
                id=rid,
                completion="pending",
                provider_receipt=raw_dict,
            )
        return MemoryReceipt(
            status="failed",
            message=f"The provider did not commit the {action}; nothing was stored.",
            changed=False,
            revision=rid or "",
            space_id=record.id,
            id=rid,
            completion="none",
            provider_receipt=raw_dict,
        )

    def _failed(self, record: SpaceRecord, action: str, exc: Exception) -> MemoryReceipt:
        message = " ".join(str(exc).split())[:300] or type(exc).__name__
        return MemoryReceipt(
            status="failed",
            message=f"{action.capitalize()} failed in {record.id!r}: {message}",
            changed=False,
            revision="",
            space_id=record.id,
            completion="none",
        )

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
        """Store one memory. Without ``space_id`` exactly one active space must exist (an empty
        catalog gets the native ``default`` space). A committed write activates the space.
        The kernel is asked first (Memory Spaces write)."""
        self.kernel.admit("memory_spaces", "write")
        item = _item(content, category, importance, tags, entities, source, metadata)
        record = await asyncio.to_thread(self._target_sync, space_id, "remember")
        provider = self._require(record, "remember")
        try:
            raw = await provider.remember(await self._abinding(record), item)
        except _NOT_PROVIDER_FAILURES:
            raise
        except Exception as exc:
            return self._failed(record, "remember", exc)
        return await self._receipt(record, raw, "remember")

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
        """Sync twin of :meth:`aremember`."""
        return self._run(
            self.aremember(
                content,
                space_id=space_id,
                category=category,
                importance=importance,
                tags=tags,
                entities=entities,
                source=source,
                metadata=metadata,
            )
        )

    def validate_items(self, items: Sequence[Mapping[str, Any]]) -> list[RememberItem]:
        """Validate remember items (mappings with ``content`` and optional fields) without
        writing anything; raises :class:`InvalidInputError` naming the first bad item."""
        if isinstance(items, (str, Mapping)) or not isinstance(items, Sequence):
            raise InvalidInputError("items must be a list of mappings with a 'content' key")
        if len(items) > MAX_BATCH:
            raise InvalidInputError(f"at most {MAX_BATCH} items per call; split the batch")
        checked: list[RememberItem] = []
        allowed = {"content", "category", "importance", "tags", "entities", "source", "metadata"}
        for index, raw_item in enumerate(items):
            if not isinstance(raw_item, Mapping):
                raise InvalidInputError(f"items[{index}] must be a mapping with 'content'")
            extra = set(raw_item) - allowed
            if extra:
                raise InvalidInputError(
                    f"items[{index}] has unknown keys {', '.join(sorted(extra))}; allowed: "
                    f"{', '.join(sorted(allowed))}"
                )
            try:
                checked.append(
                    _item(
                        raw_item.get("content"),
                        raw_item.get("category", "general"),
                        raw_item.get("importance", 3),
                        raw_item.get("tags"),
                        raw_item.get("entities"),
                        raw_item.get("source", "agent"),
                        raw_item.get("metadata"),
                    )
                )
            except InvalidInputError as exc:
                raise InvalidInputError(f"items[{index}]: {exc.message}") from None
        return checked

    async def aremember_many(
        self, items: Sequence[Mapping[str, Any]], *, space_id: str | None = None
    ) -> list[MemoryReceipt]:
        """Store several memories in one provider call; one receipt per item, in order.

        Each item is a mapping with ``content`` and optionally ``category``, ``importance``,
        ``tags``, ``entities``, ``source``, ``metadata``. Every item is validated before
        anything is written. The kernel is asked first (Memory Spaces write).
        """
        self.kernel.admit("memory_spaces", "write")
        checked = self.validate_items(items)
        if not checked:
            return []
        record = await asyncio.to_thread(self._target_sync, space_id, "remember")
        provider = self._require(record, "remember")
        binding = await self._abinding(record)
        try:
            raws = await provider.remember_many(binding, checked)
        except _NOT_PROVIDER_FAILURES:
            raise
        except Exception as exc:
            return [self._failed(record, "remember", exc) for _ in checked]
        receipts = []
        for raw in raws:
            receipt = await self._receipt(record, raw, "remember")
            if receipt.activated:
                record = record.model_copy(update={"active": True})
            receipts.append(receipt)
        return receipts

    def remember_many(
        self, items: Sequence[Mapping[str, Any]], *, space_id: str | None = None
    ) -> list[MemoryReceipt]:
        """Sync twin of :meth:`aremember_many`."""
        return self._run(self.aremember_many(items, space_id=space_id))

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
        """Add a typed edge (temporal, semantic, causal, entity) with a weight in 0..1.

        The kernel is asked first (Memory Spaces write)."""
        self.kernel.admit("memory_spaces", "write")
        src = _text(source_id, "source_id", limit=MAX_MEMORY_ID_CHARS)
        dst = _text(target_id, "target_id", limit=MAX_MEMORY_ID_CHARS)
        _choice(type, "type", EDGE_TYPES, optional=False)
        if (
            isinstance(weight, bool)
            or not isinstance(weight, (int, float))
            or not (0 <= weight <= 1)  # before float(): a huge int does not fit one
            or not math.isfinite(weight)
        ):
            raise InvalidInputError("weight must be a number between 0 and 1")
        note = None if reason is None else _text(reason, "reason", limit=1000, required=False)
        record = await asyncio.to_thread(self._target_sync, space_id, "link")
        provider = self._require(record, "link")
        request = LinkRequest(
            source_id=src, target_id=dst, type=type, weight=float(weight), reason=note or None
        )
        try:
            raw = await provider.link(await self._abinding(record), request)
        except _NOT_PROVIDER_FAILURES:
            raise
        except Exception as exc:
            return self._failed(record, "link", exc)
        return await self._receipt(record, raw, "link", object_id=f"{src}->{dst}")

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
        """Sync twin of :meth:`alink`."""
        return self._run(
            self.alink(
                source_id, target_id, space_id=space_id, type=type, weight=weight, reason=reason
            )
        )

    async def aforget(self, memory_id: str, *, space_id: str | None = None) -> MemoryReceipt:
        """Delete one memory by its exact id (soft or hard, as the provider declares).

        The kernel is asked first (Memory Spaces write)."""
        self.kernel.admit("memory_spaces", "write")
        mid = _text(memory_id, "memory_id", limit=MAX_MEMORY_ID_CHARS)
        record = await asyncio.to_thread(self._target_sync, space_id, "forget")
        provider = self._require(record, "forget")
        if provider.descriptor.deletion_mode == "unsupported":
            raise ProviderError(
                f"provider {record.provider_id!r} cannot delete memories", code="unsupported"
            )
        try:
            raw = await provider.forget(await self._abinding(record), mid)
        except _NOT_PROVIDER_FAILURES:
            raise
        except Exception as exc:
            return self._failed(record, "forget", exc)
        return await self._receipt(record, raw, "forget", object_id=mid)

    def forget(self, memory_id: str, *, space_id: str | None = None) -> MemoryReceipt:
        """Sync twin of :meth:`aforget`."""
        return self._run(self.aforget(memory_id, space_id=space_id))

    # ------------------------------------------------------------------ reads

    async def arelated(
        self,
        memory_id: str,
        *,
        space_id: str | None = None,
        depth: int = 2,
        edge: str | None = None,
        limit: int = 20,
    ) -> RelatedResult:
        """Memories reachable from ``memory_id`` within ``depth`` (1-5) edges (Memory Spaces
        recall: the kernel is asked first)."""
        self.kernel.admit("memory_spaces", "recall")
        mid = _text(memory_id, "memory_id", limit=MAX_MEMORY_ID_CHARS)
        _int(depth, "depth", 1, 5)
        _int(limit, "limit", 1, 100)
        _choice(edge, "edge", EDGE_TYPES, optional=True)
        record = await asyncio.to_thread(self._target_sync, space_id, "related")
        provider = self._require(record, "related")
        rows = await provider.related(
            await self._abinding(record),
            RelatedRequest(id=mid, depth=depth, edge=edge, limit=limit),
        )
        return RelatedResult(
            id=mid,
            space_id=record.id,
            depth=depth,
            edge=edge,
            results=[self._decorate(record, r) for r in rows[:limit]],
        )

    def related(
        self,
        memory_id: str,
        *,
        space_id: str | None = None,
        depth: int = 2,
        edge: str | None = None,
        limit: int = 20,
    ) -> RelatedResult:
        """Sync twin of :meth:`arelated`."""
        return self._run(
            self.arelated(memory_id, space_id=space_id, depth=depth, edge=edge, limit=limit)
        )

    def _decorate(self, record: SpaceRecord, row: Insight) -> Insight:
        provider = self._providers.get(record.provider_id)
        return row.model_copy(
            update={
                "space_id": record.id,
                "space_name": record.name,
                "provider_id": record.provider_id,
                "capabilities": provider.descriptor.capabilities.names() if provider else [],
            }
        )

    async def abrowse(
        self,
        space_id: str | None = None,
        *,
        limit: int = 50,
        offset: int = 0,
        category: str | None = None,
    ) -> list[Insight]:
        """Stored memories of one space, newest first."""
        _int(limit, "limit", 1, 500)
        _int(offset, "offset", 0, MAX_BROWSE_OFFSET)
        _choice(category, "category", CATEGORIES, optional=True)
        record = await asyncio.to_thread(self._target_sync, space_id, "browse")
        provider = self._require(record, "browse")
        rows = await provider.browse(
            await self._abinding(record),
            BrowseRequest(limit=limit, offset=offset, category=category),
        )
        return [self._decorate(record, r) for r in rows]

    def browse(
        self,
        space_id: str | None = None,
        *,
        limit: int = 50,
        offset: int = 0,
        category: str | None = None,
    ) -> list[Insight]:
        """Sync twin of :meth:`abrowse`."""
        return self._run(self.abrowse(space_id, limit=limit, offset=offset, category=category))

    async def agraph(self, space_id: str | None = None, *, limit: int = 200) -> GraphProjection:
        """Nodes and typed edges of one space (at most ``limit`` nodes)."""
        _int(limit, "limit", 1, 5000)
        record = await asyncio.to_thread(self._target_sync, space_id, "graph")
        provider = self._require(record, "graph")
        return await provider.graph(await self._abinding(record), limit)

    def graph(self, space_id: str | None = None, *, limit: int = 200) -> GraphProjection:
        """Sync twin of :meth:`agraph`."""
        return self._run(self.agraph(space_id, limit=limit))

    async def aentities(
        self, space_id: str | None = None, *, limit: int = 100
    ) -> list[EntityCount]:
        """The entity index of one space: entity names of its stored memories, most used first.

        Counts how many of the newest ``MAX_ENTITY_SCAN_ROWS`` browsed memories name each
        entity; ties are ordered by name. At most ``limit`` (1-1000) names are returned.
        """
        _int(limit, "limit", 1, 1000)
        counts: dict[str, int] = {}
        for offset in range(0, MAX_ENTITY_SCAN_ROWS, _ENTITY_PAGE):
            rows = await self.abrowse(space_id, limit=_ENTITY_PAGE, offset=offset)
            for row in rows:
                for name in dict.fromkeys(e.strip() for e in row.entities if e.strip()):
                    counts[name] = counts.get(name, 0) + 1
            if len(rows) < _ENTITY_PAGE:
                break
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return [EntityCount(name=name, count=count) for name, count in ranked[:limit]]

    def entities(self, space_id: str | None = None, *, limit: int = 100) -> list[EntityCount]:
        """Sync twin of :meth:`aentities`."""
        return self._run(self.aentities(space_id, limit=limit))

    async def astatus(self, *, probe: bool = True) -> SpacesStatus:
        """Catalog counts and, with ``probe``, every space's provider status (concurrently)."""
        spaces = await self.alist_spaces()
        active = sum(1 for s in spaces if s.active)
        disabled = sum(1 for s in spaces if not s.provider_registered)
        if not probe:
            return SpacesStatus(total=len(spaces), active=active, provider_disabled=disabled)

        async def one(record: SpaceRecord) -> SpaceStatus:
            provider = self._providers.get(record.provider_id)
            if provider is None:
                status = ProviderStatus(healthy=False, error="provider is not registered")
            else:
                try:
                    status = await asyncio.wait_for(
                        provider.status(await self._abinding(record)), timeout=self.timeout
                    )
                except Exception as exc:
                    message = redact(str(exc), places=[str(self.root)]) or "error"
                    status = ProviderStatus(healthy=False, error=message)
            return SpaceStatus(space=record, status=status)

        health = list(await asyncio.gather(*(one(s) for s in spaces)))
        return SpacesStatus(
            total=len(spaces),
            active=active,
            healthy=sum(1 for h in health if h.status.healthy),
            unhealthy=sum(1 for h in health if not h.status.healthy),
            provider_disabled=disabled,
            total_insights=sum(h.status.total_insights or 0 for h in health),
            spaces=health,
        )

    def status(self, *, probe: bool = True) -> SpacesStatus:
        """Sync twin of :meth:`astatus`."""
        return self._run(self.astatus(probe=probe))

    async def ahealth(self, *, max_age: float = 5.0) -> SpacesHealth:
        """Each provider's real state and each catalog space's reachability (a management
        read: the kernel is not asked, and it never raises for a provider or the catalog).

        One status call per registered provider, concurrently, bounded by ``min(timeout_ms,
        2 s)`` and cached ``max_age`` seconds; see :mod:`._provider_health`.
        """
        if isinstance(max_age, bool) or not isinstance(max_age, (int, float)):
            raise InvalidInputError("max_age must be a number of seconds (0 = probe now)")
        error, records = None, []
        try:
            records = await asyncio.to_thread(self._list_sync)
        except MnemonError as exc:  # the database is down: say so, still probe the providers
            error = redact(exc.message, places=[str(self.root)])

        async def binding(provider_id: str) -> SpaceBinding:
            first = next((r for r in records if r.provider_id == provider_id), None)
            return PROBE_BINDING if first is None else await self._abinding(first)

        return await assess(
            self.providers,
            [(r.id, r.provider_id) for r in records],
            binding,
            self._health,
            timeout=min(self.timeout, HEALTH_TIMEOUT_SECONDS),
            max_age=max(0.0, float(max_age)),
            places=[str(self.root)],
            catalog_error=error,
        )

    def health(self, *, max_age: float = 5.0) -> SpacesHealth:
        """Sync twin of :meth:`ahealth`.

        Example:
            >>> report = mem.spaces.health()
            >>> report.unreachable, [p.state for p in report.providers]
            ([], ['healthy'])
        """
        return self._run(self.ahealth(max_age=max_age))


def _content(row: Any) -> str:
    return unicodedata.normalize("NFKC", getattr(row, "content", "") or "")
