"""CheckpointNodes, the cooldown, the resume Markdown, the HandoffNode and the mnemos CLI."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from langgraph_mnemon.cli import app
from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.errors import InvalidInputError, NotFoundError
from langgraph_mnemon.memory_layers.mnemos import (
    CheckpointRecord,
    Database,
    GitState,
    Mnemos,
    NodeSummary,
    RecentFile,
    TaskSummary,
    create_engine,
    parse_resume,
)
from langgraph_mnemon.memory_layers.mnemos._git import collect_git_state
from langgraph_mnemon.memory_layers.mnemos._resume import compress_summary, render_resume


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mnemos(tmp_path: Path, clock: Clock) -> Iterator[Mnemos]:
    db = Database(create_engine(tmp_path / "m.db"), owns_engine=True)
    service = Mnemos(db, MnemosConfig(git_state=False), workspace=tmp_path, clock=clock)
    yield service
    db.dispose()


def _populate(m: Mnemos, clock: Clock) -> None:
    m.add_node("task", "goal", "Implement password reset")
    m.add_node("other", "goal", "Unrelated goal of another task")
    m.add_node("task", "constraint", "INV: API backward compatibility")
    m.add_node("task", "constraint", "POST: every endpoint requires a token")
    for i in range(4):
        clock.now += 1
        m.add_node("task", "result", f"Result {i} done")
    clock.now += 1
    m.add_node("task", "working", "Add the reset e-mail template")
    clock.now += 1
    m.add_node("task", "working", "Considering e-mail vs SMS codes")
    m.record_tool_call("task", "edit_file", {"path": "src/auth/reset.py"}, call_id="1", status="ok")
    m.record_tool_call("task", "edit_file", {"path": "src/auth/reset.py"}, call_id="2", status="ok")
    m.record_tool_call(
        "task", "read_file", {"path": "src/auth/models.py"}, call_id="3", status="ok"
    )
    m.record_tool_call("task", "bash", {"cmd": "pytest"}, call_id="4", status="error")


def test_checkpoint_contents(mnemos: Mnemos, clock: Clock) -> None:
    _populate(mnemos, clock)
    mnemos.consolidate("task")  # compresses results 0-2
    receipt = mnemos.checkpoint("task")
    assert receipt.status == "committed"
    assert receipt.changed
    cp = receipt.checkpoint
    s = cp.summary
    assert cp.source == "mnemos"
    assert cp.has_summary
    assert s.goal == "Implement password reset"  # only this task's goal
    assert s.constraints == (
        "INV: API backward compatibility",
        "POST: every endpoint requires a token",
    )
    # compressed results stay, as summaries, in order
    assert s.results == tuple(f"Result {i} done" for i in range(4))
    # the sub-goal is the heaviest working node and is not repeated in working memory
    assert s.current_subgoal in ("Add the reset e-mail template", "Considering e-mail vs SMS codes")
    assert s.working_memory is not None
    assert s.current_subgoal not in s.working_memory
    assert s.recent_files[0] == RecentFile(path="src/auth/reset.py", edits=2, reads=0)
    assert RecentFile(path="src/auth/models.py", edits=0, reads=1) in s.recent_files
    assert s.narrative is not None
    assert "Errors: 1/4" in s.narrative
    assert cp.fatigue == s.fatigue
    assert cp.fatigue_state == "FLOW"
    assert cp.node_summary is not None
    assert cp.node_summary.compressed == 3
    assert mnemos.latest_checkpoint("task") == cp
    assert [c.id for c in mnemos.checkpoints("task")] == [cp.id]


def test_cooldown_and_force(mnemos: Mnemos, clock: Clock) -> None:
    mnemos.add_node("task", "goal", "g")
    first = mnemos.checkpoint("task")
    clock.now += 60
    skipped = mnemos.checkpoint("task")
    assert skipped.status == "skipped"
    assert not skipped.changed
    assert skipped.checkpoint.id == first.checkpoint.id
    assert "cooldown" in skipped.message
    forced = mnemos.checkpoint("task", force=True)
    assert forced.status == "committed"
    assert forced.checkpoint.id != first.checkpoint.id
    clock.now += 121
    assert mnemos.checkpoint("task").status == "committed"
    assert len(mnemos.checkpoints("task")) == 3


def test_cooldown_and_retention_are_configurable(tmp_path: Path, clock: Clock) -> None:
    db = Database(create_engine(tmp_path / "c.db"))
    cfg = MnemosConfig(checkpoint_cooldown_seconds=0, checkpoint_keep=3, git_state=False)
    m = Mnemos(db, cfg, clock=clock)
    ids = [m.checkpoint("t").checkpoint.id for _ in range(5)]
    assert [c.id for c in m.checkpoints("t")] == ids[:1:-1]  # the newest three


def test_resume_markdown_sections_and_order(mnemos: Mnemos, clock: Clock) -> None:
    _populate(mnemos, clock)
    mnemos.consolidate("task")
    cp = mnemos.checkpoint("task").checkpoint
    text = mnemos.resume("task")
    lines = text.splitlines()
    block = parse_resume(text)
    assert block is not None
    tag = f" [boundary={block.boundary}]"
    assert lines[0] == "## Mnemos Session Resume" + tag
    assert lines[2:6] == [
        f"Checkpoint: {cp.id[:8]}",
        "Created: 2023-11-14T22:13:26Z",
        f"Fatigue at checkpoint: {cp.fatigue:.2f}",
        "",
    ]
    assert lines[-1] == "## End of Mnemos Session Resume" + tag
    titles = [
        "Goal",
        "Active Constraints (DO NOT VIOLATE)",
        "What You Were Working On",
        "Current Sub-Goal",
        "Working Memory",
        "Progress So Far",
        "Key Files (from recent activity)",
        "MnemoGraph Summary",
    ]
    assert [s.title for s in block.sections] == titles
    assert [line for line in lines if line.startswith("### ")] == [f"### {t}{tag}" for t in titles]
    assert "- INV: API backward compatibility" in lines
    assert "- src/auth/reset.py (edited 2x)" in lines
    assert "- src/auth/models.py (read 1x)" in lines
    assert "Nodes: 6 active, 3 compressed, 9 total" in lines
    # every section is followed by a blank line, and the text ends with one newline
    for i, line in enumerate(lines):
        if line.startswith("### ") and i > 0:
            assert lines[i - 1] == ""
    assert text.endswith("\n")
    assert not text.endswith("\n\n")


def test_resume_omits_empty_sections(mnemos: Mnemos) -> None:
    mnemos.checkpoint("bare")
    text = mnemos.resume("bare")
    block = parse_resume(text)
    assert block is not None
    assert [(s.title, s.text) for s in block.sections] == [("Goal", "No goal recorded")]
    for absent in (
        "Constraints",
        "Working On",
        "Sub-Goal",
        "Working Memory",
        "Progress",
        "Key Files",
        "Git State",
        "MnemoGraph",
    ):
        assert absent not in text


def test_resume_without_checkpoint_is_not_found(mnemos: Mnemos) -> None:
    with pytest.raises(NotFoundError, match="no checkpoint"):
        mnemos.resume("nothing-here")
    with pytest.raises(InvalidInputError):
        mnemos.resume("")


def test_render_git_state_and_helpers() -> None:
    record = CheckpointRecord(
        id="abcdef0123456789", task_id="t", created_at="2026-01-01T00:00:00Z", source="mnemos"
    )
    summary = TaskSummary(
        goal="g",
        git_state=GitState(branch="feat/x", uncommitted=("a.py",), untracked=("new.py",)),
        fatigue=0.625,
    )
    text = render_resume(record, summary, NodeSummary())
    block = parse_resume(text)
    assert block is not None
    git_state = {s.title: s.text for s in block.sections}["Git State"]
    assert git_state == "Branch: feat/x\nUncommitted files:\n  - a.py\nUntracked files:\n  - new.py"
    assert "Fatigue at checkpoint: 0.62" in text
    clean = render_resume(record, TaskSummary(git_state=GitState(branch="main")), None)
    assert "Working tree clean." in clean
    no_branch = render_resume(record, TaskSummary(git_state=GitState()), None)
    assert "Git State" not in no_branch
    assert compress_summary("   ") == "(empty result)"
    assert compress_summary("", "kept") == "kept"
    early_space = "a" * 150 + " " + "b" * 100  # the space is not in the last quarter
    assert compress_summary(early_space) == early_space[:200] + "..."
    late_space = "a" * 170 + " " + "b" * 100  # cut back to the word boundary
    assert compress_summary(late_space) == "a" * 170 + "..."
    words = ("word " * 60).strip()
    cut = compress_summary(words)
    assert cut.endswith("...")
    assert not cut[:-3].endswith(" ")
    assert len(cut) <= 203


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_state_lists_untracked_files(tmp_path: Path, clock: Clock) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "feat/reset")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (repo / "tracked.py").write_text("a\n")
    (repo / "staged.py").write_text("a\n")
    git("add", "tracked.py", "staged.py")
    git("commit", "-q", "-m", "init")
    (repo / "tracked.py").write_text("b\n")
    (repo / "staged.py").write_text("b\n")
    git("add", "staged.py")
    (repo / "brand_new.py").write_text("c\n")
    state = collect_git_state(repo)
    assert state == GitState(
        branch="feat/reset",
        uncommitted=("tracked.py",),
        staged=("staged.py",),
        untracked=("brand_new.py",),
    )
    assert collect_git_state(tmp_path / "nowhere") is None
    db = Database(create_engine(tmp_path / "g.db"))
    m = Mnemos(db, MnemosConfig(git_state=True), workspace=repo, clock=clock)
    m.add_node("t", "goal", "g")
    m.checkpoint("t")
    text = m.resume("t")
    assert "Branch: feat/reset" in text
    assert "Untracked files:\n  - brand_new.py" in text


def test_handoff_node_is_persisted(mnemos: Mnemos, clock: Clock) -> None:
    _populate(mnemos, clock)
    mnemos.add_node("task", "skill", "Run pytest -x before committing")
    mnemos.fatigue("task")
    node = mnemos.handoff("task")
    assert node.type == "handoff"
    assert node.status == "active"
    assert node.content.startswith("## Handoff: task task")
    assert "### Active Constraints (DO NOT VIOLATE)" in node.content
    assert "- Run pytest -x before committing" in node.content
    assert "Fatigue: 0." in node.content
    assert mnemos.get_node(node.id).content == node.content
    mnemos.decay("task")
    assert mnemos.get_node(node.id).weight == 1.0  # handoff nodes never decay


# ----------------------------------------------------------------------------- CLI


def test_cli_mnemos_commands(tmp_path: Path) -> None:
    runner = CliRunner()
    root = str(tmp_path / "root")

    def run(*args: str) -> str:
        result = runner.invoke(app, ["--root", root, "mnemos", *args])
        assert result.exit_code == 0, result.output
        return result.output

    assert "added goal node" in run("add", "goal", "Ship the reset flow", "--task", "t1")
    run("add", "constraint", "No API breaks", "-t", "t1")
    run("add", "context", "contents of a.py", "-t", "t1", "--path", "src/a.py")
    nodes = run("nodes", "--task", "t1")
    assert "MNEMO NODES (3):" in nodes
    assert "scope: src" in nodes
    assert "FLOW" in run("fatigue", "-t", "t1")
    assert "written for task t1" in run("checkpoint", "-t", "t1", "--no-git")
    assert "cooldown" in run("checkpoint", "-t", "t1")
    assert "compressed 0, evicted 0, decayed 1" in run("consolidate", "-t", "t1")
    resume = run("resume", "-t", "t1")
    assert resume.startswith("## Mnemos Session Resume")
    assert "- No API breaks" in resume
    assert "t1" in run("status")
    assert '"task_id": "t1"' in run("status", "--json")
    bad = runner.invoke(app, ["--root", root, "mnemos", "resume", "-t", "nope"])
    assert bad.exit_code == 1
    assert isinstance(bad.exception, NotFoundError)
    bad_type = runner.invoke(app, ["--root", root, "mnemos", "add", "checkpoint", "x"])
    assert bad_type.exit_code == 1
    assert isinstance(bad_type.exception, InvalidInputError)


def test_cli_errors_print_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        ["mnemon", "--root", str(tmp_path / "r"), "mnemos", "resume", "--task", "missing"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("mnemon: error: no checkpoint found")
    assert done.stderr.count("\n") == 1
