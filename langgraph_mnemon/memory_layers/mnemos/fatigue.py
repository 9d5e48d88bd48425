"""The fatigue model: four dimensions a LangGraph run shows, their composite and the state.

All functions here are pure; :func:`._maintenance.measure` feeds them the stored signals.

* **token utilisation** (weight 0.40) — tokens of the last model call (its ``usage_metadata``)
  over the configured context window; a character estimate when the model reports no usage.
* **scope scatter** (0.25) — how many directories the recent tool calls spread over, as the
  *effective* number of directory keys (the exponential of the Shannon entropy of their
  distribution: 30 calls in one folder → 1, evenly over 5 folders → 5, 26 + four strays → 1.8).
  Mapped piecewise-linearly: ≤ 2 → 0, 4 → 0.4, 7 → 0.7, ≥ 10 → 1.0. Fewer path-bearing calls
  than the minimum sample (5) give 0; each tool call counts once, with its first path.
* **re-read ratio** (0.20) — among read-only tool calls, the share that reads a resource an
  earlier call of the window read already; 0 with fewer than 3 reads. The resource
  (:attr:`ToolCall.resource`, see ``_signals.resource_key``) is the call's first path (with
  its search pattern, if any), else its URL, else a record id argument with the tool name,
  else the identical arguments: reading ``a.py`` at offset 0 and then at offset 200 is a
  re-read, like the seed's "Read calls that target files already read".
* **error density** (0.15) — failed tool calls over tool calls with a known outcome. A call
  failed when it raised, when its tool message has ``status="error"`` or when its answer is
  an error by content (a trace, ``Error: ...``, a non-zero exit code, ``{"error": ...}``).

The window is the last 30 tool calls. Each dimension and the composite are clamped to [0, 1]
and rounded to 4 decimals. The composite's states are lower-inclusive: FLOW < 0.40 ≤
COMPRESS < 0.60 ≤ PRE_SLEEP < 0.75 ≤ REM < 0.90 ≤ EMERGENCY (:func:`state_for`).

**Deviation from the seed: token use sets a floor.** The seed takes the state from the
weighted composite alone. Token use weighs 0.40, so a full context by itself scores at most
0.40 (COMPRESS): 97 % of the window with a calm tool history reads FLOW (0.39), and 99.5 %
with 83 % re-reads scores 0.56, still COMPRESS — no checkpoint and no warning while the next
model call is about to overflow. A full context is the one condition that ends a run no
matter how calm the tool calls look, so here token utilisation alone also sets a *floor*
(:func:`token_floor`, ``MnemosConfig.token_floors``, default 0.70 / 0.85 / 0.95): at or
above 70 % of the window the state is at least PRE_SLEEP, at 85 % at least REM, at 95 %
EMERGENCY. Above the floor the composite still decides (:func:`final_state`), so scatter,
re-reads and errors raise the state as before; below 70 % nothing changes. The reading
keeps both: ``composite`` is the seed's score, ``token_floor`` the floor the context
reached, ``state`` the higher of the two.

Example:
    >>> final_state(0.56, 0.995, (0.70, 0.85, 0.95))
    'EMERGENCY'
    >>> final_state(0.388, 0.97, (0.70, 0.85, 0.95)), state_for(0.388)
    ('EMERGENCY', 'FLOW')
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.mnemos._models import FatigueReading, FatigueState

__all__ = [
    "ACTIONS",
    "THRESHOLDS",
    "WEIGHTS",
    "ToolCall",
    "actions_for",
    "composite_score",
    "context_use",
    "error_density",
    "final_state",
    "reread_ratio",
    "scope_scatter",
    "state_for",
    "state_message",
    "token_floor",
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

_ORDER: dict[FatigueState, int] = {
    "FLOW": 0,
    "COMPRESS": 1,
    "PRE_SLEEP": 2,
    "REM": 3,
    "EMERGENCY": 4,
}
_FLOOR_STATES: tuple[FatigueState, FatigueState, FatigueState] = ("PRE_SLEEP", "REM", "EMERGENCY")
_ADVICE: dict[FatigueState, tuple[str, str]] = {
    "PRE_SLEEP": ("NOTICE", "Checkpoint written. Keep changes focused."),
    "REM": ("WARNING", "Checkpoint written. Consider wrapping up."),
    "EMERGENCY": (
        "EMERGENCY",
        "Checkpoint and handoff written. Finish the current step and hand off.",
    ),
}
# A dimension is named in the message from this value on (below it, it explains little).
_NOTABLE = 0.25


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of the window, as the fatigue model sees it."""

    name: str
    args_digest: str | None
    dir_key: str | None
    read_only: bool
    status: str  # pending | ok | error
    resource: str | None = None
    """What the call reads (a digest of its re-read key); None: same tool + same arguments."""


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
    """Share of read-only calls that read a resource an earlier call of the window read.

    Args:
        calls: the window, oldest first.
        min_reads: fewer read-only calls than this give 0.

    Returns:
        Repeats over read-only calls, in [0, 1]. Two calls read the same resource when their
        :attr:`ToolCall.resource` is equal (whatever tool read it); a call without one
        repeats only the same tool with identical arguments.

    Example:
        >>> a = ToolCall("read_file", "d1", "src", True, "ok", resource="r-src/a.py")
        >>> b = ToolCall("read_file", "d2", "src", True, "ok", resource="r-src/a.py")
        >>> reread_ratio([a, b, a])
        0.6667
    """
    reads = [
        ("resource", c.resource) if c.resource else (c.name, c.args_digest)
        for c in calls
        if c.read_only
    ]
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


