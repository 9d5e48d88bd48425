"""The Memory Space provider conformance suite: does a provider honour the contract it declares?

Give the suite a :class:`ProviderHarness` (how to build your provider over a working backend,
and optionally over an unreachable one) and it runs one check per contract rule: descriptor
coherence, status, remember receipts, search in every mode, score semantics and space
isolation, browse, forget as declared, related / link / graph, discovery, refusal of
undeclared capabilities *before any I/O*, unicode and size limits, concurrent searches, and
behaviour while the backend is down (a per-space hint, never a failed recall). Each check
builds a fresh provider, uses fresh random space ids, and closes the provider afterwards, so
one shared backend is fine. The suite is plain Python (no pytest import) and deterministic.

Typical third-party use, one pytest test per check:

.. code-block:: python

    import pytest
    from langgraph_mnemon.testing.providers import CHECKS, ProviderHarness, check_provider

    @pytest.mark.parametrize("check", CHECKS)
    def test_conformance(check, tmp_path):
        harness = ProviderHarness(make=lambda: MyProvider(tmp_path))
        check_provider(harness, checks=[check]).raise_for_failures()

Outcomes: ``passed``; ``failed`` (the detail says what broke); ``not_declared`` (the descriptor
does not declare that capability; ``undeclared_refused`` then checks the refusal);
``not_run`` (the harness lacks what the check needs, e.g. no ``make_down`` for
``backend_down``, or a provider without ``remember`` cannot be seeded).

Example:
    >>> report = check_provider(ProviderHarness(make=lambda: MyProvider(tmp_path)))
    >>> report.passed
    True
    >>> print(report)        # one line per check
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.spaces import MemoryProvider, settle
from langgraph_mnemon.testing import _conformance_checks as _basic
from langgraph_mnemon.testing import _conformance_down as _down
from langgraph_mnemon.testing import _conformance_more as _more
from langgraph_mnemon.testing._conformance_base import (
    CheckFailed,
    Context,
    NotDeclared,
    NotRun,
    bounded,
    made,
)

__all__ = [
    "CHECKS",
    "CHECK_TIMEOUT",
    "CheckResult",
    "ConformanceError",
    "ConformanceReport",
    "ProviderHarness",
    "acheck_provider",
    "check_provider",
]

CHECK_TIMEOUT = 60.0
"""Seconds one check may take (building and closing its provider included)."""

Outcome = Literal["passed", "failed", "not_declared", "not_run"]
ProviderFactory = Callable[[], "MemoryProvider | Awaitable[MemoryProvider]"]

_CHECKS: dict[str, Callable[[Context], str]] = {
    "descriptor": _basic.check_descriptor,
    "status": _basic.check_status,
    "remember_receipt": _basic.check_remember_receipt,
    "remember_many": _basic.check_remember_many,
    "search_modes": _basic.check_search_modes,
    "score_semantics": _basic.check_score_semantics,
    "browse": _basic.check_browse,
    "forget": _basic.check_forget,
    "related_link": _more.check_related_link,
    "discover": _more.check_discover,
    "undeclared_refused": _more.check_undeclared_refused,
    "unicode": _more.check_unicode,
    "size_limits": _more.check_size_limits,
    "concurrent_search": _more.check_concurrent_search,
    "backend_down": _down.check_backend_down,
}

CHECKS: tuple[str, ...] = tuple(_CHECKS)
"""Every check name, in run order."""


class ConformanceError(AssertionError):
    """A provider failed conformance checks (:meth:`ConformanceReport.raise_for_failures`).

    An ``AssertionError``, so that test runners show it as a test failure.
    """


@dataclass
class ProviderHarness:
    """How the suite reaches one provider kind.

    Args:
        make: builds a provider over a working backend (sync or async); called once per
            check, and the suite ``close()``s it. Checks use fresh random space ids, so a
            shared backend is fine.
        config: the space configuration handed to ``check_config`` (then ``place``).
        secrets: the space secrets handed to ``check_config`` and the bindings.
        make_down: the same kind with its backend unreachable (closed port, stopped server,
            unusable path); without it ``backend_down`` is ``not_run``.
        settle: waits until ``write_mode="async"`` writes are visible (required then); a
            plain function or an ``async def`` one.
        name: a label for reports (the descriptor id otherwise).

    Example:
        >>> ProviderHarness(make=lambda: StoreProvider(InMemoryStore()), name="store")
    """

    make: ProviderFactory
    config: Mapping[str, Any] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict)
    make_down: ProviderFactory | None = None
    settle: Callable[[], Awaitable[None] | None] | None = None
    name: str = ""

    def __repr__(self) -> str:  # secrets stay out of reprs and logs
        return f"ProviderHarness(name={self.name!r}, secrets={sorted(self.secrets)!r})"


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check, with a one-line detail and its duration."""

    name: str
    outcome: Outcome
    detail: str
    seconds: float


@dataclass
class ConformanceReport:
    """The results of one suite run, in check order.

    ``allowed_not_run`` names the checks whose ``not_run`` is an accepted opt-out (the
    harness gave no ``make_down``; a provider without ``remember`` cannot be seeded); any
    other ``not_run`` counts as a failure.
    """

    provider_id: str
    results: list[CheckResult]
    allowed_not_run: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """No check failed (and every ``not_run`` was an accepted opt-out)."""
        return not self.failures

    @property
    def failures(self) -> list[CheckResult]:
        """The failed checks (and any ``not_run`` that was not allowed)."""
        return [
            r
            for r in self.results
            if r.outcome == "failed"
            or (r.outcome == "not_run" and r.name not in self.allowed_not_run)
        ]

    def raise_for_failures(self) -> None:
        """Raise :class:`ConformanceError` listing each failure; return quietly otherwise.

        Raises:
            ConformanceError: at least one check failed.

        Example:
            >>> check_provider(harness, checks=["forget"]).raise_for_failures()
        """
        failures = self.failures
        if failures:
            lines = [f"{self.provider_id}: {len(failures)} conformance check(s) failed"]
            lines += [f"- {r.name}: {r.detail}" for r in failures]
            raise ConformanceError("\n".join(lines))

    def __str__(self) -> str:
        width = max([len(r.name) for r in self.results] + [5])
        lines = [f"conformance of {self.provider_id!r}", f"{'check':<{width}}  outcome       time"]
        for r in self.results:
            lines.append(f"{r.name:<{width}}  {r.outcome:<12} {r.seconds:5.2f}s  {r.detail}")
        return "\n".join(lines)


