"""Deterministic activity scoring, dirty admission and idle-review timing.

Completed turns accumulate four signals per thread; when the score reaches 5 and the structural
admission check passes, an idle review may run after the thread has been quiet for a while.
Nothing here calls a model: a turn that is eligible but ordinary starts no background work.

With an :class:`ActivityStore` (the host passes one on its database), each thread's activity,
attempts and last attempt / review times are saved whenever they change and read back at each
step, so a restarted host, and every replica on the same database, sees the same activity,
admission, attempt budget and minimum interval. Scheduled reviews are rows of their own
(:mod:`langgraph_mnemon.memory_layers.review_queue`).

Per-thread state is bounded: the gate's entries and the saved rows expire after
``thread_ttl_seconds`` unused, and beyond ``max_threads`` threads the least recently used go.

Example:
    >>> gate = ReviewGate(ReviewSettings(), clock=lambda: 0.0)
    >>> gate.record_turn("t1", TurnActivity(user_text="Please remember: deploys go via CI.",
    ...                                     tool_calls=("shell", "read", "grep")))
    >>> gate.on_turn_end("t1")  # seconds until the review may run, or None
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from langgraph_mnemon.contracts import Scope, safe_text
from langgraph_mnemon.errors import InvalidInputError, MnemonError
from langgraph_mnemon.memory_layers.expiry import ExpiringMap
from langgraph_mnemon.memory_layers.kernel import Kernel

__all__ = [
    "ELIGIBLE_SCORE",
    "ActivityScore",
    "ActivityStore",
    "ReviewDecision",
    "ReviewGate",
    "ReviewSettings",
    "SavedActivity",
    "ThreadActivity",
    "TurnActivity",
    "TurnSignals",
    "activity_score",
    "is_explicit_save",
    "is_no_memory",
]

logger = logging.getLogger(__name__)

ELIGIBLE_SCORE = 5
PRUNE_EVERY_SECONDS = 60.0
"""How often (gate clock seconds) the gate asks its store to drop expired and surplus rows."""
ADMIT_USER_CHARS = 320
ADMIT_ASSISTANT_CHARS = 600
MEMORY_TOOL_PREFIX = "mnemon_"

# "remember", or a save-like verb with "memory" within 32 characters; Chinese save phrasings.
_EXPLICIT = re.compile(
    r"\bremember\b"
    r"|\b(?:save|store|write|record|persist)\b.{0,32}?\bmemor(?:y|ies)\b"
    r"|记住|记下来|保存到记忆|写入记忆|长期记录",
    re.IGNORECASE | re.DOTALL,
)
# Negated forms: the user explicitly asks for no memory maintenance this turn.
_NO_MEMORY = re.compile(
    r"\b(?:do\s+not|don'?t|never|no\s+need\s+to)\s+(?:(?:proactively|automatically)\s+)?"
    r"(?:remember\b|(?:save|store|write|record|persist|update|keep)\b.{0,32}?\bmemor(?:y|ies)\b)"
    r"|\bno\s+memory\s+(?:writes?|maintenance|updates?)\b"
    r"|(?:不要|不必|无需|请勿|禁止|别)[^。！？!?\n]{0,6}?"
    r"(?:记住|记忆|(?:保存|写入|记录|更新|维护|持久化)[^。！？!?\n]{0,6}?记忆)",
    re.IGNORECASE | re.DOTALL,
)


def is_explicit_save(text: str) -> bool:
    """True when ``text`` asks to remember or save something to memory (English or Chinese)."""
    return bool(_EXPLICIT.search(text))


def is_no_memory(text: str) -> bool:
    """True when ``text`` explicitly asks for no memory writes or maintenance."""
    return bool(_NO_MEMORY.search(text))


class TurnActivity(BaseModel):
    """What one completed turn showed: live-user text, assistant text and finished tool calls.

    Derived flags are computed once per turn: admission re-reads every turn of the thread.
    """

    model_config = ConfigDict(frozen=True)

    user_text: str = ""
    assistant_chars: int = Field(0, ge=0)
    tool_calls: tuple[str, ...] = Field(
        (), description="Names of the tool calls that completed with a result in this turn."
    )
    scope: Scope = Field(
        default_factory=Scope, description="Whose memory the turn used: its review runs there."
    )

    @cached_property
    def user_chars(self) -> int:
        return len(self.user_text)

    @cached_property
    def explicit_save(self) -> bool:
        return is_explicit_save(self.user_text)

    @cached_property
    def no_memory(self) -> bool:
        return is_no_memory(self.user_text)

    @cached_property
    def did_work(self) -> bool:
        """A completed tool call that is not one of this plugin's own memory tools."""
        return any(not name.startswith(MEMORY_TOOL_PREFIX) for name in self.tool_calls)


class TurnSignals(BaseModel):
    """The signals of one completed turn without its text: what the gate keeps across a
    restart (a user who asked not to be remembered is not written down)."""

    model_config = ConfigDict(frozen=True)

    user_chars: int = Field(0, ge=0)
    explicit_save: bool = False
    no_memory: bool = False
    assistant_chars: int = Field(0, ge=0)
    tool_calls: tuple[str, ...] = ()

    @classmethod
    def of(cls, turn: TurnActivity | TurnSignals) -> TurnSignals:
        """The signals of ``turn``."""
        if isinstance(turn, TurnSignals):
            return turn
        return cls(
            user_chars=turn.user_chars,
            explicit_save=turn.explicit_save,
            no_memory=turn.no_memory,
            assistant_chars=turn.assistant_chars,
            tool_calls=turn.tool_calls,
        )

    @property
    def did_work(self) -> bool:
        """A completed tool call that is not one of this plugin's own memory tools."""
        return any(not name.startswith(MEMORY_TOOL_PREFIX) for name in self.tool_calls)


class ActivityScore(BaseModel):
    """The score and its four parts."""

    model_config = ConfigDict(frozen=True)

    user_chars: int
    turns: int
    tool_results: int
    unique_tools: int
    score: int

    @property
    def eligible(self) -> bool:
        return self.score >= ELIGIBLE_SCORE


