"""The control-plane endpoints: one small sync handler per route, and the route table.

Each handler takes the host *as seen from the caller's scope* (``host.scoped(scope)``), the
path parameters, and the validated ``body`` / ``query`` model (and, where it declares
``caller``, the :class:`~._callers.Caller`), calls one host or layer service, and returns a
pydantic model. Handlers run on a worker thread (they may block); :mod:`.http` turns typed
errors into HTTP responses. Mnemos tasks are listed and read for their owner only (the
caller's user; tasks nobody claimed are the local user's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from langgraph_mnemon import __version__
from langgraph_mnemon.contracts import safe_text
from langgraph_mnemon.errors import InvalidInputError, NotFoundError
from langgraph_mnemon.memory_layers.agent_query import QueryAnswer
from langgraph_mnemon.memory_layers.documents import DocumentReceipt, DocumentSearchResult
from langgraph_mnemon.memory_layers.learning import LearnPass
from langgraph_mnemon.memory_layers.mnemos import validate_task_id
from langgraph_mnemon.memory_layers.runtime import (
    MAX_ENTRY_BYTES,
    RuntimeMutation,
    RuntimeReceipt,
    RuntimeTarget,
)
from langgraph_mnemon.memory_layers.spaces import (
    ConnectionTest,
    GraphProjection,
    MemoryReceipt,
    MemorySpaces,
    RecallResult,
    SpaceReceipt,
)

from . import _models as m
from ._callers import Caller, authentication, require_admin
from ._settings import SettingsPatch, public_settings, settings_changes

if TYPE_CHECKING:
    from langgraph_mnemon.host import Mnemon

API = "/mnemon/api"
PROVIDER_CONFIG = "invalid-provider-config"  # the layer's code for a refused configuration


@dataclass(frozen=True)
class Endpoint:
    """One route: method, full path, handler and the models that describe it.

    ``mutates`` decides the authority rule (reads: trusted hosts; mutations: loopback or
    token). It defaults from the method; POST routes that change nothing (recall, agent
    query, resume) declare ``mutates=False``. ``caller``: the handler takes the request's
    :class:`~._callers.Caller` as ``caller=``. ``refusals`` are the error codes of 422
    answers that depend on stored state or on the provider (not on the schema); OpenAPI
    states them. ``optional_body``: the body may be omitted.
    """

    method: str
    path: str
    handler: Callable[..., Any]
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    returns: type[BaseModel] | None = None
    mutates: bool | None = None
    caller: bool = False
    refusals: tuple[str, ...] = ()
    optional_body: bool = False

    @property
    def is_mutation(self) -> bool:
        """Whether the authority middleware treats this route as a change."""
        if self.mutates is not None:
            return self.mutates
        return self.method not in ("GET", "HEAD", "OPTIONS")

    @property
    def summary(self) -> str:
        """The first line of the handler's docstring."""
        return (self.handler.__doc__ or "").strip().splitlines()[0]


# --- status and settings --------------------------------------------------------------------


def get_status(host: Mnemon, caller: Caller) -> m.StatusView:
    """How full each tier is, the caller's scope, grants and the switches; where data lives
    (root, database, Chroma target, failure messages) for an admin only."""
    data = host.status().model_dump()
    if not caller.admin:  # a user learns their own scope, never the host's paths or addresses
        data.update(root=None, database_url=None, chroma=None)
        problems = data["health"]["problems"]
        data["health"]["problems"] = [{**p, "message": "(shown to an admin)"} for p in problems]
    mode = authentication(host.config)
    scope = m.ScopeView(
        user=caller.scope.user,
        project=caller.scope.project,
        via=caller.via,
        admin=caller.admin,
        projects=caller.grants.shown(),
    )
    return m.StatusView(
        **data,
        remote_access=host.config.remote_access,
        version=__version__,
        scope=scope,
        authentication=mode,
        scope_pick=mode == "none" and caller.via in ("local", "picked"),
    )


def get_settings(host: Mnemon) -> dict[str, Any]:
    """The effective configuration; secrets show as "configured" or null."""
    host.live_settings.refresh(force=True)  # what another replica stored a moment ago
    return public_settings(host.config)