def token_floor(
    token_util: float, floors: Sequence[float] = (0.70, 0.85, 0.95)
) -> FatigueState | None:
    """The state token use alone reaches (None below the first floor).

    Args:
        token_util: token utilisation in [0, 1] (rounded to 4 decimals before comparing).
        floors: the shares of the window for PRE_SLEEP, REM and EMERGENCY, in order
            (``MnemosConfig.token_floors``).

    Returns:
        ``EMERGENCY``, ``REM`` or ``PRE_SLEEP`` for the highest floor reached (a floor is
        reached at or above its share), else None.

    Raises:
        InvalidInputError: ``floors`` is not three shares in (0, 1], in order.

    Example:
        >>> token_floor(0.69), token_floor(0.70), token_floor(0.85), token_floor(0.95)
        (None, 'PRE_SLEEP', 'REM', 'EMERGENCY')
    """
    values = _checked_floors(floors)
    value = round(token_util, 4)
    reached: FatigueState | None = None
    for share, state in zip(values, _FLOOR_STATES, strict=True):
        if value >= share:
            reached = state
    return reached


def final_state(
    composite: float, token_util: float, floors: Sequence[float] = (0.70, 0.85, 0.95)
) -> FatigueState:
    """The state of a reading: the composite's state, raised to the token floor.

    Args:
        composite: the weighted composite in [0, 1].
        token_util: token utilisation in [0, 1].
        floors: ``MnemosConfig.token_floors`` (see :func:`token_floor`).

    Returns:
        The higher of :func:`state_for` of ``composite`` and :func:`token_floor`.

    Raises:
        InvalidInputError: ``floors`` is not three shares in (0, 1], in order.

    Example:
        >>> final_state(0.28, 0.70), final_state(0.80, 0.70), final_state(0.28, 0.69)
        ('PRE_SLEEP', 'REM', 'FLOW')
    """
    state = state_for(composite)
    floor = token_floor(token_util, floors)
    if floor is not None and _ORDER[floor] > _ORDER[state]:
        return floor
    return state


def _checked_floors(floors: Sequence[float]) -> tuple[float, float, float]:
    # The config validates its own floors; this guards direct calls of the pure functions.
    values = tuple(floors)
    ok = len(values) == 3 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 1 for v in values
    )
    if not ok or not values[0] <= values[1] <= values[2]:
        raise InvalidInputError(
            f"token floors must be three shares of the window in (0, 1], in order "
            f"(PRE_SLEEP <= REM <= EMERGENCY), e.g. (0.7, 0.85, 0.95); got {floors!r}"
        )
    return values  # type: ignore[return-value]


def state_message(reading: FatigueReading) -> str | None:
    """What the model is told in a reading's state: what was measured and what to do.

    Args:
        reading: a fatigue reading (``Mnemos.fatigue()``).

    Returns:
        None in FLOW and COMPRESS; otherwise one line with the level (NOTICE, WARNING,
        EMERGENCY), the composite and state, the context's use of the window in tokens
        ("about" when estimated from characters) and where the window came from
        (:func:`context_use`), the dimensions that weigh (re-reads,
        errors, scatter at 25 % or more), whether token use alone set the state, and the
        state's advice.

    Example:
        >>> print(state_message(reading))  # doctest: +SKIP
        NOTICE: fatigue 0.62 (PRE_SLEEP), context 71% of 50,000 tokens used (model profile).
        Checkpoint written. Keep changes focused.
    """
    advice = _ADVICE.get(reading.state)
    if advice is None:
        return None
    level, todo = advice
    facts = [f"context {context_use(reading)}"]
    if reading.reread_ratio >= _NOTABLE:
        facts.append(f"{_pct(reading.reread_ratio)} of reads are re-reads")
    if reading.error_density >= _NOTABLE:
        facts.append(f"{_pct(reading.error_density)} of tool calls failed")
    if reading.scope_scatter >= _NOTABLE:
        facts.append(f"scope scatter {reading.scope_scatter:.2f}")
    if reading.token_floor == reading.state and state_for(reading.composite) != reading.state:
        facts.append(f"context use alone sets {reading.state}")
    head = f"{level}: fatigue {reading.composite:.2f} ({reading.state}), "
    return f"{head}{', '.join(facts)}. {todo}"


def _pct(value: float) -> str:
    return f"{math.floor(value * 100 + 1e-9)}%"


def context_use(reading: FatigueReading) -> str:
    """How full the context is, naming the window and where it came from.

    Example:
        >>> context_use(reading)  # doctest: +SKIP
        '99% of 8,000 tokens used (model profile)'
    """
    window = reading.window
    if reading.tokens_used is None:
        return f"use unknown (no token usage reported; window {window.label})"
    about = "about " if reading.tokens_estimated else ""
    used = f"{_pct(reading.token_utilization)} of {window.tokens:,} tokens used"
    return f"{about}{used} ({window.origin})"


def actions_for(state: FatigueState) -> tuple[str, ...]:
    """The actions ``Mnemos.maintain()`` takes in ``state``.

    Raises:
        KeyError: ``state`` is not a fatigue state.

    Example:
        >>> actions_for("PRE_SLEEP")
        ('checkpoint', 'consolidate')
    """
    return ACTIONS[state]
