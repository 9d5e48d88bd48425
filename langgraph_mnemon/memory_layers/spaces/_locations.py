"""Where a Memory Space's data may live, and which spaces may make the server reach out.

Two rules, each decided here and nowhere else (the catalog and the service call them before
any provider is asked, on every surface: Python API, CLI, control plane, tools, runs).

**Storage locations belong to the server** (:func:`check_storage`). A provider that keeps a
space's data at a place its settings name (a fact file ``path``; mem0 ``user_id``,
``agent_id`` and ``collection``; a Chroma ``collection``; a store ``namespace``) implements
:class:`OwnsStorage`: ``owns_storage(space_id, config)`` says whether the settings name the
place the provider derives for that space, which no other space can have. Then:

* a caller who is not an admin never names a location: the settings must be the derived ones;
* an admin may name another one: for a space of the local user (owner ``None``, the
  operator's) a path inside the storage root or inside a folder of ``providers.allowed_paths``;
  for a space of a user or a project a path inside ``providers.allowed_paths`` only (the check
  on use cannot tell who set a location, so it allows the same);
* on use (every binding handed to a provider), a space of a user or project whose stored
  location is neither its derived one nor a path inside ``providers.allowed_paths`` is refused
  before the provider is asked: nothing is read or written there. Settings stored before these
  checks existed are never followed; resetting them (``config={"path": None}``) or listing the
  folder makes the space usable again. The local user's spaces are not checked on use.

Who is an admin: the service itself and the host's local scope (the operator: in-process
``mem.spaces``, a loopback or ``remote_token`` control-plane caller) are; a scope's view
(``for_scope``, hence every run, tool and request of a user) is not, unless the control plane
hands it on for a caller with the ``mnemon:admin`` permission (:meth:`as_admin`).

**Outbound requests are an admin's** (:func:`admit_outbound`). A provider whose settings name
an endpoint (a ``url`` config field: the ``http`` provider) is added, configured and tested by
an admin only, and its endpoint is checked by the provider (:class:`ChecksDestination`:
internal addresses are refused unless ``http.allowed_hosts`` lists them) before anything is
stored or contacted. The provider checks the address again when it connects.

A refusal is an :class:`~langgraph_mnemon.errors.AuthorityError` (HTTP 403) with a
kernel-style ``decision``: layer ``memory_spaces``, channel ``maintenance``, the trigger, a
``mode`` (``admin-only``, ``outside-allowed-paths``, ``not-derived``, ``internal-address``) and
the setting (with its environment variable) that would allow it, if any.

Example:
    >>> check_storage(facts, "space-1", "user:bob", {"path": "/home/alice/facts.json"},
    ...               admin=False, rules=StorageRules(root))
    Traceback (most recent call last):
    AuthorityError: Memory Space settings may not say where the space's data lives ...
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from langgraph_mnemon.errors import AuthorityError
from langgraph_mnemon.memory_layers.grants import ADMIN_PERMISSION
from langgraph_mnemon.memory_layers.kernel import Decision, current_trigger
from langgraph_mnemon.memory_layers.spaces._models import MemoryProvider, settle

__all__ = [
    "ADMIN_PERMISSION",
    "ChecksDestination",
    "OwnsStorage",
    "StorageRules",
    "admit_outbound",
    "check_storage",
    "connects_out",
    "provider_refusal",
]

ALLOWED_PATHS = "providers.allowed_paths"
_WHO = f"only an admin (a user with the {ADMIN_PERMISSION!r} permission, or the local operator) may"


@runtime_checkable
class OwnsStorage(Protocol):
    """A provider whose space settings can name where the space's data lives."""

    def owns_storage(self, space_id: str, config: Mapping[str, Any]) -> bool:
        """Whether ``config`` keeps ``space_id``'s data where this provider derives it for that
        space (a setting left out counts as derived). No I/O."""
        ...


@runtime_checkable
class ChecksDestination(Protocol):
    """A provider whose space settings name a network endpoint it will connect to."""

    def check_destination(self, config: Mapping[str, Any]) -> None:
        """Refuse (:class:`AuthorityError`, code ``internal-address``) an endpoint the server
        must not reach; connect to nothing. Settings it cannot read are left to
        ``check_config``."""
        ...


@dataclass(frozen=True)
class StorageRules:
    """The storage root and the folders an admin may point spaces into besides it."""

    root: Path
    allowed_paths: tuple[Path, ...] = field(default_factory=tuple)

    def allows(self, path: str, *, in_root: bool) -> bool:
        """Whether ``path`` lies inside an allowed folder (or, ``in_root``, the root)."""
        place = Path(os.path.normpath(path))
        folders = (*self.allowed_paths, self.root) if in_root else self.allowed_paths
        return place.is_absolute() and any(place.is_relative_to(f) for f in folders)


def provider_refusal(
    message: str, *, code: str, mode: str, setting: str | None = None
) -> AuthorityError:
    """The 403 refusal of a Memory Space setting, with its kernel-style decision.

    Args:
        message: What was refused and what to do (names the setting, never a secret).
        code: The error code (``storage-location``, ``admin-required``, ``internal-address``).
        mode: The decision's mode (``admin-only``, ``not-derived``, ...).
        setting: The setting that would allow it, if one would.

    Returns:
        An :class:`AuthorityError` whose ``decision`` has the kernel's shape.

    Example:
        >>> provider_refusal("no", code="internal-address", mode="internal-address",
        ...                  setting="http.allowed_hosts").decision["env"]
        'MNEMON_HTTP__ALLOWED_HOSTS'
    """
    env = "MNEMON_" + setting.replace(".", "__").upper() if setting else None
    error = AuthorityError(message, code=code)
    error.decision = Decision(
        "memory_spaces", "maintenance", current_trigger(), mode, False, setting, env
    ).to_dict()
    return error