def patch_settings(host: Mnemon, body: SettingsPatch, caller: Caller) -> dict[str, Any]:
    """Change live switches (modes, idle review, layer participation) for the next operation,
    on every replica that shares the database, and across restarts.

    The switches: recall_mode, writeback_mode, routing_guidance, idle_review_enabled and
    layers.<layer>.enabled / layers.<layer>.participation.<channel>. They are host-wide: only
    the local user (or a LangGraph user with the mnemon:admin permission) changes them.
    """
    require_admin(caller, "the settings")
    host.kernel.require_writes("the settings")  # not a layer operation: the kernel's own rule
    host.live_settings.change(settings_changes(body))
    return public_settings(host.config)


# --- Runtime Memory -------------------------------------------------------------------------


def get_runtime(host: Mnemon) -> m.RuntimeView:
    """USER and MEMORY entries (1-based index per file), bytes used and limits, archived ones."""
    runtime = host.runtime
    revision = runtime.revision
    views: dict[str, m.RuntimeTargetView] = {}
    targets: tuple[RuntimeTarget, ...] = ("user", "memory")
    for target in targets:
        entries = runtime.entries(target)
        usage = runtime.usage(target)
        views[target] = m.RuntimeTargetView(
            entries=[
                m.RuntimeEntryView(
                    index=i,
                    content=e.content,
                    importance=e.importance,
                    branches=list(e.branches) if e.branches is not None else None,
                    created_at=e.created_at,
                    updated_at=e.updated_at,
                )
                for i, e in enumerate(entries, start=1)
            ],
            used=usage.used,
            limit=usage.limit,
            archived=_archived(runtime.archived(target)),
        )
    return m.RuntimeView(
        revision=revision,
        user=views["user"],
        memory=views["memory"],
        max_entry_bytes=MAX_ENTRY_BYTES,
    )


def _importance(value: Any) -> str:
    return value if value in ("critical", "normal", "low") else "normal"


def _archived(records: list[dict[str, Any]]) -> list[m.RuntimeArchivedView]:
    """``runtime/archived/`` lines as views; a line of another shape is skipped, not fatal."""
    views = []
    for record in records:
        entry = record.get("entry") if isinstance(record, dict) else None
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
            continue
        views.append(
            m.RuntimeArchivedView(
                content=safe_text(entry["content"]),  # a file line may hold a lone surrogate
                importance=_importance(entry.get("importance")),
                archived_at=str(record.get("archived_at") or ""),
                created_at=str(entry.get("created_at") or ""),
            )
        )
    return views


def write_runtime(host: Mnemon, body: m.RuntimeWrite) -> RuntimeReceipt:
    """Add, replace or remove a Runtime Memory entry (overflow runs capacity maintenance)."""
    return host.write_runtime(RuntimeMutation(**body.model_dump()))


# --- Documents ------------------------------------------------------------------------------


def list_documents(host: Mnemon, query: m.DocumentsQuery) -> m.DocumentList:
    """Document records (active, archived or all), most recently updated first."""
    return m.DocumentList(documents=host.documents.list(query.status))


def search_documents(host: Mnemon, query: m.DocumentSearchQuery) -> DocumentSearchResult:
    """Rank Documents for a query (title, description and body matches)."""
    return host.documents.search(
        query.q, include_archived=query.include_archived, limit=query.limit
    )


def get_document(host: Mnemon, document_id: str) -> m.DocumentView:
    """One Document's record and body."""
    record = host.documents.get(document_id)
    return m.DocumentView(record=record, content=host.documents.read(record.id))


def create_document(host: Mnemon, body: m.DocumentCreate) -> DocumentReceipt:
    """Create an active Document (least recently used ones are archived on overflow)."""
    mutation: dict[str, Any] = {"action": "create", **body.model_dump(exclude_none=True)}
    if "source_paths" in mutation:
        mutation["source_paths"] = tuple(mutation["source_paths"])
    return host.write_document(mutation)


