"""Issue 13, item 5: the six configuration keys that nothing read are wired or removed.

* removed: ``runtime.maintenance_max_tokens`` (no maintenance call has a token budget of its
  own), ``idle_review.provider`` and ``idle_review.fallback`` (there is one review runner):
  naming them is the usual "is not a known setting" error, from arguments and from the
  environment;
* wired: ``idle_review.max_tokens`` bounds every reply of the review model;
  ``persistence_strategy.rules.preference`` orders the eligible providers of a new Memory
  Space and ``persistence_strategy.prompt`` is the worker model's placement guidance.

Real components: storage roots, a real Chroma server as the shared (remote) provider, real
create_agent runs with deterministic fake models.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import Field

from langgraph_mnemon import Mnemon, MnemonConfig
from langgraph_mnemon.config import PersistenceStrategyConfig
from langgraph_mnemon.errors import InvalidInputError, NotFoundError
from langgraph_mnemon.memory_layers.activity import ReviewGate, ReviewSettings, TurnActivity
from langgraph_mnemon.memory_layers.spaces import PlacementRequest, place
from langgraph_mnemon.reviews import BackgroundReviews
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

QUIET = {"embedding": {"enabled": False}}
# The review model's own calls are counted: the learning pass after the review (which binds
# learning.max_tokens, tests/test_learning.py) is switched off.
NO_LEARNING = {**QUIET, "learning": {"enabled": False}}


# --- removed keys ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "key", "env"),
    [
        ({"runtime": {"maintenance_max_tokens": 8192}}, "runtime.maintenance_max_tokens", None),
        ({"idle_review": {"provider": "spawn"}}, "idle_review.provider", None),
        ({"idle_review": {"fallback": "skip"}}, "idle_review.fallback", None),
        ({}, "runtime.maintenance_max_tokens", "MNEMON_RUNTIME__MAINTENANCE_MAX_TOKENS"),
        ({}, "idle_review.provider", "MNEMON_IDLE_REVIEW__PROVIDER"),
        ({}, "idle_review.fallback", "MNEMON_IDLE_REVIEW__FALLBACK"),
    ],
)
def test_item5_removed_keys_are_unknown_settings(
    monkeypatch: pytest.MonkeyPatch, settings: dict[str, Any], key: str, env: str | None
) -> None:
    if env is not None:
        monkeypatch.setenv(env, "skip" if "FALLBACK" in env else "1")
    with pytest.raises(InvalidInputError) as refused:
        MnemonConfig(**settings)
    assert f"{key}" in str(refused.value)
    assert "is not a known setting" in str(refused.value)
    assert refused.value.code == "invalid-config"


def test_item5_kept_keys_still_validate_their_ranges() -> None:
    assert MnemonConfig(idle_review={"max_tokens": 256}).idle_review.max_tokens == 256
    with pytest.raises(InvalidInputError, match=r"idle_review.max_tokens.*128\.\.131072"):
        MnemonConfig(idle_review={"max_tokens": 64})
    with pytest.raises(InvalidInputError, match=r"persistence_strategy\.prompt"):
        MnemonConfig(persistence_strategy={"prompt": "x" * 4001})
    with pytest.raises(InvalidInputError, match=r"persistence_strategy\.rules\.preference"):
        MnemonConfig(persistence_strategy={"rules": {"preference": "nearest"}})


# --- idle_review.max_tokens ----------------------------------------------------------------------


class _Recording(ScriptedChatModel):
    """A scripted chat model without a ``max_tokens`` setting, recording each call's keywords."""

    seen: list[dict[str, Any]] = Field(default_factory=list)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: Any = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Any:
        self.seen.append(dict(kwargs))
        return super()._generate(messages, stop, run_manager, **kwargs)


class _BoundedModel(_Recording):
    """The same with a ``max_tokens`` setting, as OpenAI's and Anthropic's chat models have."""

    max_tokens: int | None = None


