"""Provider health that tells the truth: one bounded, briefly cached status call per provider.

(:meth:`MemorySpaces.status` is the other read here: catalog counts plus, with ``probe``,
every space's own provider status, asked concurrently and bounded by ``timeout_ms``.)

:meth:`MemorySpaces.health` asks every registered provider for its status (at most
``min(timeout_ms, 2 s)`` each, all at once) and marks each catalog space ``reachable`` only
when its provider is registered and answered healthy. A provider named by a space but not
registered in this process is ``missing``; one whose status call raised, timed out or said
unhealthy is ``failing``. Answers are cached for ``max_age`` seconds (thread-safe), so status
pages and the model-facing catalog can ask on every call. Messages are redacted: no secret
value, credential in a URL, or host path ever appears in them.

Example:
    >>> report = mem.spaces.health()
    >>> [(p.id, p.state) for p in report.providers]
    [('mnemos', 'healthy')]
    >>> report.unreachable
    []
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

from pydantic import Field, computed_field

from langgraph_mnemon.config import redact_url
from langgraph_mnemon.contracts import FrozenModel
from langgraph_mnemon.memory_layers.spaces._fanout import ProviderCalls, call_bounded
from langgraph_mnemon.memory_layers.spaces._models import (
    MemoryProvider,
    ProviderStatus,
    SpaceBinding,
)
from langgraph_mnemon.memory_layers.spaces._records import SpaceRecord, SpacesStatus, SpaceStatus

__all__ = [
    "HEALTH_TIMEOUT_SECONDS",
    "PROBE_BINDING",
    "HealthCache",
    "ProviderHealth",
    "ProviderState",
    "SpaceHealth",
    "SpacesHealth",
    "assess",
    "provider_secrets",
    "redact",
    "refused_spaces",
    "status_report",
]

HEALTH_TIMEOUT_SECONDS = 2.0
"""The longest a status call may take before its provider counts as failing."""
PROBE_SPACE_ID = "mnemon-health-probe"
_MESSAGE_CHARS = 300
ProviderState = Literal["healthy", "failing", "missing"]
# Absolute POSIX paths (two segments or more) and Windows drive paths; a URL's path is kept
# (the character before it is part of the host), only its credentials are masked.
_POSIX_PATH = re.compile(r"(?<![\w:/.\\-])/(?:[^\s/'\"(),;:]+/)+[^\s/'\"(),;:]*")
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:\\[^\s'\"(),;]*")
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"]+")


class ProviderHealth(FrozenModel):
    """One provider's state: ``healthy``, ``failing`` (its status call raised, timed out or
    reported unhealthy) or ``missing`` (a space names it but it is not registered here)."""

    id: str
    state: ProviderState
    message: str


class SpaceHealth(FrozenModel):
    """Whether one catalog space can be reached now, and why not (``reason``)."""

    space_id: str
    provider_id: str
    reachable: bool
    reason: str | None = None


class SpacesHealth(FrozenModel):
    """Every provider's state and every catalog space's reachability.

    ``catalog_error`` is set when the catalog itself could not be read (the database is down);
    ``providers`` then still lists the registered providers' states.
    """

    providers: list[ProviderHealth] = Field(default_factory=list)
    spaces: list[SpaceHealth] = Field(default_factory=list)
    catalog_error: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unreachable(self) -> list[str]:
        """Ids of the spaces that cannot be reached now."""
        return [s.space_id for s in self.spaces if not s.reachable]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def degraded(self) -> bool:
        """Whether a provider is failing or missing, a space unreachable or the catalog unread."""
        return (
            self.catalog_error is not None
            or any(p.state != "healthy" for p in self.providers)
            or bool(self.unreachable)
        )


def redact(text: str, secrets: Iterable[str] = (), places: Iterable[str] = ()) -> str:
    """``text`` without secret values, URL credentials or host paths, on one short line.

    Example:
        >>> redact("cannot open /srv/mnemon/chroma: token s3cr3t", secrets=["s3cr3t"])
        'cannot open <path>: token ***'
    """
    out = " ".join(str(text).split())
    for value in sorted((s for s in secrets if s and len(s) >= 3), key=len, reverse=True):
        out = out.replace(value, "***")
    for place in sorted((p for p in places if p), key=len, reverse=True):
        out = out.replace(place, "<path>")
    out = _URL.sub(lambda m: redact_url(m.group(0)), out)
    out = _WINDOWS_PATH.sub("<path>", _POSIX_PATH.sub("<path>", out))
    return out[:_MESSAGE_CHARS]


PROBE_BINDING = SpaceBinding(id=PROBE_SPACE_ID, name="Health probe")
"""What a provider with no Memory Space gets for its status call: a space holding no data."""


class HealthCache:
    """Provider states for ``max_age`` seconds, shared by every thread and event loop.

    Args:
        clock: Monotonic seconds (injectable for tests).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, ProviderHealth]] = {}

    def fresh(self, provider_id: str, max_age: float) -> ProviderHealth | None:
        """The cached state of ``provider_id`` if it is younger than ``max_age`` seconds."""
        with self._lock:
            entry = self._entries.get(provider_id)
        if entry is None or self._clock() - entry[0] > max_age:
            return None
        return entry[1]

    def store(self, health: ProviderHealth) -> ProviderHealth:
        """Remember ``health`` as of now; returns it."""
        with self._lock:
            self._entries[health.id] = (self._clock(), health)
        return health

    def clear(self) -> None:
        """Forget every cached state (the next call probes again)."""
        with self._lock:
            self._entries.clear()


