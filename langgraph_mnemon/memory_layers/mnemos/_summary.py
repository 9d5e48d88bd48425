"""The typed task summary, derived from the task's live nodes and its recent signals: what a
CheckpointNode stores, what resume renders and what a HandoffNode hands over.

The goal is ONE active goal node: the model's (``mnemon_task``, origin ``model``), else the newest
one added by the agent or application (``add_node``), else the one derived from the user's
request (origin ``derived``); a superseded goal is compressed and never shown. Constraints come
from active nodes; progress from result nodes in the order they happened, the newest last (their
summary once compressed; the last ``max(5, checkpoint_results)``); the current sub-goal is the
heaviest working node and working memory the next ones, without repeating the sub-goal; the
narrative and key files come from the last tool calls.

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
from langgraph_mnemon.memory_layers.mnemos._signals import is_edit_tool
from langgraph_mnemon.memory_layers.mnemos.store import (
    fetch_nodes,
    fetch_signals,
)

__all__ = ["MIN_RESULTS", "pick_goal", "summary_from_state", "task_goal", "task_summary"]

_RECENT_SIGNALS = 100
_NARRATIVE_SIGNALS = 50
_MAX_RECENT_FILES = 15
_SUMMARY_TYPES = ["goal", "constraint", "result", "working"]
MIN_RESULTS = 5
"""The last results a summary always keeps, whatever ``checkpoint_results`` says."""
# Lower ranks name the task first: the model's own statement, then the agent's, then the host's
# derivation from the user's words (any other origin counts as the agent's).
_GOAL_RANK = {"model": 0, "derived": 2}
_WORKING_MEMORY_NODES = 3


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
    constraints = [n.content for n in nodes if n.type == "constraint" and n.status == "active"]
    working = _working_nodes(nodes)
    subgoal = working[0].content.strip() if working else None
    signals = fetch_signals(conn, task, _RECENT_SIGNALS)
    return TaskSummary(
        goal=pick_goal(nodes),
        constraints=tuple(constraints),
        results=_results(nodes, max(MIN_RESULTS, config.checkpoint_results)),
        current_subgoal=subgoal or None,
        working_memory=_working_memory(working[1:], subgoal),
        narrative=_narrative(signals[-_NARRATIVE_SIGNALS:]),
        recent_files=tuple(_recent_files(signals)),
        fatigue=fatigue,
    )


def pick_goal(nodes: Sequence[MnemoNode]) -> str | None:
    """The goal that names a task, from its nodes in creation order (``order="seq"``).

    The newest active goal of the best origin: ``model`` first, then ``agent_generated`` (and
    any other origin), then ``derived``. Compressed (superseded) and evicted goals never count.

    Args:
        nodes: nodes of one task, oldest first; nodes of other types are ignored.

    Returns:
        The goal text, or ``None`` without an active goal.

    Example:
        >>> pick_goal(mnemos.nodes("task-1", type="goal")[::-1])  # doctest: +SKIP
        'Ship the password reset flow'
    """
    best: MnemoNode | None = None
    for node in nodes:
        if node.type != "goal" or node.status != "active" or not node.content.strip():
            continue
        # "<=" lets a newer goal of the same rank win.
        if best is None or _goal_rank(node) <= _goal_rank(best):
            best = node
    return best.content.strip() if best is not None else None


def _goal_rank(node: MnemoNode) -> int:
    return _GOAL_RANK.get(node.origin, 1)


def task_goal(conn: sa.Connection, task: str) -> str | None:
    """The goal :func:`task_summary` shows for ``task`` (see :func:`pick_goal`).

    Args:
        conn: an open connection.
        task: the task id.

    Returns:
        The goal text, or ``None`` without an active goal.

    Example:
        >>> with db.read() as conn:  # doctest: +SKIP
        ...     task_goal(conn, "task-1")
        'Ship the password reset flow'
    """
    return pick_goal(fetch_nodes(conn, task_id=task, types=["goal"], order="seq"))


def _results(nodes: Sequence[MnemoNode], keep: int) -> tuple[str, ...]:
    """The last ``keep`` results in the order they happened (newest last), on one line each."""
    texts = []
    for node in nodes:
        if node.type != "result":
            continue
        if node.status == "compressed":
            text = node.summary or ""
        else:
            text = compress_summary(node.content, node.summary)
        text = " ".join(text.split())  # one Markdown list item per result
        if text:
            texts.append(text)
    return tuple(texts[-keep:])


def _working_memory(rest: Sequence[MnemoNode], subgoal: str | None) -> str | None:
    """The next working nodes' text, without the sub-goal or a repeated line."""
    seen = {subgoal} if subgoal else set()
    kept = []
    for node in rest:
        text = node.content.strip()
        if text and text not in seen:
            seen.add(text)
            kept.append(text)
        if len(kept) == _WORKING_MEMORY_NODES:
            break
    return "\n".join(kept) or None


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
        if row.read_only:
            reads[row.path] += 1
        elif is_edit_tool(row.tool_name):
            edits[row.path] += 1  # a run_tests(target=...) only touches its path
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
        if row.path and row.dir_key:
            self.dirs[row.dir_key] += 1
            self.last[row.dir_key] = i
        if row.path and (row.read_only or is_edit_tool(row.tool_name)):
            name = PurePosixPath(row.path).name or row.path
            (self.reads if row.read_only else self.edits)[name] += 1
            self.last[name] = i
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
