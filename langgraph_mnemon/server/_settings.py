"""Settings over HTTP: the effective configuration without secrets, and the live switches.

Only the switches in :data:`LIVE_SETTINGS` change at run time (on the host's own config object,
which the layers read on every turn); every other key is fixed at startup and a PATCH naming it
is refused with the key named.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SecretStr, model_validator
from pydantic.json_schema import SkipJsonSchema

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.memory_layers.mnemos.db import redact_url

from ._models import Body

LIVE_SETTINGS = ("recall_mode", "writeback_mode", "routing_guidance", "idle_review_enabled")
CONFIGURED = "configured"
_URL_KEYS = {("database_url",), ("embedding", "endpoint")}


class SettingsPatch(Body):
    """Live switches to change (at least one); any other key is a startup-only setting and is
    refused."""

    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, json_schema_extra={"minProperties": 1}
    )

    recall_mode: Literal["guided", "off"] | SkipJsonSchema[None] = None
    writeback_mode: Literal["guided", "off"] | SkipJsonSchema[None] = None
    routing_guidance: bool | SkipJsonSchema[None] = None
    idle_review_enabled: bool | SkipJsonSchema[None] = None

    @model_validator(mode="before")
    @classmethod
    def _only_live_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            other = sorted(k for k in data if k not in LIVE_SETTINGS)
            if other:
                known = [k for k in other if k in MnemonConfig.model_fields]
                names = ", ".join(other)
                kind = "startup-only settings" if known else "not known settings"
                raise ValueError(
                    f"{names}: {kind}; only {', '.join(LIVE_SETTINGS)} change at run time"
                    + (" (set startup-only ones with MNEMON_* and restart)" if known else "")
                )
        return data

    @model_validator(mode="after")
    def _something_to_change(self) -> SettingsPatch:
        if not self.model_dump(exclude_none=True):
            raise ValueError(
                f"nothing to change: name at least one of {', '.join(LIVE_SETTINGS)} "
                "(GET settings reads them)"
            )
        return self


def public_settings(config: MnemonConfig) -> dict[str, Any]:
    """The effective configuration as JSON data, secrets replaced by ``"configured"`` / null.

    URL passwords (``database_url``, ``embedding.endpoint``) are masked. ``live`` repeats the
    run-time switches under the names PATCH takes.
    """
    data = _public(config, ())
    data["live"] = {
        "recall_mode": config.recall_mode,
        "writeback_mode": config.writeback_mode,
        "routing_guidance": config.routing_guidance,
        "idle_review_enabled": config.idle_review.enabled,
    }
    return data


def apply_settings(config: MnemonConfig, patch: SettingsPatch) -> None:
    """Set the live switches named in ``patch`` on ``config`` (validated assignment)."""
    values = patch.model_dump(exclude_none=True)
    if "idle_review_enabled" in values:
        config.idle_review.enabled = values.pop("idle_review_enabled")
    for key, value in values.items():
        setattr(config, key, value)


def _public(model: BaseModel, path: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in type(model).model_fields:
        out[name] = _value(getattr(model, name), (*path, name))
    return out


def _value(value: Any, path: tuple[str, ...]) -> Any:
    if isinstance(value, SecretStr):
        return CONFIGURED if value.get_secret_value() else None
    if isinstance(value, BaseModel):
        return _public(value, path)
    if isinstance(value, (list, tuple)):
        return [_value(v, path) for v in value]
    if isinstance(value, dict):
        return {str(k): _value(v, (*path, str(k))) for k, v in value.items()}
    if isinstance(value, str) and path in _URL_KEYS:
        return redact_url(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