def _review_once(mem: Mnemon, model: ScriptedChatModel) -> Any:
    gate = ReviewGate(ReviewSettings(delay_seconds=0.05, min_interval_seconds=0))
    reviews = mem._reviews = BackgroundReviews(mem, gate, model)  # as the host builds it
    text = "Please remember that releases are cut on Tuesdays. " + "Context. " * 20
    messages = [HumanMessage(text), AIMessage("Noted.")]
    busy = TurnActivity(user_text=text, tool_calls=("shell", "read", "grep"))
    assert reviews.turn_finished("t", messages, busy) is not None
    deadline = time.monotonic() + 10
    while not reviews.outcomes and time.monotonic() < deadline:
        time.sleep(0.02)
    assert reviews.outcomes, "the review did not run"
    return reviews.outcomes[0][1]


def _review_script() -> list[Any]:
    return [
        tool_call(
            "mnemon_runtime_memory",
            {"action": "add", "target": "memory", "content": "Releases are cut on Tuesdays."},
            "r1",
        ),
        tool_call("mnemon_review_result", {"action": "changed", "summary": "rule"}, "r2"),
    ]


def test_item5_idle_review_max_tokens_bounds_every_review_reply(tmp_path: Path) -> None:
    mem = Mnemon.open(
        tmp_path / "root", workspace=tmp_path, idle_review={"max_tokens": 321}, **NO_LEARNING
    )
    try:
        model = _BoundedModel(responses=_review_script())
        outcome = _review_once(mem, model)
        assert outcome.action == "changed"
        assert [call.get("max_tokens") for call in model.seen] == [321, 321]
    finally:
        mem.close()


def test_item5_a_model_without_max_tokens_gets_no_unknown_keyword(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path, **NO_LEARNING)
    try:
        model = _Recording(responses=_review_script())
        assert "max_tokens" not in type(model).model_fields
        assert _review_once(mem, model).action == "changed"
        assert len(model.seen) == 2
        assert all("max_tokens" not in kw for kw in model.seen)
    finally:
        mem.close()


# --- persistence_strategy.rules.preference and .prompt -----------------------------------------


@pytest.fixture
def two_providers(tmp_path: Path, chroma_server: tuple[str, int]) -> Any:
    """A host with the native (local) provider and a real Chroma server (shared)."""
    host, port = chroma_server

    def open_host(**strategy: Any) -> Mnemon:
        return Mnemon.open(
            tmp_path / "root",
            workspace=tmp_path,
            chroma={"host": host, "port": port},
            persistence_strategy={
                "mode": "automatic",
                **strategy,
                "rules": {
                    "allowed_provider_ids": ["mnemos", "chroma"],
                    **strategy.get("rules", {}),
                },
            },
            **QUIET,
        )

    return open_host


def _descriptors(mem: Mnemon) -> dict[str, Any]:
    return {pid: p.descriptor for pid, p in mem.spaces.providers.items()}


@pytest.mark.parametrize(
    ("rules", "provider_id", "expected"),
    [
        ({"preference": "local-first"}, "chroma", "mnemos"),
        ({"preference": "shared-first"}, "mnemos", "chroma"),
        ({"preference": "balanced"}, "chroma", "chroma"),
        ({"preference": "balanced"}, "mnemos", "mnemos"),
        ({"preference": "shared-first", "data_boundary": "local-only"}, "mnemos", "mnemos"),
        ({"preference": "local-first", "required_capabilities": ["graph"]}, "mnemos", "mnemos"),
    ],
)
def test_item5_preference_orders_the_eligible_providers(
    two_providers: Any, rules: dict[str, Any], provider_id: str, expected: str
) -> None:
    mem = two_providers(provider_id=provider_id, rules=rules)
    try:
        descriptors = _descriptors(mem)
        assert descriptors["chroma"].local is False  # a server: shared
        assert descriptors["mnemos"].local is True
        placement = place(mem.config.persistence_strategy, descriptors)
        assert placement.provider_id == expected
        assert placement.mode == "automatic"
    finally:
        mem.close()