def assess(
    providers: Mapping[str, MemoryProvider],
    spaces: Sequence[tuple[str, str]],
    binding: Callable[[str], SpaceBinding],
    cache: HealthCache,
    calls: ProviderCalls,
    *,
    timeout: float,
    max_age: float,
    places: Sequence[str] = (),
    catalog_error: str | None = None,
) -> SpacesHealth:
    """Probe every provider not cached (several at once on ``calls``' pool, each within
    ``timeout``), then derive each space's state.

    Args:
        providers: Registered providers by id.
        spaces: ``(space id, provider id)`` of every catalog space.
        binding: The binding a provider's status call gets (its first space's, else
            :data:`PROBE_BINDING`).
        cache: Where answers are kept for ``max_age`` seconds.
        calls: The service's pool for probing several providers at once.
        timeout: Seconds one status call may take.
        places: Host paths to mask in messages (besides any absolute path).
        catalog_error: Why the catalog could not be read, if it could not.
    """

    def one(provider_id: str, provider: MemoryProvider) -> ProviderHealth:
        try:
            bound = binding(provider_id)
        except Exception as exc:  # e.g. the secrets file is unreadable
            return ProviderHealth(
                id=provider_id, state="failing", message=redact(str(exc), (), places)
            )
        return probe(provider_id, provider, bound, timeout, places)

    states: dict[str, ProviderHealth] = {}
    stale = []
    for pid, provider in sorted(providers.items()):
        cached = cache.fresh(pid, max_age)
        if cached is None:
            stale.append((pid, provider))
        else:
            states[pid] = cached
    answers = calls.run([lambda p=pid, v=v: one(p, v) for pid, v in stale], timeout)
    for (pid, _), answer in zip(stale, answers, strict=True):
        if isinstance(answer, BaseException):  # the whole probe ran out of time
            answer = _late(pid, timeout)
        states[pid] = cache.store(answer)
    for _, provider_id in spaces:
        if provider_id not in states:
            states[provider_id] = missing(provider_id)
    return SpacesHealth(
        providers=[states[pid] for pid in sorted(states)],
        spaces=space_states(spaces, states),
        catalog_error=catalog_error,
    )


def probe(
    provider_id: str,
    provider: MemoryProvider,
    binding: SpaceBinding,
    timeout: float,
    places: Iterable[str] = (),
) -> ProviderHealth:
    """One bounded status call; never raises for the provider's failure."""
    secrets = [*binding.secrets.values(), *provider_secrets(provider)]
    try:
        status = call_bounded(lambda: provider.status(binding), timeout)
    except TimeoutError:
        return _late(provider_id, timeout)
    except Exception as exc:
        detail = redact(str(exc) or type(exc).__name__, secrets, places)
        return ProviderHealth(id=provider_id, state="failing", message=detail)
    if not getattr(status, "healthy", False):
        detail = redact(getattr(status, "error", None) or "reported unhealthy", secrets, places)
        return ProviderHealth(id=provider_id, state="failing", message=detail)
    return ProviderHealth(id=provider_id, state="healthy", message="answered its status call")