def archive_document(host: Mnemon, document_id: str, body: m.Empty) -> DocumentReceipt:
    """Archive an active Document (cold reference first, when a Memory Space takes it)."""
    record = host.documents.get(document_id)
    return host.archive_document(record.id)


# --- Memory Spaces --------------------------------------------------------------------------


def list_spaces(host: Mnemon) -> m.SpaceList:
    """The Memory Space catalog with active and total counts."""
    spaces = host.spaces.list_spaces()
    return m.SpaceList(
        spaces=spaces, active_count=sum(1 for s in spaces if s.active), total=len(spaces)
    )


def list_providers(host: Mnemon) -> m.ProviderList:
    """The providers a Memory Space can use: what each declares and the form it takes."""
    return m.ProviderList(providers=host.spaces.list_providers())


def _spaces(host: Mnemon, caller: Caller) -> MemorySpaces:
    """The caller's Memory Spaces; an admin's view may name storage locations and set up
    spaces that connect out (``memory_layers/spaces/_locations.py``)."""
    return host.spaces.as_admin() if caller.admin else host.spaces


def provider_connection_test(
    host: Mnemon, provider_id: str, body: m.ConnectionTestRequest, caller: Caller
) -> ConnectionTest:
    """Test a configuration on a provider (its check, then its status); nothing is stored.

    A provider that connects out (``http``) is tested by an admin only, never against an
    internal address that ``http.allowed_hosts`` does not list (403)."""
    spaces = _spaces(host, caller)
    return spaces.test_connection(provider_id, config=body.config, secrets=body.secrets)


def create_space(host: Mnemon, body: m.SpaceCreate, caller: Caller) -> SpaceReceipt:
    """Create a Memory Space on a provider (default: the native one), with its settings.

    The server derives where its data lives; only an admin names a location (inside the root
    or ``providers.allowed_paths``) or adds a space that connects out (403 otherwise)."""
    return _spaces(host, caller).create_space(
        body.name,
        body.description,
        provider_id=body.provider_id,
        config=body.config,
        secrets=body.secrets,
    )


def update_space(host: Mnemon, space_id: str, body: m.SpaceChange, caller: Caller) -> SpaceReceipt:
    """Change a space's name, description, active flag, settings or (write-only) secrets."""
    return _spaces(host, caller).update_space(
        space_id,
        name=body.name,
        description=body.description,
        active=body.active,
        config=body.config,
        secrets=body.secrets,
    )


def space_connection_test(
    host: Mnemon, space_id: str, body: m.Empty, caller: Caller
) -> ConnectionTest:
    """Test a stored space's connection (its settings checked, then its status)."""
    return _spaces(host, caller).test_space(space_id)


def disconnect_space(host: Mnemon, space_id: str, body: m.Confirmation) -> SpaceReceipt:
    """Disconnect a third-party space: its entry and secrets go, provider data stays."""
    return host.spaces.disconnect_space(space_id, confirm=body.confirm)


def remove_space(
    host: Mnemon, space_id: str, body: m.Removal, query: m.RemovalQuery
) -> SpaceReceipt:
    """Remove a native space after confirmation: its memories are deleted, then its entry."""
    given = {c for c in (body.confirm, query.confirm) if c is not None}
    if len(given) > 1:
        raise InvalidInputError(
            "confirm differs between the body and the query; send the space id once",
            code="confirm-mismatch",
        )
    return host.spaces.remove_space(space_id, confirm=given.pop() if given else "")


def set_space_active(host: Mnemon, space_id: str, body: m.SpaceActivation) -> SpaceReceipt:
    """Switch whether a space takes part in recall and default writes (data is kept)."""
    return host.spaces.set_active(space_id, body.active)


def browse_space(host: Mnemon, space_id: str, query: m.ContentQuery) -> m.InsightList:
    """Stored memories of a space, newest first."""
    items = host.spaces.browse(
        space_id, limit=query.limit, offset=query.offset, category=query.category or None
    )
    return m.InsightList(items=items)


