"""What a run shows Mnemos: tool calls, their outcomes, token usage and the nodes derived from
its messages — the observation half of :class:`~._service.Mnemos` (a base class of it).

Every method checks its input, asks the kernel (``_ready``) and writes in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.messages import MessageText, read_messages
from langgraph_mnemon.memory_layers.mnemos._checks import (
    check_call_id,
    check_flag,
    check_tool_name,
    check_window,
    validate_task_id,
)
from langgraph_mnemon.memory_layers.mnemos._derive import derive_into
from langgraph_mnemon.memory_layers.mnemos._models import (
    ContextWindow,
    DerivationResult,
    SeenMessages,
)
from langgraph_mnemon.memory_layers.mnemos._signals import (
    Observation,
    SignalSource,
    cursor_after,
    merge_tool_rows,
    new_part,
    observe,
    set_tool_status,
    store_tool_rows,
    store_usage,
)
from langgraph_mnemon.memory_layers.mnemos.store import StoredUsage
from langgraph_mnemon.storage.db import Database

__all__ = ["Observing"]


class Observing:
    """Signal recording and node derivation (mixed into ``Mnemos``)."""

    db: Database
    config: MnemosConfig
    workspace: Path | None
    _clock: Callable[[], float]
    _ready: Callable[[], None]  # Mnemos: ask the kernel, then create or migrate the schema

    def _signal_source(self) -> SignalSource:
        return SignalSource(self.workspace, tuple(self.config.read_only_tools), self._clock)

    def record_tool_call(
        self,
        task_id: str,
        tool_name: str,
        args: Any = None,
        *,
        call_id: str | None = None,
        status: str = "pending",
    ) -> None:
        """Record one tool call (once per ``call_id``; a repeated id only updates the status).

        ``status`` is ``pending`` (outcome not known yet), ``ok`` or ``error``.
        """
        task = validate_task_id(task_id)
        name = check_tool_name(tool_name)
        if status not in ("pending", "ok", "error"):
            raise InvalidInputError("status must be pending, ok or error")
        if call_id is not None:
            check_call_id(call_id)
        row = self._signal_source().tool_row(task, name, args, call_id, status)
        self._ready()
        with self.db.write() as conn:
            store_tool_rows(conn, task, [row])

    def record_tool_result(self, task_id: str, call_id: str, *, error: bool = False) -> bool:
        """Set the outcome of a recorded call; returns False when the call is unknown."""
        task = validate_task_id(task_id)
        check_call_id(call_id)
        if not isinstance(error, bool):
            raise InvalidInputError("error must be true or false")
        self._ready()
        with self.db.write() as conn:
            return set_tool_status(conn, task, call_id, error=error)

    def record_usage(
        self,
        task_id: str,
        tokens: int,
        *,
        context_window: int | ContextWindow | None = None,
        estimated: bool = False,
        call_id: str | None = None,
    ) -> None:
        """Record the tokens of the last model call (its ``usage_metadata`` total).

        Args:
            task_id: the task. tokens: the call's token total.
            context_window: the calling model's window, kept with the reading (a number is
                ``given``); ``None``: readings use ``mnemos.context_window`` when set, else
                ``mnemos.context_window_tokens``.
            estimated: the tokens are a character estimate.
            call_id: the model call (a reading is kept once per call id).

        Raises:
            InvalidInputError: a bad argument. ReadOnlyError: writes are off.

        Example:
            >>> mnemos.record_usage("task-1", 7_950, context_window=8_000)
        """
        task = validate_task_id(task_id)
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens < 2**31:
            raise InvalidInputError("tokens must be a non-negative integer below 2**31")
        if call_id is not None:
            check_call_id(call_id)
        if not isinstance(estimated, bool):
            raise InvalidInputError("estimated must be true or false")
        window = check_window(context_window)
        self._ready()
        with self.db.write() as conn:
            store_usage(conn, task, tokens, window, estimated, call_id, moment=self._clock())

    def observe_messages(
        self,
        task_id: str,
        messages: Sequence[Any],
        *,
        derive: bool | None = None,
        also: Callable[[Any], None] | None = None,
        window: int | ContextWindow | None = None,
    ) -> int:
        """Feed fatigue signals and task nodes from a run's message list.

        Tool calls of AI messages become tool signals (once per tool call id); a tool message
        that is an error by ``status="error"`` or by its content (a trace, ``Error: ...``, a
        non-zero exit code) marks its call failed; the last AI message's ``usage_metadata``
        gives the token reading (a character estimate of all messages when the model reported
        none). Content blocks of every provider shape count. Unless ``derive=False`` (or
        ``derive_nodes`` is off) the same transaction derives the task's goal, constraint,
        result, context and working nodes (:meth:`derive`). Safe to call again with the grown
        list.

        Args:
            task_id: the task (for a LangGraph thread: its ``thread_id``).
            messages: LangChain messages or their dict forms.
            derive: derive nodes too (``None``: ``MnemosConfig.derive_nodes``).
            also: more writes for the same transaction, given its connection (``maintain``
                logs the fatigue reading this way: one commit per model call).
            window: the window of the model the messages go to, kept with the token reading
                (a number is ``given``; see :meth:`record_usage`).

        Returns:
            How many tool calls were new.

        Raises:
            InvalidInputError: ``messages`` is not a list, ``derive`` not a bool, or a bad
                ``window``.
            ReadOnlyError: writes are off. StorageError: the database refused the write.

        Example:
            >>> mnemos.observe_messages("task-1", result["messages"])
            2
        """
        task = validate_task_id(task_id)
        check_messages(messages)
        with_nodes = self.config.derive_nodes if derive is None else check_flag(derive, "derive")
        declared = check_window(window, "window")

        def more(conn: Any, _usage: StoredUsage | None) -> None:
            if also is not None:
                also(conn)

        return self._observe(task, messages, None, with_nodes, more, declared, count=True)[1]

    def _observe(
        self,
        task: str,
        messages: Sequence[Any],
        since: SeenMessages | None,
        with_nodes: bool,
        also: Callable[[Any, StoredUsage | None], None],
        declared: ContextWindow | None,
        *,
        count: bool = False,
    ) -> tuple[SeenMessages | None, int]:
        """Observe what is new in ``messages`` since ``since`` (all of it without one), then
        ``also(conn, usage)`` (``usage``: the reading just stored when it is the newest): one
        transaction. Returns where this observation stopped and, with ``count`` (one more
        statement), how many tool calls were new (else 0)."""
        offset, fresh, prior = new_part(messages, since)
        read = read_messages(messages[offset:])
        seen = observe(
            task,
            read,
            self._signal_source(),
            self.config.chars_per_token,
            offset=offset,
            fresh=fresh,
            prior=prior,
        )
        self._ready()
        moment = self._clock()
        with self.db.write() as conn:
            new = store_tool_rows(conn, task, seen.rows) if count else 0
            if not count:
                merge_tool_rows(conn, task, seen.rows)
            usage = self._store_usage(conn, task, seen, declared, moment)
            if with_nodes:
                derive_into(
                    conn,
                    task,
                    read,
                    self.config,
                    workspace=self.workspace,
                    moment=moment,
                    continuing=offset > 0,
                )
            also(conn, usage)
        return cursor_after(messages, seen), new

    @staticmethod
    def _store_usage(
        conn: Any, task: str, seen: Observation, window: ContextWindow | None, moment: float
    ) -> StoredUsage | None:
        """Store the observation's token reading; the reading when it is now the newest."""
        if seen.tokens is None:
            return None
        newest = store_usage(
            conn, task, seen.tokens, window, seen.estimated, seen.usage_id, moment=moment
        )
        if not newest:
            return None  # an older reading seen again: the newest is another row
        stored = window.tokens if window is not None else None
        source = window.source if window is not None else None
        return StoredUsage(seen.tokens, stored, source, seen.estimated)

    def derive(self, task_id: str, messages: Sequence[Any]) -> DerivationResult:
        """Derive the task's nodes from a run's messages, without a model.

        The goal from the first real user request (replaced when the user restates or changes
        it), constraints from the user's requirement sentences (verbatim), results from
        completed tool calls and the final answer of a turn, context nodes from tool outputs
        that read files, URLs or records, one working node with the assistant's latest plan.
        Deduplicated by what each node stands for, bounded per type (``max_*_nodes``), origin
        ``derived``. Model-given nodes (``mnemon_task``, origin ``model``) are never changed.

        Args:
            task_id: the task. messages: LangChain messages or their dict forms.

        Returns:
            A :class:`DerivationResult` (created, updated and retired node counts).

        Raises:
            InvalidInputError: a bad ``task_id`` or ``messages``.
            ReadOnlyError: writes are off. StorageError: the database refused the write.

        Example:
            >>> mnemos.derive("task-1", [HumanMessage("Fix the importer. Never touch main.")])
            DerivationResult(created=2, ...)
        """
        task = validate_task_id(task_id)
        read = self._read(messages)
        self._ready()
        with self.db.write() as conn:
            return derive_into(
                conn, task, read, self.config, workspace=self.workspace, moment=self._clock()
            )

    @staticmethod
    def _read(messages: Any) -> list[MessageText]:
        return read_messages(check_messages(messages))


def check_messages(messages: Any) -> Sequence[Any]:
    """``messages`` when it is a list of messages (or their dict forms)."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidInputError("messages must be a list of messages")
    return messages
