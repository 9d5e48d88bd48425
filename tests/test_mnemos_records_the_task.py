"""Mnemos records the task by itself: a create_agent run doing ordinary work with application
tools (the user's request in content blocks) leaves a resume block with the goal, the user's
constraint verbatim and the results — and nobody called ``add_node``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from langgraph_mnemon import Mnemon
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

GOAL = "Make the slugify helper in src/text/slug.py strip accents."
CONSTRAINT = "Do not change the public signature of slugify()."


def _workspace(root: Path) -> Path:
    src = root / "src" / "text"
    src.mkdir(parents=True)
    (src / "slug.py").write_text("def slugify(s):\n    return s.lower().replace(' ', '-')\n")
    tests = root / "tests"
    tests.mkdir()
    (tests / "test_slug.py").write_text(
        "import sys; sys.path.insert(0, 'src')\n"
        "from text.slug import slugify\n\n"
        "def test_ascii():\n    assert slugify('A b') == 'a-b'\n"
    )
    return root


def _app_tools(workspace: Path) -> list[Any]:
    @tool
    def read_file(path: str) -> str:
        """Read a file of the workspace."""
        return (workspace / path).read_text()

    @tool
    def write_file(path: str, content: str) -> str:
        """Write a file of the workspace."""
        (workspace / path).write_text(content)
        return f"wrote {len(content)} characters to {path}"

    @tool
    def run_tests(target: str) -> str:
        """Run pytest on a target."""
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", target],
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = [line for line in done.stdout.splitlines() if line.strip()]
        return f"exit code {done.returncode}: {lines[-1] if lines else ''}"

    return [read_file, write_file, run_tests]


FIXED = (
    "import unicodedata\n\n"
    "def slugify(s):\n"
    "    s = unicodedata.normalize('NFKD', s).encode('ascii', 'ignore').decode()\n"
    "    return s.lower().replace(' ', '-')\n"
)


def test_a_run_records_goal_constraint_and_results(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path / "ws")
    mem = Mnemon.open(tmp_path / "root", workspace=workspace)
    added: list[Any] = []
    real_add = mem.mnemos.add_node

    def spy(*args: Any, **kwargs: Any) -> Any:  # counts calls, then does the real thing
        added.append(args)
        return real_add(*args, **kwargs)

    mem.mnemos.add_node = spy  # type: ignore[method-assign]
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                "Plan: read the helper, patch it with unicodedata, run the tests.",
                tool_calls=[
                    {"name": "read_file", "args": {"path": "src/text/slug.py"}, "id": "c1"}
                ],
            ),
            tool_call("write_file", {"path": "src/text/slug.py", "content": FIXED}, "c2"),
            tool_call("run_tests", {"target": "tests/test_slug.py"}, "c3"),
            "slugify now strips accents; the tests pass.",
        ]
    )
    agent = create_agent(
        model,
        tools=[*_app_tools(workspace), *mem.tools()],
        middleware=[mem.middleware()],
        checkpointer=mem.checkpointer(),
    )
    request = HumanMessage(
        content=[
            {"type": "text", "text": f"{GOAL} {CONSTRAINT}"},
            {"type": "text", "text": "Thanks!"},
        ]
    )
    out = agent.invoke({"messages": [request]}, {"configurable": {"thread_id": "slug"}})
    assert out["messages"][-1].content == "slugify now strips accents; the tests pass."
    assert "exit code 0" in str(out["messages"][-2].content)  # the tests really ran

    resume = mem.mnemos.resume("slug")
    assert GOAL in resume
    assert CONSTRAINT in resume  # verbatim
    assert "run_tests(target=tests/test_slug.py) -> ok: exit code 0" in resume
    assert "Answered: slugify now strips accents; the tests pass." in resume
    assert added == []  # nobody called add_node
    nodes = mem.mnemos.nodes("slug", status="all")
    assert nodes
    assert {n.origin for n in nodes} == {"derived"}
    by_type = {n.type for n in nodes if n.status == "active"}
    assert by_type == {"goal", "constraint", "result", "context", "working"}
    (goal,) = [n for n in nodes if n.type == "goal"]
    assert goal.content == GOAL  # the courtesy "Thanks!" is no part of it
    (context,) = [n for n in nodes if n.type == "context"]
    assert context.content.startswith("Read src/text/slug.py: def slugify(s):")
    assert context.scope_tags == ("src", "text")
    mem.close()
