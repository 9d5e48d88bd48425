"""The host's status report: what ``mem.status()`` returns and ``mnemon status`` prints."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from langgraph_mnemon.contracts import Usage
from langgraph_mnemon.memory_layers.health import HealthReport
from langgraph_mnemon.memory_layers.spaces import ProviderHealth

__all__ = ["DocumentsStatus", "RuntimeStatus", "SpacesOverview", "Status"]


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
    or failing.
    """

    model_config = ConfigDict(frozen=True)

    total: int
    active: int
    providers: list[str]
    provider_disabled: int
    provider_health: list[ProviderHealth] = Field(default_factory=list)
    unreachable: list[str] = Field(default_factory=list)


class Status(BaseModel):
    """What ``mnemon status`` shows: where data lives and how full each tier is."""

    model_config = ConfigDict(frozen=True)

    root: str
    database_url: str
    write_enabled: bool
    strategy: str
    runtime: RuntimeStatus
    documents: DocumentsStatus
    spaces: SpacesOverview | None = None
    # Where chroma Memory Spaces live: "local <folder>" or "http(s)://host:port" (no token);
    # None when the chroma provider is disabled.
    chroma: str | None = None
    # Memory steps that failed inside agent runs (the runs went on without them).
    health: HealthReport = Field(default_factory=HealthReport)
    # False while a memory step is failing, a space is unreachable or the catalog is unread.
    healthy: bool = True
