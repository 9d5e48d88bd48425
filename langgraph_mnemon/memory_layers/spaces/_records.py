"""What the Memory Spaces service returns: catalog records, receipts and recall reports.

The provider contract (what a provider receives and answers) is in :mod:`._models`; these are
the service's own answers to its callers. Every model is immutable, and its JSON form is part
of the public contract (the control plane and the CLI print it as it is).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from langgraph_mnemon.contracts import FrozenModel, Outcome, Receipt, StepOutcome
from langgraph_mnemon.memory_layers.spaces._fusion import QualityStats
from langgraph_mnemon.memory_layers.spaces._models import (
    ConfigField,
    DeletionMode,
    MemoryRecord,
    ProviderStatus,
    ScoreSemantics,
    WriteMode,
)

__all__ = [
    "ConnectionTest",
    "EntityCount",
    "ProviderInfo",
    "RecallResult",
    "RecoveryReport",
    "RelatedResult",
    "SourceReport",
    "SourceStatus",
    "SpaceReceipt",
    "SpaceRecord",
    "SpaceStatus",
    "SpacesStatus",
]

SourceStatus = Literal["ready", "empty", "unavailable", "unsupported", "query-required"]
"""How one space answered a search: rows, no rows, failed or timed out, no search support."""


class SpaceRecord(FrozenModel):
    """A Memory Space as every read API shows it (secret values never appear here).

    ``secrets_configured`` names the secret keys kept host-side; ``capabilities`` are the
    operations its provider declares, empty with ``provider_registered=False``. ``owner`` is
    who the space belongs to: ``None`` for the local user (every space from before scopes),
    a user key (``user:alice``) or a project key (``project:billing``, shared by its users).
    """

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
    owner: str | None = None


class SpaceReceipt(Receipt):
    """What a catalog mutation did (create, update, activate, merge, sync).

    ``committed`` means the catalog changed as asked; for a multi-step operation (a merge)
    ``outcome`` says how it ended and ``steps`` holds one outcome per step.
    """

    space: SpaceRecord | None = None
    spaces: list[SpaceRecord] = Field(default_factory=list)
    provider_receipt: dict[str, Any] = Field(default_factory=dict)
    outcome: Outcome | None = None
    steps: tuple[StepOutcome, ...] = ()


class SourceReport(FrozenModel):
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


class RecoveryReport(FrozenModel):
    """The coverage plan of a smart search and whether the native recovery pass ran."""

    kind: Literal["exact", "lexical", "none"]
    terms: list[str] = Field(default_factory=list)
    required: int = 0
    covered: bool = False
    ran: bool = False
    recovered: int = 0


class RecallResult(FrozenModel):
    """Federated search output: selected rows (best first) and a report per space."""

    query: str
    mode: str
    limit: int
    policy_id: str
    fallback_from: str | None = None
    results: list[MemoryRecord] = Field(default_factory=list)
    sources: list[SourceReport] = Field(default_factory=list)
    recovery: RecoveryReport | None = None
    hint: str | None = None


class RelatedResult(FrozenModel):
    """Rows reachable from one row through typed edges."""

    id: str
    space_id: str
    depth: int
    edge: str | None = None
    results: list[MemoryRecord] = Field(default_factory=list)


class EntityCount(FrozenModel):
    """One entry of a space's entity index: an entity name and how many memories name it."""

    name: str
    count: int


class SpaceStatus(FrozenModel):
    """Catalog entry plus the provider's status for it (:meth:`MemorySpaces.status`)."""

    space: SpaceRecord
    status: ProviderStatus


class SpacesStatus(FrozenModel):
    """Memory Spaces at a glance."""

    total: int
    active: int
    healthy: int = 0
    unhealthy: int = 0
    provider_disabled: int = 0
    total_insights: int = 0
    spaces: list[SpaceStatus] = Field(default_factory=list)


class ConnectionTest(FrozenModel):
    """The answer of a connection test (:meth:`MemorySpaces.test_connection` / ``test_space``).

    ``ok`` is true when the configuration was accepted and the provider answered its status
    call healthy within the timeout; ``healthy`` is what that status call said (false when it
    never ran). ``error`` says why not, with secret values, URL credentials and host paths
    masked. Nothing is written by a test.
    """

    provider_id: str
    space_id: str | None = None
    ok: bool
    healthy: bool
    error: str | None = None
    latency_ms: float | None = None
    capabilities: list[str] = Field(default_factory=list)
    score_semantics: ScoreSemantics = "unknown"
    write_mode: WriteMode = "exact"
    deletion_mode: DeletionMode = "unsupported"
    local: bool = True
    status: ProviderStatus | None = None


class ProviderInfo(FrozenModel):
    """One provider as the control plane offers it: what it declares and the form it takes.

    ``registered`` is false for a provider that catalog spaces name but this process has not
    registered (its spaces are unreachable until it is configured). ``config_fields`` are the
    settings a new space takes (``kind="secret"`` ones go to ``secrets``, write-only).
    ``removal`` says how its spaces leave the catalog: ``remove`` (native: the data is deleted
    after confirmation) or ``disconnect`` (only the local connection is dropped; the provider's
    data is never deleted from here). ``spaces`` counts the visible spaces on it.
    """

    id: str
    label: str
    registered: bool = True
    local: bool = True
    capabilities: list[str] = Field(default_factory=list)
    score_semantics: ScoreSemantics = "unknown"
    write_mode: WriteMode = "exact"
    deletion_mode: DeletionMode = "unsupported"
    secret_fields: list[str] = Field(default_factory=list)
    config_fields: list[ConfigField] = Field(default_factory=list)
    removal: Literal["remove", "disconnect"] = "disconnect"
    spaces: int = 0