def space_entities(host: Mnemon, space_id: str, query: m.EntitiesQuery) -> m.EntityList:
    """Entity names of a space's memories, most used first."""
    return m.EntityList(entities=host.spaces.entities(space_id, limit=query.limit))


def space_graph(host: Mnemon, space_id: str, query: m.GraphQuery) -> GraphProjection:
    """Nodes and typed edges of a space (newest nodes first)."""
    return host.spaces.graph(space_id, limit=query.limit)


def remember(host: Mnemon, space_id: str, body: m.MemoryCreate) -> MemoryReceipt:
    """Store one memory in a space (activates the space on its first write)."""
    return host.spaces.remember(
        body.content,
        space_id=space_id,
        category=body.category,
        importance=body.importance,
        tags=body.tags,
        entities=body.entities,
        source="user",
    )


def forget(host: Mnemon, space_id: str, memory_id: str) -> MemoryReceipt:
    """Delete one memory of a space by its exact id."""
    return host.spaces.forget(memory_id, space_id=space_id)


def recall(host: Mnemon, body: m.RecallRequest) -> RecallResult:
    """Direct federated search over active (or named) spaces, without a turn envelope: the
    depth asked, cut only by the ``policy`` the body names."""
    return host.spaces.search(
        body.query,
        limit=body.limit,
        mode=body.mode,
        space_ids=body.space_ids,
        policy=body.policy,
    )


def agent_query(host: Mnemon, body: m.AgentQueryRequest) -> QueryAnswer:
    """Answer a question from direct-search evidence; citations name real rows only."""
    return host.query(body.question, space_ids=body.space_ids)


# --- Mnemos task memory ---------------------------------------------------------------------

LANGGRAPH_CHECKPOINTS_SHOWN = 50
"""The newest LangGraph checkpoints a task's checkpoint answer lists (one per super-step)."""


def _task(host: Mnemon, task_id: str, *, what: str = "Mnemos task") -> str:
    task = validate_task_id(task_id)
    # Another user's task is "not found", exactly like a task that does not exist.
    if task not in host.mnemos.tasks(owner=host.scope.user_key):
        raise NotFoundError(f"no {what} {task!r}; list tasks with GET {API}/mnemos/tasks")
    return task


def list_tasks(host: Mnemon) -> m.TaskList:
    """The caller's Mnemos tasks: goal, node counts, checkpoints (all / Mnemos / LangGraph),
    last fatigue."""
    tasks = host.mnemos.status(owner=host.scope.user_key)
    # TaskOverview already names each task by the goal resume shows (never a superseded one).
    return m.TaskList(tasks=[m.TaskRow.model_validate(task.model_dump()) for task in tasks])


def task_nodes(host: Mnemon, task_id: str, query: m.NodesQuery) -> m.NodeList:
    """Nodes of a task (every status), heaviest first."""
    task = _task(host, task_id)
    return m.NodeList(nodes=host.mnemos.nodes(task, status="all", limit=query.limit))


def task_fatigue(host: Mnemon, task_id: str, query: m.FatigueQuery) -> m.FatigueView:
    """The task's fatigue now (not logged) and its logged readings, newest first."""
    task = _task(host, task_id)
    mnemos = host.mnemos
    return m.FatigueView(
        current=mnemos.fatigue(task, log=False),
        history=mnemos.fatigue_history(task, limit=query.limit),
    )


def task_checkpoints(host: Mnemon, task_id: str) -> m.CheckpointList:
    """The task's CheckpointNodes, newest first: all of them, and Mnemos / LangGraph apart."""
    task = _task(host, task_id)
    keep = host.config.mnemos.checkpoint_keep
    mnemos = host.mnemos
    overview = mnemos.status(task)
    return m.CheckpointList(
        checkpoints=mnemos.checkpoints(task, limit=keep),
        mnemos=mnemos.checkpoints(task, limit=keep, source="mnemos"),
        langgraph=mnemos.checkpoints(task, limit=LANGGRAPH_CHECKPOINTS_SHOWN, source="langgraph"),
        mnemos_total=overview[0].mnemos_checkpoints if overview else 0,
        langgraph_total=overview[0].langgraph_checkpoints if overview else 0,
    )


def task_resume(host: Mnemon, task_id: str, body: m.Empty) -> m.ResumeView:
    """The resume Markdown of the task's newest CheckpointNode (changes nothing)."""
    task = _task(host, task_id)
    return m.ResumeView(task_id=task, resume=host.mnemos.resume(task))


# --- learning passes ------------------------------------------------------------------------

MODEL_NOT_ALLOWED = "model-not-allowed"  # a request may not choose the model a pass runs


def _check_model(host: Mnemon, model: str | None) -> None:
    """A request runs the host's own worker model: naming another one is refused, so a caller
    never picks a provider, an endpoint or whose key pays (the settings are the operator's)."""
    if model is None or model == host.config.worker_model:
        return
    raise InvalidInputError(
        "model may only name the host's configured worker_model (GET settings shows it); a "
        "request never chooses the model or provider a pass runs: omit model",
        code=MODEL_NOT_ALLOWED,
    )


def learn(host: Mnemon, body: m.LearnRequest) -> LearnPass:
    """Run a learning pass over a thread now: its new messages become memories of the
    caller's learned Memory Space, one receipt per change or refusal.

    Without ``messages`` the thread's newest checkpoint is read; the thread must be the
    caller's (another user's thread is 404, like an unknown one)."""
    _check_model(host, body.model)
    return host.learn(body.thread_id, messages=body.messages)


def list_learn_passes(host: Mnemon, query: m.LearnPassesQuery) -> m.LearnPassList:
    """The caller's learning passes, newest first (``thread_id``: that thread's)."""
    passes = host.learning.list_passes(thread_id=query.thread_id, limit=query.limit)
    return m.LearnPassList(passes=passes)


def get_learn_pass(host: Mnemon, pass_id: str) -> LearnPass:
    """One learning pass of the caller's scope with its receipts."""
    return host.learning.get_pass(pass_id)


