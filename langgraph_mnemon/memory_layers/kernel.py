"""The kernel: one place that decides whether an operation may run, before any I/O.

Every operation of every layer names its **layer**, its **channel** and its **trigger**, and
asks here first:

* layers: ``runtime`` (USER.md / MEMORY.md), ``documents``, ``memory_spaces`` and ``mnemos``
  (task memory, which has no participation switches, only ``write_enabled``);
* channels: ``recall`` (every search), ``write`` (add / replace / remove, create / update /
  archive, remember / link / forget), ``projection`` (the Wake) and ``maintenance`` (capacity
  maintenance, cold archive, Memory Space catalog changes);
* triggers: ``explicit`` (the Python API a host application calls, the CLI, the control plane
  a person uses) or ``automatic`` (a model tool, the turn lifecycle, a worker graph, idle
  review, archival and compaction). The trigger is who *asked*: a worker graph started by
  ``mem.remember(...)`` runs explicit, the same graph started by the model's
  ``mnemon_remember`` runs automatic. It travels in a context variable, so whatever an
  operation sets off inherits it; :func:`acting` sets it for a block.

The rules, in order: ``write_enabled=false`` refuses every write (:class:`ReadOnlyError`), here
and only here; a layer with ``enabled=false`` has all four channels off; ``off`` refuses every
trigger, ``manual`` admits explicit triggers only, ``automatic`` admits both; under the General
strategy Runtime and Documents have no capacity maintenance. A refusal is a
:class:`ParticipationError` naming the setting (and its environment variable) that would allow
the operation. Management reads (list, get, browse, status) never ask: switching a layer off
never hides its data.

The kernel reads the live configuration at every call, so a switch changed at run time (the
control plane's ``PATCH /settings``) applies to the next operation. A host's kernel first
refreshes the live settings stored in the database (:mod:`.live_settings`: a throttled
revision check), so a switch changed through another host applies too.

Example:
    >>> kernel = Kernel(MnemonConfig())
    >>> kernel.admit("runtime", "write")            # explicit by default
    Decision(layer='runtime', channel='write', trigger='explicit', mode='automatic', ...)
    >>> with acting("automatic"):
    ...     kernel.admits("documents", "recall")
    True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, get_args

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.errors import InvalidInputError, ParticipationError, ReadOnlyError

__all__ = [
    "CHANNELS",
    "LAYERS",
    "TRIGGERS",
    "Channel",
    "Decision",
    "Kernel",
    "Layer",
    "Trigger",
    "acting",
    "current_trigger",
]

Layer = Literal["runtime", "documents", "memory_spaces", "mnemos"]
Channel = Literal["recall", "write", "projection", "maintenance"]
Trigger = Literal["explicit", "automatic"]
LAYERS: tuple[str, ...] = get_args(Layer)
CHANNELS: tuple[str, ...] = get_args(Channel)
TRIGGERS: tuple[str, ...] = get_args(Trigger)
_TRIGGERS = TRIGGERS

# Channels that change stored data: they all need write_enabled.
_MUTATING = frozenset({"write", "maintenance"})
# Layers whose capacity maintenance exists only under the Layered strategy.
_CAPACITY_LAYERS = frozenset({"runtime", "documents"})
_LAYER_NAMES = {
    "runtime": "Runtime Memory",
    "documents": "Documents",
    "memory_spaces": "Memory Spaces",
    "mnemos": "task memory",
}

_TRIGGER: ContextVar[Trigger] = ContextVar("mnemon_trigger", default="explicit")


def current_trigger() -> Trigger:
    """The trigger of the running operation (``explicit`` unless :func:`acting` says otherwise)."""
    return _TRIGGER.get()


@contextmanager
def acting(trigger: Trigger) -> Iterator[None]:
    """Run the block under ``trigger``; everything it sets off inherits it.

    Model tools, the turn lifecycle and idle review run under ``acting("automatic")``. A new
    thread starts explicit: a background job sets its own trigger.
    """
    if trigger not in _TRIGGERS:
        raise InvalidInputError(f"trigger must be one of {', '.join(_TRIGGERS)} (got {trigger!r})")
    token = _TRIGGER.set(trigger)
    try:
        yield
    finally:
        _TRIGGER.reset(token)


@dataclass(frozen=True)
class Decision:
    """What the kernel decided for one operation."""

    layer: Layer
    channel: Channel
    trigger: Trigger
    mode: str  # off | manual | automatic | disabled | read-only | strategy
    admitted: bool
    setting: str | None = None  # the setting that would admit it, when refused
    env: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (error bodies, tool results, receipts)."""
        return {
            "layer": self.layer,
            "channel": self.channel,
            "trigger": self.trigger,
            "mode": self.mode,
            "admitted": self.admitted,
            "setting": self.setting,
            "env": self.env,
        }


def _env(setting: str) -> str:
    return "MNEMON_" + setting.replace(".", "__").upper()


