"""The health record: which memory steps failed recently, and the one guard that fills it.

Memory must never end an agent run. Every memory step inside a run (the begin and end of a
turn, the system sections of a model call, a memory tool) runs inside :meth:`HealthRecord.guard`:
a failure is logged as one warning line, recorded here as ``(step, code, message, at)``, and
swallowed, so the agent's own work goes on; the next success of the same step clears it.
``Mnemon.status().health`` shows the record, and so does the control plane.

Example:
    >>> health = HealthRecord()
    >>> with health.guard("end") as step:
    ...     raise StorageError("could not write ...", code="storage-full")
    >>> step.failed, health.report().degraded
    (True, True)
    >>> with health.guard("end"):
    ...     pass
    >>> health.report().degraded
    False
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from langgraph_mnemon.contracts import safe_text
from langgraph_mnemon.errors import MnemonError, ProviderError, StorageError

__all__ = [
    "BACKEND_FAILURES",
    "HealthProblem",
    "HealthRecord",
    "HealthReport",
    "MemoryStep",
]

logger = logging.getLogger("langgraph_mnemon.health")

BACKEND_FAILURES: tuple[type[MnemonError], ...] = (StorageError, ProviderError)
"""Typed errors that mean memory itself is failing (not that the caller asked for something
impossible): they degrade even a step whose other typed errors are ordinary answers."""

_MAX_PROBLEMS = 20
_MAX_OPEN_TURNS = 1024
_MAX_MESSAGE_CHARS = 500


class HealthProblem(BaseModel):
    """One recent failure of a memory step."""

    model_config = ConfigDict(frozen=True)

    step: str
    code: str
    message: str
    at: datetime


class HealthReport(BaseModel):
    """``degraded`` is true while any step's last outcome was a failure."""

    model_config = ConfigDict(frozen=True)

    degraded: bool = False
    problems: list[HealthProblem] = Field(default_factory=list)


class HealthRecord:
    """Recent memory-step failures of one host (``mem.health``), safe to use from any thread.

    Keeps at most ``limit`` failures, oldest dropped first; a step's next success removes its
    failures.
    """

    def __init__(
        self, limit: int = _MAX_PROBLEMS, *, clock: Callable[[], datetime] | None = None
    ) -> None:
        self._problems: deque[HealthProblem] = deque(maxlen=max(1, int(limit)))
        self._lock = threading.Lock()
        self._clock = clock or (lambda: datetime.now(UTC))
        self._begun: OrderedDict[str, datetime] = OrderedDict()  # turn id -> begin time

    def failed(self, step: str, code: str, message: str) -> HealthProblem:
        """Record that ``step`` failed with ``code`` and ``message``; returns the record."""
        problem = HealthProblem(
            step=safe_text(step)[:200],
            code=safe_text(code)[:100],
            message=safe_text(message)[:_MAX_MESSAGE_CHARS],
            at=self._clock(),
        )
        with self._lock:
            self._problems.append(problem)
        return problem

    def succeeded(self, step: str) -> None:
        """``step`` worked: forget its failures."""
        with self._lock:
            if any(p.step == step for p in self._problems):
                kept = [p for p in self._problems if p.step != step]
                self._problems.clear()
                self._problems.extend(kept)

    def began(self, turn: str) -> None:
        """A turn began without a memory failure (see :meth:`settle`)."""
        with self._lock:
            self._begun[turn] = self._clock()
            while len(self._begun) > _MAX_OPEN_TURNS:  # turns whose end never came
                self._begun.popitem(last=False)

    def settle(self, turn: str) -> None:
        """The turn that :meth:`began` also ended without a memory failure: memory worked end
        to end, so failures recorded before it began are over (a tool that failed during an
        outage and is not called again must not keep the flag up for ever)."""
        with self._lock:
            begun = self._begun.pop(turn, None)
            if begun is None:
                return
            kept = [p for p in self._problems if p.at >= begun]
            if len(kept) != len(self._problems):
                self._problems.clear()
                self._problems.extend(kept)

    @property
    def degraded(self) -> bool:
        """Whether some memory step is failing."""
        with self._lock:
            return bool(self._problems)

    def report(self) -> HealthReport:
        """A snapshot for status: the flag and the recent failures, oldest first."""
        with self._lock:
            problems = list(self._problems)
        return HealthReport(degraded=bool(problems), problems=problems)

    def guard(
        self,
        step: str,
        *,
        passthrough: tuple[type[BaseException], ...] = (),
        answers: bool = False,
    ) -> MemoryStep:
        """A context manager that runs one memory step without letting it fail the run.

        Args:
            step: The step's name in the record (``begin``, ``end``, ``tool:<name>`` ...).
            passthrough: Exception types that are control flow, not failures (LangGraph's
                interrupts); they propagate. ``BaseException``s that are not ``Exception``
                (cancellation, ``KeyboardInterrupt``) always propagate.
            answers: A tool step: a typed :class:`MnemonError` other than a backend failure
                (:data:`BACKEND_FAILURES`) is the step's ordinary answer, not a degradation.

        Returns:
            A :class:`MemoryStep`; after the ``with`` block, ``failed`` and ``result()`` say
            what happened.
        """
        return MemoryStep(self, step, passthrough=passthrough, answers=answers)


class MemoryStep:
    """One guarded memory step (see :meth:`HealthRecord.guard`)."""

    def __init__(
        self,
        record: HealthRecord,
        step: str,
        *,
        passthrough: tuple[type[BaseException], ...] = (),
        answers: bool = False,
    ) -> None:
        self.record = record
        self.step = step
        self.passthrough = passthrough
        self.answers = answers
        self.error: BaseException | None = None
        self.code: str | None = None
        self.message: str | None = None
        self.degraded = False

    @property
    def failed(self) -> bool:
        """Whether the step raised (an ordinary typed answer included)."""
        return self.error is not None

    def result(self) -> dict[str, Any]:
        """The failure as a structured tool result: ``{"error": code, "message": ...}`` (plus
        the kernel's ``decision`` when it refused)."""
        out: dict[str, Any] = {"error": self.code or "internal", "message": self.message or ""}
        decision = getattr(self.error, "decision", None)
        if isinstance(decision, dict):
            out["decision"] = dict(decision)
        return out

    def __enter__(self) -> MemoryStep:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc is None:
            self.record.succeeded(self.step)
            return False
        if not isinstance(exc, Exception) or isinstance(exc, self.passthrough):
            return False  # cancellation, interrupts: not ours to stop
        self.error = exc
        if isinstance(exc, MnemonError):
            self.code, self.message = exc.code, safe_text(exc.message)
            if self.answers and not isinstance(exc, BACKEND_FAILURES):
                self.record.succeeded(self.step)  # memory works; the request was refused
                return True
            logger.warning("memory step %s degraded: %s: %s", self.step, self.code, self.message)
        else:
            self.code = "internal"
            self.message = (
                f"memory is degraded: the {self.step} step failed unexpectedly "
                f"({type(exc).__name__}); the agent can go on without it, and the log has "
                "the details"
            )
            logger.warning(
                "memory step %s degraded: internal: %s",
                self.step,
                type(exc).__name__,
                exc_info=(kind or type(exc), exc, tb),
            )
        self.degraded = True
        self.record.failed(self.step, self.code, self.message)
        return True
