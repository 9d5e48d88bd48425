"""``Mnemon``: the composition root. Builds every layer from one :class:`MnemonConfig`.

The module is over 900 lines because it is one concept: the public API of the host, each entry
point a documented, thin hand-over to a service; cutting it would scatter that API over mixins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from langgraph_mnemon._services import open_database, open_spaces
from langgraph_mnemon._status import (
    DocumentsStatus,
    RuntimeStatus,
    SpacesOverview,
    Status,
    host_status,
    spaces_overview,
)
from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.contracts import Scope, check_text
from langgraph_mnemon.errors import (
    CapacityError,
    ConflictError,
    InvalidInputError,
    ProviderError,
    StorageError,
)
from langgraph_mnemon.memory_layers.documents import (
    DocumentMutation,
    DocumentReceipt,
    Documents,
)
from langgraph_mnemon.memory_layers.health import HealthRecord
from langgraph_mnemon.memory_layers.kernel import Kernel, Trigger
from langgraph_mnemon.memory_layers.live_settings import LiveSettings
from langgraph_mnemon.memory_layers.runtime import RuntimeMemory, RuntimeMutation, RuntimeReceipt
from langgraph_mnemon.memory_layers.scopes import (
    LOCAL_SCOPE,
    ScopedLayers,
    build_documents,
    build_runtime,
    resolve_scope,
    scope_of,
)
from langgraph_mnemon.memory_layers.spaces import MemorySpaces
from langgraph_mnemon.storage.db import Database, refuse_linked_sqlite

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.tools import BaseTool

    # Mnemos checkpointers import LangGraph; loaded on first use
    from langgraph.checkpoint.serde.base import SerializerProtocol
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.store.base import TTLConfig

    from langgraph_mnemon.checkpointers import AsyncMnemosSaver, MnemosSaver
    from langgraph_mnemon.memory_layers.activity import ReviewGate
    from langgraph_mnemon.memory_layers.agent_query import QueryAnswer
    from langgraph_mnemon.memory_layers.learning import Learning, LearnPass
    from langgraph_mnemon.memory_layers.mnemos import Mnemos
    from langgraph_mnemon.memory_layers.turns import ScopeSources, Turns
    from langgraph_mnemon.memory_layers.write_worker import WriteCandidate, WriteReceipt
    from langgraph_mnemon.middleware import MnemonMiddleware
    from langgraph_mnemon.reviews import ReviewScheduler
    from langgraph_mnemon.store import MnemonStore

__all__ = ["DocumentsStatus", "Mnemon", "RuntimeStatus", "SpacesOverview", "Status"]


_UNSET = object()


class Mnemon:
    """Layered long-term memory for LangGraph agents.

    Example:
        >>> mem = Mnemon.open("./.mnemon")
        >>> mem.runtime.add("memory", "Tests run with `pytest -q`.").status
        'committed'
        >>> mem.status().runtime.memory.used
        26
    """

    def __init__(self, config: MnemonConfig | None = None) -> None:
        if config is not None and not isinstance(config, MnemonConfig):
            raise InvalidInputError(
                f"Mnemon() takes a MnemonConfig (got {type(config).__name__}); "
                "use Mnemon.open(root) for a folder"
            )
        self.config = config or MnemonConfig()
        cfg = self.config
        self._parent: Mnemon | None = None  # set on the views that scoped() returns
        self._database: Database | None = None  # opened on first use
        # The run-time switches stored in the database: a change through any host on it is in
        # force here within a second or two (memory_layers/live_settings.py).
        self.live_settings = LiveSettings(
            cfg, lambda: self.database, on_change=self.settings_changed
        )
        # Every operation of every layer asks this kernel first (participation, write_enabled,
        # strategy rules); it reads the live config, refreshed from the database first.
        self.kernel = Kernel(cfg, refresh=self.live_settings.refresh)
        self.root = cfg.root_path
        if cfg.write_enabled:  # read-only mode creates nothing, not even the root folder
            try:
                self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError.from_os_error(exc, "create the storage root", self.root) from exc
            except ValueError as exc:  # a NUL or a lone surrogate in the path
                raise InvalidInputError(f"root {str(self.root)!r} is not a valid path") from exc
        self.scope = LOCAL_SCOPE
        self._mnemos: Mnemos | None = None
        self._spaces: MemorySpaces | None = None  # built on first use
        self._graphs: dict[str, Any] = {}
        self._turns: Turns | None = None  # the one registry of live turns, built on first use
        self._reviews: ReviewScheduler | None = None
        self._worker_model: Any = _UNSET
        self._store: MnemonStore | None = None
        self._learning: Learning | None = None  # built on first use, one per scope view
        self._indexed_stores: list[MnemonStore] = []  # mem.store(index=...): closed with it
        # Failed memory steps of agent runs (the guard records; status() shows them).
        self.health = HealthRecord()
        # One Runtime Memory and one Documents service per scope (files or database tables).
        self._runtimes = ScopedLayers(
            lambda scope: build_runtime(cfg, self.kernel, scope, lambda: self.database)
        )
        self._documents = ScopedLayers(
            lambda scope: build_documents(cfg, self.kernel, scope, lambda: self.database)
        )
        self._views: ScopedLayers[Mnemon] = ScopedLayers(self._view)
        self.runtime: RuntimeMemory = self._runtimes.get(LOCAL_SCOPE)
        self.documents: Documents = self._documents.get(LOCAL_SCOPE)

    # --- scopes: one user and one project per operation ---------------------------------------

    def scoped(
        self, scope: Scope | None = None, *, user: str | None = None, project: str | None = None
    ) -> Mnemon:
        """This host as seen from one scope: its ``runtime``, ``documents`` and ``spaces`` are
        the scope's, and so are the writes, maintenance and worker graphs run through it.

        Everything else (the database, Mnemos, the turn registry, reviews) is shared with the
        host, which owns it: closing a scoped view closes nothing.

        Args:
            scope: the :class:`~langgraph_mnemon.contracts.Scope`; or give ``user`` and/or
                ``project`` ids (the missing one is the local one).

        Returns:
            The view of that scope (the same object on every call); the host itself for the
            local scope.

        Raises:
            InvalidInputError: an id is empty, too long or holds control characters, or both
                ``scope`` and ids are given.

        Example:
            >>> alice = mem.scoped(user="alice", project="billing")
            >>> alice.runtime.add("user", "Prefers metric units.").status
            'committed'
            >>> "metric" in mem.runtime.snapshot().text
            False
        """
        root = self._parent or self
        if scope is None:
            scope = scope_of(user, project)
        elif not isinstance(scope, Scope) or user is not None or project is not None:
            raise InvalidInputError("scoped() takes a Scope, or user= and project= ids")
        return root if scope.is_local else root._views.get(scope)

    def resolve_scope(self, config: Mapping[str, Any] | None) -> Scope:
        """The scope of a run from its config (or its ``configurable``): the authenticated
        LangGraph user, else ``user_id``; ``mnemon_project``, else the served graph id. Both
        ids count alike from ``configurable`` and from the run's runtime context (``context=``
        of a LangGraph v1 run, which LangGraph keeps in the config a node or tool gets).

        Raises:
            ScopeMismatchError: ``user_id`` is not the authenticated user, or the context and
                ``configurable`` name different ids.
            InvalidInputError: an id is empty, too long or holds control characters.

        Example:
            >>> mem.resolve_scope({"configurable": {"user_id": "alice"}}).user
            'alice'
        """
        conf = (config or {}).get("configurable", config) if config else {}
        return resolve_scope(conf if isinstance(conf, Mapping) else {}, self.config.scopes)

    def _sources(self, scope: Scope) -> ScopeSources:
        from langgraph_mnemon.memory_layers.turns import ScopeSources

        view = self.scoped(scope)
        return ScopeSources(view.runtime, view.documents, view.spaces)

    def _view(self, scope: Scope) -> Mnemon:
        view = object.__new__(type(self))
        view.__dict__.update(self.__dict__)  # config, kernel, root, health: shared as they are
        view.scope, view._parent, view._graphs = scope, self, {}
        view.runtime, view.documents = self._runtimes.get(scope), self._documents.get(scope)
        view._spaces = None
        view._learning = None  # the scope's own learning service
        return view

    @classmethod
    def open(cls, root: str | Path | None = None, **settings: Any) -> Self:
        """Open (or create) a storage root with settings from arguments and ``MNEMON_*`` env.

        Args:
            root: the storage folder; defaults to ``MNEMON_ROOT`` or ``./.mnemon``.
            **settings: any :class:`MnemonConfig` field (``strategy="general"``,
                ``database_url=...``); they override the environment.

        Returns:
            A host whose layers are ready; Memory Spaces and the database open on first use.

        Raises:
            InvalidInputError: ``root`` is empty or not a path, or a setting is invalid.
            StorageError: the root folder cannot be created (or is a symbolic link).

        Example:
            >>> mem = Mnemon.open("./.mnemon", strategy="layered")
            >>> mem.runtime.add("user", "Prefers short answers.").status
            'committed'
        """
        if root is not None:
            if not isinstance(root, (str, Path)) or not str(root).strip():
                raise InvalidInputError("root must be a non-empty path")
            settings["root"] = Path(root)
        return cls(MnemonConfig(**settings))

    def status(self) -> Status:
        """Tiers, sizes and revisions, and ``health``: the memory steps failing right now.

        The Memory Spaces catalog lives in the database: when it cannot be read (the database
        is down), ``spaces`` is None and ``health`` names the problem instead of failing.
        ``healthy`` is false then, while any memory step is failing, and while any space is
        unreachable (its provider missing or failing).

        Returns:
            A frozen :class:`Status` (``model_dump()`` gives what ``mnemon status --json``
            prints).

        Raises:
            StorageError: Runtime Memory or the Documents index cannot be read.

        Example:
            >>> mem.status().runtime.memory.limit
            10240
        """
        spaces = None
        with self.health.guard("status:spaces"):
            spaces = spaces_overview(self.spaces)
        return host_status(self, spaces)

    # --- Mnemos task memory and checkpointer ----------------------------------------

    @property
    def database(self) -> Database:
        """The shared SQL database (``config.resolved_database_url``), opened on first use.

        The embedded ``<root>/mnemon.db`` (and its -wal/-shm/-journal files) is refused with
        ``StorageError`` (``symlink-refused``) when it is a symbolic link; a ``database_url``
        the user names explicitly is theirs and is opened as given, links included. With
        ``write_enabled=false`` nothing is created: no folder, no file, no tables.
        """
        if self._parent is not None:
            return self._parent.database
        if self._database is None:
            self._database = open_database(self.config, self.root)
        return self._database

    @property
    def mnemos(self) -> Mnemos:
        """Mnemos task memory: nodes, fatigue, consolidation, checkpoints, resume.

        Opened on first use on :attr:`database`.

        Example:
            >>> node = mem.mnemos.add_node("task-1", "goal", "Ship the release notes")
        """
        if self._parent is not None:
            return self._parent.mnemos
        if self._mnemos is None:
            # Deferred: the Mnemos service (and its models) loads with the first task operation.
            from langgraph_mnemon.memory_layers.mnemos import Mnemos

            self._mnemos = Mnemos(
                self.database,
                self.config.mnemos,
                workspace=self.config.workspace_path,
                kernel=self.kernel,
            )
        return self._mnemos

    def checkpointer(self, *, serde: SerializerProtocol | None = None) -> MnemosSaver:
        """A ready ``MnemosSaver`` on the shared database (schema set up).

        It shares this host's engine: ``close()`` disposes it.

        Args:
            serde: a serializer (e.g. LangGraph's ``EncryptedSerializer``); default JSON+.

        Returns:
            A sync saver; a read-only host gets one that reads and refuses writes.

        Raises:
            StorageError: the database cannot be opened or migrated.

        Example:
            >>> graph = builder.compile(checkpointer=mem.checkpointer())
        """
        from langgraph_mnemon.checkpointers import MnemosSaver

        saver = MnemosSaver(self.database, serde=serde, config=self.config.mnemos)
        if self.config.write_enabled:  # a read-only host creates no tables; reads need none
            saver.setup()
        return saver

    def store(
        self,
        *,
        trigger: Trigger | None = None,
        index: Mapping[str, Any] | None = None,
        ttl: TTLConfig | None = None,
    ) -> MnemonStore:
        """A LangGraph ``BaseStore`` facade over the Memory Spaces (one per host, trigger and
        TTL configuration; a new one per ``index``).

        Pass it wherever LangGraph takes a store: ``create_agent(..., store=mem.store())``,
        ``graph.compile(store=...)``. Its ops ask the kernel like every layer call: by default
        as the caller does (explicit from application code); hand a model's tools (LangMem's
        memory tools) ``mem.store(trigger="automatic")``, so ``manual`` channels refuse them.

        Args:
            trigger: Run every op as ``"explicit"`` or ``"automatic"``; ``None`` (default)
                runs each op under the caller's current trigger.
            index: LangGraph's ``IndexConfig`` (``dims``, ``embed``, ``fields``): a new store
                that indexes those fields and embeds with that model (see the store docs).
            ttl: LangGraph's ``TTLConfig`` (``default_ttl``, ``refresh_on_read``,
                ``sweep_interval_minutes``), as ``store.ttl`` in ``langgraph.json``; None: puts
                expire only when they pass ``ttl=``.

        Returns:
            The host's :class:`~langgraph_mnemon.store.MnemonStore` (built on first use) or its
            sibling bound to ``trigger`` and ``ttl`` (the same object for the same arguments).

        Raises:
            InvalidInputError: ``trigger`` is not ``"explicit"``, ``"automatic"`` or None,
                ``index`` is not a valid index config or ``ttl`` not a valid TTL configuration.

        Example:
            >>> model_store = mem.store(trigger="automatic")  # for LangMem's memory tools
            >>> tools = [create_manage_memory_tool(("memories",), store=model_store)]
            >>> sessions = mem.store(ttl={"default_ttl": 60})  # puts expire after an hour
        """
        if self._parent is not None:
            return self._parent.store(trigger=trigger, index=index, ttl=ttl).scoped(self.scope)
        from langgraph_mnemon.store import MnemonStore

        if index is not None:  # its own family: another index is another store
            self._indexed_stores.append(MnemonStore(self, trigger=trigger, index=index))
            return self._indexed_stores[-1].with_ttl(ttl)
        self._store = self._store or MnemonStore(self)
        store = self._store.with_ttl(ttl)
        return store if trigger is None else store.acting_as(trigger)

    def acheckpointer(
        self, *, serde: SerializerProtocol | None = None
    ) -> AbstractAsyncContextManager[AsyncMnemosSaver]:
        """An async context manager yielding an ``AsyncMnemosSaver`` on the shared database.

        Enter it inside the event loop that runs the graph; it opens its own engine (psycopg
        async on PostgreSQL; on SQLite a pool whose transactions run on worker threads), sets the
        schema up and disposes the engine on exit. No method blocks the event loop.
        ``mem.acheckpointer`` itself fits ``langgraph.json`` ``checkpointer.path``.

        Args:
            serde: a serializer (e.g. LangGraph's ``EncryptedSerializer``); default JSON+.

        Returns:
            An async context manager; entering it yields the saver.

        Raises:
            StorageError: the embedded database file is a symbolic link (on entering: it
                cannot be opened or migrated).

        Example:
            >>> async with mem.acheckpointer() as saver:
            ...     await builder.compile(checkpointer=saver).ainvoke(inputs, config)
        """
        from langgraph_mnemon.checkpointers import AsyncMnemosSaver

        if self.config.database_url is None:  # the embedded file: never through a link
            refuse_linked_sqlite(self.root / "mnemon.db")
        return AsyncMnemosSaver.from_conn_string(
            self.config.resolved_database_url, serde=serde, config=self.config.mnemos
        )

    # --- end Mnemos -------------------------------------------------------------------------

    # --- Memory Spaces --------------------------------------------------------------

    @property
    def spaces(self) -> MemorySpaces:
        """Memory Spaces: catalog, federated search, remember / related / link / forget.

        Providers: ``mnemos`` (native, on the shared database, with the configured embedder)
        and ``chroma`` (when ``chroma.enabled`` and chromadb is installed). Chroma always embeds
        its documents: with ``embedding.enabled=false`` it keeps the offline WordLlama embedder
        (loaded on first use), so remember and search work there too. Add any LangGraph
        ``BaseStore`` with ``mem.spaces.register_provider(StoreProvider(store))``.

        Example:
            >>> mem.spaces.create_space("Team decisions").status
            'committed'
        """
        if self._parent is not None:  # the scope's spaces only (owned by its user or project)
            if self._spaces is None:
                self._spaces = self._parent.spaces.for_scope(
                    self.scope, per_user=self.config.scopes.project_memory == "user_project"
                )
            return self._spaces
        if self._spaces is None:
            self._spaces = open_spaces(self.config, self.database, self.kernel, self.root)
        return self._spaces

    # --- end Memory Spaces --------------------------------------------------------------------

    # --- turns: pinned views, the Wake, activity for idle review -----------------------------

    @property
    def turns(self) -> Turns:
        """The turn service: ``begin`` / ``end`` of each agent turn and the one registry of live
        turns (their pinned views and recall budgets; child agents retain their parent's view),
        kept in :attr:`database` so that any process sharing it continues a turn.

        Example:
            >>> start = mem.turns.begin(TurnScope(thread_id="t1"))
            >>> mem.turns.pinned(start.turn_id).strategy
            'layered'
        """
        if self._parent is not None:
            return self._parent.turns
        if self._turns is None:
            from langgraph_mnemon.memory_layers.turns import Turns

            self._turns = Turns(
                self.config,
                kernel=self.kernel,
                runtime=self.runtime,
                documents=self.documents,
                spaces=lambda: self.spaces,  # opened on the first composition
                reviews=lambda: self.reviews,  # the current scheduler (set_reviews swaps it)
                scoped=self._sources,
                database=lambda: self.database,  # live turns are shared there (replicas too)
            )
        return self._turns

    @property
    def reviews(self) -> ReviewScheduler:
        """Idle reviews of finished turns, run in the background (Layered strategy only).

        The review gate keeps each thread's activity, attempts and review times in the shared
        database (while writes are enabled), and a scheduled review is a leased row there, so
        a restarted host, or another replica, resumes where it stopped. In process this is a
        :class:`~langgraph_mnemon.reviews.BackgroundReviews` over the worker model;
        :meth:`set_reviews` swaps in another scheduler.

        Example:
            >>> mem.reviews.turn_started("thread-1")  # a new turn cancels the pending review
        """
        if self._parent is not None:
            return self._parent.reviews
        if self._reviews is None:
            from langgraph_mnemon.reviews import BackgroundReviews, host_review_gate

            gate = host_review_gate(self, write_enabled=self.kernel.write_enabled)
            self._reviews = BackgroundReviews(self, gate, self.worker_model)
        return self._reviews

    def set_reviews(self, reviews: ReviewScheduler) -> None:
        """Replace how idle reviews are scheduled (LangGraph server: as delayed server runs).

        The previous scheduler is closed; its pending reviews are handed over (any scheduler
        on the database runs them when due).

        Args:
            reviews: any :class:`~langgraph_mnemon.reviews.ReviewScheduler`.

        Example:
            >>> mem.set_reviews(ServerReviews(mem.review_gate, url, host=mem))
        """
        if self._parent is not None:
            self._parent.set_reviews(reviews)
            return
        if self._reviews is not None and self._reviews is not reviews:
            self._reviews.close()
        self._reviews = reviews

    def settings_changed(self) -> None:
        """Apply live switches changed on ``config`` (idle review keeps a copy of its own;
        everything else, participation included, reads the live config at each operation).
        :attr:`live_settings` calls it after applying a stored change; to change a switch on
        every host that shares the database, use ``mem.live_settings.change({...})``.

        Example:
            >>> mem.config.idle_review.enabled = False
            >>> mem.settings_changed()  # the review gate now schedules nothing
        """
        if self._parent is not None:
            self._parent.settings_changed()
            return
        if self._reviews is not None:
            from langgraph_mnemon.memory_layers.activity import ReviewSettings

            self._reviews.gate.settings = ReviewSettings.from_config(self.config)

    @property
    def review_gate(self) -> ReviewGate:
        """Per-thread activity and idle-review timing (kept in the database across restarts)."""
        return self.reviews.gate

    def review_graph(self, model: BaseChatModel | None = None) -> CompiledStateGraph:
        """The idle-review graph over this host, bounded by the ``idle_review`` settings.

        The schedulers (:mod:`langgraph_mnemon.reviews`) run it under ``acting("automatic")``.

        Args:
            model: the review model; None runs the heuristic (it writes only what the user
                explicitly asked to remember).

        Returns:
            The compiled ``mnemon_idle_review`` graph: ``{"messages": [...]}`` in, ``outcome``
            (a ``ReviewOutcome``) out.

        Example:
            >>> out = mem.review_graph().invoke({"messages": turn_messages})
            >>> out["outcome"].action
            'skipped'
        """
        from langgraph_mnemon.graphs import build_review_graph

        cfg = self.config.idle_review
        return build_review_graph(
            self,
            model,
            runtime_memory=cfg.runtime_memory,
            max_context_chars=cfg.max_context_chars,
            max_tokens=cfg.max_tokens,
        )

    def turn_graph(
        self, *, agent_id: str = "main", root: bool = True, model: Any = None
    ) -> CompiledStateGraph:
        """The turn-lifecycle subgraph: add it before and after the agent node.

        The parent state needs ``messages`` (with ``add_messages``) and ``mnemon_turn``; subclass
        :class:`~langgraph_mnemon.graphs.turn.MnemonTurnState`. ``root=False`` for child agents.
        Before the agent it begins the turn (pins one view, appends the Wake when it changed);
        after the agent it ends the turn (releases it, records activity for idle review).

        Args:
            agent_id: The agent whose turns these are (``"main"`` by default).
            root: ``False`` marks a child agent: no reminder cue and no idle review.
            model: The agent's chat model, whose ``profile["max_input_tokens"]`` is the
                window Mnemos measures token use against.

        Returns:
            The compiled one-node subgraph ``mnemon_turn`` (no checkpointer of its own).

        Raises:
            InvalidInputError: ``model`` is neither ``None`` nor a LangChain chat model.

        Example:
            >>> builder.add_node("memory_begin", mem.turn_graph(model=model))
            >>> builder.add_node("memory_end", mem.turn_graph(model=model))
        """
        from langgraph_mnemon.graphs.turn import build_turn_graph

        return build_turn_graph(self, agent_id=agent_id, root=root, model=model)

    def model_call_graph(self, *, root: bool = True, model: Any = None) -> CompiledStateGraph:
        """Mnemos before each model call (``graphs.turn.build_model_call_graph``); e.g.
        ``builder.add_node("mnemos", mem.model_call_graph(model=model))`` before the model
        node (``model``: the chat model it calls, whose profile gives the context window)."""
        from langgraph_mnemon.graphs.turn import build_model_call_graph

        return build_model_call_graph(self, root=root, model=model)

    def tools(self) -> list[BaseTool]:
        """The model-facing memory tools: those whose channel the kernel admits a model to now.

        ``manual`` / ``off`` / disabled / read-only channels offer none; each call runs as an
        automatic trigger and is admitted again, so a later switch refuses it.

        Returns:
            LangChain tools for ``create_agent(tools=...)`` or a ``ToolNode``.

        Example:
            >>> agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
        """
        from langgraph_mnemon.tools import build_tools

        return build_tools(self)

    def system_prompt(self, turn_id: str | None = None) -> str:
        """The memory part of the system prompt: the Runtime Memory protocol and routing
        guidance, for a hand-built graph (``create_agent``'s middleware adds it by itself).

        With ``turn_id`` (the state's ``mnemon_turn``) it follows that turn's pinned view,
        otherwise what the kernel admits now. Byte-stable across turns.

        Args:
            turn_id: A live turn's id; ``None`` (default) uses what the kernel admits now.

        Returns:
            The Runtime Memory protocol (while Runtime Memory is projected), then the routing
            guidance (unless ``routing_guidance`` is false), joined by a blank line; empty
            when neither applies.

        Raises:
            NotFoundError: ``turn_id`` is not a live turn (it has ended or never began).

        Example:
            >>> SystemMessage(mem.system_prompt())
        """
        return "\n\n".join(text for _, text in self.turns.sections(turn_id))

    def middleware(
        self, *, agent_id: str = "main", root: bool = True, parent_turn: str | None = None
    ) -> MnemonMiddleware:
        """An ``AgentMiddleware`` for ``langchain.agents.create_agent`` doing the turn lifecycle.

        For a child agent started during a parent turn, pass ``parent_turn`` (the parent
        state's ``mnemon_turn``): the child keeps the parent's view, gets its own budgets and
        no cue or idle review.

        Args:
            agent_id: The agent whose turns these are (``"main"`` by default).
            root: ``False`` for a child agent (no cue, no idle review).
            parent_turn: The parent state's ``mnemon_turn``, for a child started during a
                parent turn (then the child is never root).

        Returns:
            A new :class:`~langgraph_mnemon.middleware.MnemonMiddleware`; a child's ``close()``
            gives back the parent's view when it is done.

        Raises:
            NotFoundError: ``parent_turn`` is not a live turn of this host.

        Example:
            >>> agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
        """
        from langgraph_mnemon.middleware import MnemonMiddleware

        return MnemonMiddleware(self, agent_id=agent_id, root=root, parent_turn=parent_turn)

    # --- capacity maintenance: the deterministic write first, a worker graph on overflow ----------

    @property
    def worker_model(self) -> BaseChatModel | None:
        """The chat model of the worker graphs (``config.worker_model``); None = heuristics.

        Raises:
            InvalidInputError: ``worker_model`` names a provider whose package is missing.
        """
        if self._parent is not None:
            return self._parent.worker_model
        if self._worker_model is _UNSET:
            from langgraph_mnemon.adapters.models import resolve_chat_model

            self._worker_model = resolve_chat_model(self.config.worker_model)
        return self._worker_model  # type: ignore[return-value]

    def write_runtime(self, request: RuntimeMutation) -> RuntimeReceipt:
        """Apply a Runtime Memory mutation, maintaining capacity when it would overflow.

        An overflowing USER write runs USER compaction and an overflowing MEMORY write runs
        MEMORY archival, when the kernel admits ``runtime`` ``maintenance`` for the current
        trigger (explicit from the Python API, automatic from a model tool or a worker); when it
        does not (maintenance off, manual for an automatic write, the General strategy) the
        :class:`CapacityError` is raised as is and nothing is written. A maintenance run that
        cannot complete raises :class:`CapacityError` saying why, with every file unchanged.

        Args:
            request: the mutation (``RuntimeMutation(action="add", target="memory", ...)``).

        Returns:
            The committed (or skipped) receipt, with the new revision.

        Raises:
            CapacityError: the write does not fit and no maintenance was admitted or it failed.
            ParticipationError: the kernel refused Runtime Memory writes.
            ConflictError: ``expected_revision`` no longer matches.

        Example:
            >>> mem.write_runtime(RuntimeMutation(action="add", target="memory", content="x"))
        """
        try:
            return self.runtime.apply(request)
        except CapacityError as exc:
            if exc.plan is None or not self.kernel.admits("runtime", "maintenance"):
                raise  # an entry larger than the whole file: no maintenance can help
            graph = "user_compaction" if request.target == "user" else "memory_archival"
            return self._maintain(graph, {"request": request}, exc)

    def write_document(self, mutation: DocumentMutation | dict[str, Any]) -> DocumentReceipt:
        """Create or update a Document, cold-archiving least-recently-used ones on overflow.

        The cold archive runs when the kernel admits ``documents`` ``maintenance`` (else the
        :class:`CapacityError` stands and nothing is written).

        Args:
            mutation: a :class:`DocumentMutation` or the same as a dict.

        Returns:
            The receipt of the create or update.

        Raises:
            CapacityError: the body or the active set does not fit even after maintenance.
            ParticipationError: the kernel refused Documents writes.
            InvalidInputError: the mutation is malformed.

        Example:
            >>> mem.write_document({"action": "create", "title": "ADR 1", "body": "Use WAL."})
        """
        try:
            return self.documents.apply(mutation)
        except CapacityError as exc:
            if not self.kernel.admits("documents", "maintenance"):
                raise
            return self._maintain("document_archive", {"mutation": mutation}, exc)

    def archive_document(self, document_id: str) -> DocumentReceipt:
        """Archive one Document: cold reference first (when a Memory Space can take it), then
        the revision-checked move.

        Args:
            document_id: the Document's id (a UUID).

        Returns:
            The receipt of the move to ``documents/archived/``.

        Raises:
            ConflictError: the archive did not complete; the document is still active.
            NotFoundError: no such active document.

        Example:
            >>> mem.archive_document(runbook.document.id).document.status
            'archived'
        """
        out = self._graph("document_archive").invoke({"document_id": document_id})
        if out.get("error"):
            raise ConflictError(
                f"document {document_id} was not archived: {out['error']}", code="archive-failed"
            )
        return out["archived"][-1]

    def remember(self, candidate: WriteCandidate) -> WriteReceipt:
        """Store a durable memory through the write worker; the receipt says what happened.

        The kernel is asked first (Memory Spaces write, the current trigger): a refusal
        reaches no provider.

        Args:
            candidate: what to store (content, category, importance, optional space).

        Returns:
            The worker's receipt: where it went, or why it was skipped.

        Raises:
            InvalidInputError: ``candidate`` is not a :class:`WriteCandidate`.
            ParticipationError: the kernel refused Memory Spaces writes.
            ProviderError: the worker could not store it.

        Example:
            >>> mem.remember(WriteCandidate(content="Deploys freeze on Fridays.")).status
            'committed'
        """
        from langgraph_mnemon.nodes.write_worker import remember

        graph = self._graph
        return remember(self.spaces, self.worker_model, candidate, lambda: graph("write_worker"))

    @property
    def learning(self) -> Learning:
        """This scope's learning passes: ``learn``, ``list_passes``, ``get_pass``, ``undo``.

        Example:
            >>> mem.learning.undo(mem.learn("t1", messages=history).pass_id).status
            'undone'
        """
        from langgraph_mnemon.memory_layers.learning import Learning, LearnPasses

        if self._learning is None:
            passes = LearnPasses(lambda: self.database)
            self._learning = Learning(
                self.spaces, self.kernel, passes, self.scope, self.config.learning
            )
        return self._learning

    def learn(
        self, thread_id: str, *, model: Any = None, messages: Sequence[Any] | None = None
    ) -> LearnPass:
        """Learn from a thread now: its messages new since the last pass become memories in
        this scope's learned Memory Space, each change a receipt (undo with
        ``mem.learning.undo(pass_id)``).

        The kernel decides as for every automatic write: with the Memory Spaces write channel
        ``off`` or ``manual`` the pass writes nothing and its ``reason`` says why.

        Args:
            thread_id: the conversation's LangGraph thread id.
            model: a chat model object or ``"provider:model"``; None uses ``worker_model``,
                and with none configured the offline heuristic.
            messages: the thread's messages; None reads the thread's newest checkpoint in
                :meth:`checkpointer` (only a thread of this scope's user: another user's is
                not found).

        Returns:
            The recorded :class:`~langgraph_mnemon.memory_layers.learning.LearnPass`.

        Raises:
            InvalidInputError: a bad ``thread_id``, ``model`` or ``messages``.
            NotFoundError: no ``messages`` given and the thread is not this user's or has no
                checkpoint here.

        Example:
            >>> done = mem.learn("t1", messages=[HumanMessage("I'm allergic to peanuts.")])
            >>> [(r.action, r.status) for r in done.receipts]
            [('add', 'committed')]
        """
        from langgraph_mnemon._learning import run_learning

        worker = lambda: self.worker_model  # noqa: E731 - resolved only when no model is given
        owns = lambda thread: thread in self.mnemos.tasks(owner=self.scope.user_key)  # noqa: E731
        learning = self.learning
        return run_learning(learning, worker, self.checkpointer, owns, thread_id, model, messages)

    def query(self, question: str, *, space_ids: list[str] | None = None) -> QueryAnswer:
        """Answer ``question`` from direct-search evidence; citations are real rows only.

        Args:
            question: what to answer.
            space_ids: the Memory Spaces to search; omit for the active spaces.

        Returns:
            A :class:`QueryAnswer`: the answer text and the rows it cites.

        Example:
            >>> mem.query("When do deploys freeze?").answer

        Raises:
            ParticipationError: the kernel refused Memory Spaces recall (asked first: nothing
                is read).
            InvalidInputError: ``question`` is not text, or ``space_ids`` is empty (omit it to
                search the active spaces).
            NotFoundError: a named space does not exist (checked before any search).
            ProviderError: the search or the answering model failed.
        """
        self.kernel.admit("memory_spaces", "recall")
        request: dict[str, Any] = {"query": check_text(question, "question")}
        if space_ids is not None:
            if isinstance(space_ids, str) or not isinstance(space_ids, list) or not space_ids:
                raise InvalidInputError(
                    "space_ids must be a non-empty list of Memory Space ids; omit it to search "
                    "the active spaces"
                )
            for space_id in space_ids:
                self.spaces.get_space(space_id)  # unknown ids: NotFoundError, before any search
            request["space_ids"] = space_ids
        out = self._graph("agent_query").invoke(request)
        if out.get("error"):
            raise ProviderError(f"the query was not answered: {out['error']}")
        return out["answer"]

    def _maintain(self, graph: str, inputs: dict[str, Any], overflow: CapacityError) -> Any:
        """Run a maintenance graph for ``overflow``; its failure becomes a CapacityError."""
        out = self._graph(graph).invoke(inputs)
        if out.get("error"):
            # Say what did commit before the failure (a cold archive may move some documents).
            done = [s.target for s in out.get("steps") or () if s.status == "committed"]
            partly = f" Steps already committed: {', '.join(done)}." if done else ""
            raise CapacityError(
                f"{overflow} Capacity maintenance did not complete: {out['error']}{partly}",
                plan=overflow.plan,
                code=overflow.code,
            ) from None
        return out["receipt"]

    def _graph(self, name: str) -> Any:
        """The worker graph ``name``, built once over this host's services and worker model
        (each builder gets the services it needs, never the host)."""
        graph = self._graphs.get(name)
        if graph is None:
            from langgraph_mnemon.graphs import (
                build_agent_query_graph,
                build_document_archive_graph,
                build_memory_archival_graph,
                build_user_compaction_graph,
                build_write_worker_graph,
            )

            builders = {
                "write_worker": lambda: build_write_worker_graph(self.spaces, self.worker_model),
                "agent_query": lambda: build_agent_query_graph(self.spaces, self.worker_model),
                "user_compaction": lambda: build_user_compaction_graph(
                    self.runtime, self.worker_model
                ),
                "memory_archival": lambda: build_memory_archival_graph(
                    self.runtime, self.spaces, self.worker_model
                ),
                "document_archive": lambda: build_document_archive_graph(
                    self.documents, self.spaces, self.worker_model
                ),
            }
            graph = self._graphs[name] = builders[name]()
        return graph

    def close(self) -> None:
        """Release resources held by the layers (database engines, clients, review threads).

        The host is also a context manager: ``with Mnemon.open(root) as mem: ...``. Pending
        idle reviews are handed over (any host on the database runs them when due); the
        database engine stays usable and reconnects on demand.

        Returns:
            None. Calling it again is harmless.

        Example:
            >>> with Mnemon.open("./.mnemon") as mem:
            ...     mem.runtime.add("memory", "Tests run with `pytest -q`.")
        """
        if self._parent is not None:
            return  # a scoped view: the host owns every resource
        if self._reviews is not None:
            self._reviews.close()
            self._reviews = None
        if self._turns is not None:
            self._turns.close()  # the rows of turns that ended here
        for store in [self._store, *self._indexed_stores]:
            if store is not None:
                store.close()  # its TTL sweeper; the store stays usable
        if self._spaces is not None:
            self._spaces.close()
            self._spaces = None
        if self._database is not None:
            self._database.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        scope = "" if self.scope.is_local else f", scope={str(self.scope)!r}"
        return f"Mnemon(root={str(self.root)!r}{scope})"
