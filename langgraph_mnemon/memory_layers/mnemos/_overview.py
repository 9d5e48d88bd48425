"""Reading a task back: the resume Markdown, the HandoffNode text and the task overview.

Example:
    >>> with db.read() as conn:
    ...     print(resume_text(conn, "task-1", config))  # doctest: +SKIP
"""

from __future__ import annotations

import sqlalchemy as sa

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.errors import NotFoundError
from langgraph_mnemon.memory_layers.mnemos._maintenance import choose_window
from langgraph_mnemon.memory_layers.mnemos._models import TaskOverview
from langgraph_mnemon.memory_layers.mnemos._resume import (
    compress_summary,
    render_handoff,
    render_resume,
)
from langgraph_mnemon.memory_layers.mnemos._summary import task_goal, task_summary
from langgraph_mnemon.memory_layers.mnemos.schema import CHECKPOINT_NODES
from langgraph_mnemon.memory_layers.mnemos.store import (
    count_checkpoints,
    fetch_nodes,
    latest_checkpoint,
    list_fatigue,
    node_summary,
)

__all__ = [
    "checkpoint_counts",
    "handoff_text",
    "no_checkpoint",
    "resume_text",
    "task_overview",
]

_HANDOFF_SKILLS = 10


def no_checkpoint(task: str) -> NotFoundError:
    """The error of a resume with nothing to resume from."""
    return NotFoundError(
        f"no checkpoint found to resume task {task!r} from; write one with "
        "mnemos.checkpoint(task_id) or run a graph with the Mnemos checkpointer"
    )


def resume_text(conn: sa.Connection, task: str, config: MnemosConfig, *, live: bool = False) -> str:
    """The resume Markdown of the task's newest root-graph CheckpointNode.

    A checkpoint whose run carried no Mnemos state is filled from the task's live nodes; so is
    every checkpoint with ``live=True`` (its git state kept): what happened since it counts.

    Raises:
        NotFoundError: the task has no checkpoint yet.
    """
    record = latest_checkpoint(conn, task)
    if record is None:
        raise no_checkpoint(task)
    nodes = node_summary(conn, task)
    if record.has_summary and not live:
        summary = record.summary
        counts = record.node_summary if record.node_summary is not None else nodes
    else:
        summary = task_summary(conn, task, config, fatigue=record.fatigue)
        if record.has_summary:
            summary = summary.model_copy(update={"git_state": record.summary.git_state})
        counts = nodes if live or record.node_summary is None else record.node_summary
    return render_resume(record, summary, counts)


def handoff_text(conn: sa.Connection, task: str, config: MnemosConfig) -> str:
    """The Markdown of a HandoffNode: summary, skills, key files and diagnostics."""
    summary = task_summary(conn, task, config, fatigue=None)
    counts = node_summary(conn, task)
    skills = [
        compress_summary(n.text)
        for n in fetch_nodes(conn, task_id=task, types=["skill"], order="weight")
    ][:_HANDOFF_SKILLS]
    history = list_fatigue(conn, task, 1, choose_window(config))
    fatigue_line = f"Fatigue: {history[0].composite:.2f} ({history[0].state})" if history else None
    return render_handoff(
        task,
        summary,
        counts,
        skills,
        checkpoints=count_checkpoints(conn, task),
        fatigue_line=fatigue_line,
    )


def task_overview(conn: sa.Connection, task: str, config: MnemosConfig) -> TaskOverview:
    """Goal, node counts, checkpoints (all, Mnemos, LangGraph) and the last fatigue reading.

    Args:
        conn: an open connection.
        task: the task id.
        config: the Mnemos settings (the window of a reading logged without one).

    Returns:
        The :class:`TaskOverview`; ``goal`` is the one resume shows (``None`` without one).

    Example:
        >>> with db.read() as conn:  # doctest: +SKIP
        ...     task_overview(conn, "task-1", config).label
        'Ship the password reset flow'
    """
    history = list_fatigue(conn, task, 1, choose_window(config))
    counts = checkpoint_counts(conn, task)
    return TaskOverview(
        task_id=task,
        nodes=node_summary(conn, task),
        checkpoints=sum(counts.values()),
        last_checkpoint=latest_checkpoint(conn, task, root_only=False),
        last_fatigue=history[0] if history else None,
        goal=task_goal(conn, task),
        mnemos_checkpoints=counts.get("mnemos", 0),
        langgraph_checkpoints=counts.get("langgraph", 0),
        last_mnemos_checkpoint=latest_checkpoint(conn, task, source="mnemos", root_only=False),
    )


def checkpoint_counts(conn: sa.Connection, task: str) -> dict[str, int]:
    """How many CheckpointNodes ``task`` has, by source (``mnemos`` / ``langgraph``).

    Args:
        conn: an open connection.
        task: the task id.

    Returns:
        Source -> count; a source without checkpoints is absent.

    Example:
        >>> with db.read() as conn:  # doctest: +SKIP
        ...     checkpoint_counts(conn, "thread-1")
        {'langgraph': 212, 'mnemos': 3}
    """
    rows = conn.execute(
        sa.select(CHECKPOINT_NODES.c.source, sa.func.count())
        .where(CHECKPOINT_NODES.c.task_id == task)
        .group_by(CHECKPOINT_NODES.c.source)
    ).all()
    return {str(source): int(count) for source, count in rows}
