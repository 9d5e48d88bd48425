"""Argument models of the model-facing tools: one per tool (their JSON schema is what the model
sees). Arguments annotated ``InjectedState`` receive the agent state and are never shown to the
model. The General strategy's route and action inputs are the framework-free ``…Input`` models
of :mod:`langgraph_mnemon.memory_layers.turns`.

The wire names the seed's tools show the model (``memory_body_id``, ``memory_body_ids``,
``target_memory_body_id``, ``source_memory_body_ids``) are the *field* names here, and each model
maps them to the Python name once, as a read-only property (``space_id``, ``space_ids``, ...).
Why not pydantic aliases: LangChain builds the schema it sends the model
(``BaseTool.tool_call_schema``) from the field names and drops the aliases, so an aliased field
would vanish from (or be renamed in) what the model sees.

None of these only adds ``state`` to an ``…Input``: each differs from its View input in a wire
name, a bound or ``extra`` handling, so reusing one would change the schema the model sees.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langgraph.prebuilt import InjectedState
from pydantic import BaseModel, Field, model_validator

from langgraph_mnemon.contracts import CleanStr, FrozenModel
from langgraph_mnemon.memory_layers.turns import RUNTIME_SEARCH_EVIDENCE, EdgeType

__all__ = [
    "DocumentCreateArgs",
    "DocumentManageArgs",
    "DocumentSearchArgs",
    "ForgetArgs",
    "LinkArgs",
    "MemoryBodyCreateArgs",
    "MemoryBodyMergeArgs",
    "MemoryBodyUpdateArgs",
    "NoArgs",
    "RecallArgs",
    "RelatedArgs",
    "RememberArgs",
    "RuntimeMemoryArgs",
    "TaskArgs",
    "ViewActionArgs",
    "ViewRouteArgs",
]

Category = Literal["preference", "decision", "fact", "insight", "context", "general"]


class NoArgs(FrozenModel):
    pass


class RuntimeMemoryArgs(FrozenModel):
    """Change USER.md (the user) or MEMORY.md (the project) in Runtime Memory, or search them
    (action=search with a query; archived entries included, local only)."""

    action: Literal["add", "replace", "remove", "search"]
    target: Literal["user", "memory"]
    query: CleanStr | None = Field(None, description="search only: what to look for.")
    limit: int | None = Field(
        None, ge=1, le=RUNTIME_SEARCH_EVIDENCE[0], description="search only: at most this many."
    )
    content: CleanStr | None = Field(None, description="The entry text (add, replace).")
    old_text: CleanStr | None = Field(
        None, description="A short text found in exactly one entry (replace, remove)."
    )
    importance: Literal["critical", "normal", "low"] | None = None
    branches: list[CleanStr] | None = Field(
        None, description="MEMORY only: git branches the entry applies to; [] for all."
    )


class RememberArgs(FrozenModel):
    """Keep a durable memory in the Memory Spaces (a write worker picks the space)."""

    content: CleanStr
    category: Category = "general"
    importance: int = Field(3, ge=1, le=5)
    tags: list[CleanStr] = Field(default_factory=list, max_length=20)
    entities: list[CleanStr] = Field(default_factory=list, max_length=50)
    memory_body_id: CleanStr | None = None

    @property
    def space_id(self) -> str | None:
        return self.memory_body_id


class TaskArgs(FrozenModel):
    """Keep this task's memory right (it survives a full context): set_goal when the task is
    clear or changes, add_constraint for a rule the user gave, record_result for a finished
    step, mark_done when the task is complete. text is required except for mark_done."""

    action: Literal["set_goal", "add_constraint", "record_result", "mark_done"]
    text: CleanStr | None = Field(
        None,
        min_length=1,
        max_length=2000,
        description="The goal, constraint or result in one or two lines (mark_done: optional).",
    )

    @model_validator(mode="after")
    def _text_when_needed(self) -> TaskArgs:
        if self.action != "mark_done" and not (self.text or "").strip():
            raise ValueError(f"text is required for {self.action} (one or two lines)")
        return self


class DocumentCreateArgs(FrozenModel):
    """Create one project Document (a substantial record: design, ADR, runbook)."""

    title: CleanStr
    content: CleanStr
    description: CleanStr | None = None
    source_paths: list[CleanStr] = Field(default_factory=list)


class RecallArgs(BaseModel):
    """Search long-term memory for durable history or an exact earlier detail. Costs recall
    budget: one query, then at most one materially different refinement per turn."""

    query: CleanStr
    mode: Literal["smart", "keyword", "basic"] = "smart"
    limit: int | None = Field(None, ge=1, le=6)
    memory_body_ids: list[CleanStr] = Field(default_factory=list)
    state: Annotated[dict[str, Any], InjectedState]

    @property
    def space_ids(self) -> list[str]:
        return self.memory_body_ids


class RelatedArgs(BaseModel):
    """Follow links from one memory this turn's recall returned (once per turn)."""

    id: CleanStr
    memory_body_id: CleanStr | None = None
    depth: int = Field(2, ge=1, le=5)
    edge: Literal["temporal", "semantic", "causal", "entity"] | None = None
    state: Annotated[dict[str, Any], InjectedState]

    @property
    def space_id(self) -> str | None:
        return self.memory_body_id


