"""Pydantic models of Mnemos task memory: nodes, fatigue readings, CheckpointNodes, receipts."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field, field_validator

from langgraph_mnemon.contracts import FrozenModel, Receipt

__all__ = [
    "ADDABLE_NODE_TYPES",
    "DECAY_EXEMPT_TYPES",
    "EVICTION_POLICY",
    "FATIGUE_STATES",
    "NODE_TYPES",
    "CheckpointReceipt",
    "CheckpointRecord",
    "ConsolidationResult",
    "ContextWindow",
    "CurationReceipt",
    "DerivationResult",
    "EvictionPolicy",
    "FatigueReading",
    "FatigueResponse",
    "FatigueState",
    "GitState",
    "MnemoNode",
    "NodeStatus",
    "NodeSummary",
    "NodeType",
    "RecentFile",
    "SeenMessages",
    "TaskOverview",
    "TaskSummary",
    "WindowSource",
]

NodeType = Literal[
    "goal", "constraint", "context", "working", "result", "skill", "checkpoint", "handoff"
]
NodeStatus = Literal["active", "compressed", "evicted"]
EvictionPolicy = Literal["never", "evictable", "compress_first"]
FatigueState = Literal["FLOW", "COMPRESS", "PRE_SLEEP", "REM", "EMERGENCY"]
WindowSource = Literal["setting", "model profile", "given", "default"]
"""Where a reading's context window came from: ``mnemos.context_window`` (``setting``), the
calling model's ``profile["max_input_tokens"]``, a number the caller passed (``given``), or
``mnemos.context_window_tokens`` (``default``)."""

NODE_TYPES: tuple[NodeType, ...] = (
    "goal",
    "constraint",
    "context",
    "working",
    "result",
    "skill",
    "checkpoint",
    "handoff",
)
ADDABLE_NODE_TYPES: tuple[NodeType, ...] = (
    "goal",
    "constraint",
    "context",
    "working",
    "result",
    "skill",
    "handoff",
)
"""Types ``add_node`` accepts; CheckpointNodes are written by ``checkpoint()`` and the saver."""

EVICTION_POLICY: dict[str, EvictionPolicy] = {
    "goal": "never",
    "constraint": "never",
    "context": "evictable",
    "working": "compress_first",
    "result": "compress_first",
    "skill": "compress_first",
    "checkpoint": "never",
    "handoff": "never",
}
DECAY_EXEMPT_TYPES: frozenset[str] = frozenset(
    t for t, policy in EVICTION_POLICY.items() if policy == "never"
)
FATIGUE_STATES: tuple[FatigueState, ...] = ("FLOW", "COMPRESS", "PRE_SLEEP", "REM", "EMERGENCY")


class MnemoNode(FrozenModel):
    """One node of a task's memory graph."""

    id: str
    task_id: str
    type: NodeType
    content: str
    summary: str | None = None
    weight: float = 1.0
    status: NodeStatus = "active"
    origin: str = "agent_generated"
    confidence: float = 1.0
    scope_tags: tuple[str, ...] = ()
    created_at: datetime
    last_accessed: datetime
    access_count: int = 0
    links: tuple[str, ...] = Field(default=(), description="Ids of nodes this one links to.")

    @property
    def eviction_policy(self) -> EvictionPolicy:
        """``never``, ``evictable`` or ``compress_first``, by type."""
        return EVICTION_POLICY[self.type]

    @property
    def text(self) -> str:
        """The content, or the summary once compressed."""
        return self.content or self.summary or ""


class ConsolidationResult(FrozenModel):
    """What one micro-consolidation pass did."""

    compressed: int
    evicted: int
    decayed: int
    compressed_ids: tuple[str, ...] = ()
    evicted_ids: tuple[str, ...] = ()


class DerivationResult(FrozenModel):
    """What one derivation pass did to a task's nodes (``Mnemos.derive``)."""

    created: int = 0
    updated: int = 0
    retired: int = Field(0, description="Derived nodes superseded or beyond their type's cap.")
    created_ids: tuple[str, ...] = ()


class CurationReceipt(Receipt):
    """Receipt of ``Mnemos.curate()`` (the ``mnemon_task`` tool): the model's own node.

    ``status="skipped"`` (``changed=False``) when the same goal or constraint is active already;
    ``node`` is then that node. ``superseded`` lists the goals a new goal compressed.
    ``revision`` is the id of ``node``.
    """

    action: Literal["set_goal", "add_constraint", "record_result", "mark_done"]
    node: MnemoNode
    superseded: tuple[str, ...] = ()


