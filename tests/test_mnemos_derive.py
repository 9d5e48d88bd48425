"""Nodes from activity: goal, constraints, results, context and working nodes derived from a
run's messages without a model — each rule, idempotency, caps, restated goals, Chinese
constraints, model goals first, dict-shaped and LangChain messages, and the cost of a pass."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.memory_layers.messages import read_messages
from langgraph_mnemon.memory_layers.mnemos import Database, MnemoNode, Mnemos, create_engine
from langgraph_mnemon.memory_layers.mnemos._derive import derive_into, goal_text, is_constraint
from langgraph_mnemon.memory_layers.mnemos.store import fetch_nodes

TASK = "task-1"
REQUEST = (
    "Fix the CSV importer in src/io so quoted fields parse.  "
    "Never touch the main branch. Make sure every test still passes!"
)


def _mnemos(url: str, workspace: Path, **config: Any) -> Mnemos:
    clock = iter(range(1_000_000, 2_000_000, 10))
    return Mnemos(
        Database(create_engine(url)),
        MnemosConfig(**config),
        workspace=workspace,
        clock=lambda: next(clock),
    )


@pytest.fixture
def mnemos(database_url: str, tmp_path: Path) -> Iterator[Mnemos]:
    """Mnemos on SQLite and on PostgreSQL (a fresh schema each)."""
    m = _mnemos(database_url, tmp_path)
    yield m
    m.db.engine.dispose()


def _call(name: str, args: dict[str, Any], call_id: str, text: str = "") -> AIMessage:
    return AIMessage(text, tool_calls=[{"name": name, "args": args, "id": call_id}])


def _nodes(m: Mnemos, type_: str, status: str = "active", task: str = TASK) -> list[MnemoNode]:
    """Nodes in the order they were created."""
    with m.db.read() as conn:
        return fetch_nodes(conn, task_id=task, types=[type_], statuses=[status], order="seq")


def _texts(m: Mnemos, type_: str) -> list[str]:
    return [n.content for n in _nodes(m, type_)]


def _work() -> list[BaseMessage]:
    return [
        SystemMessage("You are a coding agent."),
        HumanMessage(content=[{"type": "text", "text": REQUEST}]),
        _call("read_file", {"path": "src/io/csv.py"}, "c1", "First I read the importer."),
        ToolMessage("def parse(line):\n    return line.split(',')", tool_call_id="c1"),
        _call("run_tests", {"command": "pytest -q tests/test_csv.py", "verbose": True}, "c2"),
        ToolMessage("Error: 2 failed, 5 passed", tool_call_id="c2", name="run_tests"),
        _call("mnemon_recall", {"query": "csv"}, "c3"),
        ToolMessage('{"results": []}', tool_call_id="c3", name="mnemon_recall"),
        AIMessage("Quoted fields now parse; all tests pass.", id="answer-1"),
    ]


# ------------------------------------------------------------------------------------ rules


def test_goal_and_constraints_come_from_the_first_request(mnemos: Mnemos) -> None:
    mnemos.derive(TASK, _work())
    goals = _nodes(mnemos, "goal")
    assert [g.content for g in goals] == ["Fix the CSV importer in src/io so quoted fields parse."]
    assert goals[0].origin == "derived"
    # verbatim, in the order the user said them
    assert _texts(mnemos, "constraint") == [
        "Never touch the main branch.",
        "Make sure every test still passes!",
    ]
    assert {n.origin for n in mnemos.nodes(TASK)} == {"derived"}


def test_every_sentence_a_constraint_gives_the_whole_text_as_goal() -> None:
    every = "Never push to main.  Always run ruff."
    assert goal_text(every) == "Never push to main. Always run ruff."
    assert is_constraint("Don’t rename the module.")  # a typographic apostrophe too
    assert not is_constraint("The importer is slow on large files.")
    assert len(goal_text("word " * 200)) == 300


def test_chinese_constraints_are_kept_verbatim(mnemos: Mnemos) -> None:
    request = "修复导入器的编码问题。不要修改配置文件。必须保留旧的接口！"
    mnemos.derive(TASK, [HumanMessage(request)])
    assert _texts(mnemos, "goal") == ["修复导入器的编码问题。"]
    assert _texts(mnemos, "constraint") == ["不要修改配置文件。", "必须保留旧的接口！"]


def test_results_name_the_tool_its_key_args_and_the_outcome(mnemos: Mnemos) -> None:
    mnemos.derive(TASK, _work())
    assert _texts(mnemos, "result") == [
        "read_file(path=src/io/csv.py) -> ok: def parse(line):",
        (
            "run_tests(command=pytest -q tests/test_csv.py, verbose=True) -> failed: "
            "Error: 2 failed, 5 passed"
        ),
        "Answered: Quoted fields now parse; all tests pass.",
    ]  # mnemon_recall is the plugin's own tool: no result


def test_a_long_result_is_bounded_and_an_unanswered_call_is_no_result(mnemos: Mnemos) -> None:
    messages = [
        HumanMessage("Refactor the parser."),
        _call("grep", {"pattern": "x" * 500, "path": "src"}, "g1"),
        ToolMessage("y" * 1000, tool_call_id="g1", name="grep"),
        _call("edit_file", {"path": "src/a.py"}, "e1"),  # no answer yet
    ]
    mnemos.derive(TASK, messages)
    (result,) = _texts(mnemos, "result")
    assert result.startswith("grep(path=src, pattern=xxx")
    assert len(result) <= 200


def test_read_only_tools_give_context_with_scope_tags(mnemos: Mnemos) -> None:
    messages = [
        HumanMessage("Look around."),
        _call("read_file", {"path": "src/io/csv.py"}, "r1"),
        ToolMessage("import csv", tool_call_id="r1"),
        _call("fetch_url", {"url": "https://example.com/spec"}, "r2"),
        ToolMessage("The spec says quotes escape quotes.", tool_call_id="r2"),
        _call("get_ticket", {"ticket_id": 42}, "r3"),
        ToolMessage("Ticket 42: quoted fields break", tool_call_id="r3"),
        _call("write_file", {"path": "src/io/new.py"}, "w1"),  # not a read
        ToolMessage("written", tool_call_id="w1"),
        _call("read_file", {"path": "src/missing.py"}, "r4"),  # a failed read is no context
        ToolMessage("Error: no such file", tool_call_id="r4"),
    ]
    mnemos.derive(TASK, messages)
    nodes = _nodes(mnemos, "context")
    assert [n.content for n in nodes] == [
        "Read src/io/csv.py: import csv",
        "Read https://example.com/spec: The spec says quotes escape quotes.",
        "Read get_ticket ticket_id=42: Ticket 42: quoted fields break",
    ]
    assert nodes[0].scope_tags == ("src", "io")
    assert nodes[1].scope_tags == ()


def test_reading_a_resource_again_rewrites_its_node(mnemos: Mnemos) -> None:
    first = [
        HumanMessage("Fix it."),
        _call("read_file", {"path": str(Path(mnemos.workspace or ".") / "src/a.py")}, "r1"),
        ToolMessage("old body", tool_call_id="r1"),
    ]
    mnemos.derive(TASK, first)
    (before,) = _nodes(mnemos, "context")
    again = [
        *first,
        _call("read_file", {"path": "src/a.py", "offset": 10}, "r2"),  # other args, same file
        ToolMessage("new body", tool_call_id="r2"),
    ]
    result = mnemos.derive(TASK, again)
    assert (result.created, result.updated) == (1, 1)  # the new read's result; the context node
    (after,) = _nodes(mnemos, "context")
    assert after.id == before.id
    assert after.content == "Read src/a.py: new body"
    assert after.access_count == before.access_count + 1
    assert after.last_accessed > before.last_accessed


def test_one_working_node_holds_the_latest_plan(mnemos: Mnemos) -> None:
    messages: list[BaseMessage] = [
        HumanMessage("Fix it."),
        _call("read_file", {"path": "a.py"}, "r1", "Plan: read a.py, then patch it."),
        ToolMessage("body", tool_call_id="r1"),
    ]
    mnemos.derive(TASK, messages)
    (first,) = _nodes(mnemos, "working")
    messages += [
        AIMessage(
            content=[
                {"type": "thinking", "thinking": "The split ignores quotes; use the csv module."},
                {"type": "tool_use", "id": "e1", "name": "edit_file", "input": {"path": "a.py"}},
            ]
        ),
        ToolMessage("edited", tool_call_id="e1"),
        _call("run_tests", {}, "t1"),  # says nothing: the plan stays
        ToolMessage("ok", tool_call_id="t1"),
    ]
    assert mnemos.derive(TASK, messages).updated == 1
    (second,) = _nodes(mnemos, "working")
    assert second.id == first.id
    assert second.content == "The split ignores quotes; use the csv module."


# ------------------------------------------------------------------------------------ passes


def test_the_same_list_again_changes_nothing(mnemos: Mnemos) -> None:
    messages = _work()
    first = mnemos.derive(TASK, messages)
    assert first.created == 1 + 2 + 3 + 1 + 1  # goal, constraints, results, context, working
    assert len(first.created_ids) == first.created
    again = mnemos.derive(TASK, messages)
    assert (again.created, again.updated, again.retired) == (0, 0, 0)
    grown = mnemos.derive(
        TASK, [*messages, HumanMessage("Thanks. Also never log secrets."), AIMessage("Noted.")]
    )
    assert (grown.created, grown.updated) == (2, 0)  # one constraint, one answer; same goal
    assert len(_nodes(mnemos, "goal")) == 1


def test_a_restated_task_supersedes_the_derived_goal(mnemos: Mnemos) -> None:
    messages: list[BaseMessage] = [HumanMessage(REQUEST), AIMessage("On it.")]
    mnemos.derive(TASK, messages)
    messages += [HumanMessage("Actually, port the JSON importer instead. Keep it small.")]
    result = mnemos.derive(TASK, messages)
    assert (result.created, result.retired) == (1, 1)
    assert _texts(mnemos, "goal") == ["Actually, port the JSON importer instead. Keep it small."]
    (old,) = _nodes(mnemos, "goal", status="compressed")
    assert old.summary == "Superseded: Fix the CSV importer in src/io so quoted fields parse."
    assert mnemos.derive(TASK, messages).created == 0
    messages += [HumanMessage("改成只修复 JSON 的日期解析。")]  # a Chinese cue; 只能 is not in it
    mnemos.derive(TASK, messages)
    assert _texts(mnemos, "goal") == ["改成只修复 JSON 的日期解析。"]
    assert len(_nodes(mnemos, "goal", status="compressed")) == 2


def test_a_goal_of_another_origin_blocks_the_derived_goal(mnemos: Mnemos) -> None:
    m = mnemos
    m.curate(TASK, "set_goal", "Ship the importer rewrite")
    m.derive(TASK, [HumanMessage(REQUEST), HumanMessage("Actually, do the JSON one instead.")])
    assert [(g.content, g.origin) for g in _nodes(m, "goal")] == [
        ("Ship the importer rewrite", "model")
    ]
    # a derived goal first, then the agent's own: derivation leaves both alone afterwards
    m.add_node("t2", "goal", "The agent's goal")
    m.derive("t2", [HumanMessage("Fix the docs. Never break links.")])
    goals = _nodes(m, "goal", task="t2")
    assert [(g.content, g.origin) for g in goals] == [("The agent's goal", "agent_generated")]
    assert [c.content for c in _nodes(m, "constraint", task="t2")] == ["Never break links."]


def test_nodes_of_other_origins_are_never_changed(mnemos: Mnemos) -> None:
    agent = mnemos.add_node(TASK, "constraint", "Never touch the main branch")
    working = mnemos.add_node(TASK, "working", "The agent's own notes")
    mnemos.derive(TASK, _work())
    constraints = _nodes(mnemos, "constraint")
    # the same words are not derived twice (end punctuation and case do not matter)
    assert [(c.content, c.origin) for c in constraints] == [
        ("Never touch the main branch", "agent_generated"),
        ("Make sure every test still passes!", "derived"),
    ]
    assert mnemos.get_node(agent.id) == agent
    assert mnemos.get_node(working.id) == working


def test_plugin_and_system_messages_are_never_the_user(mnemos: Mnemos) -> None:
    resume = HumanMessage(
        "=== MNEMOS: CONTEXT RESTORED === Never forget the goal.",
        additional_kwargs={"mnemon": {"source": {"plugin": "mnemon", "form": "resume"}}},
    )
    messages = [SystemMessage("Always answer in English."), resume, HumanMessage("Tidy the docs.")]
    mnemos.derive(TASK, messages)
    assert _texts(mnemos, "goal") == ["Tidy the docs."]
    assert _texts(mnemos, "constraint") == []


def test_caps_retire_the_oldest_derived_nodes(database_url: str, tmp_path: Path) -> None:
    caps = {"max_constraint_nodes": 2, "max_result_nodes": 3, "max_context_nodes": 2}
    m = _mnemos(database_url, tmp_path, **caps)
    messages: list[BaseMessage] = [
        HumanMessage("Clean up. Never use tabs. Always sort imports. Do not rename files.")
    ]
    for i in range(5):
        messages += [
            _call("read_file", {"path": f"src/m{i}.py"}, f"r{i}"),
            ToolMessage(f"body {i}", tool_call_id=f"r{i}"),
        ]
    result = m.derive(TASK, messages)
    assert _texts(m, "constraint") == ["Always sort imports.", "Do not rename files."]
    retired = _nodes(m, "constraint", status="compressed")
    assert [c.summary for c in retired] == ["Never use tabs."]
    assert [r.content for r in _nodes(m, "result")] == [
        f"read_file(path=src/m{i}.py) -> ok: body {i}" for i in (2, 3, 4)
    ]
    assert len(_nodes(m, "result", status="compressed")) == 2
    assert _texts(m, "context") == ["Read src/m3.py: body 3", "Read src/m4.py: body 4"]
    assert len(_nodes(m, "context", status="evicted")) == 3
    assert result.retired == 1 + 2 + 3
    assert m.derive(TASK, messages).model_dump(exclude={"created_ids"}) == {
        "created": 0,
        "updated": 0,
        "retired": 0,
    }  # nothing retired comes back from the same list
    # Reading m0 again is a new read: its node comes back, the least recently read one goes.
    messages += [
        _call("read_file", {"path": "src/m0.py"}, "again"),
        ToolMessage("v2", tool_call_id="again"),
    ]
    m.derive(TASK, messages)
    assert sorted(_texts(m, "context")) == ["Read src/m0.py: v2", "Read src/m4.py: body 4"]
    m.db.engine.dispose()


def test_dict_shaped_messages_derive_the_same_nodes(mnemos: Mnemos) -> None:
    m = mnemos
    messages = [
        {"role": "user", "content": [{"type": "input_text", "text": REQUEST}]},
        {
            "role": "assistant",
            "content": "Reading it.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "src/io/csv.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "import csv"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
    ]
    m.derive(TASK, messages)
    assert _texts(m, "goal") == ["Fix the CSV importer in src/io so quoted fields parse."]
    assert len(_texts(m, "constraint")) == 2
    assert _texts(m, "result") == [
        "read_file(path=src/io/csv.py) -> ok: import csv",
        "Answered: Done.",
    ]
    assert _texts(m, "context") == ["Read src/io/csv.py: import csv"]
    assert _texts(m, "working") == ["Reading it."]


def test_observe_messages_derives_unless_switched_off(tmp_path: Path) -> None:
    off = _mnemos(f"sqlite:///{tmp_path / 'mnemos.db'}", tmp_path, derive_nodes=False)
    off.observe_messages(TASK, _work())
    assert off.nodes(TASK) == []
    off.observe_messages(TASK, _work(), derive=True)
    assert len(off.nodes(TASK)) == 8
    off.db.engine.dispose()


# ------------------------------------------------------------------------------------ cost


def _long_run(steps: int) -> list[BaseMessage]:
    messages: list[BaseMessage] = [HumanMessage(REQUEST)]
    for i in range(steps):
        name = "read_file" if i % 3 else "run_tests"
        args = {"path": f"src/pkg{i % 7}/m{i}.py"} if i % 3 else {"command": "pytest"}
        messages.append(_call(name, args, f"c{i}", f"Step {i}: keep going."))
        messages.append(ToolMessage(f"output {i}\nmore", tool_call_id=f"c{i}"))
    return messages


def test_a_300_message_list_derives_in_a_bounded_number_of_statements(
    mnemos: Mnemos, capsys: pytest.CaptureFixture[str]
) -> None:
    messages = read_messages(_long_run(150))
    grown = read_messages(_long_run(160))
    assert len(messages) == 301
    mnemos.setup()
    statements: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement.split()[0].upper())

    def derive(read: Any) -> tuple[list[str], Any, float]:
        start = time.perf_counter()
        with mnemos.db.write() as conn:
            before = len(statements)
            result = derive_into(conn, TASK, read, mnemos.config, workspace=None, moment=1.0)
            used = statements[before:]
        return used, result, (time.perf_counter() - start) * 1000

    sa.event.listen(mnemos.db.engine, "before_cursor_execute", count)
    try:
        # An empty task: one SELECT and one INSERT (executemany), whatever the list's length;
        # the nodes beyond the caps are inserted retired already.
        used, first, first_ms = derive(messages)
        assert used == ["SELECT", "INSERT"]
        assert first.created > 100
        assert first.retired > 0
        used, again, again_ms = derive(messages)  # nothing to do: the one read
        assert used == ["SELECT"]
        assert (again.created, again.updated, again.retired) == (0, 0, 0)
        used, more, _ = derive(grown)  # new nodes, older ones retired: one UPDATE for all
        assert used == ["SELECT", "INSERT", "UPDATE"]
        assert more.created > 0
        assert more.retired > 0
    finally:
        sa.event.remove(mnemos.db.engine, "before_cursor_execute", count)
    assert len(_nodes(mnemos, "result")) == mnemos.config.max_result_nodes
    assert len(_nodes(mnemos, "context")) == mnemos.config.max_context_nodes
    assert len(_nodes(mnemos, "working")) == 1
    with capsys.disabled():
        print(f"\nderive 301 messages: first pass {first_ms:.1f} ms, same list {again_ms:.1f} ms")


def test_courtesies_are_no_part_of_the_goal() -> None:
    assert goal_text("Fix the importer. Thanks!") == "Fix the importer."
    assert goal_text("谢谢！修复导入器。") == "修复导入器。"
    assert goal_text("Thanks!") == "Thanks!"  # nothing else to go by
