"""Fatigue that sees a full context (issue 16, item 2): token floors, re-reads of a resource
whatever the other arguments, errors by content, and messages that say what was measured."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import ValidationError

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.mnemos_callbacks import MnemosSignalHandler
from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.mnemos import Database, Mnemos, create_engine
from langgraph_mnemon.memory_layers.mnemos import fatigue as fm
from langgraph_mnemon.memory_layers.mnemos.schema import SIGNALS
from langgraph_mnemon.testing import ScriptedChatModel

WINDOW = 10_000
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "importer.py", line 3, in <module>\n'
    "KeyError: 'rows'"
)
ERROR_TEXTS = [
    "Error: src/importer/core.py not found",
    TRACEBACK,
    "make: *** [all] exit code 2",
    json.dumps({"error": "permission denied", "path": "/etc/shadow"}),
]


def _mnemos(tmp_path: Path, **settings: Any) -> Mnemos:
    db = Database(create_engine(tmp_path / "m.db"), owns_engine=True)
    config = MnemosConfig(git_state=False, context_window_tokens=WINDOW, **settings)
    return Mnemos(db, config, workspace=tmp_path)


@pytest.fixture
def mnemos(tmp_path: Path) -> Iterator[Mnemos]:
    service = _mnemos(tmp_path)
    yield service
    service.db.dispose()


def _usage(tokens: int) -> dict[str, int]:
    return {"input_tokens": tokens - 10, "output_tokens": 10, "total_tokens": tokens}


def _reads(mnemos: Mnemos, calls: list[tuple[str, dict[str, Any]]]) -> fm.FatigueReading:
    for i, (name, args) in enumerate(calls):
        mnemos.record_tool_call("t", name, args, call_id=f"r{i}", status="ok")
    return mnemos.fatigue("t")


# ----------------------------------------------------------------------------- token floors

FLOOR_CASES = [
    (6_900, None, "FLOW"),
    (7_000, "PRE_SLEEP", "PRE_SLEEP"),
    (8_499, "PRE_SLEEP", "PRE_SLEEP"),
    (8_500, "REM", "REM"),
    (9_499, "REM", "REM"),
    (9_500, "EMERGENCY", "EMERGENCY"),
]


@pytest.mark.parametrize(("tokens", "floor", "state"), FLOOR_CASES)
def test_token_use_alone_sets_the_floor(
    mnemos: Mnemos, tokens: int, floor: str | None, state: str
) -> None:
    mnemos.record_usage("t", tokens)
    reading = mnemos.fatigue("t")
    assert reading.token_utilization == tokens / WINDOW
    assert reading.composite == round(0.4 * tokens / WINDOW, 4)
    assert fm.state_for(reading.composite) == "FLOW"  # the seed's formula: no action at all
    assert (reading.token_floor, reading.state) == (floor, state)
    # the logged reading keeps the state the floor set
    assert mnemos.fatigue_history("t", limit=1)[0].state == state


@pytest.mark.parametrize(("tokens", "floor", "state"), FLOOR_CASES)
def test_token_floor_from_observed_usage_metadata(
    mnemos: Mnemos, tokens: int, floor: str | None, state: str
) -> None:
    messages = [
        HumanMessage("summarise the importer"),
        AIMessage("Here is the summary.", usage_metadata=_usage(tokens), id="ai-1"),
    ]
    mnemos.observe_messages("t", messages, derive=False)
    reading = mnemos.fatigue("t")
    assert reading.tokens_used == tokens
    assert not reading.tokens_estimated
    assert (reading.token_floor, reading.state) == (floor, state)


def test_the_issues_example_is_emergency(mnemos: Mnemos) -> None:
    """99.5 % of the window with 83 % re-reads scored 0.56 (COMPRESS) with the seed."""
    reading = _reads(mnemos, [("read_file", {"path": "src/importer/core.py"})] * 6)
    mnemos.record_usage("t", 9_950)
    reading = mnemos.fatigue("t")
    assert reading.reread_ratio == pytest.approx(0.8333)
    assert reading.composite == pytest.approx(0.5647, abs=1e-4)
    assert fm.state_for(reading.composite) == "COMPRESS"
    assert reading.state == "EMERGENCY"
    response = mnemos.maintain("t")
    assert response.reading.state == "EMERGENCY"
    assert response.checkpoint is not None
    assert response.checkpoint.status == "committed"
    assert response.checkpoint.checkpoint.emergency


def test_the_composite_still_decides_above_the_floor(mnemos: Mnemos) -> None:
    # 70 % (floor PRE_SLEEP) plus scattered failing reads: the composite reads REM
    for i in range(30):
        mnemos.record_tool_call(
            "t", "read_file", {"path": f"d{i % 15}/x.py"}, call_id=f"e{i}", status="error"
        )
    mnemos.record_usage("t", 7_000)
    reading = mnemos.fatigue("t")
    assert reading.composite == pytest.approx(0.28 + 0.25 + 0.1 + 0.15)
    assert (reading.token_floor, reading.state) == ("PRE_SLEEP", "REM")


def test_final_state_and_token_floor_are_pure() -> None:
    floors = (0.70, 0.85, 0.95)
    assert fm.final_state(0.56, 0.995, floors) == "EMERGENCY"
    assert fm.final_state(0.388, 0.97, floors) == "EMERGENCY"
    assert fm.final_state(0.28, 0.6999, floors) == "FLOW"
    assert fm.final_state(0.91, 0.10, floors) == "EMERGENCY"  # composite above the floor
    assert fm.final_state(0.45, 0.86, floors) == "REM"
    assert fm.token_floor(0.70, (0.5, 0.7, 0.7)) == "EMERGENCY"  # equal floors: the highest
    with pytest.raises(InvalidInputError, match="three shares of the window"):
        fm.token_floor(0.5, (0.9, 0.8, 0.95))
    with pytest.raises(InvalidInputError, match="three shares of the window"):
        fm.final_state(0.5, 0.5, (0.7, 0.85))


def test_floors_are_configurable(tmp_path: Path) -> None:
    service = _mnemos(tmp_path, token_floors=(0.5, 0.6, 0.8))
    try:
        service.record_usage("t", 4_999)
        assert service.fatigue("t").state == "FLOW"
        service.record_usage("t", 5_000)
        assert service.fatigue("t").state == "PRE_SLEEP"
        service.record_usage("t", 6_000)
        assert service.fatigue("t").state == "REM"
        service.record_usage("t", 8_000)
        assert service.fatigue("t").state == "EMERGENCY"
    finally:
        service.db.dispose()


@pytest.mark.parametrize(
    "floors", [[0.9, 0.8, 0.95], [0.0, 0.5, 0.9], [0.7, 0.85, 1.2], [0.7, 0.85]]
)
def test_invalid_floors_are_refused(tmp_path: Path, floors: list[float]) -> None:
    with pytest.raises(ValidationError, match="token_floors"):
        MnemosConfig(token_floors=floors)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"mnemos\.token_floors"):
        Mnemon.open(tmp_path / ".mnemon", mnemos={"token_floors": floors})


# ----------------------------------------------------------------------------- messages


def test_state_message_says_what_was_measured(mnemos: Mnemos) -> None:
    mnemos.record_usage("t", 7_150)
    reading = mnemos.fatigue("t")
    message = fm.state_message(reading)
    assert message == (
        "NOTICE: fatigue 0.29 (PRE_SLEEP), context 71% of 10,000 tokens used (default "
        "mnemos.context_window_tokens), context use alone sets PRE_SLEEP. Checkpoint written. "
        "Keep changes focused."
    )
    assert "60%+" not in message


def test_state_message_names_the_dimensions_that_weigh(mnemos: Mnemos) -> None:
    _reads(mnemos, [("read_file", {"path": "src/importer/core.py"})] * 6)
    mnemos.record_usage("t", 9_950)
    message = fm.state_message(mnemos.fatigue("t"))
    assert message is not None
    assert message.startswith("EMERGENCY: fatigue 0.56 (EMERGENCY), context 99% of 10,000")
    assert "83% of reads are re-reads" in message
    assert "context use alone sets EMERGENCY" in message
    assert message.endswith("Finish the current step and hand off.")


def test_state_message_is_none_below_pre_sleep_and_says_estimated(mnemos: Mnemos) -> None:
    assert fm.state_message(mnemos.fatigue("t")) is None  # FLOW, no usage
    # an estimate from characters is said to be one (no usage_metadata: chars / 4)
    mnemos.observe_messages("t", [HumanMessage("x" * 36_000)], derive=False)
    reading = mnemos.fatigue("t")
    assert reading.tokens_estimated
    assert reading.state == "REM"
    message = fm.state_message(reading)
    assert message is not None
    assert message.startswith("WARNING: fatigue 0.36 (REM), context about 90%")


# ----------------------------------------------------------------------------- re-reads


def test_rereads_of_one_file_with_other_arguments(mnemos: Mnemos) -> None:
    reading = _reads(
        mnemos,
        [
            ("read_file", {"path": "src/importer/core.py", "offset": 0, "limit": 100}),
            ("read_file", {"path": "src/importer/core.py", "offset": 100, "limit": 100}),
            ("read_file", {"path": "./src/importer/core.py", "encoding": "latin-1"}),
            ("view_file", {"file_path": "src/importer/core.py"}),  # another tool, same file
            ("read_file", {"path": "src/importer/csv.py", "offset": 0, "limit": 100}),
        ],
    )
    assert reading.reread_ratio == pytest.approx(0.6)  # 3 of 5 reads repeat core.py


def test_searches_for_other_patterns_are_no_rereads(mnemos: Mnemos) -> None:
    reading = _reads(
        mnemos,
        [
            ("grep", {"pattern": "async def", "path": "src/importer"}),
            ("grep", {"pattern": "import_file", "path": "src/importer"}),
            ("grep", {"pattern": "async def", "path": "src/importer", "context": 3}),
        ],
    )
    assert reading.reread_ratio == pytest.approx(0.3333)  # only the third repeats the first


def test_rereads_of_one_url(mnemos: Mnemos) -> None:
    url = "https://docs.python.org/3/library/asyncio-task.html"
    reading = _reads(
        mnemos,
        [
            ("fetch_url", {"url": url, "max_length": 5000}),
            ("fetch_url", {"url": url + "#coroutines", "start_index": 5000}),
            ("fetch_url", {"url": "HTTPS://Docs.Python.org/3/library/asyncio-task.html/"}),
            ("fetch_url", {"url": "https://docs.python.org/3/library/csv.html"}),
        ],
    )
    assert reading.reread_ratio == pytest.approx(0.5)
    # a URL is never stored as a file path: it does not count as a directory for scatter
    with mnemos.db.read() as conn:
        paths = conn.execute(sa.select(SIGNALS.c.path).where(SIGNALS.c.kind == "tool")).all()
    assert [p for (p,) in paths] == [None] * 4
    assert reading.scope_scatter == 0.0


def test_rereads_of_one_record_id(mnemos: Mnemos) -> None:
    reading = _reads(
        mnemos,
        [
            ("get_record", {"record_id": "42", "fields": ["title"]}),
            ("get_record", {"record_id": 42, "fields": ["title", "body"], "verbose": True}),
            ("get_record", {"record_id": "43", "fields": ["title"]}),
            ("get_document", {"record_id": "42"}),  # another tool: another record store
            ("lookup_issue", {"issueId": "PROJ-7"}),
            ("lookup_issue", {"issueId": "PROJ-7", "expand": "comments"}),
        ],
    )
    assert reading.reread_ratio == pytest.approx(0.3333)  # record 42 and PROJ-7 again


def test_identical_arguments_still_repeat_without_a_resource(mnemos: Mnemos) -> None:
    reading = _reads(
        mnemos,
        [
            ("list_tasks", {"status": "open"}),
            ("list_tasks", {"status": "open"}),
            ("list_tasks", {"status": "done"}),
            ("list_users", {"status": "open"}),  # same arguments, another tool
        ],
    )
    assert reading.reread_ratio == pytest.approx(0.25)


def test_rereads_from_observed_messages(mnemos: Mnemos) -> None:
    messages: list[Any] = [HumanMessage("read the importer")]
    for i, offset in enumerate([0, 200, 400]):
        call = {"name": "read_file", "args": {"path": "src/core.py", "offset": offset}}
        messages.append(AIMessage("", tool_calls=[{**call, "id": f"c{i}"}]))
        messages.append(ToolMessage(f"lines {offset}..", tool_call_id=f"c{i}"))
    mnemos.observe_messages("t", messages, derive=False)
    assert mnemos.fatigue("t").reread_ratio == pytest.approx(0.6667)


# ----------------------------------------------------------------------------- errors by content


def test_error_texts_raise_error_density_via_observe_messages(mnemos: Mnemos) -> None:
    answers: list[Any] = [
        *ERROR_TEXTS,
        [{"type": "text", "text": "Error: timeout after 30 s"}],  # content blocks
        "No errors found in 12 files",
        "exit code: 0",
    ]
    messages: list[Any] = [HumanMessage("run the checks")]
    for i, answer in enumerate(answers):
        tool_call = {"name": "run_check", "args": {"n": i}, "id": f"k{i}"}
        messages.append(AIMessage("", tool_calls=[tool_call]))
        messages.append(ToolMessage(answer, tool_call_id=f"k{i}"))  # status "success"
    mnemos.observe_messages("t", messages, derive=False)
    reading = mnemos.fatigue("t")
    assert reading.tool_calls == 7
    assert reading.error_density == pytest.approx(5 / 7, abs=1e-4)


def test_no_errors_found_is_no_error(mnemos: Mnemos) -> None:
    messages: list[Any] = [HumanMessage("lint it")]
    for i, answer in enumerate(["No errors found", "0 errors, 0 warnings", "exit code 0"]):
        messages.append(AIMessage("", tool_calls=[{"name": "lint", "args": {}, "id": f"l{i}"}]))
        messages.append(ToolMessage(answer, tool_call_id=f"l{i}"))
    mnemos.observe_messages("t", messages, derive=False)
    assert mnemos.fatigue("t").error_density == 0.0


@tool
def run_check(name: str) -> str:
    """Run one named check and return its output."""
    outputs = dict(zip(["a", "b", "c", "d"], ERROR_TEXTS, strict=True))
    return outputs.get(name, "No errors found")


def test_error_texts_raise_error_density_via_the_callback_handler(mnemos: Mnemos) -> None:
    names = ["a", "b", "c", "d", "clean", "clean2"]
    script = [
        AIMessage("", tool_calls=[{"name": "run_check", "args": {"name": n}, "id": f"t{i}"}])
        for i, n in enumerate(names)
    ]
    script.append(AIMessage("Four checks failed.", usage_metadata=_usage(7_200)))
    agent = create_agent(ScriptedChatModel(responses=script), tools=[run_check])
    handler = MnemosSignalHandler(mnemos, context_window_tokens=WINDOW)
    out = agent.invoke(
        {"messages": [HumanMessage("run the six checks")]},
        {"configurable": {"thread_id": "run-1"}, "callbacks": [handler]},
    )
    tool_messages = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(tool_messages) == 6
    assert all(m.status == "success" for m in tool_messages)
    reading = mnemos.fatigue("run-1")
    assert reading.tool_calls == 6
    assert reading.error_density == pytest.approx(4 / 6, abs=1e-4)
    assert reading.tokens_used == 7_200
    assert (reading.token_floor, reading.state) == ("PRE_SLEEP", "PRE_SLEEP")


def test_the_callback_handler_reads_plain_outputs(mnemos: Mnemos) -> None:
    handler = MnemosSignalHandler(mnemos, task_id="plain")
    config = {"callbacks": [handler]}

    @tool
    def shell(cmd: str) -> str:
        """Run a shell command."""
        return "Error: command not found" if cmd == "bad" else "done, no errors found"

    @tool
    def api(path: str) -> dict[str, Any]:
        """Call an API."""
        return {"error": "forbidden"} if path == "/admin" else {"ok": True}

    shell.invoke({"cmd": "bad"}, config=config)
    shell.invoke({"cmd": "good"}, config=config)
    api.invoke({"path": "/admin"}, config=config)
    api.invoke({"path": "/public"}, config=config)
    reading = mnemos.fatigue("plain")
    assert reading.tool_calls == 4
    assert reading.error_density == 0.5
