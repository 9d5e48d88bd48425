"""Reading a task back: the resume Markdown, the HandoffNode text and the task overview.

Example:
    >>> with db.read() as conn:
    ...     print(resume_text(conn, "task-1", config))  # doctest: +SKIP
"""

from __future__ import annotations

import sqlalchemy as sa

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.errors import NotFoundError
from langgraph_mnemon.memory_layers.mnemos._models import CheckpointRecord, TaskOverview
from langgraph_mnemon.memory_layers.mnemos._resume import (
    compress_summary,
    render_handoff,
    render_resume,
)
from langgraph_mnemon.memory_layers.mnemos._summary import task_summary
from langgraph_mnemon.memory_layers.mnemos.store import (
    count_checkpoints,
    fetch_nodes,
    latest_checkpoint,
    list_fatigue,
    node_summary,
)

__all__ = ["handoff_text", "no_checkpoint", "resume_text", "task_overview"]

_HANDOFF_SKILLS = 10


def no_checkpoint(task: str) -> NotFoundError:
    """The error of a resume with nothing to resume from."""
    return NotFoundError(
        f"no checkpoint found to resume task {task!r} from; write one with "
        "mnemos.checkpoint(task_id) or run a graph with the Mnemos checkpointer"
    )


def resume_text(conn: sa.Connection, task: str, config: MnemosConfig) -> str:
    """The resume Markdown of the task's newest root-graph CheckpointNode.

    A checkpoint whose run carried no Mnemos state is filled from the task's live nodes.

    Raises:
        NotFoundError: the task has no checkpoint yet.
    """
    record = latest_checkpoint(conn, task)
    if record is None:
        raise no_checkpoint(task)
    return _rendered(conn, task, config, record)


def _rendered(
    conn: sa.Connection, task: str, config: MnemosConfig, record: CheckpointRecord
) -> str:
    if record.has_summary:
        summary = record.summary
    else:
        summary = task_summary(conn, task, config, fatigue=record.fatigue)
    nodes = node_summary(conn, task)
    counts = record.node_summary if record.node_summary is not None else nodes
    return render_resume(record, summary, counts)


def handoff_text(conn: sa.Connection, task: str, config: MnemosConfig) -> str:
    """The Markdown of a HandoffNode: summary, skills, key files and diagnostics."""
    summary = task_summary(conn, task, config, fatigue=None)
    counts = node_summary(conn, task)
    skills = [
        compress_summary(n.text)
        for n in fetch_nodes(conn, task_id=task, types=["skill"], order="weight")
    ][:_HANDOFF_SKILLS]
    history = list_fatigue(conn, task, 1, config.context_window_tokens)
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
    """Node counts, checkpoints and the last fatigue reading of one task."""
    history = list_fatigue(conn, task, 1, config.context_window_tokens)
    return TaskOverview(
        task_id=task,
        nodes=node_summary(conn, task),
        checkpoints=count_checkpoints(conn, task),
        last_checkpoint=latest_checkpoint(conn, task, root_only=False),
        last_fatigue=history[0] if history else None,
    )
