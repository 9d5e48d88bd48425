"""Issue 31: Mnemos measures token use against the calling model's own context window.

The window is ``mnemos.context_window`` when set, else the model's ``profile["max_input_tokens"]``
(LangChain's ``ModelProfile``), else ``mnemos.context_window_tokens``. Real ``create_agent`` runs
and hand-built graphs on deterministic chat models that carry a profile (or none); real SQLite
files and a real PostgreSQL schema for the stored readings and the schema upgrade.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from langgraph_mnemon import Mnemon, MnemonConfig
from langgraph_mnemon.adapters.mnemos_callbacks import MnemosSignalHandler
from langgraph_mnemon.adapters.models import declared_window
from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.graphs import MnemonTurnState
from langgraph_mnemon.memory_layers.messages import plugin_form_of, read_messages
from langgraph_mnemon.memory_layers.mnemos import (
    MIGRATIONS,
    ContextWindow,
    Database,
    FatigueReading,
    Mnemos,
    create_engine,
)
from langgraph_mnemon.memory_layers.mnemos.fatigue import context_use
from langgraph_mnemon.nodes import valid_tool_sequence
from langgraph_mnemon.storage.db import ensure_sqlite_directory
from langgraph_mnemon.testing import ScriptedChatModel

PROFILE_8K = {"max_input_tokens": 8_000}
PROFILE_128K = {"max_input_tokens": 128_000}
REQUEST = "Review the four customer records, then check the connection."
FINAL = "Done: four records reviewed."
READS = 4
NEAR_FULL = 7_950  # the usage the model reports on the call before the last


@tool
def read_record(record_id: str) -> str:
    """Read one customer record."""
    lines = " ".join(f"line {k}: balance {k * 17 % 97} EUR." for k in range(90))
    return f"Record {record_id}: {lines}"  # about 2,500 characters


@tool
def ping() -> str:
    """Check the connection."""
    return "ok"


def _call(name: str, args: dict[str, Any], i: int) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call{i}", "type": "tool_call"}


def _usage(total: int) -> dict[str, int]:
    return {"input_tokens": total - 10, "output_tokens": 10, "total_tokens": total}


class NearFull:
    """Reads four records (small usage), pings reporting ``NEAR_FULL`` tokens, then answers.

    At every call it notes the newest fatigue reading Mnemos logged (the one taken just before
    this call), so the test sees what Mnemos measured against which window.
    """

    def __init__(self, mem: Mnemon, task: str) -> None:
        self.mem, self.task = mem, task
        self.seen: list[FatigueReading | None] = []

    def __call__(self, messages: list[BaseMessage]) -> AIMessage:
        logged = self.mem.mnemos.fatigue_history(self.task, limit=1)
        self.seen.append(logged[0] if logged else None)
        i = len(self.seen) - 1
        if i < READS:
            call = _call("read_record", {"record_id": f"r{i}"}, i)
            return AIMessage("", tool_calls=[call], usage_metadata=_usage(1_000 * (i + 1)))
        if i == READS:
            return AIMessage(
                "", tool_calls=[_call("ping", {}, i)], usage_metadata=_usage(NEAR_FULL)
            )
        return AIMessage(FINAL, usage_metadata=_usage(100))


def _open(tmp_path: Path, **mnemos: Any) -> Mnemon:
    return Mnemon.open(tmp_path / "root", workspace=tmp_path, mnemos={"git_state": False, **mnemos})


def _model(script: Any, profile: dict[str, int] | None) -> ScriptedChatModel:
    return ScriptedChatModel(script=script, profile=profile)


def _agent(mem: Mnemon, model: ScriptedChatModel) -> Any:
    return create_agent(
        model,
        tools=[read_record, ping],
        middleware=[mem.middleware()],
        checkpointer=mem.checkpointer(),
    )


def _forms(request: list[BaseMessage], form: str) -> list[str]:
    return [str(m.content) for m in request if plugin_form_of(m) == form]


# --- create_agent: the model's profile decides ------------------------------------------------

CASES = [
    # profile, settings, state before the last call, how full Mnemos read the context
    (PROFILE_8K, {}, "EMERGENCY", "99% of 8,000 tokens used (model profile)"),
    (PROFILE_128K, {}, "FLOW", "6% of 128,000 tokens used (model profile)"),
    (
        None,
        {"context_window_tokens": 9_000},
        "REM",
        "88% of 9,000 tokens used (default mnemos.context_window_tokens)",
    ),
    (
        PROFILE_8K,
        {"context_window": 50_000},
        "FLOW",
        "15% of 50,000 tokens used (mnemos.context_window)",
    ),
]


@pytest.mark.parametrize(("profile", "settings", "state", "used"), CASES)
def test_create_agent_measures_against_the_calling_models_window(
    tmp_path: Path, profile: dict[str, int] | None, settings: dict[str, Any], state: str, used: str
) -> None:
    mem = _open(tmp_path, **settings)
    script = NearFull(mem, "t")
    model = _model(script, profile)
    out = _agent(mem, model).invoke(
        {"messages": [HumanMessage(REQUEST)]}, {"configurable": {"thread_id": "t"}}
    )
    assert out["messages"][-1].content == FINAL
    before_last = script.seen[READS + 1]  # logged before the call after the 7,950-token one
    assert before_last is not None
    assert before_last.tokens_used == NEAR_FULL
    assert (before_last.state, context_use(before_last)) == (state, used)
    last_request = model.calls[READS + 1]
    notes = _forms(last_request, "resume")
    warnings = _forms(last_request, "warning")
    if state == "EMERGENCY":  # compaction started before the call, and names the window
        (note,) = notes
        assert f"The context was nearly full, {used}: " in note
        assert valid_tool_sequence(last_request)
        assert sum(isinstance(m, ToolMessage) for m in last_request) < READS + 1
        assert HumanMessage(REQUEST).content in [m.content for m in last_request]
    elif state == "REM":  # one warning, naming the window and where it came from
        assert notes == []
        (warning,) = warnings
        assert f"(REM), context {used}" in warning
    else:
        assert notes == warnings == []
        assert sum(isinstance(m, ToolMessage) for m in last_request) == READS + 1
    mem.close()


def test_an_emergency_checkpoint_is_written_for_the_8k_model_only(tmp_path: Path) -> None:
    runs = {}
    for name, profile in (("small", PROFILE_8K), ("large", PROFILE_128K)):
        mem = _open(tmp_path / name)
        _agent(mem, _model(NearFull(mem, name), profile)).invoke(
            {"messages": [HumanMessage(REQUEST)]}, {"configurable": {"thread_id": name}}
        )
        own = [c for c in mem.mnemos.checkpoints(name, limit=100) if c.source == "mnemos"]
        runs[name] = [c.emergency for c in own]
        mem.close()
    assert runs == {"small": [True], "large": []}


# --- a 128k model compacts before 128k -----------------------------------------------------------

BIG_STEPS = 20
BIG_RESULT = 32_000  # characters: 8,000 tokens a tool result


@tool
def read_chapter(number: int) -> str:
    """Read one chapter of the report."""
    return f"Chapter {number}. " + "x" * BIG_RESULT


def _tokens(messages: list[BaseMessage]) -> int:
    return round(sum(m.chars for m in read_messages(messages)) / 4)


class Chapters:
    """``_chapters`` with a step counter that survives compaction (the history shrinks)."""

    def __init__(self) -> None:
        self.step = 0

    def __call__(self, messages: list[BaseMessage]) -> AIMessage:
        usage = _usage(_tokens(messages) + 10)
        self.step += 1
        if self.step > BIG_STEPS:
            return AIMessage("Report read.", usage_metadata=usage)
        n = self.step
        call = {"name": "read_chapter", "args": {"number": n}, "id": f"ch{n}", "type": "tool_call"}
        return AIMessage("", tool_calls=[call], usage_metadata=usage)


def _read_report(tmp_path: Path, profile: dict[str, int] | None) -> list[list[BaseMessage]]:
    mem = _open(tmp_path)  # the default window stays 200,000 tokens
    model = ScriptedChatModel(script=Chapters(), profile=profile)
    agent = create_agent(model, tools=[read_chapter], middleware=[mem.middleware()])
    out = agent.invoke(
        {"messages": [HumanMessage("Read the whole report.")]},
        {"configurable": {"thread_id": "report"}, "recursion_limit": 200},
    )
    assert out["messages"][-1].content == "Report read."
    mem.close()
    return model.calls


def test_a_128k_model_is_compacted_before_its_window_is_exceeded(tmp_path: Path) -> None:
    requests = _read_report(tmp_path / "profile", PROFILE_128K)
    sizes = [_tokens(r) for r in requests]
    assert max(sizes) < 128_000  # no request the provider would refuse
    first = next(i for i, r in enumerate(requests) if _forms(r, "resume"))
    assert sizes[first - 1] >= 0.85 * 128_000  # compacted near the window, not long before
    assert "of 128,000 tokens used (model profile)" in _forms(requests[first], "resume")[0]
    assert all(valid_tool_sequence(r) for r in requests)


def test_without_a_profile_the_200k_default_lets_a_128k_request_through(tmp_path: Path) -> None:
    """The control: what Mnemos did before issue 31 for every model."""
    requests = _read_report(tmp_path / "default", None)
    assert max(_tokens(r) for r in requests) > 128_000
    assert not any(_forms(r, "resume") for r in requests)


# --- a hand-built graph and the callback handler take the model too ------------------------------


def test_a_hand_built_graph_measures_against_the_model_it_was_given(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    script = NearFull(mem, "g")
    model = _model(script, PROFILE_8K)
    bound = model.bind_tools([read_record, ping])

    def call_model(state: MnemonTurnState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    def route(state: MnemonTurnState) -> str:
        return "tools" if state["messages"][-1].tool_calls else "end"

    builder = StateGraph(MnemonTurnState)
    builder.add_node("begin", mem.turn_graph(model=bound))
    builder.add_node("mnemos", mem.model_call_graph(model=bound))
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode([read_record, ping]))
    builder.add_node("end", mem.turn_graph(model=bound))
    builder.add_edge(START, "begin")
    builder.add_edge("begin", "mnemos")
    builder.add_edge("mnemos", "model")
    builder.add_conditional_edges("model", route, {"tools": "tools", "end": "end"})
    builder.add_edge("tools", "mnemos")
    builder.add_edge("end", END)
    graph = builder.compile(checkpointer=mem.checkpointer())
    out = graph.invoke({"messages": [HumanMessage(REQUEST)]}, {"configurable": {"thread_id": "g"}})
    assert out["messages"][-1].content == FINAL
    reading = script.seen[READS + 1]
    assert reading is not None
    assert reading.state == "EMERGENCY"
    (note,) = _forms(model.calls[READS + 1], "resume")
    assert "nearly full, 99% of 8,000 tokens used (model profile): " in note
    with pytest.raises(InvalidInputError, match="chat model"):
        mem.model_call_graph(model="openai:gpt-4.1")
    mem.close()


def test_the_callback_handler_keeps_the_models_window_with_each_reading(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    model = _model(NearFull(mem, "cb"), PROFILE_8K)
    handler = MnemosSignalHandler(mem.mnemos, model=model)
    agent = create_agent(model, tools=[read_record, ping])  # no middleware: callbacks only
    agent.invoke(
        {"messages": [HumanMessage(REQUEST)]},
        {"configurable": {"thread_id": "cb"}, "callbacks": [handler]},
    )
    reading = mem.mnemos.fatigue("cb")  # the newest usage: 100 tokens of the final answer
    assert reading.window == ContextWindow(tokens=8_000, source="model profile")
    assert reading.token_utilization == pytest.approx(100 / 8_000)
    with pytest.raises(InvalidInputError, match="not both"):
        MnemosSignalHandler(mem.mnemos, model=model, context_window_tokens=8_000)
    with pytest.raises(InvalidInputError, match="chat model"):
        MnemosSignalHandler(mem.mnemos, model={"max_input_tokens": 8_000})
    with pytest.raises(InvalidInputError, match="context_window_tokens"):
        MnemosSignalHandler(mem.mnemos, context_window_tokens=0)
    mem.close()


def test_profiles_are_read_as_langchain_declares_them() -> None:
    fake = GenericFakeChatModel(messages=iter([]), profile=PROFILE_8K)
    assert declared_window(fake) == 8_000
    assert declared_window(fake.bind(stop=["x"])) == 8_000  # a bound model: its model's profile
    assert declared_window(GenericFakeChatModel(messages=iter([]))) is None
    assert declared_window(GenericFakeChatModel(messages=iter([]), profile={"name": "x"})) is None
    assert (
        declared_window(GenericFakeChatModel(messages=iter([]), profile={"max_input_tokens": 0}))
        is None
    )
    assert declared_window(object()) is None


# --- the settings ------------------------------------------------------------------------------


def test_context_window_is_validated_and_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert MnemosConfig().context_window is None
    with pytest.raises(InvalidInputError, match=r"mnemos\.context_window"):
        MnemonConfig(mnemos={"context_window": 999})
    with pytest.raises(InvalidInputError, match=r"mnemos\.context_window"):
        MnemonConfig(mnemos={"context_window": 10_000_001})
    monkeypatch.setenv("MNEMON_MNEMOS__CONTEXT_WINDOW", "64000")
    assert MnemonConfig().mnemos.context_window == 64_000
    monkeypatch.setenv("MNEMON_MNEMOS__CONTEXT_WINDOW", "12")
    with pytest.raises(InvalidInputError, match="MNEMON_MNEMOS__CONTEXT_WINDOW"):
        MnemonConfig()


# --- stored readings keep their window (SQLite and PostgreSQL) -----------------------------------


def _service(url: str, **settings: Any) -> Mnemos:
    ensure_sqlite_directory(url)
    config = MnemosConfig(git_state=False, **settings)
    return Mnemos(Database(create_engine(url), owns_engine=True), config)


def test_logged_readings_keep_the_window_they_were_measured_against(database_url: str) -> None:
    mnemos = _service(database_url)
    window = ContextWindow(tokens=8_000, source="model profile")
    mnemos.record_usage("t", NEAR_FULL, context_window=window, call_id="c1")
    taken = mnemos.fatigue("t")
    assert (taken.window, taken.state) == (window, "EMERGENCY")
    mnemos.db.dispose()
    # Another host with another default reads the history against the stored window.
    other = _service(database_url, context_window_tokens=50_000)
    (logged,) = other.fatigue_history("t")
    assert (logged.window, logged.tokens_used) == (window, NEAR_FULL)
    assert context_use(logged) == "99% of 8,000 tokens used (model profile)"
    (overview,) = other.status("t")
    assert overview.last_fatigue is not None
    assert overview.last_fatigue.window == window
    # A reading without a model falls back to the window stored with the token reading...
    assert other.fatigue("t", log=False).window == window
    # ...and the setting overrides every other window.
    override = _service(database_url, context_window=100_000)
    assert override.fatigue("t", log=False).window.label == "100,000 tokens (mnemos.context_window)"
    with pytest.raises(InvalidInputError, match="window"):
        override.maintain("t", window=-1)
    other.db.dispose()
    override.db.dispose()


def test_a_version_2_database_gains_the_window_columns(database_url: str) -> None:
    """A database made before issue 31 is upgraded in place; its old rows read as before."""
    db = Database(create_engine(database_url), owns_engine=True)
    db.setup(MIGRATIONS[:2])
    with db.write() as conn:  # what versions 1 and 2 created: no window columns yet
        for table, column in (
            ("mnemos_signals", "window_source"),
            ("mnemos_fatigue_log", "tokens_used"),
            ("mnemos_fatigue_log", "context_window"),
            ("mnemos_fatigue_log", "window_source"),
        ):
            conn.execute(sa.text(f"ALTER TABLE {table} DROP COLUMN {column}"))
        conn.execute(
            sa.text(
                "INSERT INTO mnemos_fatigue_log (task_id, token_utilization, scope_scatter, "
                "reread_ratio, error_density, composite, state, tool_calls, tokens_estimated, "
                "computed_at) VALUES ('old', 0.5, 0, 0, 0, 0.2, 'FLOW', 0, false, 1.0)"
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO mnemos_signals (task_id, kind, call_id, read_only, status, tokens, "
                "context_window, estimated, created_at) "
                "VALUES ('old', 'usage', 'u1', false, 'ok', 900, 1000, false, 1.0)"
            )
        )
    db.dispose()
    mnemos = _service(database_url, context_window_tokens=20_000)
    (legacy,) = mnemos.fatigue_history("old")  # reading migrates the schema first
    assert legacy.window == ContextWindow(tokens=20_000, source="default")
    assert legacy.token_utilization == 0.5  # as it was logged
    # The old usage row kept a number the caller gave: it is still the window it is read against.
    assert mnemos.fatigue("old").window == ContextWindow(tokens=1_000, source="given")
    with mnemos.db.read() as conn:
        versions = conn.execute(
            sa.text("SELECT version FROM mnemon_schema_version WHERE component = 'mnemos'")
        ).scalars()
        assert sorted(versions) == [1, 2, 3]
    assert mnemos.db.setup(MIGRATIONS) == []
    mnemos.db.dispose()