def _late(provider_id: str, timeout: float) -> ProviderHealth:
    message = f"the status call gave no answer within {int(timeout * 1000)} ms"
    return ProviderHealth(id=provider_id, state="failing", message=message)


def missing(provider_id: str) -> ProviderHealth:
    """The state of a provider that a space names but this process has not registered."""
    return ProviderHealth(
        id=provider_id,
        state="missing",
        message=(
            f"provider {provider_id!r} is not registered in this process; configure it (or "
            "register it with spaces.register_provider) to reach its spaces"
        ),
    )


def space_states(
    spaces: Iterable[tuple[str, str]], providers: dict[str, ProviderHealth]
) -> list[SpaceHealth]:
    """Each ``(space id, provider id)``'s reachability from its provider's state."""
    out = []
    for space_id, provider_id in spaces:
        state = providers[provider_id]
        reason = None
        if state.state == "missing":
            reason = f"provider {provider_id!r} is not registered"
        elif state.state == "failing":
            reason = f"provider {provider_id!r} is failing: {state.message}"
        out.append(
            SpaceHealth(
                space_id=space_id, provider_id=provider_id, reachable=not reason, reason=reason
            )
        )
    return out


def refused_spaces(report: SpacesHealth, refused: Mapping[str, str]) -> SpacesHealth:
    """``report`` with each space of ``refused`` unreachable, for the reason it maps to (a
    space whose stored location is refused on use: its provider is never asked for it)."""
    if not refused:
        return report
    spaces = [
        s.model_copy(update={"reachable": False, "reason": refused[s.space_id]})
        if s.space_id in refused
        else s
        for s in report.spaces
    ]
    return report.model_copy(update={"spaces": spaces})


def provider_secrets(provider: MemoryProvider) -> tuple[str, ...]:
    """Credentials a provider holds itself (e.g. a server token), to keep out of messages."""
    values = getattr(provider, "secrets_in_use", None)
    try:
        return tuple(v for v in values() if isinstance(v, str)) if callable(values) else ()
    except Exception:  # a provider's own bookkeeping never breaks health
        return ()


def status_report(
    records: Sequence[SpaceRecord],
    providers: Mapping[str, MemoryProvider],
    binding: Callable[[SpaceRecord], SpaceBinding],
    calls: ProviderCalls,
    *,
    probe: bool,
    timeout: float,
    places: Sequence[str] = (),
) -> SpacesStatus:
    """Catalog counts and, with ``probe``, each space's provider status (concurrently).

    A provider that is not registered, raises or times out gives an unhealthy status with a
    redacted message; this never raises for a provider.
    """
    active = sum(1 for s in records if s.active)
    disabled = sum(1 for s in records if not s.provider_registered)
    if not probe:
        return SpacesStatus(total=len(records), active=active, provider_disabled=disabled)

    def one(record: SpaceRecord) -> ProviderStatus:
        provider = providers[record.provider_id]
        return call_bounded(lambda: provider.status(binding(record)), timeout)

    asked = [r for r in records if r.provider_id in providers]
    answers = dict(
        zip(
            [r.id for r in asked],
            calls.run([lambda r=r: one(r) for r in asked], timeout),
            strict=True,
        )
    )
    health = []
    for record in records:
        status = answers.get(record.id)
        if record.provider_id not in providers:
            status = ProviderStatus(healthy=False, error="provider is not registered")
        elif isinstance(status, BaseException):
            message = redact(str(status), places=places) or "error"
            status = ProviderStatus(healthy=False, error=message)
        health.append(SpaceStatus(space=record, status=status))
    return SpacesStatus(
        total=len(records),
        active=active,
        healthy=sum(1 for h in health if h.status.healthy),
        unhealthy=sum(1 for h in health if not h.status.healthy),
        provider_disabled=disabled,
        total_insights=sum(h.status.total_insights or 0 for h in health),
        spaces=health,
    )