def undo_learn_pass(host: Mnemon, pass_id: str, body: m.Empty) -> LearnPass:
    """Undo one learning pass: the memories it added are forgotten, what it superseded is
    current again; one ``undo`` receipt per reverted change."""
    return host.learning.undo(pass_id)


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", f"{API}/status", get_status, returns=m.StatusView, caller=True),
    Endpoint("GET", f"{API}/runtime", get_runtime, returns=m.RuntimeView),
    Endpoint("POST", f"{API}/runtime", write_runtime, body=m.RuntimeWrite, returns=RuntimeReceipt),
    Endpoint(
        "GET", f"{API}/documents", list_documents, query=m.DocumentsQuery, returns=m.DocumentList
    ),
    Endpoint(
        "GET",
        f"{API}/documents/search",
        search_documents,
        query=m.DocumentSearchQuery,
        returns=DocumentSearchResult,
    ),
    Endpoint("GET", f"{API}/documents/{{document_id}}", get_document, returns=m.DocumentView),
    Endpoint(
        "POST", f"{API}/documents", create_document, body=m.DocumentCreate, returns=DocumentReceipt
    ),
    Endpoint(
        "POST",
        f"{API}/documents/{{document_id}}/archive",
        archive_document,
        body=m.Empty,
        returns=DocumentReceipt,
    ),
    Endpoint("GET", f"{API}/providers", list_providers, returns=m.ProviderList),
    Endpoint(
        "POST",
        f"{API}/providers/{{provider_id}}/test",
        provider_connection_test,
        body=m.ConnectionTestRequest,
        returns=ConnectionTest,
        caller=True,
    ),
    Endpoint("GET", f"{API}/spaces", list_spaces, returns=m.SpaceList),
    Endpoint(
        "POST",
        f"{API}/spaces",
        create_space,
        body=m.SpaceCreate,
        returns=SpaceReceipt,
        caller=True,
        refusals=(PROVIDER_CONFIG, "data-boundary"),
    ),
    Endpoint(
        "PATCH",
        f"{API}/spaces/{{space_id}}",
        update_space,
        body=m.SpaceChange,
        returns=SpaceReceipt,
        caller=True,
        refusals=(PROVIDER_CONFIG,),
    ),
    Endpoint(
        "DELETE",
        f"{API}/spaces/{{space_id}}",
        remove_space,
        body=m.Removal,
        query=m.RemovalQuery,
        returns=SpaceReceipt,
        refusals=("remove-third-party", "confirm-mismatch"),
        optional_body=True,
    ),
    Endpoint(
        "POST",
        f"{API}/spaces/{{space_id}}/test",
        space_connection_test,
        body=m.Empty,
        returns=ConnectionTest,
        mutates=False,
        caller=True,
    ),
    Endpoint(
        "POST",
        f"{API}/spaces/{{space_id}}/disconnect",
        disconnect_space,
        body=m.Confirmation,
        returns=SpaceReceipt,
        refusals=("disconnect-native", "confirm-mismatch"),
    ),
    Endpoint(
        "POST",
        f"{API}/spaces/{{space_id}}/active",
        set_space_active,
        body=m.SpaceActivation,
        returns=SpaceReceipt,
    ),
    Endpoint(
        "GET",
        f"{API}/spaces/{{space_id}}/content",
        browse_space,
        query=m.ContentQuery,
        returns=m.InsightList,
    ),
    Endpoint(
        "GET",
        f"{API}/spaces/{{space_id}}/entities",
        space_entities,
        query=m.EntitiesQuery,
        returns=m.EntityList,
    ),
    Endpoint(
        "GET",
        f"{API}/spaces/{{space_id}}/graph",
        space_graph,
        query=m.GraphQuery,
        returns=GraphProjection,
    ),
    Endpoint(
        "POST",
        f"{API}/spaces/{{space_id}}/memories",
        remember,
        body=m.MemoryCreate,
        returns=MemoryReceipt,
    ),
    Endpoint(
        "DELETE",
        f"{API}/spaces/{{space_id}}/memories/{{memory_id}}",
        forget,
        returns=MemoryReceipt,
    ),
    Endpoint(
        "POST", f"{API}/recall", recall, body=m.RecallRequest, returns=RecallResult, mutates=False
    ),
    Endpoint(
        "POST",
        f"{API}/query",
        agent_query,
        body=m.AgentQueryRequest,
        returns=QueryAnswer,
        mutates=False,
    ),
    Endpoint("GET", f"{API}/mnemos/tasks", list_tasks, returns=m.TaskList),
    Endpoint(
        "GET",
        f"{API}/mnemos/tasks/{{task_id}}/nodes",
        task_nodes,
        query=m.NodesQuery,
        returns=m.NodeList,
    ),
    Endpoint(
        "GET",
        f"{API}/mnemos/tasks/{{task_id}}/fatigue",
        task_fatigue,
        query=m.FatigueQuery,
        returns=m.FatigueView,
    ),
    Endpoint(
        "GET",
        f"{API}/mnemos/tasks/{{task_id}}/checkpoints",
        task_checkpoints,
        returns=m.CheckpointList,
    ),
    Endpoint(
        "POST",
        f"{API}/mnemos/tasks/{{task_id}}/resume",
        task_resume,
        body=m.Empty,
        returns=m.ResumeView,
        mutates=False,
    ),
    Endpoint(
        "POST",
        f"{API}/learn",
        learn,
        body=m.LearnRequest,
        returns=LearnPass,
        refusals=(MODEL_NOT_ALLOWED,),
    ),
    Endpoint(
        "GET",
        f"{API}/learn/passes",
        list_learn_passes,
        query=m.LearnPassesQuery,
        returns=m.LearnPassList,
    ),
    Endpoint("GET", f"{API}/learn/passes/{{pass_id}}", get_learn_pass, returns=LearnPass),
    Endpoint(
        "POST",
        f"{API}/learn/passes/{{pass_id}}/undo",
        undo_learn_pass,
        body=m.Empty,
        returns=LearnPass,
    ),
    Endpoint("GET", f"{API}/settings", get_settings),
    Endpoint("PATCH", f"{API}/settings", patch_settings, body=SettingsPatch, caller=True),
)