class DocumentSearchArgs(BaseModel):
    """Search project Documents (one search per turn; up to 4 records)."""

    query: CleanStr
    include_archived: bool = False
    limit: int = Field(4, ge=1, le=4)
    state: Annotated[dict[str, Any], InjectedState]


class LinkArgs(FrozenModel):
    """Link two stored memories with a typed, weighted edge (both ids exactly as recalled)."""

    source_id: CleanStr = Field(min_length=1, max_length=200)
    target_id: CleanStr = Field(min_length=1, max_length=200)
    type: EdgeType = "semantic"
    weight: float = Field(0.5, ge=0, le=1)
    reason: CleanStr | None = Field(None, max_length=1000)
    memory_body_id: CleanStr | None = None

    @property
    def space_id(self) -> str | None:
        return self.memory_body_id


class ForgetArgs(FrozenModel):
    """Forget one stored memory by its exact id. Only when the user explicitly asks to forget
    or delete it; never to tidy up on your own."""

    id: CleanStr = Field(min_length=1, max_length=200)
    memory_body_id: CleanStr | None = None

    @property
    def space_id(self) -> str | None:
        return self.memory_body_id


class MemoryBodyCreateArgs(FrozenModel):
    """Create a Memory Space (a named body of durable memories). The persistence strategy
    decides the provider: in manual mode it is fixed, in automatic mode the host validates your
    choice."""

    name: CleanStr = Field(min_length=1, max_length=120)
    description: CleanStr = Field(min_length=1, max_length=500)
    provider_id: CleanStr | None = None
    reason: CleanStr | None = Field(None, max_length=500)
    confidence: float | None = Field(None, ge=0, le=1)


class MemoryBodyUpdateArgs(FrozenModel):
    """Rename, describe, activate or deactivate a Memory Space (its data is always kept)."""

    memory_body_id: CleanStr = Field(min_length=1)
    name: CleanStr | None = Field(None, min_length=1, max_length=120)
    description: CleanStr | None = Field(None, max_length=500)
    active: bool | None = None

    @property
    def space_id(self) -> str:
        return self.memory_body_id


class MemoryBodyMergeArgs(FrozenModel):
    """Copy the memories of native Memory Spaces into a native target (non-destructive: the
    sources keep their data). Without a target, the single other active space is used."""

    target_memory_body_id: CleanStr | None = None
    source_memory_body_ids: list[CleanStr] = Field(min_length=1, max_length=20)
    deactivate_sources: bool = True

    @property
    def target_space_id(self) -> str | None:
        return self.target_memory_body_id

    @property
    def source_space_ids(self) -> list[str]:
        return self.source_memory_body_ids


class DocumentManageArgs(FrozenModel):
    """Create, update or archive a project Document. create needs title and content; update
    needs id and a field to change; archive needs id (the Document moves to the archive)."""

    action: Literal["create", "update", "archive"]
    id: CleanStr | None = None
    title: CleanStr | None = None
    description: CleanStr | None = None
    content: CleanStr | None = None
    source_paths: list[CleanStr] | None = None
    state: Annotated[dict[str, Any], InjectedState]


class ViewRouteArgs(BaseModel):
    """Read memory through a route the current View offers (the MNEMON VIEW ROUTES line), by
    its exact id, with an input matching its inputSchema."""

    route_id: CleanStr = Field(min_length=1)
    input: dict[str, Any]
    state: Annotated[dict[str, Any], InjectedState]


class ViewActionArgs(BaseModel):
    """Change memory through an action the current View offers, by its exact id, with an input
    matching its inputSchema. Only for new user facts or an explicit request to save,
    correct or forget."""

    offer_id: CleanStr = Field(min_length=1)
    input: dict[str, Any]
    state: Annotated[dict[str, Any], InjectedState]
