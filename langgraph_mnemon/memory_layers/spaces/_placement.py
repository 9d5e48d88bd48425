"""Provider placement: which provider a new Memory Space uses under the persistence strategy.

``persistence_strategy.mode="manual"`` always places a new space on ``provider_id``.
``"automatic"`` first narrows the registered providers deterministically, in the order of
``rules.allowed_provider_ids``: registered, allowed, inside the data boundary
(``data_boundary="local-only"`` keeps only providers whose data stays on this machine) and
offering every ``rules.required_capabilities``. Then:

* a provider the caller named must be one of them (else :class:`InvalidInputError`);
* one eligible provider is chosen as is;
* several: a *chooser* (the worker model, see ``adapters.placement``) gets the user's
  ``prompt``, the ``preference``, the space's purpose and a redacted brief of the candidates
  (id, label, local or shared, capabilities; never endpoints or secrets) and names one; the
  choice is validated against the eligible set. Without a chooser, or when it names nothing
  valid, the first candidate in ``rules.preference`` order wins: ``local-first`` puts local
  providers first, ``shared-first`` shared (remote) ones, ``balanced`` keeps ``provider_id``
  first; ties keep the allow-list order.

Plain Python: no model, no I/O.

Example:
    >>> strategy = PersistenceStrategyConfig(
    ...     mode="automatic",
    ...     rules={"allowed_provider_ids": ["mnemos", "chroma"], "preference": "shared-first"},
    ... )
    >>> place(strategy, {"mnemos": native, "chroma": remote_chroma}).provider_id
    'chroma'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from langgraph_mnemon.config import PersistenceStrategyConfig
from langgraph_mnemon.errors import InvalidInputError, NotFoundError
from langgraph_mnemon.memory_layers.spaces._models import ProviderDescriptor

__all__ = [
    "Candidate",
    "Chooser",
    "Placement",
    "PlacementRequest",
    "eligible",
    "has_capability",
    "place",
]

PlacementMode = Literal["manual", "automatic"]


@dataclass(frozen=True)
class Candidate:
    """What a chooser may know of one eligible provider (no endpoint, no secret)."""

    id: str
    label: str
    local: bool
    capabilities: tuple[str, ...]


@dataclass(frozen=True)
class PlacementRequest:
    """Everything a chooser decides from: the user's strategy and the eligible providers."""

    prompt: str
    preference: str
    purpose: str
    default_provider_id: str
    candidates: tuple[Candidate, ...]


Chooser = Callable[[PlacementRequest], str | None]
"""Names one candidate id for a request, or None for no decision (then the preference wins)."""


@dataclass(frozen=True)
class Placement:
    """The provider a new space gets, and why."""

    provider_id: str
    mode: PlacementMode
    reason: str
    candidates: tuple[str, ...] = ()


def has_capability(descriptor: ProviderDescriptor, capability: str) -> bool:
    """Whether a provider offers one of the strategy's ``required_capabilities``."""
    if capability == "exact-write":
        return descriptor.write_mode == "exact"
    return bool(getattr(descriptor.capabilities, capability, False))


def eligible(
    strategy: PersistenceStrategyConfig, descriptors: Mapping[str, ProviderDescriptor]
) -> list[ProviderDescriptor]:
    """The registered providers the rules allow, in ``allowed_provider_ids`` order.

    Args:
        strategy: ``MnemonConfig.persistence_strategy``.
        descriptors: Registered providers by id.

    Returns:
        The allowed, registered providers inside the data boundary with every required
        capability (possibly none).
    """
    rules = strategy.rules
    found = []
    for provider_id in dict.fromkeys(rules.allowed_provider_ids):
        descriptor = descriptors.get(provider_id)
        if descriptor is None or _problem(strategy, descriptor) is not None:
            continue
        found.append(descriptor)
    return found


