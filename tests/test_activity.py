"""Activity scoring, dirty admission and the idle-review gate on a controllable clock."""

from __future__ import annotations

import pytest

from langgraph_mnemon import MnemonConfig
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.activity import (
    ReviewGate,
    ReviewSettings,
    ThreadActivity,
    TurnActivity,
    activity_score,
    is_explicit_save,
    is_no_memory,
)


@pytest.mark.parametrize(
    ("chars", "turns", "results", "unique", "score"),
    [
        (0, 0, 0, 0, 0),
        (49, 1, 4, 2, 1),
        (50, 1, 5, 3, 1 + 1 + 1 + 1),
        (149, 2, 9, 4, 2 + 2 + 1 + 2),
        (10_000, 3, 100, 50, 3 + 3 + 2 + 2),
    ],
)
def test_score_formula(chars: int, turns: int, results: int, unique: int, score: int) -> None:
    assert activity_score(chars, turns, results, unique) == score


def test_score_rejects_bad_input() -> None:
    with pytest.raises(InvalidInputError, match="turns must be a non-negative integer"):
        activity_score(0, -1, 0, 0)
    with pytest.raises(InvalidInputError):
        activity_score(True, 0, 0, 0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "Please remember that I use fish shell.",
        "Save this preference to memory: tabs.",
        "record the deploy steps in long-term memory",  # 32 characters between the words
        "请记住我喜欢简洁的回答",
        "把这个记下来",
        "保存到记忆里",
        "写入记忆：部署走 CI",
        "这个要长期记录",
    ],
)
def test_explicit_save(text: str) -> None:
    assert is_explicit_save(text)


@pytest.mark.parametrize(
    "text",
    [
        "What did we decide about the schema?",
        "Save the file and run the tests.",  # save, but no "memory" nearby
        "record the deploy steps in your long-term memory",  # 37 characters apart: too far
        "记录一下日志级别",  # 记录 alone is not a save-to-memory request
    ],
)
def test_not_explicit_save(text: str) -> None:
    assert not is_explicit_save(text)


@pytest.mark.parametrize(
    "text",
    [
        "Don't remember any of this.",
        "do not automatically save anything to memory",
        "Never write this to memory.",
        "no need to update memory",
        "No memory writes this time.",
        "不要记住这个",
        "别保存到记忆",
        "无需更新记忆",
        "请勿写入记忆",
    ],
)
def test_no_memory(text: str) -> None:
    assert is_no_memory(text)


@pytest.mark.parametrize(
    "text",
    [
        "Don't write tests for this yet.",
        "不要更新代码",
        "Remember to commit.",
    ],
)
def test_not_no_memory(text: str) -> None:
    assert not is_no_memory(text)


def _turn(text: str = "", assistant: int = 0, tools: tuple[str, ...] = ()) -> TurnActivity:
    return TurnActivity(user_text=text, assistant_chars=assistant, tool_calls=tools)


def test_admission_rules() -> None:
    a = ThreadActivity()
    assert not a.admitted()  # nothing yet
    a.add(_turn("short question"))
    assert not a.admitted()
    a.add(_turn("x" * 320))
    assert a.admitted()  # 320+ user characters
    b = ThreadActivity([_turn("hi", assistant=600)])
    assert b.admitted()
    c = ThreadActivity([_turn("hi", tools=("mnemon_recall", "mnemon_document_search"))])
    assert not c.admitted()  # only memory tools: no work worth reviewing
    c.add(_turn("ok", tools=("shell",)))
    assert c.admitted()
    d = ThreadActivity([_turn("请记住：发布前先跑 lint")])
    assert d.admitted()
    # The current turn's explicit no-memory request vetoes everything before it.
    d.add(_turn("不要记住这些", tools=("shell",)))
    assert not d.admitted()
    # An opted-out turn's characters do not count later.
    e = ThreadActivity([_turn("don't remember this " + "y" * 400), _turn("thanks")])
    assert not e.admitted()
    with pytest.raises(InvalidInputError):
        e.add("not a turn")  # type: ignore[arg-type]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _eligible(gate: ReviewGate, thread: str = "t") -> None:
    # 3 turns, 4 distinct tools: 0 + 3 + 0 + 2 = 5
    for tools in (("shell",), ("read", "grep"), ("edit",)):
        gate.record_turn(thread, _turn("do the thing", tools=tools))


