"""Fatigue maintenance: the reading of a task from its stored signals, and what
``Mnemos.maintain()`` does in each state (the pure model is :mod:`.fatigue`).

Example:
    >>> with db.read() as conn:
    ...     reading = measure(conn, "task-1", config, time.time)
    >>> reading.state, plan_actions(reading).consolidate
    ('COMPRESS', True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.memory_layers.mnemos._models import FatigueReading
from langgraph_mnemon.memory_layers.mnemos.fatigue import (
    STATE_MESSAGES,
    actions_for,
    composite_score,
    error_density,
    reread_ratio,
    scope_scatter,
    state_for,
    token_utilization,
)
from langgraph_mnemon.memory_layers.mnemos.store import (
    latest_usage,
    to_datetime,
    tool_window,
)

__all__ = ["MaintenanceActions", "measure", "plan_actions"]


def measure(
    conn: sa.Connection | None, task: str, config: MnemosConfig, clock: Callable[[], float]
) -> FatigueReading:
    """The reading from the task's signals (none at all when ``conn`` is None)."""
    calls = tool_window(conn, task, config.signal_window) if conn is not None else []
    usage = latest_usage(conn, task) if conn is not None else None
    window = config.context_window_tokens
    tokens = None
    estimated = False
    if usage is not None:
        tokens = usage.tokens
        window = usage.context_window or window
        estimated = bool(usage.estimated)
    token_util = token_utilization(tokens, window)
    scatter = scope_scatter([c.dir_key for c in calls], config.scatter_min_sample)
    reread = reread_ratio(calls, config.reread_min_reads)
    errors = error_density(calls)
    score = composite_score(token_util, scatter, reread, errors)
    return FatigueReading(
        task_id=task,
        token_utilization=token_util,
        scope_scatter=scatter,
        reread_ratio=reread,
        error_density=errors,
        composite=score,
        state=state_for(score),
        tool_calls=len(calls),
        tokens_used=tokens,
        context_window=window,
        tokens_estimated=estimated,
        computed_at=to_datetime(clock()),
    )


@dataclass(frozen=True, slots=True)
class MaintenanceActions:
    """What ``maintain()`` does for one reading, in this order: checkpoint, consolidate, handoff."""

    actions: tuple[str, ...]
    checkpoint: bool  # a checkpoint (cooldown applies unless ``force``)
    emergency: bool  # ... marked as an emergency checkpoint
    force: bool  # EMERGENCY bypasses the cooldown
    consolidate: bool
    handoff: bool
    message: str | None


def plan_actions(reading: FatigueReading) -> MaintenanceActions:
    """The actions of ``reading.state`` (:data:`.fatigue.ACTIONS`) and the message to show."""
    actions = actions_for(reading.state)
    return MaintenanceActions(
        actions=actions,
        checkpoint="checkpoint" in actions or "emergency_checkpoint" in actions,
        emergency="emergency_checkpoint" in actions,
        force=reading.state == "EMERGENCY",
        consolidate="consolidate" in actions,
        handoff="handoff" in actions,
        message=STATE_MESSAGES[reading.state],
    )
