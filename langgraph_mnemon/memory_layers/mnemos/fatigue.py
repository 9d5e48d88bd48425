"""The fatigue model: four dimensions a LangGraph run shows, their composite and the state.

All functions here are pure; :func:`._maintenance.measure` feeds them the stored signals.

* **token utilisation** (weight 0.40) — tokens of the last model call (its ``usage_metadata``)
  over the configured context window; a character estimate when the model reports no usage.
* **scope scatter** (0.25) — how many directories the recent tool calls spread over, as the
  *effective* number of directory keys (the exponential of the Shannon entropy of their
  distribution: 30 calls in one folder → 1, evenly over 5 folders → 5, 26 + four strays → 1.8).
  Mapped piecewise-linearly: ≤ 2 → 0, 4 → 0.4, 7 → 0.7, ≥ 10 → 1.0. Fewer path-bearing calls
  than the minimum sample (5) give 0; each tool call counts once, with its first path.
* **re-read ratio** (0.20) — among read-only tool calls, the share that repeats an identical
  earlier call (same tool, same arguments); 0 with fewer than 3 reads.
* **error density** (0.15) — failed tool calls over tool calls with a known outcome.

The window is the last 30 tool calls. Each dimension and the composite are clamped to [0, 1]
and rounded to 4 decimals. States are lower-inclusive: FLOW < 0.40 ≤ COMPRESS < 0.60 ≤
PRE_SLEEP < 0.75 ≤ REM < 0.90 ≤ EMERGENCY.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from langgraph_mnemon.memory_layers.mnemos._models import FatigueState

__all__ = [
    "ACTIONS",
    "STATE_MESSAGES",
    "THRESHOLDS",
    "WEIGHTS",
    "ToolCall",
    "actions_for",
    "composite_score",
    "error_density",
    "reread_ratio",
    "scope_scatter",
    "state_for",
    "token_utilization",
]

WEIGHTS = {
    "token_utilization": 0.40,
    "scope_scatter": 0.25,
    "reread_ratio": 0.20,
    "error_density": 0.15,
}
THRESHOLDS: tuple[tuple[float, FatigueState], ...] = (
    (0.90, "EMERGENCY"),
    (0.75, "REM"),
    (0.60, "PRE_SLEEP"),
    (0.40, "COMPRESS"),
)
ACTIONS: dict[FatigueState, tuple[str, ...]] = {
    "FLOW": (),
    "COMPRESS": ("consolidate",),
    "PRE_SLEEP": ("checkpoint", "consolidate"),
    "REM": ("emergency_checkpoint", "consolidate", "warn"),
    "EMERGENCY": ("emergency_checkpoint", "consolidate", "handoff", "warn"),
}
"""What ``Mnemos.maintain()`` does in each state (EMERGENCY consolidates too)."""

STATE_MESSAGES: dict[FatigueState, str | None] = {
    "FLOW": None,
    "COMPRESS": None,
    "PRE_SLEEP": "NOTICE: context 60%+ used. Checkpoint written. Keep changes focused.",
    "REM": "WARNING: context 75%+ used. Checkpoint written. Consider wrapping up.",
    "EMERGENCY": (
        "EMERGENCY: context 90%+ used. Checkpoint and handoff written. "
        "Finish the current step and hand off."
    ),
}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of the window, as the fatigue model sees it."""

    name: str
    args_digest: str | None
    dir_key: str | None
    read_only: bool
    status: str  # pending | ok | error


def _clamp(value: float) -> float:
    return round(min(1.0, max(0.0, value)), 4)


def token_utilization(tokens: int | None, context_window: int) -> float:
    """``tokens / context_window`` clamped to [0, 1]; 0 when nothing is known."""
    if not tokens or context_window <= 0:
        return 0.0
    return _clamp(tokens / context_window)


def scope_scatter(dir_keys: Sequence[str | None], min_sample: int = 5) -> float:
    """Spread of the window's tool calls over directories (see module docs)."""
    keys = [k for k in dir_keys if k]
    if len(keys) < max(1, min_sample):
        return 0.0
    counts = Counter(keys)
    total = len(keys)
    entropy = -sum((n / total) * math.log(n / total) for n in counts.values())
    effective = math.exp(entropy)
    if effective <= 2.0:
        return 0.0
    if effective <= 4.0:
        return _clamp(0.2 * (effective - 2.0))
    return _clamp(0.4 + 0.1 * (effective - 4.0))


def reread_ratio(calls: Sequence[ToolCall], min_reads: int = 3) -> float:
    """Share of read-only calls that repeat an identical earlier read in the window."""
    reads = [(c.name, c.args_digest) for c in calls if c.read_only]
    if len(reads) < max(1, min_reads):
        return 0.0
    seen: set[tuple[str, str | None]] = set()
    repeats = 0
    for key in reads:
        if key in seen:
            repeats += 1
        seen.add(key)
    return _clamp(repeats / len(reads))


def error_density(calls: Sequence[ToolCall]) -> float:
    """Failed calls over calls whose outcome is known (pending calls are ignored)."""
    known = [c for c in calls if c.status in ("ok", "error")]
    if not known:
        return 0.0
    return _clamp(sum(1 for c in known if c.status == "error") / len(known))


def composite_score(token_util: float, scatter: float, reread: float, errors: float) -> float:
    """The weighted sum 0.40 / 0.25 / 0.20 / 0.15, clamped and rounded."""
    return _clamp(
        WEIGHTS["token_utilization"] * token_util
        + WEIGHTS["scope_scatter"] * scatter
        + WEIGHTS["reread_ratio"] * reread
        + WEIGHTS["error_density"] * errors
    )


def state_for(score: float) -> FatigueState:
    """The fatigue state of a composite score (boundaries belong to the higher state).

    Args:
        score: the composite in [0, 1] (rounded to 4 decimals before comparing).

    Returns:
        FLOW, COMPRESS, PRE_SLEEP, REM or EMERGENCY.

    Example:
        >>> state_for(0.39), state_for(0.4), state_for(0.9)
        ('FLOW', 'COMPRESS', 'EMERGENCY')
    """
    value = round(score, 4)
    for threshold, state in THRESHOLDS:
        if value >= threshold:
            return state
    return "FLOW"


def actions_for(state: FatigueState) -> tuple[str, ...]:
    """The actions ``Mnemos.maintain()`` takes in ``state``.

    Raises:
        KeyError: ``state`` is not a fatigue state.

    Example:
        >>> actions_for("PRE_SLEEP")
        ('checkpoint', 'consolidate')
    """
    return ACTIONS[state]
