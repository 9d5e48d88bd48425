"""The host's status report: what ``mem.status()`` returns and ``mnemon status`` prints."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from langgraph_mnemon.contracts import Usage
from langgraph_mnemon.memory_layers.health import HealthReport
from langgraph_mnemon.memory_layers.spaces import ProviderHealth
from langgraph_mnemon.storage.db import redact_url

__all__ = [
    "DocumentsStatus",
    "LearningPassRow",
    "LearningStatus",
    "RuntimeStatus",
    "SpacesOverview",
    "Status",
    "host_status",
    "learning_overview",
    "spaces_overview",
]

LEARNING_RECENT = 5
"""The newest passes status lists."""


class RuntimeStatus(BaseModel):
    """Runtime Memory at a glance."""

    model_config = ConfigDict(frozen=True)

    revision: str
    user: Usage
    memory: Usage
    user_entries: int
    memory_entries: int
    locally_archived: int


class DocumentsStatus(BaseModel):
    """Documents at a glance: counts and the active byte budget (rendered UTF-8 bytes)."""

    model_config = ConfigDict(frozen=True)

    revision: str
    active: int
    archived: int
    active_bytes: Usage


class SpacesOverview(BaseModel):
    """Memory Spaces at a glance: the catalog and each provider's real state.

    ``provider_health`` comes from :meth:`MemorySpaces.health` (one bounded status call per
    provider, cached a few seconds); ``unreachable`` lists the spaces whose provider is missing
    or failing. ``dense`` is how the native provider's dense (vector) search runs:
    ``pgvector-hnsw``, ``in-process`` or ``off: <reason>`` (None without a native provider).
    """

    model_config = ConfigDict(frozen=True)

    total: int
    active: int
    providers: list[str]
    provider_disabled: int
    provider_health: list[ProviderHealth] = Field(default_factory=list)
    unreachable: list[str] = Field(default_factory=list)
    dense: str | None = None


class LearningPassRow(BaseModel):
    """One learning pass as status lists it (``learned``: the memories it wrote)."""

    model_config = ConfigDict(frozen=True)

    pass_id: str
    thread_id: str
    finished_at: float
    status: str
    learned: int
    extractor: str


class LearningStatus(BaseModel):
    """The scope's learning passes at a glance.

    ``passes`` counts the recorded passes, ``learned`` the memories written by passes that were
    not undone; ``recent`` lists the newest :data:`LEARNING_RECENT` passes.
    """

    model_config = ConfigDict(frozen=True)

    passes: int = 0
    learned: int = 0
    recent: list[LearningPassRow] = Field(default_factory=list)


class Status(BaseModel):
    """What ``mnemon status`` shows: where data lives and how full each tier is."""

    model_config = ConfigDict(frozen=True)

    # None where the viewer may not see where data lives (a control-plane user who is no admin).
    root: str | None
    database_url: str | None
    write_enabled: bool
    strategy: str
    # None when the tier's database tables cannot be read (the database is down): ``health``
    # names the problem. On files an unreadable tier still raises.
    runtime: RuntimeStatus | None
    documents: DocumentsStatus | None
    spaces: SpacesOverview | None = None
    # The scope's learning passes; None when they cannot be read (``health`` says why).
    learning: LearningStatus | None = None
    # Where chroma Memory Spaces live: "local <folder>" or "http(s)://host:port" (no token);
    # None when the chroma provider is disabled.
    chroma: str | None = None
    # Memory steps that failed inside agent runs (the runs went on without them).
    health: HealthReport = Field(default_factory=HealthReport)
    # False while a memory step is failing, a space is unreachable or the catalog is unread.
    healthy: bool = True


def _runtime_status(runtime: Any) -> RuntimeStatus:
    return RuntimeStatus(
        revision=runtime.revision,
        user=runtime.usage("user"),
        memory=runtime.usage("memory"),
        user_entries=len(runtime.entries("user")),
        memory_entries=len(runtime.entries("memory")),
        locally_archived=len(runtime.archived("memory")) + len(runtime.archived("user")),
    )


def _documents_status(documents: Any) -> DocumentsStatus:
    return DocumentsStatus(
        revision=documents.revision,
        active=len(documents.list("active")),
        archived=len(documents.list("archived")),
        active_bytes=documents.usage(),
    )


def host_status(mem: Any, spaces: SpacesOverview | None) -> Status:
    """The :class:`Status` of a host (or of one of its scoped views) with ``spaces`` read."""
    config = mem.config
    tiers: dict[str, Any] = {}
    for name, read in (("runtime", _runtime_status), ("documents", _documents_status)):
        if not config.layers_in_database:
            tiers[name] = read(getattr(mem, name))  # a damaged file is an error, as it was
            continue
        tiers[name] = None
        with mem.health.guard(f"status:{name}"):  # tables in a database that may be down
            tiers[name] = read(getattr(mem, name))
    learning = None
    with mem.health.guard("status:learning"):  # the passes live in the shared database
        learning = learning_overview(mem.learning)
    report = mem.health.report()
    readable = spaces is not None and None not in tiers.values()
    return Status(
        root=str(mem.root),
        # Status is printed and served: never the database password.
        database_url=redact_url(config.resolved_database_url),
        write_enabled=config.write_enabled,
        strategy=config.strategy,
        runtime=tiers["runtime"],
        documents=tiers["documents"],
        spaces=spaces,
        learning=learning,
        chroma=config.chroma.target(mem.root) if config.chroma.enabled else None,
        health=report,
        healthy=not report.degraded and readable and not spaces.unreachable,  # type: ignore[union-attr]
    )


def learning_overview(learning: Any) -> LearningStatus:
    """The learning part of :class:`Status`: counts and the newest passes of the scope.

    Args:
        learning: the scope's :class:`~langgraph_mnemon.memory_layers.learning.Learning`.

    Returns:
        The :class:`LearningStatus` (zeros when nothing was ever learned; no table is made).
    """
    passes, learned = learning.counts()
    recent = [
        LearningPassRow(
            pass_id=p.pass_id,
            thread_id=p.thread_id,
            finished_at=p.finished_at,
            status=p.status,
            learned=len(p.learned),
            extractor=p.extractor,
        )
        for p in learning.list_passes(limit=LEARNING_RECENT)
    ]
    return LearningStatus(passes=passes, learned=learned, recent=recent)


def spaces_overview(spaces: Any) -> SpacesOverview:
    """The Memory Spaces part of :class:`Status` (no provider is probed)."""
    summary = spaces.status(probe=False)
    health = spaces.health()
    return SpacesOverview(
        total=summary.total,
        active=summary.active,
        providers=sorted(spaces.providers),
        provider_disabled=summary.provider_disabled,
        provider_health=health.providers,
        unreachable=health.unreachable,
        dense=_dense_mode(spaces.providers.get("mnemos")),
    )


def _dense_mode(provider: Any) -> str | None:
    """The native provider's dense search mode (None when it has none to tell)."""
    mode = getattr(provider, "dense_mode", None)
    return mode() if callable(mode) else None
