"""Settings over HTTP: the effective configuration without secrets, and the live switches.

Only the switches in :data:`LIVE_SETTINGS` change at run time; every other key is fixed at
startup and a PATCH naming it is refused with the key named. ``layers`` takes the
participation switches of each layer, nested as in the configuration::

    {"layers": {"runtime": {"participation": {"write": "off"}}, "documents": {"enabled": false}}}

A PATCH is stored in the database (:mod:`langgraph_mnemon.memory_layers.live_settings`): the
next operation on this host sees it, every other host on the database within a second or two,
and it survives restarts. A pinned turn keeps its view; its tools then refuse through the
kernel. ``write_enabled`` stays startup-only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SecretStr, model_validator
from pydantic.json_schema import SkipJsonSchema

from langgraph_mnemon.config import MnemonConfig, Participation
from langgraph_mnemon.storage.db import redact_url

from ._models import Body

LIVE_SETTINGS = (
    "recall_mode",
    "writeback_mode",
    "routing_guidance",
    "idle_review_enabled",
    "layers",
)
CONFIGURED = "configured"
_URL_KEYS = {("database_url",), ("embedding", "endpoint")}


class _Patch(Body):
    """A nested part of a settings PATCH: no unknown keys, at least one value."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    @model_validator(mode="after")
    def _not_empty(self) -> _Patch:
        if not self.model_dump(exclude_none=True):
            raise ValueError(f"name at least one of {', '.join(type(self).model_fields)}")
        return self


class ParticipationPatch(_Patch):
    """Channels of one layer to switch: ``off``, ``manual`` (explicit requests only) or
    ``automatic`` (models and the lifecycle too)."""

    recall: Participation | SkipJsonSchema[None] = None
    write: Participation | SkipJsonSchema[None] = None
    projection: Participation | SkipJsonSchema[None] = None
    maintenance: Participation | SkipJsonSchema[None] = None


class LayerPatch(_Patch):
    """One layer: ``enabled=false`` switches all four channels off (its data is kept)."""

    enabled: bool | SkipJsonSchema[None] = None
    participation: ParticipationPatch | SkipJsonSchema[None] = None


class LayersPatch(_Patch):
    """Participation switches per layer."""

    runtime: LayerPatch | SkipJsonSchema[None] = None
    documents: LayerPatch | SkipJsonSchema[None] = None
    memory_spaces: LayerPatch | SkipJsonSchema[None] = None


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
    layers: LayersPatch | SkipJsonSchema[None] = None

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
        "layers": _public(config.layers, ("layers",)),
    }
    return data


def settings_changes(patch: SettingsPatch) -> dict[str, Any]:
    """The live switches ``patch`` names, as dotted configuration keys for
    :meth:`~langgraph_mnemon.memory_layers.live_settings.LiveSettings.change`.

    Example:
        >>> settings_changes(SettingsPatch(idle_review_enabled=False, layers={"runtime": {
        ...     "participation": {"write": "off"}}}))
        {'idle_review.enabled': False, 'layers.runtime.participation.write': 'off'}
    """
    values = patch.model_dump(exclude_none=True)
    changes: dict[str, Any] = {}
    if "idle_review_enabled" in values:
        changes["idle_review.enabled"] = values.pop("idle_review_enabled")
    for layer, change in values.pop("layers", {}).items():
        if "enabled" in change:
            changes[f"layers.{layer}.enabled"] = change["enabled"]
        for channel, mode in change.get("participation", {}).items():
            changes[f"layers.{layer}.participation.{channel}"] = mode
    changes.update(values)
    return changes


def _public(model: BaseModel, path: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in type(model).model_fields:
        out[name] = _value(getattr(model, name), (*path, name))
    return out


def _value(value: Any, path: tuple[str, ...]) -> Any:
    if path == ("worker_model",) and value is not None and not isinstance(value, str):
        return f"<{type(value).__name__}>"  # a chat model object: never its fields (keys, URLs)
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