class Kernel:
    """Participation, ``write_enabled`` and strategy rules for every operation.

    Args:
        config: The live configuration (read at every call). ``None`` = defaults.
        write_enabled: Overrides ``config.write_enabled`` (layers built on their own).
        refresh: Called before the configuration is read (the host's live settings refresh:
            cheap, throttled, never raising).

    Example:
        >>> manual = {"runtime": {"participation": {"write": "manual"}}}
        >>> kernel = Kernel(MnemonConfig(layers=manual))
        >>> with acting("automatic"):
        ...     kernel.admit("runtime", "write")
        Traceback (most recent call last):
        ParticipationError: Runtime Memory write is manual: ...
    """

    def __init__(
        self,
        config: MnemonConfig | None = None,
        *,
        write_enabled: bool | None = None,
        refresh: Callable[[], object] | None = None,
    ) -> None:
        self._config = config if config is not None else MnemonConfig()
        self._write_enabled = write_enabled
        self._refresh = refresh

    @classmethod
    def standalone(cls, *, write_enabled: bool = True) -> Kernel:
        """A kernel for a layer built without a host: every channel automatic."""
        return cls(None, write_enabled=write_enabled)

    @property
    def config(self) -> MnemonConfig:
        """The live configuration, with the stored live settings applied."""
        self.refresh()
        return self._config

    def refresh(self) -> None:
        """Bring the live settings up to date (a no-op for a kernel without a host)."""
        if self._refresh is not None:
            self._refresh()

    @property
    def write_enabled(self) -> bool:
        """Whether anything may be written at all (side writes such as repairs ask too)."""
        if self._write_enabled is not None:
            return self._write_enabled
        return bool(self._config.write_enabled)

    def mode(self, layer: Layer, channel: Channel) -> str:
        """The configured mode: ``off``, ``manual``, ``automatic`` or ``disabled``."""
        _check(layer, channel)
        self.refresh()
        if layer == "mnemos":
            return "automatic"
        section = getattr(self._config.layers, layer)
        if not section.enabled:
            return "disabled"
        return str(getattr(section.participation, channel))

    def decide(self, layer: Layer, channel: Channel, trigger: Trigger | None = None) -> Decision:
        """The decision for ``layer`` / ``channel`` under ``trigger`` (default: the current one)."""
        who: Trigger = trigger or current_trigger()
        if who not in _TRIGGERS:
            raise InvalidInputError(f"trigger must be one of {', '.join(_TRIGGERS)} (got {who!r})")
        _check(layer, channel)
        if channel in _MUTATING and not self.write_enabled:  # start-up only: no refresh needed
            return Decision(
                layer, channel, who, "read-only", False, "write_enabled", _env("write_enabled")
            )
        mode = self.mode(layer, channel)
        if (
            channel == "maintenance"
            and layer in _CAPACITY_LAYERS
            and self._config.strategy != "layered"
        ):
            return Decision(layer, channel, who, "strategy", False, "strategy", _env("strategy"))
        if mode == "disabled":
            setting = f"layers.{layer}.enabled"
            return Decision(layer, channel, who, mode, False, setting, _env(setting))
        admitted = mode == "automatic" or (mode == "manual" and who == "explicit")
        setting = None if admitted else f"layers.{layer}.participation.{channel}"
        return Decision(
            layer, channel, who, mode, admitted, setting, _env(setting) if setting else None
        )

    def admits(self, layer: Layer, channel: Channel, trigger: Trigger | None = None) -> bool:
        """Whether the operation would be admitted (no error)."""
        return self.decide(layer, channel, trigger).admitted

    def model_admits(self, layer: Layer, channel: Channel) -> bool:
        """Whether a model (an automatic trigger) can ever use this channel now: tools and
        Wake offers for channels it cannot use are not shown."""
        return self.admits(layer, channel, "automatic")

    def require_writes(self, what: str) -> None:
        """Refuse a write outside the four layers (settings, checkpoints) while
        ``write_enabled`` is false.

        Raises:
            ReadOnlyError: writes are switched off.
        """
        if not self.write_enabled:
            raise ReadOnlyError.writes_disabled(what)

    def admit(self, layer: Layer, channel: Channel, trigger: Trigger | None = None) -> Decision:
        """Admit the operation or raise, before any I/O.

        Raises:
            ReadOnlyError: a write while ``write_enabled`` is false.
            ParticipationError: the layer is disabled, the channel is off, or it is manual and
                the trigger automatic; under the General strategy, capacity maintenance.
        """
        decision = self.decide(layer, channel, trigger)
        if not decision.admitted:
            raise refusal(decision)
        return decision


def refusal(decision: Decision) -> ReadOnlyError | ParticipationError:
    """The typed error for a refused decision; its message says which setting would allow it."""
    name = _LAYER_NAMES[decision.layer]
    if decision.mode == "read-only":
        error = ReadOnlyError.writes_disabled(name)
        error.decision = decision.to_dict()
        return error
    what = f"{name} {decision.channel}"
    if decision.mode == "strategy":
        message = (
            f"{what} is not part of the General strategy; set strategy=layered "
            f"(env {decision.env}) for capacity maintenance"
        )
        code = "strategy-refused"
    elif decision.mode == "disabled":
        message = (
            f"{name} is disabled; set {decision.setting}=true (env {decision.env}) to let it "
            "take part (its data is kept and still listed)"
        )
        code = "layer-disabled"
    elif decision.mode == "off":
        message = (
            f"{what} is off; set {decision.setting} to manual or automatic (env {decision.env}) "
            "to allow it"
        )
        code = "channel-off"
    else:
        message = (
            f"{what} is manual: only explicit requests (Python API, CLI, control plane) may use "
            "it, not automatic ones (a model tool, the turn lifecycle, a worker); set "
            f"{decision.setting}=automatic (env {decision.env}) to allow it"
        )
        code = "channel-manual"
    return ParticipationError(message, code=code, decision=decision.to_dict())


def _check(layer: str, channel: str) -> None:
    if layer not in LAYERS:
        raise InvalidInputError(f"layer must be one of {', '.join(LAYERS)} (got {layer!r})")
    if channel not in CHANNELS:
        raise InvalidInputError(f"channel must be one of {', '.join(CHANNELS)} (got {channel!r})")
