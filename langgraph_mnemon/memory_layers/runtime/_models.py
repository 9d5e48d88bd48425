"""Runtime Memory models: entries, mutations, maintenance plans, receipts, snapshots, matches.

Importance is :data:`langgraph_mnemon.contracts.Importance` (``critical | normal | low``); its
place on the 1-5 scale of Memory Spaces is :data:`langgraph_mnemon.contracts.IMPORTANCE_LEVELS`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from langgraph_mnemon.contracts import (
    FrozenModel,
    Importance,
    Outcome,
    Receipt,
    StepOutcome,
    Usage,
)

__all__ = [
    "CompactedEntry",
    "MaintenancePlan",
    "MutationAction",
    "PendingEntry",
    "RuntimeEntry",
    "RuntimeMatch",
    "RuntimeMutation",
    "RuntimeReceipt",
    "RuntimeSnapshot",
    "RuntimeTarget",
]

RuntimeTarget = Literal["user", "memory"]
MutationAction = Literal["add", "replace", "remove"]


class RuntimeEntry(FrozenModel):
    """One stored entry. ``branches`` (MEMORY only) scopes it to git branches."""

    content: str
    created_at: str
    updated_at: str
    target: RuntimeTarget
    importance: Importance = "normal"
    branches: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "content": self.content,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "target": self.target,
            "importance": self.importance,
        }
        if self.branches is not None:
            data["branches"] = list(self.branches)
        return data


class RuntimeMutation(FrozenModel):
    """A requested add / replace / remove, as the maintenance primitives take it.

    Example:
        >>> RuntimeMutation(action="add", target="user", content="Prefers tea.").action
        'add'
    """

    action: MutationAction
    target: RuntimeTarget
    content: str | None = None
    old_text: str | None = None
    importance: Importance | None = None
    branches: tuple[str, ...] | None = None


class PendingEntry(FrozenModel):
    """The new content a pending add / replace would write."""

    content: str
    importance: Importance
    branches: tuple[str, ...] | None = None


class MaintenancePlan(FrozenModel):
    """What capacity maintenance needs: the revision, the compactable entries, the pending write.

    ``entries`` excludes the entry being replaced or removed (``excluded``) and the pending
    content. ``budget`` is the byte budget for the compacted entries
    (:func:`compaction_budget`).
    """

    revision: str
    action: MutationAction
    target: RuntimeTarget
    entries: tuple[RuntimeEntry, ...]
    pending: PendingEntry | None
    excluded: RuntimeEntry | None
    used: int
    projected: int
    limit: int
    requires_maintenance: bool
    budget: int


class CompactedEntry(BaseModel):
    """One entry proposed by a compactor. ``source_indexes`` are one-based plan entry indexes."""

    # Not FrozenModel: compaction accepts plain dicts from callers and has always ignored keys
    # it does not know (``compact_and_mutate(..., [{"content": ..., "note": ...}])``).
    model_config = ConfigDict(frozen=True)

    content: str
    importance: Importance = "normal"
    branches: tuple[str, ...] | None = None
    source_indexes: tuple[int, ...] = ()


class RuntimeReceipt(Receipt):
    """Receipt of a Runtime Memory mutation."""

    action: Literal["add", "replace", "remove", "compact"]
    target: RuntimeTarget
    entry_count: int
    usage: Usage
    added: str | None = None
    replaced: dict[str, str] | None = None
    removed: str | None = None
    left_out: tuple[str, ...] = Field(
        default=(),
        description="Compaction only: original entries no longer in hot memory.",
    )
    archived_locally: int = Field(
        default=0, description="How many left-out entries went to runtime/archived/."
    )
    outcome: Outcome = Field(
        default="succeeded",
        description="Maintenance into several places: partial when a step failed (see steps).",
    )
    steps: tuple[StepOutcome, ...] = Field(
        default=(), description="Maintenance only: one per Memory Space and the local archive."
    )


class RuntimeSnapshot(FrozenModel):
    """The model-facing snapshot text and what it was rendered from."""

    text: str
    revision: str
    branch: str | None
    hidden: int


class RuntimeMatch(FrozenModel):
    """One Runtime Memory entry that matched a search.

    ``archived`` is true for an entry that is no longer in USER.md / MEMORY.md (it sits in
    ``runtime/archived/`` since ``archived_at``); ``score`` is the share of the query's words
    it contains (0 < score <= 1).
    """

    target: RuntimeTarget
    content: str
    archived: bool
    score: float
    archived_at: str | None = None
