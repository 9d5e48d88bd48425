"""Memory Space secrets at the door: credentials apart from the configuration.

Provider credentials (API keys, tokens) never enter the catalog's configuration or any read
API; they are kept in their own table (:mod:`._secret_store`), each call hands them to the
provider, and a space reports only which keys are configured. :func:`split_config` keeps them
apart at the door: a configuration key that looks like a credential is refused (it belongs in
``secrets=``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from langgraph_mnemon.contracts import check_text
from langgraph_mnemon.errors import InvalidInputError, MnemonError
from langgraph_mnemon.memory_layers.spaces._models import MemoryProvider

__all__ = [
    "MAX_SECRET_CHARS",
    "PROVIDER_CONFIG_CODE",
    "merge_secrets",
    "split_config",
]

MAX_SECRET_CHARS = 16_384
"""The longest secret value a space takes (API keys and tokens are far shorter)."""
MAX_SECRET_NAME_CHARS = 64
_SECRET_HINT = re.compile(r"(api[_-]?key|token|secret|password|authorization|credential)", re.I)


def _check_secrets(provider: MemoryProvider, secrets: Mapping[Any, Any]) -> None:
    secret_fields = set(provider.descriptor.secret_fields)
    for key, value in secrets.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidInputError("secrets must map string names to string values")
        check_text(key, "a secret name")
        check_text(value, f"secret {key!r}")
        if len(key) > MAX_SECRET_NAME_CHARS or len(value) > MAX_SECRET_CHARS:
            raise InvalidInputError(
                f"secret names have at most {MAX_SECRET_NAME_CHARS} characters and values at "
                f"most {MAX_SECRET_CHARS}"
            )
        if secret_fields and key not in secret_fields:
            raise InvalidInputError(
                f"provider {provider.descriptor.id!r} takes the secrets "
                f"{', '.join(sorted(secret_fields))} (got {key!r})"
            )
        if not secret_fields:
            raise InvalidInputError(
                f"provider {provider.descriptor.id!r} takes no secrets (got {key!r})"
            )


PROVIDER_CONFIG_CODE = "invalid-provider-config"
"""The error code of every configuration refusal (the control plane states it in OpenAPI)."""


def split_config(
    provider: MemoryProvider,
    config: Mapping[str, Any] | None,
    secrets: Mapping[str, str] | None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """``(checked config, secrets)`` for ``provider``: credentials only in ``secrets``.

    Raises:
        InvalidInputError: code ``invalid-provider-config``: a mapping of the wrong type, a
            config key that looks like a credential, a secret the provider does not take, or
            a config the provider's ``check_config`` refuses (no I/O happens here).
    """
    try:
        return _split(provider, config, secrets)
    except InvalidInputError as exc:
        # One stable code whatever the provider raised: the message says what to fix, and
        # never echoes a secret value back (a provider's own message might quote one).
        message = exc.message
        if isinstance(secrets, Mapping):
            for value in sorted((v for v in secrets.values() if isinstance(v, str)), key=len)[::-1]:
                if len(value) >= 3:
                    message = message.replace(value, "***")
        raise InvalidInputError(message, code=PROVIDER_CONFIG_CODE) from None


def _split(
    provider: MemoryProvider,
    config: Mapping[str, Any] | None,
    secrets: Mapping[str, str] | None,
) -> tuple[dict[str, Any], dict[str, str]]:
    if config is not None and not isinstance(config, Mapping):
        raise InvalidInputError("config must be a mapping of provider settings")
    if secrets is not None and not isinstance(secrets, Mapping):
        raise InvalidInputError("secrets must be a mapping of credential names to strings")
    config = dict(config or {})
    secrets = dict(secrets or {})
    secret_fields = set(provider.descriptor.secret_fields)
    for key in list(config):
        if key in secret_fields or _SECRET_HINT.search(str(key)):
            raise InvalidInputError(
                f"config key {key!r} looks like a credential; pass it in secrets= so it is "
                "stored host-side only"
            )
    _check_secrets(provider, secrets)
    try:
        checked = provider.check_config(config, secrets)
    except MnemonError:
        raise
    except Exception as exc:
        raise InvalidInputError(
            f"invalid configuration for provider {provider.descriptor.id!r}: {exc}"
        ) from None
    return dict(checked), secrets


def merge_secrets(stored: Mapping[str, str], changes: Mapping[str, str] | None) -> dict[str, str]:
    """``stored`` with ``changes`` applied: a value sets its key, ``""`` removes it, keys not
    named stay as they are (secrets are write-only: callers never read them back).

    Raises:
        InvalidInputError: ``changes`` is not a mapping of string names to string values.

    Example:
        >>> merge_secrets({"api_key": "a", "org": "b"}, {"api_key": "c", "org": ""})
        {'api_key': 'c'}
    """
    merged = dict(stored)
    if changes is None:
        return merged
    if not isinstance(changes, Mapping):
        raise InvalidInputError(
            "secrets must be a mapping of credential names to strings ('' removes one)",
            code=PROVIDER_CONFIG_CODE,
        )
    for key, value in changes.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidInputError(
                "secrets must map string names to string values ('' removes one)",
                code=PROVIDER_CONFIG_CODE,
            )
        if value == "":
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged
