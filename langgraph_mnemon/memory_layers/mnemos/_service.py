"""``Mnemos``: task-scoped working memory with fatigue, consolidation, checkpoints and resume.

Every public method validates its input and raises a typed error from
:mod:`langgraph_mnemon.errors`; every mutation runs in one transaction, so a failure leaves the
rows as they were. Task ids, node ids, content, summaries, scope tags and paths refuse NUL
characters, lone surrogates and values of the wrong type with :class:`InvalidInputError`.
Reads never create the tables: before the first write they answer empty (``resume`` raises
:class:`NotFoundError`), and on a read-only host (``write_enabled=false``) ``fatigue()`` does
not log its reading.

:class:`Mnemos` is a facade: it checks input (:mod:`._checks`), asks the kernel, opens the
transaction and calls one function of :mod:`._nodes`, :mod:`._signals`, :mod:`._maintenance`,
:mod:`._consolidation`, :mod:`._checkpoints` or :mod:`._overview`.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.contracts import Scope, check_text, shown
from langgraph_mnemon.errors import InvalidInputError, NotFoundError
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.memory_layers.mnemos._checkpoints import cooldown_receipt, write_checkpoint
from langgraph_mnemon.memory_layers.mnemos._checks import (
    LINK_TYPES,
    MAX_TAG_CHARS,
    MAX_TAGS,
    check_content,
    check_flag,
    check_node_ref,
    check_positive_int,
    check_unit,
    check_window,
    string_list,
    validate_task_id,
)
from langgraph_mnemon.memory_layers.mnemos._consolidation import consolidate as consolidate_task
from langgraph_mnemon.memory_layers.mnemos._curate import check_curation, curate_into
from langgraph_mnemon.memory_layers.mnemos._git import collect_git_state
from langgraph_mnemon.memory_layers.mnemos._maintenance import (
    choose_window,
    measure,
    plan_actions,
)
from langgraph_mnemon.memory_layers.mnemos._models import (
    ADDABLE_NODE_TYPES,
    CheckpointReceipt,
    CheckpointRecord,
    ConsolidationResult,
    ContextWindow,
    CurationReceipt,
    FatigueReading,
    FatigueResponse,
    GitState,
    MnemoNode,
    NodeSummary,
    SeenMessages,
    TaskOverview,
    TaskSummary,
)
from langgraph_mnemon.memory_layers.mnemos._nodes import (
    NewNode,
    compress_node,
    evict_node,
    insert_node,
    link_nodes,
    new_node,
    touch_node,
)
from langgraph_mnemon.memory_layers.mnemos._observing import Observing, check_messages
from langgraph_mnemon.memory_layers.mnemos._overview import (
    handoff_text,
    no_checkpoint,
    resume_text,
    task_overview,
)
from langgraph_mnemon.memory_layers.mnemos._summary import task_summary
from langgraph_mnemon.memory_layers.mnemos.schema import MIGRATIONS
from langgraph_mnemon.memory_layers.mnemos.store import (
    OWNER_MIGRATIONS,
    StoredUsage,
    claim_owner,
    decay_weights,
    fetch_node,
    fetch_nodes,
    insert_fatigue,
    list_checkpoints,
    list_fatigue,
    new_id,
    owned_task_ids,
    resolve_node_id,
    task_ids,
)
from langgraph_mnemon.memory_layers.mnemos.store import (
    latest_checkpoint as latest_checkpoint_record,
)
from langgraph_mnemon.storage.db import Database

__all__ = ["LOCAL_OWNER", "Mnemos"]

logger = logging.getLogger(__name__)

_STATUSES = ("active", "compressed", "evicted", "all")
_MAX_WINDOW = 100_000_000
_MAX_OWNER_CHARS = 4096
_CLAIMS_KEPT = 10_000
LOCAL_OWNER = Scope().user_key
"""The owner key of the single local user: tasks no one claimed belong to it."""


class Mnemos(Observing):
    """Task memory on the shared SQL database (``Mnemon.mnemos``).

    Args:
        database: the :class:`~langgraph_mnemon.storage.db.Database` shared with the
            ``MnemosSaver`` checkpointer.
        config: thresholds, windows and cooldowns (:class:`MnemosConfig`; defaults otherwise).
        workspace: the folder paths are made relative to, and whose git state checkpoints
            record.
        clock: returns UNIX seconds (injectable for tests).
        kernel: the host's :class:`Kernel`; every write asks ``mnemos`` ``write`` first. Alone,
            Mnemos is writable unless the database handle is read-only.

    Raises:
        InvalidInputError: ``database`` is not a ``Database`` or ``config`` not a
            ``MnemosConfig``.

    Example:
        >>> mnemos = Mnemos(Database(create_engine("sqlite:///./.mnemon/mnemon.db")))
        >>> mnemos.setup()
        >>> goal = mnemos.add_node("task-1", "goal", "Ship the password reset flow")
        >>> mnemos.add_node("task-1", "constraint", "Keep the public API backward compatible")
        >>> mnemos.checkpoint("task-1").status
        'committed'
        >>> print(mnemos.resume("task-1"))  # doctest: +SKIP
    """

    def __init__(
        self,
        database: Database,
        config: MnemosConfig | None = None,
        *,
        workspace: Path | str | None = None,
        clock: Callable[[], float] = time.time,
        kernel: Kernel | None = None,
    ) -> None:
        if not isinstance(database, Database):
            raise InvalidInputError(
                f"Mnemos() takes a Database (got {type(database).__name__}); "
                "use Database(create_engine(url))"
            )
        if config is not None and not isinstance(config, MnemosConfig):
            raise InvalidInputError(f"config must be a MnemosConfig (got {type(config).__name__})")
        self.db = database
        self.config = config or MnemosConfig()
        self.workspace = Path(workspace).expanduser().absolute() if workspace else None
        self._clock = clock
        # (task, owner) claims this process has written: bounded, oldest forgotten first.
        self._claimed: OrderedDict[tuple[str, str], None] = OrderedDict()
        # Task-memory writes ask the kernel (write_enabled); alone: writable unless the
        # database handle is read-only.
        self.kernel = kernel or Kernel.standalone(write_enabled=not database.read_only)

    def __repr__(self) -> str:
        return f"Mnemos(database={self.db.url!r})"

    # ---------------------------------------------------------------------------- setup

    def setup(self) -> None:
        """Create or migrate the schema (idempotent; also done lazily by every write).

        Raises:
            ReadOnlyError / ParticipationError: the kernel refuses ``mnemos`` ``write``.
        """
        self.kernel.admit("mnemos", "write")  # a read-only host creates no tables
        self.db.setup(MIGRATIONS)

    def _ready(self) -> None:
        """Before a write: ask the kernel, then create or migrate the schema."""
        self.kernel.admit("mnemos", "write")
        if not self.db.is_setup(MIGRATIONS):
            self.db.setup(MIGRATIONS)

    def _readable(self) -> bool:
        """Before a read: whether the tables exist (reads create nothing; absent = empty)."""
        return self.db.ready_for_read(MIGRATIONS)

    # ---------------------------------------------------------------------------- nodes

    def add_node(
        self,
        task_id: str,
        type: str,
        content: str,
        *,
        scope: Sequence[str] | None = None,
        paths: Sequence[str] | None = None,
        summary: str | None = None,
        origin: str = "agent_generated",
        confidence: float = 1.0,
        links: Sequence[str] = (),
    ) -> MnemoNode:
        """Add a typed node to a task's graph.

        Args:
            task_id: the task (for a LangGraph thread: its ``thread_id``).
            type: goal, constraint, context, working, result, skill or handoff.
            content: the node text (at most 65,536 characters).
            scope: scope tags given directly; ``paths`` adds the parent directories of each
                path. summary: kept when the node is compressed. origin: where it came from.
            confidence: in [0, 1]. links: ids (or unique prefixes) of nodes this one relates to.

        Returns:
            The stored :class:`MnemoNode`.

        Raises:
            InvalidInputError: a bad value (nothing stored). NotFoundError /
                AmbiguousMatchError: a link names no node, or several.
            ReadOnlyError: writes are off (``write_enabled=false`` or a read-only database).
            StorageError: the database refused the write (locked, unavailable, full, ...).

        Example:
            >>> mnemos.add_node("task-1", "context", "Auth lives in src/auth",
            ...                 paths=["src/auth/login.py"]).scope_tags
            ('src', 'auth')
        """
        task = validate_task_id(task_id)
        node = new_node(
            type,
            content,
            workspace=self.workspace,
            scope=scope,
            paths=paths,
            summary=summary,
            origin=origin,
            confidence=confidence,
            links=links,
        )
        return self._insert(task, node)

    def _insert(self, task: str, node: NewNode) -> MnemoNode:
        self._ready()
        moment = self._clock()
        node_id = new_id()
        with self.db.write() as conn:
            return insert_node(conn, task, node, node_id, moment=moment)

    def curate(self, task_id: str, action: str, text: str | None = None) -> CurationReceipt:
        """The model's own curation of a task (what the ``mnemon_task`` tool runs).

        ``set_goal`` supersedes the task's other active goals (compressed, summary
        ``Superseded: ...``); ``add_constraint`` adds one unless the same words are active;
        ``record_result`` records a result; ``mark_done`` records ``Done: <text or the goal>``.
        Nodes have origin ``model``: derivation never changes them, and a model goal names
        the task before a derived one.

        Args:
            task_id: the task. action: set_goal, add_constraint, record_result or mark_done.
            text: the node text (at most 2,000 characters; optional for mark_done).

        Returns:
            A :class:`CurationReceipt` (``skipped`` when the same goal or constraint is
            active already).

        Raises:
            InvalidInputError: a bad action or text, or mark_done without text and goal.
            ReadOnlyError: writes are off. StorageError: the database refused the write.

        Example:
            >>> mnemos.curate("task-1", "set_goal", "Ship the CSV importer").node.origin
            'model'
        """
        task = validate_task_id(task_id)
        kind, words = check_curation(action, text)
        self._ready()
        with self.db.write() as conn:
            return curate_into(conn, task, kind, words, moment=self._clock())

    def get_node(self, node_id: str) -> MnemoNode:
        """A node by id or unique id prefix (:class:`NotFoundError` if none)."""
        ref = check_node_ref(node_id)
        if not self._readable():
            raise NotFoundError(f"no Mnemos node with id {ref!r}; nothing is stored yet")
        with self.db.read() as conn:
            node = fetch_node(conn, resolve_node_id(conn, ref))
        assert node is not None
        return node

    def nodes(
        self,
        task_id: str | None = None,
        *,
        type: str | None = None,
        status: str = "active",
        limit: int | None = None,
    ) -> list[MnemoNode]:
        """Nodes of one task (or all tasks), heaviest first.

        ``status`` is ``active``, ``compressed``, ``evicted`` or ``all``.
        """
        task = validate_task_id(task_id) if task_id is not None else None
        if type is not None and type not in ADDABLE_NODE_TYPES:
            raise InvalidInputError(
                f"type must be one of {', '.join(ADDABLE_NODE_TYPES)} (got {shown(type)})"
            )
        if status not in _STATUSES:
            raise InvalidInputError("status must be active, compressed, evicted or all")
        count = check_positive_int(limit, "limit") if limit is not None else None
        if not self._readable():
            return []
        with self.db.read() as conn:
            return fetch_nodes(
                conn,
                task_id=task,
                types=[type] if type else None,
                statuses=None if status == "all" else [status],
                order="weight",
                limit=count,
            )

    def touch(self, node_id: str) -> MnemoNode:
        """Mark a node as used: weight back to 1.0, one more access, last access now.

        Consolidation evicts only cold context nodes (weight below 0.2), so a touched node is
        kept until decay makes it cold again.

        Args:
            node_id: the node's id or a unique prefix of it (4 to 64 characters).

        Returns:
            The updated :class:`MnemoNode`.

        Raises:
            InvalidInputError: ``node_id`` is not a string of 4 to 64 characters.
            NotFoundError / AmbiguousMatchError: ``node_id`` names no node, or several.
            ReadOnlyError: writes are off (``write_enabled=false`` or a read-only database).
            StorageError: the database refused the write.

        Example:
            >>> node = mnemos.add_node("task-1", "context", "Auth lives in src/auth")
            >>> mnemos.touch(node.id[:8]).access_count
            1
        """
        ref = check_node_ref(node_id)
        self._ready()
        with self.db.write() as conn:
            return touch_node(conn, ref, self._clock)

    def link(self, source_id: str, target_id: str, link_type: str = "related") -> None:
        """Link two nodes (idempotent). ``link_type``: related, depends_on or caused_by."""
        source_ref = check_node_ref(source_id, "source_id")
        target_ref = check_node_ref(target_id, "target_id")
        if link_type not in LINK_TYPES:
            raise InvalidInputError(f"link_type must be one of {', '.join(LINK_TYPES)}")
        self._ready()
        with self.db.write() as conn:
            link_nodes(conn, source_ref, target_ref, link_type, self._clock)

    def compress(self, node_id: str, summary: str | None = None) -> MnemoNode:
        """Keep a summary (given, or the first 200 characters) and clear the content.

        Raises:
            InvalidInputError: the node is not active, or its type is never compressed.
        """
        ref = check_node_ref(node_id)
        note = check_content(summary, "summary") if summary is not None else None
        self._ready()
        with self.db.write() as conn:
            return compress_node(conn, ref, note)

    def evict(self, node_id: str) -> MnemoNode:
        """Drop a node's content and summary (status ``evicted``).

        Raises:
            InvalidInputError: the node's type is never evicted (goal, constraint, ...).
        """
        ref = check_node_ref(node_id)
        self._ready()
        with self.db.write() as conn:
            return evict_node(conn, ref)

    def decay(self, task_id: str, factor: float | None = None) -> int:
        """Multiply the weight of the task's active non-exempt nodes by ``factor`` (floor 0.01).

        Goal, constraint, checkpoint and handoff nodes never decay. Returns the count.
        """
        task = validate_task_id(task_id)
        rate = (
            check_unit(factor, "factor", low_open=True, high_open=True)
            if factor is not None
            else self.config.decay_factor
        )
        self._ready()
        with self.db.write() as conn:
            return decay_weights(conn, task, rate)

    def consolidate(
        self, task_id: str, *, scope: Sequence[str] | None = None
    ) -> ConsolidationResult:
        """Micro-consolidation: compress the 3 oldest active results, evict the coldest eligible
        context node, decay the rest.

        A context node is eligible when its weight is below 0.2, it was accessed fewer than 3
        times and its scope tags do not overlap ``scope`` (Jaccard 0). Without ``scope``, the
        scope of the task's most recent path-bearing tool calls is used; with no such calls
        every cold context node is eligible. Coldest first: lowest weight, then least recently
        accessed, then oldest.

        Args:
            task_id: the task (for a LangGraph thread: its ``thread_id``).
            scope: the scope tags of the current work (at most 16, each at most 128
                characters); ``None`` takes them from the recent tool calls.

        Returns:
            A :class:`ConsolidationResult`: how many nodes were ``compressed``, ``evicted`` and
            ``decayed``, and the ids of the compressed and evicted ones.

        Raises:
            InvalidInputError: a bad ``task_id`` or ``scope``.
            ReadOnlyError: writes are off (``write_enabled=false`` or a read-only database).
            StorageError: the database refused the write; no node changed.

        Example:
            >>> mnemos.consolidate("task-1", scope=["src", "auth"]).compressed
            3
        """
        task = validate_task_id(task_id)
        given = string_list(scope, "scope", max_items=MAX_TAGS, max_chars=MAX_TAG_CHARS)
        self._ready()
        with self.db.write() as conn:
            return consolidate_task(
                conn, task, self.config, scope=given if scope is not None else None
            )

    # ---------------------------------------------------------------------------- signals

    # ---------------------------------------------------------------------------- fatigue

    def fatigue(
        self, task_id: str, *, log: bool = True, window: int | ContextWindow | None = None
    ) -> FatigueReading:
        """Measure the task's fatigue now.

        Every reading is logged unless ``log=False`` or the host is read-only
        (``write_enabled=false``: a reading is then a pure read). Token use is measured against
        ``mnemos.context_window`` when set, else ``window``, else the window stored with the
        newest token reading, else ``mnemos.context_window_tokens``.

        Args:
            task_id: the task (for a LangGraph thread: its ``thread_id``).
            log: store the reading (see :meth:`fatigue_history`).
            window: the calling model's window (a number is ``given``).

        Returns:
            A :class:`FatigueReading`: the four dimensions, their ``composite`` and the
            ``state`` (``FLOW``, ``COMPRESS``, ``PRE_SLEEP``, ``REM`` or ``EMERGENCY``). A task
            with no signals reads ``FLOW``.

        Raises:
            InvalidInputError: a bad ``task_id`` or ``window``, or ``log`` is not a bool.
            StorageError: the database could not be read or written.

        Example:
            >>> mnemos.fatigue("task-1", log=False).state
            'FLOW'
        """
        task = validate_task_id(task_id)
        declared = check_window(window, "window")
        if check_flag(log, "log") and self.kernel.write_enabled:
            self._ready()
            with self.db.write() as conn:
                reading = measure(conn, task, self.config, self._clock, declared)
                insert_fatigue(conn, reading)
            return reading
        if self._readable():
            with self.db.read() as conn:
                return measure(conn, task, self.config, self._clock, declared)
        return measure(None, task, self.config, self._clock, declared)

    def _observed_reading(
        self,
        task: str,
        messages: Sequence[Any],
        window: ContextWindow | None,
        since: SeenMessages | None,
    ) -> tuple[FatigueReading, SeenMessages | None]:
        """Observe what is new in ``messages`` and log the fatigue reading they lead to: one
        transaction."""
        if since is not None and not isinstance(since, SeenMessages):
            raise InvalidInputError("since must be the SeenMessages of an earlier response")
        taken: list[FatigueReading] = []

        def log_reading(conn: Any, usage: StoredUsage | None) -> None:
            taken.append(measure(conn, task, self.config, self._clock, window, usage))
            insert_fatigue(conn, taken[0])

        check_messages(messages)
        derive = self.config.derive_nodes
        seen, _ = self._observe(task, messages, since, derive, log_reading, window)
        return taken[0], seen

    def fatigue_history(self, task_id: str, *, limit: int = 20) -> list[FatigueReading]:
        """Logged readings, newest first."""
        task = validate_task_id(task_id)
        count = check_positive_int(limit, "limit")
        if not self._readable():
            return []
        with self.db.read() as conn:
            return list_fatigue(conn, task, count, choose_window(self.config))

    def maintain(
        self,
        task_id: str,
        *,
        messages: Sequence[Any] | None = None,
        window: int | ContextWindow | None = None,
        since: SeenMessages | None = None,
    ) -> FatigueResponse:
        """Measure fatigue and take the actions of its state.

        COMPRESS consolidates; PRE_SLEEP checkpoints and consolidates; REM writes an emergency
        checkpoint, consolidates and warns; EMERGENCY writes an emergency checkpoint,
        consolidates, warns and, when that checkpoint committed, a HandoffNode. The checkpoint
        cooldown applies in every state.

        Args:
            task_id: the task.
            messages: observe these first (:meth:`observe_messages`, derived nodes per
                ``MnemosConfig.derive_nodes``), in the same transaction as the reading: a
                model call's tending is one commit in every state without an action.
            window: the window of the model about to be called (its profile's
                ``max_input_tokens``; see :meth:`fatigue` for the order).
            since: the ``seen`` of the previous pass over the same growing list: only the
                messages after it are read and written. ``None``: the whole list.

        Returns:
            The :class:`FatigueResponse`: the reading, the actions taken and their receipts.

        Raises:
            InvalidInputError: a bad ``task_id``, ``messages`` or ``window``.
            ReadOnlyError: writes are off (with ``messages``). StorageError: a write failed.

        Example:
            >>> mnemos.maintain("task-1", messages=state["messages"], window=128_000).actions
            ()
        """
        task = validate_task_id(task_id)
        declared = check_window(window, "window")
        reading, seen = (
            (self.fatigue(task, window=declared), None)
            if messages is None
            else self._observed_reading(task, messages, declared, since)
        )
        plan = plan_actions(reading)
        receipt = consolidation = handoff = None
        if plan.checkpoint:  # the cooldown applies: no state forces one
            receipt = self.checkpoint(task, emergency=plan.emergency, reading=reading)
        if plan.consolidate:
            consolidation = self.consolidate(task)
        if plan.handoff and (receipt is None or receipt.status == "committed"):
            handoff = self.handoff(task)  # one per checkpoint, not one per model call
        return FatigueResponse(
            reading=reading,
            actions=plan.actions,
            consolidation=consolidation,
            checkpoint=receipt,
            handoff=handoff,
            message=plan.message,
            seen=seen,
        )

    # ---------------------------------------------------------------------------- checkpoints

    def summarize(self, task_id: str) -> TaskSummary:
        """The task's typed summary from its live nodes and recent signals (no git state)."""
        task = validate_task_id(task_id)
        if not self._readable():
            return TaskSummary()
        with self.db.read() as conn:
            return task_summary(conn, task, self.config, fatigue=None)

    def checkpoint(
        self,
        task_id: str,
        *,
        force: bool = False,
        emergency: bool = False,
        git: bool | None = None,
        reading: FatigueReading | None = None,
    ) -> CheckpointReceipt:
        """Write a CheckpointNode of the task's current summary.

        Within the cooldown (120 s by default) after the task's last ``checkpoint()`` this
        keeps that one and returns ``status="skipped"``; ``force=True`` bypasses it. Only the
        newest ``checkpoint_keep`` (100) native CheckpointNodes of a task are kept.

        Args:
            task_id: the task (for a LangGraph thread: its ``thread_id``).
            force: bypass the cooldown. emergency: mark an emergency checkpoint.
            git: record the workspace branch and changed files (``None``: config ``git_state``).
            reading: the fatigue reading to store (``None``: measure and log one).

        Returns:
            The :class:`CheckpointReceipt` (``skipped`` with the kept one within the cooldown).

        Raises:
            InvalidInputError: a bad ``task_id``, flag or ``reading`` (not a FatigueReading).
            ReadOnlyError: writes are off. StorageError: the database refused the write.

        Example:
            >>> mnemos.checkpoint("task-1").status, mnemos.checkpoint("task-1").status
            ('committed', 'skipped')
        """
        task = validate_task_id(task_id)
        if reading is not None and not isinstance(reading, FatigueReading):
            raise InvalidInputError("reading must be a FatigueReading")
        force, emergency = check_flag(force, "force"), check_flag(emergency, "emergency")
        with_git = self.config.git_state if git is None else check_flag(git, "git")
        self._ready()
        moment = self._clock()
        with self.db.read() as conn:
            skipped = self._cooldown(conn, task, moment, force)
        if skipped is not None:
            return skipped
        if reading is None:
            reading = self.fatigue(task)
        git_state = self._git_state() if with_git else None
        with self.db.write() as conn:
            # Checked again under the write lock: another process may have written one since.
            skipped = self._cooldown(conn, task, moment, force)
            if skipped is not None:
                return skipped
            return write_checkpoint(
                conn,
                task,
                self.config,
                moment=moment,
                reading=reading,
                emergency=emergency,
                git_state=git_state,
            )

    def _cooldown(
        self, conn: Any, task: str, moment: float, force: bool
    ) -> CheckpointReceipt | None:
        return None if force else cooldown_receipt(conn, task, moment, self.config)

    def _git_state(self) -> GitState | None:
        if self.workspace is None:
            return None
        return collect_git_state(self.workspace, timeout=self.config.git_timeout_seconds)

    def checkpoints(
        self, task_id: str, *, limit: int = 20, source: str | None = None
    ) -> list[CheckpointRecord]:
        """The task's CheckpointNodes, newest first: ``source="mnemos"`` for Mnemos' own
        (``checkpoint()``, fatigue), ``"langgraph"`` for MnemosSaver's, ``None`` for both.

        Raises:
            InvalidInputError: a bad ``task_id``, ``limit`` or ``source``.

        Example:
            >>> [c.source for c in mnemos.checkpoints("thread-1", source="mnemos")]
            ['mnemos']
        """
        task = validate_task_id(task_id)
        count = check_positive_int(limit, "limit")
        if source not in (None, "mnemos", "langgraph"):
            raise InvalidInputError('source must be "mnemos", "langgraph" or None')
        if not self._readable():
            return []
        with self.db.read() as conn:
            return list_checkpoints(conn, task, count, source)

    def latest_checkpoint(self, task_id: str) -> CheckpointRecord | None:
        """The newest root-graph CheckpointNode of the task, or ``None``."""
        task = validate_task_id(task_id)
        if not self._readable():
            return None
        with self.db.read() as conn:
            return latest_checkpoint_record(conn, task)

    def resume(self, task_id: str, *, live: bool = False) -> str:
        """The resume Markdown of the task's newest CheckpointNode.

        For a LangGraph thread this is the CheckpointNode of the checkpoint LangGraph resumes
        from; when that run carried no Mnemos state the task's live nodes fill the summary.

        A read: it never writes and never creates the tables.

        Args:
            task_id: the task (for a LangGraph thread: its ``thread_id``).
            live: fill the checkpoint's summary from the task's nodes now (what happened since
                the checkpoint counts; its git state is kept).

        Returns:
            Markdown for a new session: the checkpoint's id, time and fatigue, then the goal,
            active constraints, working memory, progress, key files, git state and node counts.
            Its open line, section headings and close line end in ``[boundary=B]``, a digest
            no node text contains (read it back with :func:`parse_resume`).

        Raises:
            InvalidInputError: a bad ``task_id``.
            NotFoundError: the task has no checkpoint yet.
            StorageError: the database could not be read.

        Example:
            >>> mnemos.resume("task-1").splitlines()[0]
            '## Mnemos Session Resume [boundary=3f9a0c1d2e4b]'
        """
        task = validate_task_id(task_id)
        live = check_flag(live, "live")
        if not self._readable():
            raise no_checkpoint(task)
        with self.db.read() as conn:
            return resume_text(conn, task, self.config, live=live)

    def handoff(self, task_id: str) -> MnemoNode:
        """Write (and return) a HandoffNode: the task summary for a successor agent."""
        task = validate_task_id(task_id)
        self._ready()
        moment = self._clock()
        node_id = new_id()
        with self.db.write() as conn:
            node = NewNode("handoff", handoff_text(conn, task, self.config), origin="derived")
            return insert_node(conn, task, node, node_id, moment=moment)

    # ---------------------------------------------------------------------------- overview

    def tasks(self, *, owner: str | None = None) -> list[str]:
        """Every task id with nodes, checkpoints or signals; ``owner`` keeps that user's only.

        Args:
            owner: an owner key (``Scope.user_key``, e.g. ``"user:alice"``); the local user
                (:data:`LOCAL_OWNER`) also owns every task nobody claimed. None: every task.

        Returns:
            The task ids, sorted.

        Raises:
            InvalidInputError: ``owner`` is not a non-empty key.
            StorageError: the database could not be read.

        Example:
            >>> mnemos.claim_task("thread-1", "user:alice")
            >>> mnemos.tasks(owner="user:alice")
            ['thread-1']
        """
        key = _check_owner(owner) if owner is not None else None
        if not self._readable():
            return []
        # No claim was ever recorded (no owner table): every task is the local user's.
        claimed = key is not None and self.db.ready_for_read(OWNER_MIGRATIONS)
        with self.db.read() as conn:
            if key is None or (not claimed and key == LOCAL_OWNER):
                return task_ids(conn)
            if not claimed:
                return []
            return owned_task_ids(conn, key, unowned=key == LOCAL_OWNER)

    def claim_task(self, task_id: str, owner: str) -> None:
        """Record who a task belongs to; the first claim wins and later ones change nothing.

        A turn claims its thread's task for the turn's user, so the control plane lists and
        reads a task for its owner only. A claim by a different owner later is ignored (and
        logged), never raised: a turn must not fail over it. A read-only host records nothing.

        Args:
            task_id: the task (for a LangGraph thread: its ``thread_id``).
            owner: the owner key (``Scope.user_key``, e.g. ``"user:alice"``).

        Raises:
            InvalidInputError: a bad ``task_id`` or ``owner``.
            StorageError: the database refused the write.

        Example:
            >>> mnemos.claim_task("thread-1", "user:alice")
            >>> mnemos.claim_task("thread-1", "user:bob")  # ignored: alice claimed it first
            >>> mnemos.tasks(owner="user:bob")
            []
        """
        task = validate_task_id(task_id)
        key = _check_owner(owner)
        if not self.kernel.write_enabled or self.db.read_only:
            return  # a read-only host writes nothing, not even an owner
        if (task, key) in self._claimed:
            self._claimed.move_to_end((task, key))
            return  # every turn of a thread claims it again: one write per process is enough
        self.db.setup(OWNER_MIGRATIONS)
        with self.db.write() as conn:
            recorded = claim_owner(conn, task, key, self._clock())
        self._claimed[(task, key)] = None
        if len(self._claimed) > _CLAIMS_KEPT:
            self._claimed.popitem(last=False)
        if recorded != key:
            logger.warning(
                "Mnemos task %r belongs to %s; the claim by %s was ignored", task, recorded, key
            )

    def status(self, task_id: str | None = None, *, owner: str | None = None) -> list[TaskOverview]:
        """Node counts, checkpoints and last fatigue of one task or of every task.

        ``owner`` keeps the tasks of that owner key only (as :meth:`tasks` does).
        """
        task = validate_task_id(task_id) if task_id is not None else None
        if not self._readable():
            empty = TaskOverview(task_id=task, nodes=NodeSummary(), checkpoints=0) if task else None
            return [empty] if empty is not None else []
        ids = [task] if task is not None else self.tasks(owner=owner)
        if task is not None and owner is not None and task not in self.tasks(owner=owner):
            ids = []
        with self.db.read() as conn:
            return [task_overview(conn, tid, self.config) for tid in ids]


def _check_owner(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_OWNER_CHARS:
        raise InvalidInputError(
            f"owner must be an owner key such as 'user:alice' (got {shown(value)})"
        )
    return check_text(value, "owner")