class ContextWindow(FrozenModel):
    """The window token use is measured against, and where it came from.

    Example:
        >>> ContextWindow(tokens=8_000, source="model profile").label
        '8,000 tokens (model profile)'
    """

    tokens: int = Field(ge=1, le=100_000_000)
    source: WindowSource

    @property
    def origin(self) -> str:
        """Where the window came from, as the state messages say it."""
        return _SOURCE_LABELS[self.source]

    @property
    def label(self) -> str:
        """The window as the state messages name it."""
        return f"{self.tokens:,} tokens ({self.origin})"


_SOURCE_LABELS: dict[str, str] = {
    "setting": "mnemos.context_window",
    "model profile": "model profile",
    "given": "given by the caller",
    "default": "default mnemos.context_window_tokens",
}


class FatigueReading(FrozenModel):
    """Four observable dimensions, their weighted composite and the resulting state.

    ``state`` is the composite's state raised to ``token_floor``, the floor token use alone
    reached (``MnemosConfig.token_floors``; None below the first floor, and in readings read
    back from the fatigue log, which does not store it). ``token_utilization`` is
    ``tokens_used`` over ``context_window``, the window ``window_source`` names.
    """

    task_id: str
    token_utilization: float
    scope_scatter: float
    reread_ratio: float
    error_density: float
    composite: float
    state: FatigueState
    token_floor: FatigueState | None = Field(
        None, description="The state token use alone reached (PRE_SLEEP, REM, EMERGENCY)."
    )
    tool_calls: int = Field(description="Tool calls in the window the reading used.")
    tokens_used: int | None = None
    context_window: int
    window_source: WindowSource = Field(
        "default", description="Where ``context_window`` came from (see :data:`WindowSource`)."
    )
    tokens_estimated: bool = False
    computed_at: datetime

    @property
    def window(self) -> ContextWindow:
        """``context_window`` with its source."""
        return ContextWindow(tokens=self.context_window, source=self.window_source)


class RecentFile(FrozenModel):
    """A file the task touched recently: how often it was edited and read."""

    path: str
    edits: int = Field(0, ge=0)
    reads: int = Field(0, ge=0)


class GitState(FrozenModel):
    """The work tree at checkpoint time; ``untracked`` lists new files git does not track yet."""

    branch: str | None = None
    uncommitted: tuple[str, ...] = ()
    staged: tuple[str, ...] = ()
    untracked: tuple[str, ...] = ()