def test_item5_a_requested_provider_is_validated_not_replaced(two_providers: Any) -> None:
    mem = two_providers(rules={"preference": "local-first"})
    try:
        strategy, descriptors = mem.config.persistence_strategy, _descriptors(mem)
        assert place(strategy, descriptors, requested="chroma").provider_id == "chroma"
        with pytest.raises(InvalidInputError, match="not allowed"):
            place(strategy, descriptors, requested="qdrant")
        local_only = strategy.model_copy(
            update={"rules": strategy.rules.model_copy(update={"data_boundary": "local-only"})}
        )
        with pytest.raises(InvalidInputError, match="local-only"):
            place(local_only, descriptors, requested="chroma")
        manual = PersistenceStrategyConfig(mode="manual", provider_id="mnemos")
        with pytest.raises(InvalidInputError, match="manual"):
            place(manual, descriptors, requested="chroma")
        unregistered = strategy.model_copy(
            update={"rules": strategy.rules.model_copy(update={"allowed_provider_ids": ["gone"]})}
        )
        with pytest.raises(NotFoundError):
            place(unregistered, descriptors, requested="gone")
        with pytest.raises(InvalidInputError, match="no registered provider"):
            place(unregistered, descriptors)
    finally:
        mem.close()


def test_item5_the_prompt_goes_to_the_worker_model_choosing_among_providers(
    two_providers: Any,
) -> None:
    guidance = "Team knowledge belongs on the shared server; keep personal notes local."
    mem = two_providers(prompt=guidance, rules={"preference": "local-first"})
    try:
        strategy, descriptors = mem.config.persistence_strategy, _descriptors(mem)
        seen: list[PlacementRequest] = []

        def chooser(request: PlacementRequest) -> str | None:
            seen.append(request)
            return "chroma"

        chosen = place(strategy, descriptors, purpose="Team runbooks", chooser=chooser)
        assert chosen.provider_id == "chroma"  # the model's choice beats local-first
        assert chosen.reason == "chosen by the worker model"
        request = seen[0]
        assert (request.prompt, request.preference, request.purpose) == (
            guidance,
            "local-first",
            "Team runbooks",
        )
        assert [(c.id, c.local) for c in request.candidates] == [
            ("mnemos", True),
            ("chroma", False),
        ]
        invalid = place(strategy, descriptors, chooser=lambda _: "qdrant")
        assert invalid.provider_id == "mnemos"  # an invalid choice: the preference decides
        assert place(strategy, descriptors, chooser=lambda _: None).provider_id == "mnemos"
    finally:
        mem.close()


def _run_agent(mem: Mnemon, calls: list[Any]) -> list[dict[str, Any]]:
    model = ScriptedChatModel(responses=[*calls, "Done."])
    agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
    out = agent.invoke({"messages": [HumanMessage("please")]}, {"configurable": {"thread_id": "t"}})
    return [json.loads(m.content) for m in out["messages"] if m.type == "tool"]


def test_item5_placement_through_the_model_tool_uses_prompt_and_preference(
    two_providers: Any, chroma_server: tuple[str, int]
) -> None:
    guidance = "Put shared team knowledge on the Chroma server."
    mem = two_providers(prompt=guidance, rules={"preference": "local-first"})
    try:
        # The worker model answers the placement question; the agent model calls the tool.
        worker = ScriptedChatModel(
            responses=[
                tool_call(
                    "mnemon_placement_result", {"provider_id": "chroma", "reason": "team"}, "p1"
                )
            ]
        )
        mem._worker_model = worker
        (created,) = _run_agent(
            mem,
            [
                tool_call(
                    "mnemon_memory_body_create",
                    {"name": "Team", "description": "Team runbooks."},
                    "c1",
                )
            ],
        )
        assert created["providerChoice"]["providerId"] == "chroma", created
        assert mem.spaces.get_space(created["memoryBody"]["id"]).provider_id == "chroma"
        brief = json.loads(worker.calls[0][-1].content)
        assert brief["guidance"] == guidance
        assert brief["preference"] == "local-first"
        assert {c["id"]: c["data"] for c in brief["candidates"]} == {
            "mnemos": "local",
            "chroma": "shared",
        }
        _host, port = chroma_server
        assert str(port) not in worker.calls[0][-1].content  # no endpoint reaches the model
        mem._worker_model = None  # no worker model: deterministic, local-first
        (local,) = _run_agent(
            mem,
            [
                tool_call(
                    "mnemon_memory_body_create", {"name": "Notes", "description": "Mine."}, "c2"
                )
            ],
        )
        assert local["providerChoice"]["providerId"] == "mnemos", local
    finally:
        mem.close()