def _selected(checks: Sequence[str] | None) -> list[str]:
    if checks is None:
        return list(CHECKS)
    if isinstance(checks, str) or not isinstance(checks, Sequence):
        raise InvalidInputError("checks must be a list of check names, e.g. ['search_modes']")
    unknown = [c for c in checks if c not in _CHECKS]
    if unknown:
        raise InvalidInputError(
            f"unknown conformance check(s) {', '.join(map(repr, unknown))}; "
            f"choose from {', '.join(CHECKS)}"
        )
    return [c for c in CHECKS if c in set(checks)]


def _run_one(harness: ProviderHarness, name: str, opened: list[MemoryProvider]) -> CheckResult:
    """One check with a fresh provider (appended to ``opened``, closed here), bounded by
    :data:`CHECK_TIMEOUT` in a worker thread."""
    started = time.perf_counter()

    def body() -> str:
        provider = made(harness.make)
        opened.append(provider)
        ctx = Context(provider, harness.config, harness.secrets, harness.settle, harness.make_down)
        try:
            return _CHECKS[name](ctx)
        finally:
            opened.extend(ctx.opened)

    try:
        detail = bounded(body, CHECK_TIMEOUT, name=f"cf-{name}")
        outcome: Outcome = "passed"
    except NotDeclared as exc:
        outcome, detail = "not_declared", str(exc)
    except NotRun as exc:
        outcome, detail = "not_run", str(exc)
    except CheckFailed as exc:
        outcome, detail = "failed", str(exc)
    except TimeoutError:
        outcome, detail = "failed", f"timed out after {CHECK_TIMEOUT:.0f} s"
    except Exception as exc:
        outcome, detail = "failed", f"raised {type(exc).__name__}: {_one_line(exc)}"
    close_error = _close(opened)
    if close_error and outcome != "failed":
        outcome, detail = "failed", close_error
    detail = _masked(detail, harness.secrets)
    return CheckResult(name, outcome, detail, round(time.perf_counter() - started, 3))


def _masked(text: str, secrets: Mapping[str, str]) -> str:
    """A report never shows a secret value, even when a provider's error message does."""
    for value in secrets.values():
        if isinstance(value, str) and value:
            text = text.replace(value, "***")
    return text


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__


def _close(providers: list[MemoryProvider]) -> str | None:
    """Close each provider (``close()``, or the ``aclose()`` of an older provider), bounded."""
    problem = None
    for provider in list(providers):
        method = getattr(provider, "close", None) or getattr(provider, "aclose", None)
        if method is None:
            continue
        try:
            bounded(lambda m=method: settle(m()), CHECK_TIMEOUT, name="cf-close")
        except Exception as exc:
            what = getattr(method, "__name__", "close")
            problem = f"{what}() raised {type(exc).__name__}: {_one_line(exc)}"
    return problem


def check_provider(
    harness: ProviderHarness, *, checks: Sequence[str] | None = None
) -> ConformanceReport:
    """Run the conformance checks (all of them, or ``checks``) against one provider kind.

    Each check runs in a worker thread bounded by :data:`CHECK_TIMEOUT` and calls the
    provider synchronously (an ``async def`` provider is run through ``settle()``, as the host
    runs it). Safe to call from a thread that runs an event loop, though it blocks it: there,
    prefer ``await acheck_provider(...)``.

    Args:
        harness: how to build the provider (see :class:`ProviderHarness`).
        checks: names from :data:`CHECKS`; run in :data:`CHECKS` order.

    Returns:
        A :class:`ConformanceReport` with one :class:`CheckResult` per check.

    Raises:
        InvalidInputError: ``harness`` is not a :class:`ProviderHarness` or a check name is
            unknown.

    Example:
        >>> report = check_provider(harness, checks=["search_modes", "forget"])
        >>> [r.outcome for r in report.results]
        ['passed', 'passed']
    """
    if not isinstance(harness, ProviderHarness):
        raise InvalidInputError("check_provider() takes a ProviderHarness(make=...)")
    names = _selected(checks)
    results: list[CheckResult] = []
    provider_id = harness.name
    for name in names:
        opened: list[MemoryProvider] = []
        results.append(_run_one(harness, name, opened))
        if not provider_id and opened:
            provider_id = str(getattr(getattr(opened[0], "descriptor", None), "id", ""))
    # Every not_run the suite reports is an opt-out it documents (no make_down, no remember).
    allowed = tuple(r.name for r in results if r.outcome == "not_run")
    return ConformanceReport(provider_id or "(unbuilt provider)", results, allowed)


async def acheck_provider(
    harness: ProviderHarness, *, checks: Sequence[str] | None = None
) -> ConformanceReport:
    """:func:`check_provider` for async callers (in a worker thread; the loop stays free).

    Raises:
        InvalidInputError: as :func:`check_provider`.

    Example:
        >>> (await acheck_provider(harness, checks=["forget"])).passed
        True
    """
    return await asyncio.to_thread(check_provider, harness, checks=checks)