def _paths(provider: MemoryProvider, config: Mapping[str, Any]) -> dict[str, str]:
    kinds = {f.name: f.kind for f in provider.descriptor.config_fields}
    return {
        key: value
        for key, value in config.items()
        if kinds.get(key) == "path" and isinstance(value, str) and value
    }


def _named(provider: OwnsStorage, space_id: str, config: Mapping[str, Any]) -> str:
    keys = [k for k, v in config.items() if not provider.owns_storage(space_id, {k: v})]
    return ", ".join(sorted(keys)) or "the location settings"


def check_storage(
    provider: MemoryProvider,
    space_id: str,
    owner: str | None,
    config: Mapping[str, Any],
    *,
    admin: bool,
    rules: StorageRules,
    in_use: bool = False,
) -> None:
    """Refuse settings that keep a space's data anywhere the rules do not allow (no I/O).

    The one decision of where a provider's storage may be (rules in the module docstring).

    Args:
        provider: The space's provider (one without :class:`OwnsStorage` has no location).
        space_id: The space's id.
        owner: Its owner key (``None``: the local user's).
        config: Its settings as :meth:`MemoryProvider.place` stores them.
        admin: Whether the caller setting them is an admin (ignored ``in_use``).
        rules: The storage root and ``providers.allowed_paths``.
        in_use: The stored settings are about to be used (not set).

    Raises:
        AuthorityError: code ``storage-location``, with the decision.
    """
    if not isinstance(provider, OwnsStorage) or provider.owns_storage(space_id, config):
        return
    if in_use and owner is None:
        return  # the local user's spaces are the operator's, as configured
    if not admin and not in_use:
        raise provider_refusal(
            "Memory Space settings may not say where the space's data lives: the server "
            "keeps each space's data in a place of its own. Leave out "
            f"{_named(provider, space_id, config)}; {_WHO} choose another location",
            code="storage-location",
            mode="admin-only",
        )
    paths = _paths(provider, config)
    if owner is None:
        if all(rules.allows(p, in_root=True) for p in paths.values()):
            return
        raise provider_refusal(
            f"the path in {', '.join(sorted(paths))} is outside the storage root and outside "
            f"{ALLOWED_PATHS}; choose a path under the root, or add its folder to "
            f"{ALLOWED_PATHS} (env MNEMON_PROVIDERS__ALLOWED_PATHS)",
            code="storage-location",
            mode="outside-allowed-paths",
            setting=ALLOWED_PATHS,
        )
    rest = {k: v for k, v in config.items() if k not in paths}
    if (
        paths
        and provider.owns_storage(space_id, rest)
        and all(rules.allows(p, in_root=False) for p in paths.values())
    ):
        return
    raise _refused_for_owner(provider, space_id, config, in_use)


def _refused_for_owner(
    provider: OwnsStorage, space_id: str, config: Mapping[str, Any], in_use: bool
) -> AuthorityError:
    named = _named(provider, space_id, config)
    if in_use:
        message = (
            f"Memory Space {space_id!r} keeps its data at a location that is not its own "
            f"({named} set before locations were checked); nothing was read or written. Reset "
            f"it (update the space's config with {named} set to null), or let an admin add the "
            f"folder to {ALLOWED_PATHS}"
        )
    else:
        message = (
            f"a space of a user or project keeps its data where the server derives it, or in "
            f"a folder of {ALLOWED_PATHS}; leave out {named}, or add the folder to "
            f"{ALLOWED_PATHS} (env MNEMON_PROVIDERS__ALLOWED_PATHS)"
        )
    return provider_refusal(
        message, code="storage-location", mode="not-derived", setting=ALLOWED_PATHS
    )


def connects_out(provider: MemoryProvider) -> bool:
    """Whether a space of ``provider`` names an endpoint the server will connect to (a
    ``url`` config field, as the ``http`` provider declares).

    Example:
        >>> connects_out(HttpProvider()), connects_out(FactFileProvider(root))
        (True, False)
    """
    return any(f.kind == "url" for f in provider.descriptor.config_fields)


def admit_outbound(
    provider: MemoryProvider, config: Mapping[str, Any] | None, *, admin: bool, what: str
) -> None:
    """Refuse adding, configuring or testing a space that connects out, unless an admin
    does it and the provider accepts its endpoint; connects to nothing.

    Args:
        provider: The space's provider (one without a ``url`` setting is always admitted).
        config: The settings that would be used (the merged ones for a change).
        admin: Whether the caller is an admin.
        what: What the caller does, for the message ("adding", "testing", ...).

    Raises:
        AuthorityError: code ``admin-required`` (not an admin) or, from the provider,
            ``internal-address``; with the decision.
    """
    if not connects_out(provider):
        return
    if not admin:
        raise provider_refusal(
            f"{what} a space of provider {provider.descriptor.id!r} makes the server send "
            f"requests to the endpoint its settings name; {_WHO} do that",
            code="admin-required",
            mode="admin-only",
        )
    if isinstance(provider, ChecksDestination) and isinstance(config, Mapping):
        settle(provider.check_destination(config))  # an older provider's is async
