"""Unit tests of the kernel (``memory_layers/kernel.py``): one decision for every operation.

Every mode × trigger × channel × layer, a disabled layer, ``write_enabled=false``, the General
strategy's capacity rule, the decision and its JSON form, the trigger context (nesting, errors,
threads, tasks) and live configuration changes. Plain Python: no storage is touched.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from langgraph_mnemon import Mnemon, MnemonConfig
from langgraph_mnemon.contracts import StepOutcome, outcome_of
from langgraph_mnemon.errors import (
    InvalidInputError,
    MnemonError,
    ParticipationError,
    ReadOnlyError,
)
from langgraph_mnemon.memory_layers.kernel import (
    CHANNELS,
    Decision,
    Kernel,
    acting,
    current_trigger,
)

LAYERS = ("runtime", "documents", "memory_spaces")
MODES = ("off", "manual", "automatic")
TRIGGERS = ("explicit", "automatic")
DECISION_KEYS = {"layer", "channel", "trigger", "mode", "admitted", "setting", "env"}


def _config(layer: str, channel: str, mode: str, **settings: Any) -> MnemonConfig:
    return MnemonConfig(layers={layer: {"participation": {channel: mode}}}, **settings)


def _expected(mode: str, trigger: str) -> bool:
    return mode == "automatic" or (mode == "manual" and trigger == "explicit")


# --- the participation rules -----------------------------------------------------------------


@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("layer", LAYERS)
def test_item1_mode_trigger_channel(layer: str, channel: str, mode: str, trigger: str) -> None:
    kernel = Kernel(_config(layer, channel, mode))
    admitted = _expected(mode, trigger)
    decision = kernel.decide(layer, channel, trigger)  # type: ignore[arg-type]
    assert decision.admitted is admitted
    assert (decision.layer, decision.channel, decision.trigger, decision.mode) == (
        layer,
        channel,
        trigger,
        mode,
    )
    assert kernel.admits(layer, channel, trigger) is admitted  # type: ignore[arg-type]
    with acting(trigger):  # type: ignore[arg-type]
        assert kernel.decide(layer, channel).trigger == trigger  # type: ignore[arg-type]
        if admitted:
            assert kernel.admit(layer, channel) == decision  # type: ignore[arg-type]
            assert decision.setting is None
            assert decision.env is None
            return
        with pytest.raises(ParticipationError) as caught:
            kernel.admit(layer, channel)  # type: ignore[arg-type]
    setting = f"layers.{layer}.participation.{channel}"
    env = f"MNEMON_LAYERS__{layer.upper()}__PARTICIPATION__{channel.upper()}"
    assert caught.value.code == ("channel-off" if mode == "off" else "channel-manual")
    assert caught.value.decision == {
        "layer": layer,
        "channel": channel,
        "trigger": trigger,
        "mode": mode,
        "admitted": False,
        "setting": setting,
        "env": env,
    }
    assert setting in str(caught.value)
    assert env in str(caught.value)
    # Only the switched channel changes; the other layers and channels stay automatic.
    for other in CHANNELS:
        if other != channel:
            assert kernel.admits(layer, other, "automatic")  # type: ignore[arg-type]
    for other_layer in LAYERS:
        if other_layer != layer:
            assert kernel.admits(other_layer, channel, "automatic")  # type: ignore[arg-type]


@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("layer", LAYERS)
def test_item1_disabled_layer_has_every_channel_off(layer: str, trigger: str) -> None:
    # enabled=false wins over channel modes that would admit the trigger
    kernel = Kernel(
        MnemonConfig(layers={layer: {"enabled": False, "participation": {"write": "automatic"}}})
    )
    for channel in CHANNELS:
        assert kernel.mode(layer, channel) == "disabled"  # type: ignore[arg-type]
        with pytest.raises(ParticipationError) as caught:
            kernel.admit(layer, channel, trigger)  # type: ignore[arg-type]
        assert caught.value.code == "layer-disabled"
        decision = caught.value.decision
        assert decision is not None
        assert decision["mode"] == "disabled"
        assert decision["setting"] == f"layers.{layer}.enabled"
        assert decision["env"] == f"MNEMON_LAYERS__{layer.upper()}__ENABLED"
        assert decision["env"] in str(caught.value)
        assert "kept" in str(caught.value)  # disabling never hides or deletes data


@pytest.mark.parametrize("layer", [*LAYERS, "mnemos"])
def test_item1_write_enabled_false_refuses_every_write_only(layer: str) -> None:
    kernel = Kernel(MnemonConfig(write_enabled=False))
    assert kernel.write_enabled is False
    for trigger in TRIGGERS:
        for channel in ("write", "maintenance"):
            with pytest.raises(ReadOnlyError) as caught:
                kernel.admit(layer, channel, trigger)  # type: ignore[arg-type]
            assert caught.value.code == "read-only"
            assert caught.value.decision is not None
            assert caught.value.decision["mode"] == "read-only"
            assert caught.value.decision["setting"] == "write_enabled"
            assert caught.value.decision["env"] == "MNEMON_WRITE_ENABLED"
            assert caught.value.to_dict()["decision"] == caught.value.decision
        for channel in ("recall", "projection"):  # reads are not writes
            assert kernel.admits(layer, channel, trigger)  # type: ignore[arg-type]


def test_item1_read_only_comes_before_disabled_and_manual() -> None:
    cfg = MnemonConfig(
        write_enabled=False,
        layers={"runtime": {"enabled": False}, "documents": {"participation": {"write": "off"}}},
    )
    kernel = Kernel(cfg)
    assert kernel.decide("runtime", "write").mode == "read-only"
    assert kernel.decide("documents", "write").mode == "read-only"
    assert kernel.decide("runtime", "recall").mode == "disabled"  # a read: the layer rule


def test_item1_write_enabled_override_and_standalone() -> None:
    cfg = MnemonConfig(write_enabled=True)
    assert Kernel(cfg, write_enabled=False).admits("runtime", "write") is False
    assert Kernel(MnemonConfig(write_enabled=False), write_enabled=True).admits("runtime", "write")
    standalone = Kernel.standalone()
    for layer in LAYERS:
        for channel in CHANNELS:
            assert standalone.mode(layer, channel) == "automatic"  # type: ignore[arg-type]
            assert standalone.admits(layer, channel, "automatic")  # type: ignore[arg-type]
    with pytest.raises(ReadOnlyError):
        Kernel.standalone(write_enabled=False).admit("documents", "write")


def test_item1_require_writes_outside_the_layers() -> None:
    Kernel(MnemonConfig()).require_writes("settings")
    with pytest.raises(ReadOnlyError, match="settings"):
        Kernel(MnemonConfig(write_enabled=False)).require_writes("settings")


@pytest.mark.parametrize("trigger", TRIGGERS)
def test_item1_general_strategy_has_no_capacity_maintenance(trigger: str) -> None:
    kernel = Kernel(MnemonConfig(strategy="general"))
    for layer in ("runtime", "documents"):
        with pytest.raises(ParticipationError) as caught:
            kernel.admit(layer, "maintenance", trigger)  # type: ignore[arg-type]
        assert caught.value.code == "strategy-refused"
        assert caught.value.decision is not None
        assert caught.value.decision["setting"] == "strategy"
        assert caught.value.decision["env"] == "MNEMON_STRATEGY"
        assert "layered" in str(caught.value)
        for channel in ("recall", "write", "projection"):
            assert kernel.admits(layer, channel, trigger)  # type: ignore[arg-type]
    # the Memory Space catalog is not capacity maintenance: General keeps it
    assert kernel.admits("memory_spaces", "maintenance", trigger)  # type: ignore[arg-type]
    assert Kernel(MnemonConfig(strategy="layered")).admits("runtime", "maintenance", trigger)  # type: ignore[arg-type]


def test_item1_mnemos_has_only_write_enabled() -> None:
    kernel = Kernel(MnemonConfig(layers={"runtime": {"enabled": False}}))
    for channel in CHANNELS:
        assert kernel.mode("mnemos", channel) == "automatic"  # type: ignore[arg-type]
        assert kernel.admits("mnemos", channel, "automatic")  # type: ignore[arg-type]
    with pytest.raises(ReadOnlyError):
        Kernel(MnemonConfig(write_enabled=False)).admit("mnemos", "write", "automatic")


def test_item1_model_admits_is_the_automatic_trigger() -> None:
    manual = Kernel(_config("memory_spaces", "recall", "manual"))
    with acting("explicit"):  # not the current trigger: a model is always automatic
        assert manual.model_admits("memory_spaces", "recall") is False
    assert manual.admits("memory_spaces", "recall", "explicit") is True
    assert Kernel(MnemonConfig()).model_admits("memory_spaces", "recall") is True
    assert Kernel(MnemonConfig(write_enabled=False)).model_admits("runtime", "write") is False


def test_item1_unknown_layer_channel_or_trigger() -> None:
    kernel = Kernel(MnemonConfig())
    with pytest.raises(InvalidInputError, match="layer must be one of"):
        kernel.admit("spaces", "write")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="channel must be one of"):
        kernel.admit("runtime", "search")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="trigger must be one of"):
        kernel.admit("runtime", "write", "model")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="trigger must be one of"), acting("model"):  # type: ignore[arg-type]
        pass
    assert current_trigger() == "explicit"


# --- the decision and the error ----------------------------------------------------------------


def test_item1_decision_to_dict_and_error_json() -> None:
    kernel = Kernel(_config("documents", "write", "manual"))
    decision = kernel.decide("documents", "write", "automatic")
    assert isinstance(decision, Decision)
    assert set(decision.to_dict()) == DECISION_KEYS
    with pytest.raises(dataclass_frozen_error()):
        decision.mode = "automatic"  # type: ignore[misc]
    with pytest.raises(ParticipationError) as caught:
        kernel.admit("documents", "write", "automatic")
    error = caught.value
    assert isinstance(error, MnemonError)
    body = error.to_dict()
    assert set(body) == {"error", "message", "decision"}
    assert body["error"] == "channel-manual"
    assert body["decision"] == decision.to_dict()
    assert body["decision"] is not error.decision  # a copy: callers cannot change the error
    assert "explicit" in body["message"]
    assert "MNEMON_LAYERS__DOCUMENTS__PARTICIPATION__WRITE" in body["message"]
    admitted = kernel.decide("documents", "write", "explicit").to_dict()
    assert admitted["admitted"] is True
    assert admitted["setting"] is None


def dataclass_frozen_error() -> type[Exception]:
    import dataclasses

    return dataclasses.FrozenInstanceError


def test_item1_the_env_named_in_a_refusal_admits_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMON_LAYERS__RUNTIME__PARTICIPATION__WRITE", "off")
    refused = Kernel(MnemonConfig(root=tmp_path))
    with pytest.raises(ParticipationError) as caught:
        refused.admit("runtime", "write")
    env = caught.value.decision["env"]  # type: ignore[index]
    assert env == "MNEMON_LAYERS__RUNTIME__PARTICIPATION__WRITE"
    monkeypatch.setenv(env, "automatic")
    assert Kernel(MnemonConfig(root=tmp_path)).admits("runtime", "write", "automatic")
    monkeypatch.setenv("MNEMON_LAYERS__DOCUMENTS__ENABLED", "false")
    with pytest.raises(ParticipationError) as disabled:
        Kernel(MnemonConfig(root=tmp_path)).admit("documents", "recall")
    env = disabled.value.decision["env"]  # type: ignore[index]
    monkeypatch.setenv(env, "true")
    assert Kernel(MnemonConfig(root=tmp_path)).admits("documents", "recall")


# --- the trigger context -------------------------------------------------------------------------


def test_item1_acting_nests_and_restores() -> None:
    assert current_trigger() == "explicit"
    with acting("automatic"):
        assert current_trigger() == "automatic"
        with acting("explicit"):
            assert current_trigger() == "explicit"
        assert current_trigger() == "automatic"
        with pytest.raises(RuntimeError), acting("explicit"):
            raise RuntimeError("boom")
        assert current_trigger() == "automatic"  # restored after the error
    assert current_trigger() == "explicit"


def test_item1_a_new_thread_starts_explicit() -> None:
    seen: dict[str, str] = {}

    def record(name: str) -> None:
        seen[name] = current_trigger()

    with acting("automatic"):
        thread = threading.Thread(target=record, args=("plain",))
        thread.start()
        thread.join()
        context = contextvars.copy_context()  # what LangGraph hands its node and tool tasks
    copied = threading.Thread(target=context.run, args=(record, "copied"))
    copied.start()
    copied.join()
    assert seen == {"plain": "explicit", "copied": "automatic"}


def test_item1_asyncio_tasks_and_to_thread_inherit() -> None:
    async def main() -> tuple[str, str, str]:
        with acting("automatic"):
            task = asyncio.create_task(_trigger_later())
            in_thread = await asyncio.to_thread(current_trigger)
        outside = await asyncio.create_task(_trigger_later())
        return await task, in_thread, outside

    assert asyncio.run(main()) == ("automatic", "automatic", "explicit")


async def _trigger_later() -> str:
    await asyncio.sleep(0)
    return current_trigger()


def test_item1_a_refusal_uses_the_current_trigger() -> None:
    kernel = Kernel(_config("memory_spaces", "write", "manual"))
    kernel.admit("memory_spaces", "write")  # explicit by default
    with acting("automatic"), pytest.raises(ParticipationError) as caught:
        kernel.admit("memory_spaces", "write")
    assert caught.value.decision["trigger"] == "automatic"  # type: ignore[index]
    with acting("automatic"):  # an explicit trigger passed in wins over the context
        assert kernel.admits("memory_spaces", "write", "explicit")


# --- live configuration --------------------------------------------------------------------------


def test_item1_live_config_changes_apply_to_the_next_call() -> None:
    cfg = MnemonConfig()
    kernel = Kernel(cfg)
    assert kernel.admits("runtime", "write", "automatic")
    cfg.layers.runtime.participation.write = "manual"
    assert not kernel.admits("runtime", "write", "automatic")
    assert kernel.admits("runtime", "write", "explicit")
    cfg.layers.runtime.participation.write = "off"
    assert kernel.decide("runtime", "write", "explicit").mode == "off"
    cfg.layers.runtime.enabled = False
    assert kernel.decide("runtime", "write", "explicit").mode == "disabled"
    cfg.layers.runtime.enabled = True
    cfg.layers.runtime.participation.write = "automatic"
    assert kernel.admits("runtime", "write", "automatic")
    cfg.strategy = "general"
    assert kernel.decide("documents", "maintenance").mode == "strategy"
    with pytest.raises(ValidationError):  # validate_assignment: no mode outside the three
        cfg.layers.runtime.participation.write = "sometimes"  # type: ignore[assignment]
    assert kernel.mode("runtime", "write") == "automatic"


def test_item1_layers_hold_the_hosts_kernel(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", chroma={"enabled": False}, embedding={"enabled": False})
    try:
        assert mem.kernel.config is mem.config
        for service in (mem.runtime, mem.documents, mem.spaces, mem.mnemos):
            assert service.kernel is mem.kernel
        for layer in (mem.runtime, mem.documents):
            assert layer.write_enabled is True  # read from the kernel
        assert mem.spaces.kernel.write_enabled is True
        mem.config.layers.documents.participation.recall = "off"
        assert not mem.documents.kernel.admits("documents", "recall", "explicit")
    finally:
        mem.close()


def test_item1_a_read_only_host_kernel(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path / "root", write_enabled=False) as mem:
        assert mem.kernel.write_enabled is False
        assert mem.runtime.write_enabled is False
        assert mem.documents.write_enabled is False
        with pytest.raises(ReadOnlyError):
            mem.kernel.admit("runtime", "write")
    assert not (tmp_path / "root").exists()  # read-only creates nothing


# --- multi-step outcomes (contracts, item 2) -----------------------------------------------------


def test_item2_outcome_of_steps() -> None:
    ok = StepOutcome(target="space-a", status="committed", ids=("m1",))
    failed = StepOutcome(target="space-b", status="failed", message="provider down")
    skipped = StepOutcome(target="runtime/archived", status="skipped")
    assert outcome_of([ok, ok]) == "succeeded"
    assert outcome_of([ok, failed]) == "partial"
    assert outcome_of([failed, skipped]) == "failed"
    assert outcome_of([]) == "failed"
    assert outcome_of([ok], cancelled=True) == "cancelled"