def test_gate_debounce_fire_and_clear() -> None:
    clock = Clock()
    gate = ReviewGate(ReviewSettings(), clock=clock)
    gate.record_turn("t", _turn("hello"))
    assert gate.on_turn_end("t") is None  # score 1
    _eligible(gate)
    assert gate.activity("t").score().score == 6
    assert gate.on_turn_end("t") == 30.0
    generation = gate.generation("t")
    clock.now += 30
    decision = gate.on_fire("t", generation)
    assert decision.action == "run"
    gate.on_review_finished("t", generation, success=True)
    assert gate.activity("t").turns == []
    assert gate.attempts("t") == 1


def test_new_turn_cancels_timer_and_running_review() -> None:
    clock = Clock()
    gate = ReviewGate(ReviewSettings(), clock=clock)
    _eligible(gate)
    assert gate.on_turn_end("t") == 30.0
    old = gate.generation("t")
    assert gate.on_turn_start("t") is True  # cancels the armed timer
    assert gate.on_fire("t", old).action == "drop"
    assert gate.activity("t").score().eligible  # activity is kept
    gate.on_turn_end("t")
    gen = gate.generation("t")
    clock.now += 30
    assert gate.on_fire("t", gen).action == "run"
    gate.on_turn_start("t")  # aborts the running review
    gate.on_review_finished("t", gen, success=True)  # too late: ignored
    assert gate.activity("t").score().eligible
    assert gate.attempts("t") == 1  # the aborted run counts once, when it started


def test_min_interval_and_failure_keeps_activity() -> None:
    clock = Clock()
    gate = ReviewGate(ReviewSettings(), clock=clock)
    _eligible(gate)
    gate.on_turn_end("t")
    gen = gate.generation("t")
    clock.now += 30
    assert gate.on_fire("t", gen).action == "run"
    gate.on_review_finished("t", gen, success=False)
    assert gate.activity("t").score().eligible  # failure keeps activity
    # Next turn ends 40 s after the attempt: wait until 300 s after it.
    clock.now += 40
    gate.record_turn("t", _turn("more", tools=("shell",)))
    assert gate.on_turn_end("t") == pytest.approx(260.0)
    gen = gate.generation("t")
    clock.now += 100  # fired early (e.g. a stale timer): rescheduled, not run
    decision = gate.on_fire("t", gen)
    assert decision.action == "reschedule"
    assert decision.delay_seconds == pytest.approx(160.0)
    clock.now += 160
    assert gate.on_fire("t", gen).action == "run"


def test_max_per_thread_and_idle_check() -> None:
    clock = Clock()
    gate = ReviewGate(ReviewSettings(max_per_thread=1, min_interval_seconds=0), clock=clock)
    _eligible(gate)
    gate.on_turn_end("t")
    gen = gate.generation("t")
    assert gate.on_fire("t", gen, idle=False).action == "drop"
    gate.on_turn_end("t")
    assert gate.on_fire("t", gen).action == "run"
    gate.on_review_finished("t", gen, success=False)
    assert gate.on_turn_end("t") is None  # the one allowed attempt is used
    # Threads are independent.
    _eligible(gate, "other")
    assert gate.on_turn_end("other") == 30.0


@pytest.mark.parametrize(
    "overrides",
    [
        {"write_enabled": False},
        {"writeback_mode": "off"},
        {"lifecycle_enabled": False},
        {"strategy": "general"},
        {"idle_review": {"enabled": False}},
        {"idle_review": {"max_per_thread": 0}},
    ],
)
def test_switches_disable_review(overrides: dict) -> None:
    gate = ReviewGate(ReviewSettings.from_config(MnemonConfig(**overrides)), clock=Clock())
    _eligible(gate)
    assert gate.on_turn_end("t") is None


def test_settings_from_config() -> None:
    settings = ReviewSettings.from_config(
        MnemonConfig(idle_review={"delay_ms": 5000, "min_interval_ms": 60_000})
    )
    assert (settings.delay_seconds, settings.min_interval_seconds) == (5.0, 60.0)
    assert settings.active
    with pytest.raises(InvalidInputError):
        ReviewGate(settings).on_turn_end("")
