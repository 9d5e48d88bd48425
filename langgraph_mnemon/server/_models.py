"""Request and response models of the control-plane HTTP API.

Request bodies are strict (JSON types as declared) and forbid unknown keys; query models
forbid unknown parameters and convert the query-string text to the declared type. Value
rules the layers check (non-empty text, lengths, ids, enumerations) stay in the layers, so there
is one rule per concept; the models *state* them in the JSON schema (built from the layers' own
constants: :mod:`._rules`), so a schema-valid request is never refused with 422 for a rule the
OpenAPI document did not state.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    field_validator,
)
from pydantic.json_schema import SkipJsonSchema

from langgraph_mnemon.contracts import Importance
from langgraph_mnemon.host import Status
from langgraph_mnemon.memory_layers.documents import DocumentRecord
from langgraph_mnemon.memory_layers.learning import LearnPass
from langgraph_mnemon.memory_layers.mnemos import (
    CheckpointRecord,
    FatigueReading,
    MnemoNode,
    TaskOverview,
)
from langgraph_mnemon.memory_layers.spaces import (
    CATEGORIES,
    SEARCH_MODES,
    EntityCount,
    MemoryRecord,
    ProviderInfo,
    SpaceRecord,
)

from . import _rules as r

SearchMode = Literal[SEARCH_MODES]  # type: ignore[valid-type]
Category = Literal[CATEGORIES]  # type: ignore[valid-type]
AnyCategory = Literal[("", *CATEGORIES)]  # type: ignore[valid-type]

# Text fields as each layer checks them (the schema states the rule; the layer enforces it).
EntryText = Annotated[str, WithJsonSchema(r.runtime_entry())]
DocTitle = Annotated[str, WithJsonSchema(r.document_title())]
DocDescription = Annotated[str, WithJsonSchema(r.document_description())]
DocBody = Annotated[str, WithJsonSchema(r.document_body())]
SourcePath = Annotated[str, WithJsonSchema(r.source_path())]
SpaceName = Annotated[str, WithJsonSchema(r.space_name())]
SpaceDescription = Annotated[str, WithJsonSchema(r.space_description())]
MemoryText = Annotated[str, WithJsonSchema(r.memory_content())]
Tag = Annotated[str, WithJsonSchema(r.tag())]
Entity = Annotated[str, WithJsonSchema(r.entity())]
RecallQuery = Annotated[str, WithJsonSchema(r.recall_query())]
SpaceId = Annotated[str, WithJsonSchema(r.space_id())]
ProviderId = Annotated[str, WithJsonSchema(r.provider_id())]
ProviderConfig = Annotated[dict[str, Any], WithJsonSchema(r.provider_config())]
SecretMap = Annotated[dict[str, str], WithJsonSchema(r.provider_secrets())]
Confirm = Annotated[str, WithJsonSchema(r.confirm())]
ThreadId = Annotated[str, WithJsonSchema(r.thread_id())]
MAX_LEARN_MESSAGES = 5_000
"""The most messages one learn request may carry (a pass reads only the new ones)."""


def _at_least_one_space(value: list[str] | None) -> list[str] | None:
    # An empty list is a mistake (it would search nothing), not "every space".
    if value is not None and not value:
        raise ValueError(
            "must name at least one Memory Space; omit space_ids to search the active spaces"
        )
    return value


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
    """A Runtime Memory add / replace / remove (``old_text`` names the entry to change).

    ``add`` needs ``content``, ``replace`` needs ``old_text`` and ``content``, ``remove`` needs
    ``old_text``.
    """

    model_config = ConfigDict(json_schema_extra={"allOf": r.runtime_actions()})

    action: Literal["add", "replace", "remove"]
    target: Literal["user", "memory"]
    content: EntryText | SkipJsonSchema[None] = None
    old_text: EntryText | SkipJsonSchema[None] = None
    importance: Importance | SkipJsonSchema[None] = None


class DocumentsQuery(Query):
    """Which Documents to list."""

    status: Literal["active", "archived", "all"] = "all"


class DocumentSearchQuery(Query):
    """A Documents search; an empty ``q`` lists the most recently updated."""

    q: Annotated[str, Field(max_length=r.DOCUMENT_QUERY_CHARS)] = ""
    include_archived: bool = False
    limit: int = Field(4, ge=1, le=r.DOCUMENT_SEARCH_LIMIT)


class DocumentCreate(Body):
    """A new active Document (``source_paths`` are workspace files it was derived from)."""

    title: DocTitle
    content: DocBody
    description: DocDescription | SkipJsonSchema[None] = None
    source_paths: (
        Annotated[list[SourcePath], Field(max_length=r.MAX_SOURCE_PATHS)] | SkipJsonSchema[None]
    ) = None


class SpaceCreate(Body):
    """A new Memory Space (inactive until its first write) on a provider: ``config`` as the
    provider's ``config_fields`` describe it (GET providers), credentials in ``secrets``
    (stored host-side, never returned)."""

    name: SpaceName
    description: SpaceDescription = ""
    provider_id: ProviderId | SkipJsonSchema[None] = None
    config: ProviderConfig | SkipJsonSchema[None] = None
    secrets: SecretMap | SkipJsonSchema[None] = None


class SpaceChange(Body):
    """Changes to a Memory Space; every field is optional (absent = unchanged).

    ``config`` is merged into the stored settings (a key set to null removes it) and checked
    again by the provider. ``secrets`` are write-only: a value sets its key, ``""`` removes
    it, keys not named stay; responses show only ``secrets_configured``.
    """

    name: SpaceName | SkipJsonSchema[None] = None
    description: SpaceDescription | SkipJsonSchema[None] = None
    active: bool | SkipJsonSchema[None] = None
    config: ProviderConfig | SkipJsonSchema[None] = None
    secrets: SecretMap | SkipJsonSchema[None] = None


class ConnectionTestRequest(Body):
    """A configuration to test on a provider (nothing is stored; secrets are used once)."""

    config: ProviderConfig | SkipJsonSchema[None] = None
    secrets: SecretMap | SkipJsonSchema[None] = None


class Confirmation(Body):
    """A dangerous catalog action, confirmed by typing the space id again."""

    confirm: Confirm


class Removal(Body):
    """Removing a native space: ``confirm`` (the space id typed again) in the body or in the
    query string."""

    confirm: Confirm | SkipJsonSchema[None] = None


class RemovalQuery(Query):
    """``confirm`` (the space id typed again) when the DELETE carries no body."""

    confirm: Annotated[str, Field(max_length=r.CONFIRM_CHARS)] | SkipJsonSchema[None] = None


class SpaceActivation(Body):
    """Whether a Memory Space takes part in recall and default writes."""

    active: bool


class ContentQuery(Query):
    """A page of stored memories, newest first (``category`` empty = any)."""

    limit: int = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0, le=r.MAX_BROWSE_OFFSET)
    category: AnyCategory = ""


class EntitiesQuery(Query):
    """How many entity names to return."""

    limit: int = Field(100, ge=1, le=1000)


class GraphQuery(Query):
    """How many nodes the graph projection may hold."""

    limit: int = Field(200, ge=1, le=5000)


class MemoryCreate(Body):
    """One memory to store in a space (importance 1-5)."""

    content: MemoryText
    category: Category = "general"
    importance: int = Field(3, ge=1, le=5)
    tags: Annotated[list[Tag], Field(max_length=r.MAX_TAGS)] | SkipJsonSchema[None] = None
    entities: Annotated[list[Entity], Field(max_length=r.MAX_ENTITIES)] | SkipJsonSchema[None] = (
        None
    )


class RecallRequest(Body):
    """A direct federated search (no turn envelope); ``space_ids`` empty = active spaces."""

    query: RecallQuery
    space_ids: (
        Annotated[list[SpaceId], Field(json_schema_extra={"minItems": 1})] | SkipJsonSchema[None]
    ) = None
    limit: Annotated[int, Field(ge=1, le=50)] | SkipJsonSchema[None] = None
    mode: SearchMode = "smart"
    # None: no cut (the depth asked); a policy id applies that quality cut to the ranking.
    policy: Literal["strict-v1", "balanced-v1", "exhaustive-v1"] | SkipJsonSchema[None] = None

    _spaces = field_validator("space_ids")(_at_least_one_space)


class AgentQueryRequest(Body):
    """A question answered from direct-search evidence only."""

    question: Annotated[
        str,
        StringConstraints(strip_whitespace=True, min_length=1, max_length=r.MAX_QUESTION_CHARS),
        WithJsonSchema(r.question()),
    ]
    space_ids: (
        Annotated[list[SpaceId], Field(json_schema_extra={"minItems": 1})] | SkipJsonSchema[None]
    ) = None

    _spaces = field_validator("space_ids")(_at_least_one_space)


class NodesQuery(Query):
    """How many task nodes to return (heaviest first; default all)."""

    limit: Annotated[int, Field(ge=1, le=100_000)] | SkipJsonSchema[None] = None


class FatigueQuery(Query):
    """How many logged fatigue readings to return."""

    limit: int = Field(50, ge=1, le=1000)


class LearnRequest(Body):
    """A learning pass over a thread, now, in the caller's scope.

    ``messages`` are the thread's messages as ``{"role"|"type": ..., "content": ..., "id":
    ...}`` dicts; omitted, the thread's newest checkpoint in the host's checkpointer is read.
    The host's ``worker_model`` proposes (else the offline heuristic): ``model`` may only name
    that same model, so a request never picks a provider or spends another key.
    """

    thread_id: ThreadId
    messages: (
        Annotated[list[dict[str, Any]], Field(max_length=MAX_LEARN_MESSAGES)] | SkipJsonSchema[None]
    ) = None
    model: str | None = None


class LearnPassesQuery(Query):
    """Which learning passes to list (newest first; ``thread_id``: that thread's only)."""

    thread_id: ThreadId | SkipJsonSchema[None] = None
    limit: int = Field(20, ge=1, le=500)


# --- responses ------------------------------------------------------------------------------


class ScopeView(BaseModel):
    """The scope a request ran in, how its user was known (``via``), whether the caller is an
    admin, and the named projects it is granted (``["*"]``: every project; its own default
    project is always its own)."""

    user: str
    project: str
    via: Literal["local", "picked", "token", "langgraph"]
    admin: bool = False
    projects: list[str] = Field(default_factory=list)


class StatusView(Status):
    """Status of the caller's scope plus the control-plane switches and the package version.

    ``authentication`` says what identifies users (LangGraph custom auth, ``user_tokens`` or
    none); ``scope_pick`` whether this caller may pick a user on the web page.
    """

    remote_access: str
    version: str
    scope: ScopeView
    authentication: Literal["none", "tokens", "langgraph"] = "none"
    scope_pick: bool = False


class RuntimeEntryView(BaseModel):
    """One Runtime Memory entry; ``index`` is its 1-based position in its file."""

    index: int
    content: str
    importance: Importance
    branches: list[str] | None = None
    created_at: str
    updated_at: str


class RuntimeArchivedView(BaseModel):
    """An entry kept in ``runtime/archived/`` (moved out of USER.md / MEMORY.md by capacity
    maintenance when no Memory Space took it); the model can still search it."""

    content: str
    importance: str = "normal"
    archived_at: str = ""
    created_at: str = ""


class RuntimeTargetView(BaseModel):
    """USER or MEMORY: entries and UTF-8 bytes used against the limit, plus the entries kept
    in ``runtime/archived/`` (oldest first)."""

    entries: list[RuntimeEntryView]
    used: int
    limit: int
    archived: list[RuntimeArchivedView] = Field(default_factory=list)


class RuntimeView(BaseModel):
    """Both Runtime Memory files at one revision; ``max_entry_bytes`` is the largest single
    entry either file takes."""

    revision: str
    user: RuntimeTargetView
    memory: RuntimeTargetView
    max_entry_bytes: int


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


class ProviderList(BaseModel):
    """The providers a new Memory Space can use, with the form each takes (no secret values)."""

    providers: list[ProviderInfo]


class InsightList(BaseModel):
    """Stored memories of a space."""

    items: list[MemoryRecord]


class EntityList(BaseModel):
    """Entity names of a space with how many memories name them."""

    entities: list[EntityCount]


class TaskRow(TaskOverview):
    """One task at a glance, named by its goal (the goal resume shows; None without one)."""


class TaskList(BaseModel):
    """Every Mnemos task at a glance."""

    tasks: list[TaskRow]


class NodeList(BaseModel):
    """Nodes of one task, heaviest first (every status)."""

    nodes: list[MnemoNode]


class FatigueView(BaseModel):
    """The fatigue of a task now (not logged) and its logged readings, newest first."""

    current: FatigueReading
    history: list[FatigueReading]


class CheckpointList(BaseModel):
    """CheckpointNodes of a task, newest first: ``checkpoints`` mixes both sources (the newest
    ``checkpoint_keep``); ``mnemos`` (``checkpoint()``, fatigue) and ``langgraph`` (one per
    super-step, the newest 50) list them apart, with their totals."""

    checkpoints: list[CheckpointRecord]
    mnemos: list[CheckpointRecord] = Field(default_factory=list)
    langgraph: list[CheckpointRecord] = Field(default_factory=list)
    mnemos_total: int = Field(0, ge=0)
    langgraph_total: int = Field(0, ge=0)


class ResumeView(BaseModel):
    """The resume Markdown of a task's newest CheckpointNode."""

    task_id: str
    resume: str


class LearnPassList(BaseModel):
    """The caller's learning passes, newest first."""

    passes: list[LearnPass]


class Decision(BaseModel):
    """Why the kernel refused an operation, and the setting that would allow it."""

    layer: str
    channel: str
    trigger: str
    mode: str
    admitted: bool
    setting: str | None = None
    env: str | None = None


class ErrorBody(BaseModel):
    """Every error response: a stable code and a message saying what to do; a refusal by the
    kernel adds its ``decision``."""

    error: str
    message: str
    decision: Decision | SkipJsonSchema[None] = None