def activity_score(user_chars: int, turns: int, tool_results: int, unique_tools: int) -> int:
    """``min(⌊chars/50⌋, 3) + turns + min(⌊results/5⌋, 2) + diversity``.

    Diversity is 0 below 3 distinct tools, 1 at 3 and 2 from 4 on.
    """
    for name, value in (
        ("user_chars", user_chars),
        ("turns", turns),
        ("tool_results", tool_results),
        ("unique_tools", unique_tools),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInputError(f"{name} must be a non-negative integer (got {value!r})")
    diversity = 0 if unique_tools < 3 else min(unique_tools - 2, 2)
    return min(user_chars // 50, 3) + turns + min(tool_results // 5, 2) + diversity


@dataclass
class ThreadActivity:
    """Activity accumulated over the completed turns of one thread since the last review."""

    # Turns of this process, or the text-free signals of turns restored after a restart.
    turns: list[TurnActivity | TurnSignals] = field(default_factory=list)

    def add(self, turn: TurnActivity) -> None:
        if not isinstance(turn, TurnActivity):
            raise InvalidInputError("add() takes a TurnActivity")
        self.turns.append(turn)

    def clear(self) -> None:
        self.turns.clear()

    def score(self) -> ActivityScore:
        user_chars = sum(t.user_chars for t in self.turns)
        results = sum(len(t.tool_calls) for t in self.turns)
        unique = len({name for t in self.turns for name in t.tool_calls})
        return ActivityScore(
            user_chars=user_chars,
            turns=len(self.turns),
            tool_results=results,
            unique_tools=unique,
            score=activity_score(user_chars, len(self.turns), results, unique),
        )

    def admitted(self) -> bool:
        """Structural dirty admission; no model involved.

        The current (last) turn vetoes with an explicit no-memory request. Otherwise an explicit
        save request, 320+ user characters, 600+ assistant characters over turns that did not
        opt out, or any completed work with a non-memory tool lets a review start.
        """
        if not self.turns or self.turns[-1].no_memory:
            return False
        counted = [t for t in self.turns if not t.no_memory]
        return (
            any(t.explicit_save for t in counted)
            or sum(t.user_chars for t in counted) >= ADMIT_USER_CHARS
            or sum(t.assistant_chars for t in counted) >= ADMIT_ASSISTANT_CHARS
            or any(t.did_work for t in counted)
        )


class ReviewSettings(BaseModel):
    """The switches and timings the review gate honours (from ``MnemonConfig``)."""

    model_config = ConfigDict(frozen=True)

    enabled: bool = True
    lifecycle_enabled: bool = True
    # The kernel admits an automatic Runtime or Documents write (what a review may do); when
    # neither is admitted a review would only spend a model call, so none is scheduled.
    writes_admitted: bool = True
    writeback_mode: str = "guided"
    strategy: str = "layered"
    delay_seconds: float = Field(30.0, ge=0)
    min_interval_seconds: float = Field(300.0, ge=0)
    max_per_thread: int = Field(20, ge=0)
    thread_ttl_seconds: float = Field(7 * 24 * 3600.0, gt=0)
    max_threads: int = Field(10_000, ge=1)

    @property
    def active(self) -> bool:
        """Review runs only under the Layered strategy with writeback on and a write the
        kernel admits."""
        return (
            self.enabled
            and self.lifecycle_enabled
            and self.writes_admitted
            and self.writeback_mode == "guided"
            and self.strategy == "layered"
            and self.max_per_thread > 0
        )

    @classmethod
    def from_config(cls, config: object) -> ReviewSettings:
        """Read the relevant keys of a ``MnemonConfig``."""
        idle = config.idle_review  # type: ignore[attr-defined]
        kernel = Kernel(config)  # type: ignore[arg-type]
        return cls(
            enabled=idle.enabled,
            lifecycle_enabled=config.lifecycle_enabled,  # type: ignore[attr-defined]
            writes_admitted=kernel.model_admits("runtime", "write")
            or kernel.model_admits("documents", "write"),
            writeback_mode=config.writeback_mode,  # type: ignore[attr-defined]
            strategy=config.strategy,  # type: ignore[attr-defined]
            delay_seconds=idle.delay_ms / 1000,
            min_interval_seconds=idle.min_interval_ms / 1000,
            max_per_thread=idle.max_per_thread,
            thread_ttl_seconds=idle.thread_ttl_hours * 3600,
            max_threads=idle.max_threads,
        )


class ReviewDecision(BaseModel):
    """What the scheduler should do when a review timer fires."""

    model_config = ConfigDict(frozen=True)

    action: str = Field(description="run | reschedule | drop")
    delay_seconds: float | None = None
    reason: str = ""


class SavedActivity(BaseModel):
    """What an :class:`ActivityStore` keeps of one thread (times are the gate clock's seconds).

    Turns are kept as :class:`TurnSignals`: counts and flags, never the user's text.
    """

    model_config = ConfigDict(frozen=True)

    turns: tuple[TurnSignals, ...] = ()
    attempts: int = Field(0, ge=0)
    last_attempt_at: float | None = None
    last_review_at: float | None = None
    updated_at: float | None = Field(None, description="When the gate last changed it.")


class ActivityStore(Protocol):
    """Where a :class:`ReviewGate` keeps per-thread activity across restarts.

    A store may also offer ``prune(before: float, keep: int) -> int`` (drop rows not updated
    since ``before``, then all but the ``keep`` newest); the gate calls it every
    :data:`PRUNE_EVERY_SECONDS` when present.
    """

    def load(self, thread_id: str) -> SavedActivity | None:
        """The saved activity of ``thread_id``, or None when nothing was saved."""
        ...

    def save(self, thread_id: str, saved: SavedActivity) -> None:
        """Replace the saved activity of ``thread_id``."""
        ...


@dataclass
class _ThreadState:
    activity: ThreadActivity = field(default_factory=ThreadActivity)
    attempts: int = 0
    last_attempt_at: float | None = None
    last_review_at: float | None = None
    armed: bool = False
    running: bool = False
    generation: int = 0  # bumped by every new turn: a stale timer or review knows it is stale

    @classmethod
    def restored(cls, saved: SavedActivity) -> _ThreadState:
        return cls(
            activity=ThreadActivity(turns=list(saved.turns)),
            attempts=saved.attempts,
            last_attempt_at=saved.last_attempt_at,
            last_review_at=saved.last_review_at,
        )

    def saved(self, now: float) -> SavedActivity:
        return SavedActivity(
            turns=tuple(TurnSignals.of(turn) for turn in self.activity.turns),
            attempts=self.attempts,
            last_attempt_at=self.last_attempt_at,
            last_review_at=self.last_review_at,
            updated_at=now,
        )

    def reload(self, saved: SavedActivity | None) -> None:
        """Take the saved fields (None: nothing saved, or dropped); keep timers and runs, and
        this process's turns (with their text) while the saved ones are the same."""
        fresh = _ThreadState.restored(saved) if saved is not None else _ThreadState()
        mine = tuple(TurnSignals.of(turn) for turn in self.activity.turns)
        if mine != tuple(fresh.activity.turns):
            self.activity = fresh.activity
        self.attempts = fresh.attempts
        self.last_attempt_at = fresh.last_attempt_at
        self.last_review_at = fresh.last_review_at


class ReviewGate:
    """Per-thread idle-review bookkeeping; a scheduler (asyncio, LangGraph server) drives it.

    The scheduler calls :meth:`record_turn` and :meth:`on_turn_end` when a turn completes,
    :meth:`on_turn_start` when a new one begins (cancelling a pending timer or a running review),
    :meth:`on_fire` when its timer goes off, and :meth:`on_review_finished` afterwards. A
    scheduler whose pending reviews are database rows (one runner per row) asks
    :meth:`on_claim` and :meth:`on_claim_finished` instead: the row, not this gate, says
    whether the review is still the thread's latest.
    ``clock`` returns seconds (default: UNIX time, which stays meaningful across a restart);
    ``store`` keeps each thread's activity, attempts and times (see the module docstring).
    """

    def __init__(
        self,
        settings: ReviewSettings,
        *,
        clock: Callable[[], float] | None = None,
        store: ActivityStore | None = None,
    ):
        if not isinstance(settings, ReviewSettings):
            raise InvalidInputError("ReviewGate takes ReviewSettings")
        self._clock = clock or time.time
        self._store = store
        self._threads: ExpiringMap[str, _ThreadState] = ExpiringMap(
            ttl_seconds=settings.thread_ttl_seconds, cap=settings.max_threads, clock=self._clock
        )
        self._settings = settings
        self._pruned_at: float | None = None

    @property
    def settings(self) -> ReviewSettings:
        """The switches and timings honoured (the host replaces them on a live change)."""
        return self._settings

    @settings.setter
    def settings(self, settings: ReviewSettings) -> None:
        if not isinstance(settings, ReviewSettings):
            raise InvalidInputError("ReviewGate takes ReviewSettings")
        self._settings = settings
        self._threads.ttl_seconds = settings.thread_ttl_seconds
        self._threads.cap = settings.max_threads

    @property
    def _persisting(self) -> bool:
        return self._store is not None and self.settings.active

    def _state(self, thread_id: str, *, fresh: bool = True) -> _ThreadState:
        """The thread's state; with a store, its saved fields re-read (``fresh``), since
        another replica may have changed them."""
        if not isinstance(thread_id, str) or not thread_id:
            raise InvalidInputError("thread_id must be a non-empty string")
        state = self._threads.get(thread_id)
        if state is None:
            read, saved = self._load(thread_id)
            state = _ThreadState.restored(saved) if saved is not None else _ThreadState()
            self._threads[thread_id] = state
        elif fresh and self._persisting:
            read, saved = self._load(thread_id)
            if read:
                state.reload(saved)
        return state

    def _load(self, thread_id: str) -> tuple[bool, SavedActivity | None]:
        """``(read, saved)``: ``read`` is False when the store failed (memory is kept)."""
        if self._store is None:
            return True, None
        try:
            return True, self._store.load(thread_id)
        except MnemonError as exc:  # the gate keeps working in memory; the log says why
            logger.warning("idle review: activity of a thread not read: %s", safe_text(exc))
            return False, None

    def _save(self, thread_id: str, state: _ThreadState) -> None:
        if self._store is None or not self.settings.active:  # no review: nothing to resume
            return
        try:
            self._store.save(thread_id, state.saved(self._clock()))
        except MnemonError as exc:
            logger.warning("idle review: activity of a thread not saved: %s", safe_text(exc))

    def _prune(self) -> None:
        """Every :data:`PRUNE_EVERY_SECONDS`: the store drops expired and surplus rows."""
        now = self._clock()
        if self._pruned_at is not None and now - self._pruned_at < PRUNE_EVERY_SECONDS:
            return
        self._pruned_at = now
        prune = getattr(self._store, "prune", None)  # optional (see ActivityStore)
        if prune is None or not self.settings.active:
            return
        try:
            prune(now - self.settings.thread_ttl_seconds, self.settings.max_threads)
        except MnemonError as exc:
            logger.warning("idle review: old thread activity not dropped: %s", safe_text(exc))

    def threads(self) -> list[str]:
        """The threads this gate holds in memory now (least recently used first)."""
        self._threads.expire()
        return list(self._threads)

    def activity(self, thread_id: str) -> ThreadActivity:
        return self._state(thread_id).activity

    def attempts(self, thread_id: str) -> int:
        return self._state(thread_id).attempts

    def last_attempt_at(self, thread_id: str) -> float | None:
        """When the thread's last review attempt started (clock seconds), if any."""
        return self._state(thread_id).last_attempt_at

    def last_review_at(self, thread_id: str) -> float | None:
        """When the thread's last review completed (a skip included), if any."""
        return self._state(thread_id).last_review_at

    def generation(self, thread_id: str) -> int:
        return self._state(thread_id, fresh=False).generation

    def record_turn(self, thread_id: str, turn: TurnActivity) -> None:
        """Add a completed turn's activity to the thread."""
        state = self._state(thread_id)
        state.activity.add(turn)
        self._save(thread_id, state)
        self._prune()

    def finish_turn(self, thread_id: str, turn: TurnActivity) -> float | None:
        """:meth:`record_turn` then :meth:`on_turn_end`, reading the saved activity once.

        Returns:
            Seconds until a review may run, or None when none should be scheduled.
        """
        state = self._state(thread_id)
        state.activity.add(turn)
        self._save(thread_id, state)
        self._prune()
        return self._turn_end(state)

    def on_turn_start(self, thread_id: str) -> bool:
        """A new turn began: cancel the timer and any running review; keep the activity.

        Returns True when something was cancelled.
        """
        state = self._state(thread_id, fresh=False)
        cancelled = state.armed or state.running
        state.armed = False
        state.generation += 1
        if state.running:
            state.running = False  # aborted; it already counted as an attempt when it started
        return cancelled

    def on_turn_end(self, thread_id: str) -> float | None:
        """Seconds until a review may run, or None when none should be scheduled."""
        return self._turn_end(self._state(thread_id))

    def _turn_end(self, state: _ThreadState) -> float | None:
        state.armed = False
        if not self._wanted(state):
            return None
        state.armed = True
        return self._delay(state)

    def on_fire(self, thread_id: str, generation: int, *, idle: bool = True) -> ReviewDecision:
        """Re-check everything when the timer fires; ``generation`` is the one it was armed at."""
        state = self._state(thread_id)
        if generation != state.generation or not state.armed:
            return ReviewDecision(action="drop", reason="a newer turn superseded this timer")
        state.armed = False
        if not idle:
            return ReviewDecision(action="drop", reason="the agent is not idle")
        decision = self._decide(thread_id, state)
        state.armed = decision.action == "reschedule"
        return decision

    def on_claim(self, thread_id: str) -> ReviewDecision:
        """A scheduled review of the thread is due and the caller holds it (its queue row):
        re-check eligibility, admission, the attempt budget and the minimum interval.

        Returns:
            ``run`` (the attempt is counted and saved), ``reschedule`` with the seconds to
            wait, or ``drop``.
        """
        state = self._state(thread_id)
        state.armed = False
        return self._decide(thread_id, state)

    def _decide(self, thread_id: str, state: _ThreadState) -> ReviewDecision:
        if not self._wanted(state):
            return ReviewDecision(action="drop", reason="no longer eligible or admitted")
        if state.last_attempt_at is not None:
            wait = state.last_attempt_at + self.settings.min_interval_seconds - self._clock()
            if wait > 0:
                return ReviewDecision(
                    action="reschedule", delay_seconds=wait, reason="minimum interval"
                )
        state.running = True
        state.attempts += 1
        state.last_attempt_at = self._clock()
        self._save(thread_id, state)
        return ReviewDecision(action="run")

    def on_review_finished(self, thread_id: str, generation: int, *, success: bool) -> None:
        """Success (a skip included) clears the activity; failure keeps it for later."""
        state = self._state(thread_id, fresh=False)
        if generation != state.generation or not state.running:
            return  # a new turn already aborted this review
        self.on_claim_finished(thread_id, success=success)

    def on_claim_finished(self, thread_id: str, *, success: bool) -> None:
        """A claimed review ended and its row was still the thread's latest: success (a skip
        included) clears the activity; failure keeps it for later."""
        state = self._state(thread_id)
        state.running = False
        if success:
            state.activity.clear()
            state.last_review_at = self._clock()
            self._save(thread_id, state)

    def _wanted(self, state: _ThreadState) -> bool:
        return (
            self.settings.active
            and state.attempts < self.settings.max_per_thread
            and state.activity.score().eligible
            and state.activity.admitted()
        )

    def _delay(self, state: _ThreadState) -> float:
        delay = self.settings.delay_seconds
        if state.last_attempt_at is not None:
            delay = max(
                delay, state.last_attempt_at + self.settings.min_interval_seconds - self._clock()
            )
        return max(delay, 0.0)
