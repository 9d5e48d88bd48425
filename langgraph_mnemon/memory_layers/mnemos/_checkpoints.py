"""Native CheckpointNodes: the cooldown and the write of a task's summary at one moment.

``Mnemos.checkpoint()`` keeps the task's last checkpoint instead of writing a new one while it
is younger than ``checkpoint_cooldown_seconds`` (unless forced), checks again under the write
lock, then stores the summary (with git state when asked) and trims the task to its newest
``checkpoint_keep`` native CheckpointNodes.

Example:
    >>> with db.write() as conn:
    ...     receipt = cooldown_receipt(conn, "task-1", time.time(), config) or write_checkpoint(
    ...         conn, "task-1", config, moment=time.time(), reading=reading, emergency=False,
    ...         git_state=None)
"""

from __future__ import annotations

import sqlalchemy as sa

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.memory_layers.mnemos._models import (
    CheckpointReceipt,
    FatigueReading,
    GitState,
)
from langgraph_mnemon.memory_layers.mnemos._summary import task_summary
from langgraph_mnemon.memory_layers.mnemos.store import (
    checkpoint_node_values,
    insert_checkpoint_node,
    latest_checkpoint,
    node_summary,
    trim_checkpoints,
)

__all__ = ["cooldown_receipt", "write_checkpoint"]


def cooldown_receipt(
    conn: sa.Connection, task: str, moment: float, config: MnemosConfig
) -> CheckpointReceipt | None:
    """A ``skipped`` receipt when the task's last checkpoint is within the cooldown."""
    last = latest_checkpoint(conn, task, source="mnemos", root_only=False)
    cooldown = config.checkpoint_cooldown_seconds
    if last is None or moment - last.created_at.timestamp() >= cooldown:
        return None
    age = moment - last.created_at.timestamp()
    return CheckpointReceipt(
        status="skipped",
        message=(
            f"Checkpoint {last.id[:8]} is {age:.0f}s old (cooldown {cooldown:.0f}s); "
            "kept it. Pass force=True to write a new one."
        ),
        changed=False,
        revision=last.id,
        checkpoint=last,
    )


def write_checkpoint(
    conn: sa.Connection,
    task: str,
    config: MnemosConfig,
    *,
    moment: float,
    reading: FatigueReading,
    emergency: bool,
    git_state: GitState | None,
) -> CheckpointReceipt:
    """Store a CheckpointNode of the task's summary now and trim the old native ones."""
    summary = task_summary(conn, task, config, fatigue=reading.composite)
    if git_state is not None:
        summary = summary.model_copy(update={"git_state": git_state})
    values = checkpoint_node_values(
        task_id=task,
        source="mnemos",
        created_at=moment,
        summary=summary,
        node_counts=node_summary(conn, task),
        emergency=emergency,
        fatigue_state=reading.state,
    )
    insert_checkpoint_node(conn, values)
    trim_checkpoints(conn, task, config.checkpoint_keep)
    record = latest_checkpoint(conn, task, source="mnemos", root_only=False)
    assert record is not None
    return CheckpointReceipt(
        status="committed",
        message=f"Checkpoint {record.id[:8]} written for task {task}.",
        changed=True,
        revision=record.id,
        checkpoint=record,
    )
