"""The typed task summary, derived from the task's live nodes and its recent signals: what a
CheckpointNode stores, what resume renders and what a HandoffNode hands over.

Goal and constraints come from active nodes; progress from result nodes (their summary once
compressed); the current sub-goal and working memory from the heaviest working nodes; the
narrative and key files from the last tool calls.

Example:
    >>> with db.read() as conn:
    ...     summary = task_summary(conn, "task-1", config, fatigue=None)
    >>> summary.goal
    'Ship the password reset flow'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

import sqlalchemy as sa

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.mnemos._models import MnemoNode, RecentFile, TaskSummary
from langgraph_mnemon.memory_layers.mnemos._resume import compress_summary
from langgraph_mnemon.memory_layers.mnemos.store import (
    fetch_nodes,
    fetch_signals,
)

__all__ = ["summary_from_state", "task_summary"]

_RECENT_SIGNALS = 100
_NARRATIVE_SIGNALS = 50
_MAX_RECENT_FILES = 15
_SUMMARY_TYPES = ["goal", "constraint", "result", "working"]


def task_summary(
    conn: sa.Connection, task: str, config: MnemosConfig, *, fatigue: float | None
) -> TaskSummary:
    """The summary of ``task`` now (no git state); ``fatigue`` is recorded as given."""
    nodes = fetch_nodes(
        conn,
        task_id=task,
        types=_SUMMARY_TYPES,
        statuses=["active", "compressed"],
        order="seq",
    )
    goals = [n.content for n in nodes if n.type == "goal" and n.status == "active"]
    constraints = [n.content for n in nodes if n.type == "constraint" and n.status == "active"]
    results = [
        n.summary if n.status == "compressed" else compress_summary(n.content, n.summary)
        for n in nodes
        if n.type == "result"
    ][-config.checkpoint_results :]
    working = _working_nodes(nodes)
    signals = fetch_signals(conn, task, _RECENT_SIGNALS)
    return TaskSummary(
        goal="; ".join(goals) or None,
        constraints=tuple(constraints),
        results=tuple(r for r in results if r),
        current_subgoal=working[0].content if working else None,
        working_memory="\n".join(n.content for n in working[1:4]) or None,
        narrative=_narrative(signals[-_NARRATIVE_SIGNALS:]),
        recent_files=tuple(_recent_files(signals)),
        fatigue=fatigue,
    )


def _working_nodes(nodes: Sequence[MnemoNode]) -> list[MnemoNode]:
    """Active working nodes, heaviest first (then most recently used, then newest)."""
    return sorted(
        (n for n in nodes if n.type == "working" and n.status == "active"),
        key=lambda n: (-n.weight, -n.last_accessed.timestamp(), -n.created_at.timestamp()),
    )


def _recent_files(signals: Sequence[Any]) -> list[RecentFile]:
    edits: Counter[str] = Counter()
    reads: Counter[str] = Counter()
    order: dict[str, int] = {}
    for i, row in enumerate(signals):
        if not row.path:
            continue
        (reads if row.read_only else edits)[row.path] += 1
        order[row.path] = i
    paths = sorted(order, key=lambda p: (-(edits[p] + reads[p]), -order[p]))
    return [RecentFile(path=p, edits=edits[p], reads=reads[p]) for p in paths[:_MAX_RECENT_FILES]]


class _Tally:
    """Counts of one window of tool calls: files edited / read, other tools, directories."""

    def __init__(self, signals: Sequence[Any]) -> None:
        self.edits: Counter[str] = Counter()
        self.reads: Counter[str] = Counter()
        self.others: Counter[str] = Counter()
        self.dirs: Counter[str] = Counter()
        self.errors = 0
        self.last: dict[str, int] = {}  # ties go to the most recent, as in the Key Files list
        for i, row in enumerate(signals):
            self._count(i, row)

    def _count(self, i: int, row: Any) -> None:
        if row.status == "error":
            self.errors += 1
        if row.path:
            name = PurePosixPath(row.path).name or row.path
            (self.reads if row.read_only else self.edits)[name] += 1
            self.last[name] = i
            if row.dir_key:
                self.dirs[row.dir_key] += 1
                self.last[row.dir_key] = i
        else:
            self.others[row.tool_name or "tool"] += 1
            self.last[row.tool_name or "tool"] = i

    def ranked(self, counter: Counter[str], n: int) -> list[tuple[str, int]]:
        names = sorted(counter, key=lambda k: (-counter[k], -self.last[k]))[:n]
        return [(k, counter[k]) for k in names]

    def top(self, counter: Counter[str]) -> str:
        return ", ".join(f"{name} ({n}x)" if n > 1 else name for name, n in self.ranked(counter, 5))


def _narrative(signals: Sequence[Any]) -> str | None:
    """``Editing: ... Reading: ... Other tools: ... Focus area: dir/. Errors: n/m ...``."""
    if not signals:
        return None
    tally = _Tally(signals)
    parts = []
    if tally.edits:
        parts.append(f"Editing: {tally.top(tally.edits)}")
    if tally.reads:
        parts.append(f"Reading: {tally.top(tally.reads)}")
    if tally.others:
        others = ", ".join(f"{n}:{c}" for n, c in tally.ranked(tally.others, 5))
        parts.append("Other tools: " + others)
    if tally.dirs:
        parts.append(f"Focus area: {tally.ranked(tally.dirs, 1)[0][0]}/")
    parts.append(f"Errors: {tally.errors}/{len(signals)} tool calls failed")
    return ". ".join(parts) + "."


def summary_from_state(value: Any, *, state_key: str = "mnemos") -> TaskSummary:
    """Validate the Mnemos state a graph carries (a dict or a :class:`TaskSummary`).

    Args:
        value: the value under ``state_key`` in a LangGraph state (a dict, a
            :class:`TaskSummary`, or any pydantic model with the same fields).
        state_key: the key's name, for the error message.

    Returns:
        The :class:`TaskSummary`.

    Raises:
        InvalidInputError: ``value`` is not a mapping or not a valid summary.

    Example:
        >>> summary_from_state({"goal": "Ship it", "constraints": "No API changes"}).constraints
        ('No API changes',)
    """
    if isinstance(value, TaskSummary):
        return value
    if hasattr(value, "model_dump") and callable(value.model_dump):
        value = value.model_dump()
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"graph state key {state_key!r} must hold a Mnemos summary dict "
            f"(goal, constraints, results, ...), got {type(value).__name__}; rename the key or "
            "configure another MnemosConfig.state_key"
        )
    try:
        return TaskSummary.model_validate(dict(value))
    except ValueError as exc:
        raise InvalidInputError(
            f"graph state key {state_key!r} is not a valid Mnemos summary: {exc}"
        ) from None
