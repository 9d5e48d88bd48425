"""Request and response models of the control-plane HTTP API.

Request bodies are strict (JSON types as declared) and forbid unknown keys; query models
forbid unknown parameters and convert the query-string text to the declared type. Value
ranges the layers already check (lengths, enumerations, ids) are left to the layers so there
is one rule per concept; the models fix the shape.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from langgraph_mnemon.contracts import Importance
from langgraph_mnemon.host import Status
from langgraph_mnemon.memory_layers.documents import DocumentRecord
from langgraph_mnemon.memory_layers.mnemos import (
    CheckpointRecord,
    FatigueReading,
    MnemoNode,
    TaskOverview,
)
from langgraph_mnemon.memory_layers.space_models import SEARCH_MODES, Insight
from langgraph_mnemon.memory_layers.spaces import EntityCount, SpaceRecord

SearchMode = Literal[SEARCH_MODES]  # type: ignore[valid-type]


class Body(BaseModel):
    """Base of request bodies: JSON types exactly as declared, no unknown keys."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Query(BaseModel):
    """Base of query-string models: no unknown parameters; text converted to the types."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Empty(Body):
    """No body (an empty body or ``{}``)."""


# --- requests -------------------------------------------------------------------------------


class RuntimeWrite(Body):
    """A Runtime Memory add / replace / remove (``old_text`` names the entry to change)."""

    action: Literal["add", "replace", "remove"]
    target: Literal["user", "memory"]
    content: str | None = None
    old_text: str | None = None
    importance: Importance | None = None


class DocumentsQuery(Query):
    """Which Documents to list."""

    status: Literal["active", "archived", "all"] = "all"


class DocumentSearchQuery(Query):
    """A Documents search; an empty ``q`` lists the most recently updated."""

    q: str = ""
    include_archived: bool = False
    limit: int = Field(4, ge=1, le=50)


class DocumentCreate(Body):
    """A new active Document (``source_paths`` are workspace files it was derived from)."""

    title: str
    content: str
    description: str | None = None
    source_paths: list[str] | None = None


class SpaceCreate(Body):
    """A new Memory Space (inactive until its first write)."""

    name: str
    description: str = ""
    provider_id: str | None = None


class SpaceActivation(Body):
    """Whether a Memory Space takes part in recall and default writes."""

    active: bool


class ContentQuery(Query):
    """A page of stored memories, newest first (``category`` empty = any)."""

    limit: int = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0)
    category: str = ""


class EntitiesQuery(Query):
    """How many entity names to return."""

    limit: int = Field(100, ge=1, le=1000)


class GraphQuery(Query):
    """How many nodes the graph projection may hold."""

    limit: int = Field(200, ge=1, le=5000)


class MemoryCreate(Body):
    """One memory to store in a space (importance 1-5)."""

    content: str
    category: str = "general"
    importance: int = 3
    tags: list[str] | None = None
    entities: list[str] | None = None


class RecallRequest(Body):
    """A direct federated search (no turn envelope); ``space_ids`` empty = active spaces."""

    query: str
    space_ids: list[str] | None = None
    limit: int | None = Field(None, ge=1, le=50)
    mode: SearchMode = "smart"


class AgentQueryRequest(Body):
    """A question answered from direct-search evidence only."""

    question: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)
    ]
    space_ids: list[str] | None = None


class NodesQuery(Query):
    """How many task nodes to return (heaviest first; default all)."""

    limit: int | None = Field(None, ge=1, le=100_000)


class FatigueQuery(Query):
    """How many logged fatigue readings to return."""

    limit: int = Field(50, ge=1, le=1000)


# --- responses ------------------------------------------------------------------------------


class StatusView(Status):
    """Host status plus the control-plane switches and the package version."""

    remote_access: str
    version: str


class RuntimeEntryView(BaseModel):
    """One Runtime Memory entry; ``index`` is its 1-based position in its file."""

    index: int
    content: str
    importance: Importance
    branches: list[str] | None = None
    created_at: str
    updated_at: str


class RuntimeTargetView(BaseModel):
    """USER or MEMORY: entries and UTF-8 bytes used against the limit."""

    entries: list[RuntimeEntryView]
    used: int
    limit: int


class RuntimeView(BaseModel):
    """Both Runtime Memory files at one revision."""

    revision: str
    user: RuntimeTargetView
    memory: RuntimeTargetView


class DocumentList(BaseModel):
    """Document records, most recently updated first."""

    documents: list[DocumentRecord]


class DocumentView(BaseModel):
    """One Document: its record and its body."""

    record: DocumentRecord
    content: str


class SpaceList(BaseModel):
    """The Memory Space catalog (provider secrets are never included)."""

    spaces: list[SpaceRecord]
    active_count: int
    total: int


class InsightList(BaseModel):
    """Stored memories of a space."""

    items: list[Insight]


class EntityList(BaseModel):
    """Entity names of a space with how many memories name them."""

    entities: list[EntityCount]


class TaskList(BaseModel):
    """Every Mnemos task at a glance."""

    tasks: list[TaskOverview]


class NodeList(BaseModel):
    """Nodes of one task, heaviest first (every status)."""

    nodes: list[MnemoNode]


class FatigueView(BaseModel):
    """The fatigue of a task now (not logged) and its logged readings, newest first."""

    current: FatigueReading
    history: list[FatigueReading]


class CheckpointList(BaseModel):
    """CheckpointNodes of a task, newest first."""

    checkpoints: list[CheckpointRecord]


class ResumeView(BaseModel):
    """The resume Markdown of a task's newest CheckpointNode."""

    task_id: str
    resume: str


class ErrorBody(BaseModel):
    """Every error response: a stable code and a message saying what to do."""

    error: str
    message: str