class TaskSummary(FrozenModel):
    """The typed summary of a task: what a CheckpointNode stores and resume renders.

    This is also the shape of the Mnemos state a LangGraph run may carry (by default under the
    state key ``"mnemos"``): the checkpointer materialises it into the CheckpointNode of every
    checkpoint it stores.
    """

    goal: str | None = None
    constraints: tuple[str, ...] = ()
    results: tuple[str, ...] = ()
    current_subgoal: str | None = None
    working_memory: str | None = None
    narrative: str | None = None
    recent_files: tuple[RecentFile, ...] = ()
    git_state: GitState | None = None
    fatigue: float | None = Field(None, ge=0.0, le=1.0)

    @field_validator("constraints", "results", mode="before")
    @classmethod
    def _one_string_is_one_item(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    @property
    def is_empty(self) -> bool:
        """Whether nothing but defaults is set."""
        return self == TaskSummary()


class NodeSummary(FrozenModel):
    """Node counts of a task; ``by_type`` counts active nodes."""

    total: int = 0
    active: int = 0
    compressed: int = 0
    evicted: int = 0
    by_type: dict[str, int] = Field(default_factory=dict)


class CheckpointRecord(FrozenModel):
    """A CheckpointNode: the typed summary of a task at one moment.

    ``source`` is ``"mnemos"`` for ``Mnemos.checkpoint()`` and ``"langgraph"`` for one written
    by ``MnemosSaver`` with a LangGraph checkpoint (``thread_id`` / ``checkpoint_ns`` /
    ``checkpoint_id`` then address that checkpoint). ``has_summary`` is false for a LangGraph
    checkpoint whose run carried no Mnemos state; resume then renders the task's live nodes.
    """

    id: str
    task_id: str
    created_at: datetime
    source: Literal["mnemos", "langgraph"]
    emergency: bool = False
    thread_id: str | None = None
    checkpoint_ns: str | None = None
    checkpoint_id: str | None = None
    step: int | None = None
    fatigue: float | None = None
    fatigue_state: FatigueState | None = None
    has_summary: bool = False
    summary: TaskSummary = Field(default_factory=TaskSummary)
    node_summary: NodeSummary | None = None


class CheckpointReceipt(Receipt):
    """Receipt of ``Mnemos.checkpoint()``.

    ``status="skipped"`` means the cooldown held and ``checkpoint`` is the recent one that was
    kept; ``revision`` is the id of ``checkpoint``.
    """

    checkpoint: CheckpointRecord


class SeenMessages(FrozenModel):
    """Where the last observation of a thread's messages stopped, and its running totals.

    A tending pass given this reads only the messages after it (``Mnemos.maintain(since=)``):
    the message at position ``count - 1`` must still have the id ``last_id``, else the whole
    list is read again (a compacted or rewritten history). The token reading grows from the
    totals instead of a rescan: ``chars`` of every message seen; the newest assistant message
    that reported usage (``usage_id``, ``usage_tokens``) with the characters and messages after
    it (``after_chars``, ``after_count``); ``usage_id`` is ``None`` when the newest assistant
    message reported none (the reading is then ``chars`` estimated).

    :meth:`to_state` / :meth:`from_state` give the JSON form an agent's state carries.

    Example:
        >>> seen = mnemos.maintain("t", messages=msgs).seen
        >>> mnemos.maintain("t", messages=[*msgs, reply], since=seen).seen.count
        3
    """

    last_id: str = Field(min_length=1, max_length=512)
    count: int = Field(ge=1)
    chars: int = Field(ge=0)
    usage_id: str | None = Field(None, max_length=600)
    usage_tokens: int = Field(0, ge=0)
    after_chars: int = Field(0, ge=0)
    after_count: int = Field(0, ge=0)

    def to_state(self) -> dict[str, object]:
        """The JSON form kept in the agent's state (``mnemon_seen``)."""
        return self.model_dump()

    @classmethod
    def from_state(cls, value: object) -> SeenMessages | None:
        """The cursor a state holds; ``None`` (read everything) for a missing or bad value."""
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            return None
        try:
            return cls.model_validate(value)
        except ValueError:  # pydantic's ValidationError: a state from elsewhere, start over
            return None


class FatigueResponse(FrozenModel):
    """What ``Mnemos.maintain()`` measured and did for the fatigue state.

    ``seen``: where this observation stopped (``None`` without messages); give it back as
    ``maintain(since=)`` so the next pass reads only what is new.
    """

    reading: FatigueReading
    actions: tuple[str, ...]
    consolidation: ConsolidationResult | None = None
    checkpoint: CheckpointReceipt | None = None
    handoff: MnemoNode | None = None
    message: str | None = Field(
        None, description="Text to show the agent (warnings at REM and EMERGENCY)."
    )
    seen: SeenMessages | None = None


class TaskOverview(FrozenModel):
    """One task at a glance (``mnemon mnemos status``, the web page's task list).

    ``goal`` names the task (the goal resume shows; ``None`` without an active goal, then the
    task id names it, see :attr:`label`). ``checkpoints`` counts every CheckpointNode;
    ``mnemos_checkpoints`` (``checkpoint()``, fatigue) and ``langgraph_checkpoints`` (one per
    LangGraph super-step, written by ``MnemosSaver``) count them apart, so the many LangGraph
    ones do not hide the few Mnemos ones.
    """

    task_id: str
    nodes: NodeSummary
    checkpoints: int
    last_checkpoint: CheckpointRecord | None = None
    last_fatigue: FatigueReading | None = None
    goal: str | None = None
    mnemos_checkpoints: int = 0
    langgraph_checkpoints: int = 0
    last_mnemos_checkpoint: CheckpointRecord | None = None

    @property
    def label(self) -> str:
        """The goal on one line (at most 80 characters), else the task id."""
        if not self.goal:
            return self.task_id
        text = " ".join(self.goal.split())
        return text if len(text) <= 80 else text[:79] + "…"
