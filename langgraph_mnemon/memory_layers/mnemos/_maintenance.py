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
from langgraph_mnemon.memory_layers.mnemos._models import ContextWindow, FatigueReading
from langgraph_mnemon.memory_layers.mnemos.fatigue import (
    actions_for,
    composite_score,
    error_density,
    final_state,
    reread_ratio,
    scope_scatter,
    state_message,
    token_floor,
    token_utilization,
)
from langgraph_mnemon.memory_layers.mnemos.store import (
    StoredUsage,
    latest_usage,
    to_datetime,
    tool_window,
)

__all__ = ["MaintenanceActions", "choose_window", "measure", "plan_actions", "stored_window"]


def choose_window(config: MnemosConfig, *known: ContextWindow | None) -> ContextWindow:
    """The window of a reading: ``mnemos.context_window`` when set, else the first of ``known``
    (the calling model's, the one stored with the token reading), else the default
    ``mnemos.context_window_tokens``.

    Example:
        >>> choose_window(MnemosConfig(), None).label
        '200,000 tokens (default mnemos.context_window_tokens)'
    """
    if config.context_window is not None:
        return ContextWindow(tokens=config.context_window, source="setting")
    for window in known:
        if window is not None:
            return window
    return ContextWindow(tokens=config.context_window_tokens, source="default")


def stored_window(tokens: int | None, source: str | None) -> ContextWindow | None:
    """The window a row stored, ``None`` when it stored none.

    A row written before windows had a source holds only a number the caller gave.

    Example:
        >>> stored_window(8_000, "model profile").label
        '8,000 tokens (model profile)'
    """
    if not tokens:
        return None
    known = source in ("setting", "model profile", "given", "default")
    return ContextWindow(tokens=tokens, source=source if known else "given")  # type: ignore[arg-type]


def measure(
    conn: sa.Connection | None,
    task: str,
    config: MnemosConfig,
    clock: Callable[[], float],
    window: ContextWindow | None = None,
    usage: StoredUsage | None = None,
) -> FatigueReading:
    """The reading from the task's signals (none at all when ``conn`` is None).

    Args:
        conn: an open connection, or None for a reading without signals (FLOW).
        task: the task id (validated by the caller).
        config: the window settings, the minimum samples and ``token_floors``.
        clock: the time source of ``computed_at``.
        window: the calling model's window (:func:`choose_window` decides: the setting, this,
            the window stored with the token reading, the default).
        usage: the task's newest token reading when the caller just stored it (not read
            again).

    Returns:
        The four dimensions over the last ``signal_window`` tool calls, their composite, the
        floor token use reached and the state (the composite's, raised to that floor).

    Example:
        >>> measure(None, "t", MnemosConfig(), time.time).state
        'FLOW'
    """
    calls = tool_window(conn, task, config.signal_window) if conn is not None else []
    if usage is None and conn is not None:
        usage = latest_usage(conn, task)
    tokens = usage.tokens if usage is not None else None
    estimated = bool(usage.estimated) if usage is not None else False
    stored = stored_window(usage.context_window, usage.window_source) if usage else None
    chosen = choose_window(config, window, stored)
    token_util = token_utilization(tokens, chosen.tokens)
    scatter = scope_scatter([c.dir_key for c in calls], config.scatter_min_sample)
    reread = reread_ratio(calls, config.reread_min_reads)
    errors = error_density(calls)
    score = composite_score(token_util, scatter, reread, errors)
    floors = config.token_floors
    return FatigueReading(
        task_id=task,
        token_utilization=token_util,
        scope_scatter=scatter,
        reread_ratio=reread,
        error_density=errors,
        composite=score,
        state=final_state(score, token_util, floors),
        token_floor=token_floor(token_util, floors),
        tool_calls=len(calls),
        tokens_used=tokens,
        context_window=chosen.tokens,
        window_source=chosen.source,
        tokens_estimated=estimated,
        computed_at=to_datetime(clock()),
    )


@dataclass(frozen=True, slots=True)
class MaintenanceActions:
    """What ``maintain()`` does for one reading, in this order: checkpoint, consolidate, handoff."""

    actions: tuple[str, ...]
    checkpoint: bool  # a checkpoint (the cooldown applies in every state)
    emergency: bool  # ... marked as an emergency checkpoint
    force: bool  # bypass the cooldown: never for a state (kept for callers that read it)
    consolidate: bool
    handoff: bool
    message: str | None


def plan_actions(reading: FatigueReading) -> MaintenanceActions:
    """The actions of ``reading.state`` (:data:`.fatigue.ACTIONS`) and the message to show.

    No state forces a checkpoint past the cooldown: Mnemos runs before every model call, and
    a context that stays at EMERGENCY for several calls would otherwise write one each time.
    The HandoffNode is written only with a committed checkpoint (``Mnemos.maintain``).
    """
    actions = actions_for(reading.state)
    return MaintenanceActions(
        actions=actions,
        checkpoint="checkpoint" in actions or "emergency_checkpoint" in actions,
        emergency="emergency_checkpoint" in actions,
        force=False,
        consolidate="consolidate" in actions,
        handoff="handoff" in actions,
        message=state_message(reading),
    )