def place(
    strategy: PersistenceStrategyConfig,
    descriptors: Mapping[str, ProviderDescriptor],
    *,
    requested: str | None = None,
    purpose: str = "",
    chooser: Chooser | None = None,
) -> Placement:
    """The provider for a new Memory Space under ``strategy``.

    Args:
        strategy: ``MnemonConfig.persistence_strategy``.
        descriptors: Registered providers by id.
        requested: A provider the caller named (validated, never replaced).
        purpose: What the space is for (its name and description), for the chooser.
        chooser: Picks among several eligible providers (the worker model); None =
            deterministic by ``rules.preference``.

    Returns:
        The :class:`Placement` (``provider_id``, ``mode``, ``reason``, eligible ids).

    Raises:
        InvalidInputError: manual strategy with another provider named; a named provider the
            rules refuse; no registered provider satisfies the rules.
        NotFoundError: the named provider is not registered.

    Example:
        >>> place(PersistenceStrategyConfig(), descriptors).provider_id   # manual
        'mnemos'
    """
    if strategy.mode == "manual":
        if requested is not None and requested != strategy.provider_id:
            raise InvalidInputError(
                f"the persistence strategy is manual: new Memory Spaces use provider "
                f"{strategy.provider_id!r}; omit provider_id"
            )
        return Placement(strategy.provider_id, "manual", "the persistence strategy is manual")
    if requested is not None:
        return _requested(strategy, descriptors, requested)
    ranked = _ranked(strategy, eligible(strategy, descriptors))
    if not ranked:
        raise InvalidInputError(_none_eligible(strategy, descriptors))
    ids = tuple(d.id for d in ranked)
    if len(ranked) == 1:
        return Placement(ids[0], "automatic", "the only provider the rules allow", ids)
    if chooser is not None:
        choice = chooser(_request(strategy, ranked, purpose))
        if choice in ids:
            return Placement(choice, "automatic", "chosen by the worker model", ids)
    preference = strategy.rules.preference
    return Placement(ids[0], "automatic", f"first eligible provider ({preference})", ids)


def _requested(
    strategy: PersistenceStrategyConfig,
    descriptors: Mapping[str, ProviderDescriptor],
    requested: str,
) -> Placement:
    rules = strategy.rules
    if requested not in rules.allowed_provider_ids:
        raise InvalidInputError(
            f"provider {requested!r} is not allowed by the persistence strategy; choose one of "
            f"{', '.join(rules.allowed_provider_ids)}"
        )
    descriptor = descriptors.get(requested)
    if descriptor is None:
        raise NotFoundError(
            f"no provider {requested!r} is registered; available: "
            f"{', '.join(sorted(descriptors)) or 'none'}"
        )
    problem = _problem(strategy, descriptor)
    if problem is not None:
        raise InvalidInputError(
            f"provider {requested!r} {problem}; choose another allowed provider"
        )
    return Placement(requested, "automatic", "requested", (requested,))


def _problem(strategy: PersistenceStrategyConfig, descriptor: ProviderDescriptor) -> str | None:
    """Why the rules refuse ``descriptor`` (allow-list aside), or None."""
    rules = strategy.rules
    if rules.data_boundary == "local-only" and not descriptor.local:
        return (
            "keeps data off this machine and the persistence strategy is local-only "
            "(persistence_strategy.rules.data_boundary)"
        )
    missing = [c for c in rules.required_capabilities if not has_capability(descriptor, c)]
    if missing:
        return f"lacks the required capabilities {', '.join(missing)}"
    return None


def _ranked(
    strategy: PersistenceStrategyConfig, found: Sequence[ProviderDescriptor]
) -> list[ProviderDescriptor]:
    preference = strategy.rules.preference
    if preference == "local-first":
        return sorted(found, key=lambda d: not d.local)  # stable: allow-list order kept
    if preference == "shared-first":
        return sorted(found, key=lambda d: d.local)
    return sorted(found, key=lambda d: d.id != strategy.provider_id)


def _request(
    strategy: PersistenceStrategyConfig, ranked: Sequence[ProviderDescriptor], purpose: str
) -> PlacementRequest:
    return PlacementRequest(
        prompt=strategy.prompt,
        preference=strategy.rules.preference,
        purpose=purpose,
        default_provider_id=strategy.provider_id,
        candidates=tuple(
            Candidate(d.id, d.label, d.local, tuple(d.capabilities.names())) for d in ranked
        ),
    )


def _none_eligible(
    strategy: PersistenceStrategyConfig, descriptors: Mapping[str, ProviderDescriptor]
) -> str:
    rules = strategy.rules
    needs = ""
    if rules.required_capabilities:
        needs = f"; required capabilities: {', '.join(rules.required_capabilities)}"
    return (
        "no registered provider satisfies the persistence strategy (allowed: "
        f"{', '.join(rules.allowed_provider_ids)}; registered: "
        f"{', '.join(sorted(descriptors)) or 'none'}; data boundary: {rules.data_boundary}"
        f"{needs}); change persistence_strategy.rules or register a provider"
    )
