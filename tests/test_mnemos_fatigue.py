"""Fatigue: the four dimensions, the composite, the states and how a run feeds them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from langgraph_mnemon.adapters.mnemos_callbacks import MnemosSignalHandler
from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.mnemos import Database, Mnemos, create_engine
from langgraph_mnemon.memory_layers.mnemos import fatigue as fm
from langgraph_mnemon.memory_layers.mnemos.fatigue import ToolCall


def call(
    name: str = "read_file",
    args: str = "a",
    dkey: str | None = None,
    *,
    ok: bool = True,
    read: bool = True,
    status: str | None = None,
) -> ToolCall:
    return ToolCall(name, args, dkey, read, status or ("ok" if ok else "error"))


# ----------------------------------------------------------------------------- pure dimensions


def test_token_utilization() -> None:
    assert fm.token_utilization(None, 1000) == 0.0
    assert fm.token_utilization(0, 1000) == 0.0
    assert fm.token_utilization(500, 1000) == 0.5
    assert fm.token_utilization(5000, 1000) == 1.0


def test_scope_scatter_edge_cases() -> None:
    assert fm.scope_scatter([]) == 0.0  # empty window
    assert fm.scope_scatter(["a", "b", "c", "d"]) == 0.0  # below the minimum sample of 5
    assert fm.scope_scatter([None] * 30) == 0.0  # no path-bearing calls
    assert fm.scope_scatter(["src/auth"] * 30) == 0.0  # focused
    assert fm.scope_scatter(["a", "b"] * 15) == 0.0  # two folders: still focused
    assert fm.scope_scatter(["a", "b", "c", "d"] * 5) == pytest.approx(0.4)
    assert fm.scope_scatter(list("abcdefg") * 4) == pytest.approx(0.7)
    assert fm.scope_scatter([f"d{i}" for i in range(30)]) == 1.0
    # one main folder with four strays is not scattered
    assert fm.scope_scatter(["src"] * 26 + ["a", "b", "c", "d"]) == 0.0
    # the file name never matters, only the folder: 30 files in one folder
    assert fm.scope_scatter(["src/auth"] * 30, min_sample=5) == 0.0


def test_reread_ratio_edge_cases() -> None:
    assert fm.reread_ratio([]) == 0.0
    assert fm.reread_ratio([call(), call()]) == 0.0  # fewer than 3 reads
    assert fm.reread_ratio([call()] * 5) == pytest.approx(0.8)
    assert fm.reread_ratio([call()] * 3) == pytest.approx(0.6667)
    mixed = [call(args="a"), call(args="b"), call(args="a"), call(args="c")]
    assert fm.reread_ratio(mixed) == pytest.approx(0.25)
    # writes do not count as reads, and the same args of another tool are not a re-read
    assert fm.reread_ratio([call(read=False)] * 5) == 0.0
    assert fm.reread_ratio([call("read_file"), call("grep"), call("glob")]) == 0.0


def test_error_density() -> None:
    assert fm.error_density([]) == 0.0
    assert fm.error_density([call(status="pending")] * 3) == 0.0
    assert fm.error_density([call(ok=False), call(), call(status="pending")]) == 0.5


def test_composite_weights_and_rounding() -> None:
    assert fm.composite_score(1, 0, 0, 0) == 0.4
    assert fm.composite_score(0, 1, 0, 0) == 0.25
    assert fm.composite_score(0, 0, 1, 0) == 0.2
    assert fm.composite_score(0, 0, 0, 1) == 0.15
    assert fm.composite_score(1, 1, 1, 1) == 1.0
    assert fm.composite_score(0.123456, 0, 0, 0) == 0.0494


@pytest.mark.parametrize(
    ("score", "state"),
    [
        (0.0, "FLOW"),
        (0.3999, "FLOW"),
        (0.40, "COMPRESS"),
        (0.5999, "COMPRESS"),
        (0.60, "PRE_SLEEP"),
        (0.7499, "PRE_SLEEP"),
        (0.75, "REM"),
        (0.8999, "REM"),
        (0.90, "EMERGENCY"),
        (1.0, "EMERGENCY"),
    ],
)
def test_state_boundaries_belong_to_the_higher_state(score: float, state: str) -> None:
    assert fm.state_for(score) == state


def test_actions_per_state() -> None:
    assert fm.actions_for("FLOW") == ()
    assert fm.actions_for("COMPRESS") == ("consolidate",)
    assert fm.actions_for("PRE_SLEEP") == ("checkpoint", "consolidate")
    assert "consolidate" in fm.actions_for("EMERGENCY")  # the reference skipped it
    assert "handoff" in fm.actions_for("EMERGENCY")


# ----------------------------------------------------------------------------- the service


@pytest.fixture
def mnemos(tmp_path: Path) -> Iterator[Mnemos]:
    db = Database(create_engine(tmp_path / "m.db"), owns_engine=True)
    service = Mnemos(
        db, MnemosConfig(git_state=False, context_window_tokens=10_000), workspace=tmp_path
    )
    yield service
    db.dispose()


def _run_messages(n_reads: int, *, errors: int = 0, tokens: int | None = None) -> list[object]:
    messages: list[object] = [HumanMessage("fix the login bug")]
    for i in range(n_reads):
        messages.append(
            AIMessage(
                "",
                tool_calls=[
                    {"name": "read_file", "args": {"path": "src/auth/login.py"}, "id": f"c{i}"}
                ],
                usage_metadata=(
                    {"input_tokens": tokens, "output_tokens": 0, "total_tokens": tokens}
                    if tokens is not None
                    else None
                ),
            )
        )
        status = "error" if i < errors else "success"
        messages.append(ToolMessage("contents", tool_call_id=f"c{i}", status=status))
    return messages


def test_empty_window_reads_flow(mnemos: Mnemos) -> None:
    reading = mnemos.fatigue("t")
    assert (reading.composite, reading.state, reading.tool_calls) == (0.0, "FLOW", 0)
    assert reading.tokens_used is None


def test_observe_messages_feeds_every_dimension(mnemos: Mnemos) -> None:
    new = mnemos.observe_messages("t", _run_messages(4, errors=2, tokens=10_000))
    assert new == 4
    reading = mnemos.fatigue("t")
    assert reading.token_utilization == 1.0
    assert not reading.tokens_estimated
    assert reading.reread_ratio == pytest.approx(0.75)  # 4 identical reads, 3 repeats
    assert reading.error_density == 0.5
    assert reading.scope_scatter == 0.0
    assert reading.composite == pytest.approx(0.4 + 0.15 + 0.075)
    # the composite alone reads PRE_SLEEP; a full window sets the EMERGENCY floor (issue 16)
    assert fm.state_for(reading.composite) == "PRE_SLEEP"
    assert (reading.token_floor, reading.state) == ("EMERGENCY", "EMERGENCY")
    # observing the grown list again adds only the new call
    assert mnemos.observe_messages("t", _run_messages(5, errors=2, tokens=10_000)) == 1


def test_fewer_than_three_reads_are_no_reread(mnemos: Mnemos) -> None:
    mnemos.observe_messages("t", _run_messages(2, tokens=100))
    assert mnemos.fatigue("t").reread_ratio == 0.0


def test_character_estimate_without_usage_metadata(mnemos: Mnemos) -> None:
    messages = [HumanMessage("x" * 20_000), AIMessage("y" * 20_000)]
    mnemos.observe_messages("t", messages)
    reading = mnemos.fatigue("t")
    assert reading.tokens_estimated
    assert reading.tokens_used == 10_000  # 40,000 chars / 4 = the whole window
    assert reading.token_utilization == 1.0
    assert reading.composite == 0.4
    assert fm.state_for(reading.composite) == "COMPRESS"  # exactly 0.40 is COMPRESS
    assert reading.state == "EMERGENCY"  # ... but a full (estimated) window is the floor
    mnemos.observe_messages("t", messages[:1])
    assert mnemos.fatigue("t").token_utilization == 0.5


def test_dict_messages_and_tool_errors_are_understood(mnemos: Mnemos) -> None:
    messages = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"name": "write_file", "args": {"path": "a/x.py"}, "id": "w1"},
                {"name": "bash", "args": {"cmd": "make"}, "id": "b1"},
            ],
            "usage_metadata": {"input_tokens": 10, "output_tokens": 5},
        },
        {"role": "tool", "tool_call_id": "w1", "content": "ok"},
        {"role": "tool", "tool_call_id": "b1", "content": "Error: boom", "status": "error"},
    ]
    assert mnemos.observe_messages("t", messages) == 2
    reading = mnemos.fatigue("t")
    # 15 reported by the model, plus the two tool answers since ("ok", "Error: boom": 13
    # characters, about 3 tokens) that the next call carries too
    assert reading.tokens_used == 15 + round(13 / 4)
    assert reading.error_density == 0.5
    with pytest.raises(InvalidInputError):
        mnemos.observe_messages("t", "not a list")  # type: ignore[arg-type]


def test_scatter_from_tool_paths_counts_each_call_once(mnemos: Mnemos) -> None:
    for i, folder in enumerate(["src/a", "src/b", "docs", "tests", "config", "lib", "ci"]):
        mnemos.record_tool_call(
            "t",
            "edit_file",
            {"path": f"{folder}/f{i}.py", "old": "x"},
            call_id=f"e{i}",
            status="ok",
        )
        mnemos.record_tool_call(
            "t", "edit_file", {"path": f"{folder}/f{i}.py"}, call_id=f"e{i}", status="ok"
        )  # same call again: no second signal
    reading = mnemos.fatigue("t")
    assert reading.tool_calls == 7
    assert reading.scope_scatter == pytest.approx(0.7)


def test_window_is_the_last_thirty_calls(mnemos: Mnemos) -> None:
    for i in range(30):
        mnemos.record_tool_call("t", "bash", {"cmd": str(i)}, call_id=f"x{i}", status="error")
    for i in range(30):
        mnemos.record_tool_call("t", "bash", {"cmd": str(i)}, call_id=f"y{i}", status="ok")
    reading = mnemos.fatigue("t")
    assert reading.tool_calls == 30
    assert reading.error_density == 0.0


def test_every_reading_is_logged(mnemos: Mnemos) -> None:
    mnemos.fatigue("t")
    mnemos.fatigue("t")
    mnemos.fatigue("t", log=False)
    assert len(mnemos.fatigue_history("t")) == 2


def test_record_validation(mnemos: Mnemos) -> None:
    with pytest.raises(InvalidInputError):
        mnemos.record_tool_call("t", "", {})
    with pytest.raises(InvalidInputError):
        mnemos.record_tool_call("t", "x", {}, status="maybe")
    with pytest.raises(InvalidInputError):
        mnemos.record_usage("t", -1)
    assert mnemos.record_tool_result("t", "unknown-call") is False


def _tire(mnemos: Mnemos, task: str, state: str) -> None:
    """Record a window whose reading lands in ``state``.

    Token use stays below the first floor (69 %) for COMPRESS..REM, so the composite decides
    there; EMERGENCY comes from the token floor alone (95 %; the seed read it as FLOW).
    """
    if state == "FLOW":
        return
    if state == "EMERGENCY":
        mnemos.record_usage(task, 9_500)  # 0.95 * 0.40 = 0.38, floor EMERGENCY
        return
    mnemos.record_usage(task, 6_900)  # token utilisation 0.69 -> 0.276, no floor
    if state == "COMPRESS":  # + all errors 0.15 -> 0.426
        for i in range(5):
            mnemos.record_tool_call(
                task, "write_file", {"path": "a/b.py"}, call_id=f"c{i}", status="error"
            )
        return
    if state == "PRE_SLEEP":  # + all errors 0.15 + scatter 1.0 * 0.25 -> 0.676
        for i in range(30):
            mnemos.record_tool_call(
                task, "write_file", {"path": f"d{i}/x.py"}, call_id=f"p{i}", status="error"
            )
        return
    # REM: + errors 0.15 + scatter 0.25 + re-reads 0.5 * 0.2 -> 0.776
    for i in range(30):
        mnemos.record_tool_call(
            task, "read_file", {"path": f"d{i % 15}/x.py"}, call_id=f"r{i}", status="error"
        )


@pytest.mark.parametrize(
    ("state", "score"),
    [
        ("FLOW", 0.0),
        ("COMPRESS", 0.426),
        ("PRE_SLEEP", 0.676),
        ("REM", 0.776),
        ("EMERGENCY", 0.38),
    ],
)
def test_maintain_takes_the_actions_of_the_state(mnemos: Mnemos, state: str, score: float) -> None:
    mnemos.add_node("t", "goal", "g")
    for i in range(4):
        mnemos.add_node("t", "result", f"r{i}")
    _tire(mnemos, "t", state)
    response = mnemos.maintain("t")
    assert response.reading.composite == pytest.approx(score)
    assert response.reading.state == state
    assert response.actions == fm.actions_for(state)
    assert (response.consolidation is not None) == (state != "FLOW")
    if response.consolidation is not None:
        assert response.consolidation.compressed == 3
    assert (response.checkpoint is not None) == (state in ("PRE_SLEEP", "REM", "EMERGENCY"))
    if response.checkpoint is not None:
        assert response.checkpoint.status == "committed"
        assert response.checkpoint.checkpoint.emergency == (state in ("REM", "EMERGENCY"))
        assert response.checkpoint.checkpoint.fatigue_state == state
    assert (response.handoff is not None) == (state == "EMERGENCY")
    assert (response.message is not None) == (state in ("PRE_SLEEP", "REM", "EMERGENCY"))
    if state == "EMERGENCY":
        assert response.handoff is not None
        assert response.handoff.type == "handoff"
        assert mnemos.nodes("t", type="handoff")[0].id == response.handoff.id
    if state in ("REM", "EMERGENCY"):
        # Both respect the cooldown (Mnemos runs before every model call): the second keeps
        # the first, and EMERGENCY writes no second HandoffNode for a skipped checkpoint.
        again = mnemos.maintain("t")
        assert again.checkpoint is not None
        assert again.checkpoint.status == "skipped"
        assert again.handoff is None


# ----------------------------------------------------------------------------- callback handler


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@tool
def failing(path: str) -> str:
    """Always fails."""
    raise ValueError("no such file")


def test_callback_handler_records_tools_and_usage(mnemos: Mnemos) -> None:
    handler = MnemosSignalHandler(mnemos, context_window_tokens=1000)
    config = {"callbacks": [handler], "metadata": {"thread_id": "cb"}}
    for _ in range(3):
        read_file.invoke({"path": "src/a.py"}, config=config)
    with pytest.raises(ValueError, match="no such file"):
        failing.invoke({"path": "src/b.py"}, config=config)
    model = FakeMessagesListChatModel(
        responses=[
            AIMessage(
                "hi",
                usage_metadata={"input_tokens": 400, "output_tokens": 100, "total_tokens": 500},
            )
        ]
    )
    model.invoke("hello", config=config)
    reading = mnemos.fatigue("cb")
    assert reading.tool_calls == 4
    assert reading.reread_ratio == pytest.approx(0.6667)  # 3 identical reads, 2 repeats
    assert reading.error_density == 0.25
    assert reading.tokens_used == 500
    assert reading.context_window == 1000
    assert reading.token_utilization == 0.5
    # a run without a task id is ignored
    read_file.invoke({"path": "x.py"}, config={"callbacks": [MnemosSignalHandler(mnemos)]})
    assert mnemos.tasks() == ["cb"]
    with pytest.raises(InvalidInputError):
        MnemosSignalHandler("not mnemos")  # type: ignore[arg-type]
